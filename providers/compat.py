"""The start-up check that the management cluster's Cluster API core speaks the contract the providers
implement (v1beta2), before either provider reconciles anything.

Why at start: the providers write v1beta2 objects' fields (``status.initialization``, ``apiGroup``
references) and read core's v1beta2 Clusters and Machines. Against an older core (Cluster API 1.10 or
earlier serves v1beta1 only) every reconcile would fail on its own, object by object, with errors that
never name the cause; refusing to start with one message that names the version needed is what an
operator can act on (``clusterctl upgrade apply --contract v1beta2``).

How, as clusterctl and core themselves tell a contract: the CRD ``clusters.cluster.x-k8s.io`` that core
installs carries the contract labels ``cluster.x-k8s.io/<contract>: <versions>`` (Cluster API 1.11 and
later label theirs ``cluster.x-k8s.io/v1beta2: v1beta2``), and serves the API versions it speaks. Either
proves v1beta2. Reading one named CRD needs ``get`` on it only (the chart grants exactly that).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

CONTRACT = "v1beta2"
CONTRACT_LABEL = f"cluster.x-k8s.io/{CONTRACT}"
CLUSTER_CRD = "clusters.cluster.x-k8s.io"
# The first Cluster API release whose core speaks v1beta2, and the release the providers are tested
# against (the devstack's stand-in core plays it: devstack.kube.crds.CLUSTER_API_VERSION). Both are
# pinned in docs/kubernetes.md, and a test holds the three to the same numbers.
MINIMUM_CLUSTER_API = "v1.11.0"
TESTED_CLUSTER_API = "v1.11.2"
UPGRADE_HINT = f"clusterctl upgrade apply --contract {CONTRACT}"


class IncompatibleCore(Exception):
    """Cluster API core is missing, unreadable, or does not speak v1beta2; the message says what to do."""


def speaks_contract(crd: Mapping[str, Any]) -> bool:
    """Whether a Cluster CRD (as a dict) declares the v1beta2 contract: by its label, or a served version."""
    labels = (crd.get("metadata") or {}).get("labels") or {}
    if CONTRACT_LABEL in labels:
        return True
    versions = (crd.get("spec") or {}).get("versions") or []
    return any(v.get("name") == CONTRACT and v.get("served", True) for v in versions)


def served_versions(crd: Mapping[str, Any]) -> list[str]:
    versions = (crd.get("spec") or {}).get("versions") or []
    return [str(v.get("name")) for v in versions if v.get("served", True)]


def refusal(crd: Mapping[str, Any]) -> str:
    """What an operator reads when core is too old: what was found, the version needed, the command."""
    served = ", ".join(served_versions(crd)) or "no version"
    return (
        f"Cluster API core on this cluster does not speak contract {CONTRACT}: the CRD {CLUSTER_CRD} has no "
        f"{CONTRACT_LABEL} label and serves {served}. flex.plane's providers need Cluster API "
        f"{MINIMUM_CLUSTER_API} or later (tested with {TESTED_CLUSTER_API}): upgrade core with "
        f"`{UPGRADE_HINT}`"
    )


def read_cluster_crd(api_client: client.ApiClient, timeout: float) -> dict[str, Any]:
    """The Cluster CRD as a dict; :class:`IncompatibleCore` when it is missing or cannot be read."""
    extensions = client.ApiextensionsV1Api(api_client)
    try:
        crd = extensions.read_custom_resource_definition(CLUSTER_CRD, _request_timeout=timeout)
    except ApiException as exc:
        if exc.status == 404:
            raise IncompatibleCore(
                f"Cluster API core is not installed (no CRD {CLUSTER_CRD}): install Cluster API "
                f"{TESTED_CLUSTER_API} (at least {MINIMUM_CLUSTER_API}) with `clusterctl init` first"
            ) from exc
        raise IncompatibleCore(
            f"could not read the CRD {CLUSTER_CRD} to check Cluster API core's contract "
            f"({exc.status} {exc.reason}): the providers' account needs `get` on it"
        ) from exc
    body: dict[str, Any] = api_client.sanitize_for_serialization(crd)
    return body


def check_core(api_client: client.ApiClient, timeout: float = 5.0) -> None:
    """Returns when Cluster API core speaks v1beta2; else raises :class:`IncompatibleCore`."""
    crd = read_cluster_crd(api_client, timeout)
    if not speaks_contract(crd):
        raise IncompatibleCore(refusal(crd))
