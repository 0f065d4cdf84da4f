"""CustomResourceDefinitions: what the API server serves for each, its rules, and the scale subresource.

A custom resource is served only while a CRD declares it, as by a real API server: creating an
``apiextensions.k8s.io/v1`` CustomResourceDefinition makes each served version known to discovery
and to requests at once (kind, plural, singular, short names, categories, scope, and the ``status``
and ``scale`` subresources of that version); deleting it forgets them, and their objects with them.

Cluster API core's own CRDs are not flex.plane's to ship: :data:`CLUSTER_API_CORE_CRDS` declares its
kinds that the devstack's stand-ins and tests write, with permissive schemas, as ``clusterctl init``
would have installed them on a management cluster: labelled with the contract they speak
(``cluster.x-k8s.io/v1beta2: v1beta2``, as Cluster API 1.11 and later label theirs; the providers check it
at start, :mod:`providers.compat`) and with their provider (clusterctl's ``cluster.x-k8s.io/provider``).
The stand-ins play Cluster API :data:`CLUSTER_API_VERSION`, the version the providers are tested against.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import kmock

from devstack.kube.errors import ApiError
from devstack.kube.objects import Body

CRDS = kmock.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
CRD_API_VERSION = "apiextensions.k8s.io/v1"
SCOPES = ("Namespaced", "Cluster")


@dataclasses.dataclass(frozen=True)
class ScalePaths:
    """Where a custom resource keeps what its ``scale`` subresource shows (paths like ``.spec.replicas``)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str | None = None


@dataclasses.dataclass(frozen=True)
class Served:
    """One resource as the server serves it: its kind, scope, and subresources."""

    resource: kmock.resource
    kind: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()
    scale: ScalePaths | None = None
    singular: str = ""
    short_names: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def served_resources(crd: Mapping[str, Any]) -> list[Served]:
    """The resources that a (valid) CRD makes the server serve: one per served version."""
    spec = crd["spec"]
    names = spec["names"]
    served = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        scale = subresources.get("scale")
        paths = None
        if scale is not None:
            paths = ScalePaths(
                scale["specReplicasPath"], scale["statusReplicasPath"], scale.get("labelSelectorPath")
            )
        served.append(
            Served(
                resource=kmock.resource(spec["group"], version["name"], names["plural"]),
                kind=names["kind"],
                namespaced=spec["scope"] == "Namespaced",
                subresources=frozenset(name for name in ("status", "scale") if name in subresources),
                scale=paths,
                singular=names.get("singular") or names["kind"].lower(),
                short_names=frozenset(names.get("shortNames") or ()),
                categories=frozenset(names.get("categories") or ()),
            )
        )
    return served


def check_definition(crd: Mapping[str, Any]) -> None:
    """422 Invalid unless the CRD has what the API server requires of one."""
    name = str((crd.get("metadata") or {}).get("name", ""))
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        raise ApiError.invalid(CRDS, name, "spec: Required value")
    names = spec.get("names") or {}
    problems = [
        f"spec.{field}: Required value"
        for field, value in (
            ("group", spec.get("group")),
            ("names.plural", names.get("plural")),
            ("names.kind", names.get("kind")),
        )
        if not value
    ]
    if spec.get("scope") not in SCOPES:
        problems.append(f"spec.scope: Unsupported value: {spec.get('scope')!r}: supported values: {SCOPES}")
    versions = spec.get("versions") or []
    if not versions or sum(bool(version.get("storage")) for version in versions) != 1:
        problems.append(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
        )
    if not problems and name != f"{names['plural']}.{spec['group']}":
        problems.append(f'metadata.name: Invalid value: {name!r}: must be spec.names.plural+"."+spec.group')
    if problems:
        message = f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: ' + ", ".join(problems)
        raise ApiError.invalid(CRDS, name, message)


def definition_status(crd: Mapping[str, Any], transition_time: str) -> Body:
    """The status that the API server gives an accepted CRD: its names accepted, established."""
    spec = crd["spec"]
    current = crd.get("status") or {}
    stored = list(current.get("storedVersions") or [])
    storage = next(version["name"] for version in spec["versions"] if version.get("storage"))
    if storage not in stored:
        stored.append(storage)
    times = {cond.get("type"): cond.get("lastTransitionTime") for cond in current.get("conditions") or []}
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": times.get(kind) or transition_time,
        }
        for kind, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    accepted = copy.deepcopy(spec["names"])
    accepted.setdefault("singular", accepted["kind"].lower())
    accepted.setdefault("listKind", f"{accepted['kind']}List")
    return {"acceptedNames": accepted, "conditions": conditions, "storedVersions": stored}


# -------------------------------------------------------------------------------- scale


def scale_of(obj: Mapping[str, Any], paths: ScalePaths) -> Body:
    """The ``autoscaling/v1`` Scale that the ``scale`` subresource answers for ``obj``."""
    metadata = obj["metadata"]
    scale_metadata = {
        key: metadata[key]
        for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if key in metadata
    }
    status: Body = {"replicas": _read(obj, paths.status_replicas) or 0}
    if paths.label_selector is not None:
        selector = _read(obj, paths.label_selector)
        if selector:
            status["selector"] = selector
    spec: Body = {}
    replicas = _read(obj, paths.spec_replicas)
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": scale_metadata,
        "spec": spec,
        "status": status,
    }


def with_scale(obj: Mapping[str, Any], scale: Mapping[str, Any], paths: ScalePaths, *, name: str) -> Body:
    """``obj`` with the replicas that a written Scale asks for; 422 unless they are a whole number >= 0."""
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise ApiError(
            422,
            "Invalid",
            f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas!r}',
        )
    candidate = copy.deepcopy(dict(obj))
    _write(candidate, paths.spec_replicas, replicas)
    return candidate


def _steps(path: str) -> list[str]:
    return [step for step in path.split(".") if step]


def _read(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for step in _steps(path):
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def _write(obj: Body, path: str, value: Any) -> None:
    *parents, last = _steps(path)
    target = obj
    for step in parents:
        target = target.setdefault(step, {})
    target[last] = value


# ------------------------------------------------------------------------ building CRDs


def custom_resource_definition(
    group: str,
    kind: str,
    plural: str,
    *,
    versions: Sequence[str] = ("v1",),
    namespaced: bool = True,
    status: bool = True,
    scale: ScalePaths | None = None,
    labels: Mapping[str, str] | None = None,
) -> Body:
    """A CRD with a permissive schema (any fields kept): the last version is the stored one."""
    subresources: Body = {}
    if status:
        subresources["status"] = {}
    if scale is not None:
        subresources["scale"] = {
            "specReplicasPath": scale.spec_replicas,
            "statusReplicasPath": scale.status_replicas,
        }
        if scale.label_selector is not None:
            subresources["scale"]["labelSelectorPath"] = scale.label_selector
    metadata: Body = {"name": f"{plural}.{group}"}
    if labels:
        metadata["labels"] = dict(labels)
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": index == len(versions) - 1,
                    "schema": copy.deepcopy(schema),
                    "subresources": copy.deepcopy(subresources),
                }
                for index, version in enumerate(versions)
            ],
        },
    }


# The Cluster API release the stand-ins play (core and CABPK): pinned in docs/kubernetes.md and
# providers.compat.TESTED_CLUSTER_API (a test holds them equal).
CLUSTER_API_VERSION = "v1.11.2"
# The contract label of Cluster API 1.11's own CRDs: the contract v1beta2, served as API version v1beta2.
CORE_CONTRACT_LABELS = {"cluster.x-k8s.io/v1beta2": "v1beta2"}


def _core_crds() -> Iterable[Body]:
    replicas = ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")
    core, bootstrap = "cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io"
    core_labels = {**CORE_CONTRACT_LABELS, "cluster.x-k8s.io/provider": "cluster-api"}
    kubeadm = {**CORE_CONTRACT_LABELS, "cluster.x-k8s.io/provider": "bootstrap-kubeadm"}
    yield custom_resource_definition(core, "Cluster", "clusters", versions=("v1beta2",), labels=core_labels)
    yield custom_resource_definition(
        core,
        "MachineDeployment",
        "machinedeployments",
        versions=("v1beta2",),
        scale=replicas,
        labels=core_labels,
    )
    yield custom_resource_definition(
        core, "MachineSet", "machinesets", versions=("v1beta2",), scale=replicas, labels=core_labels
    )
    yield custom_resource_definition(core, "Machine", "machines", versions=("v1beta2",), labels=core_labels)
    yield custom_resource_definition(
        bootstrap, "KubeadmConfig", "kubeadmconfigs", versions=("v1beta2",), labels=kubeadm
    )
    yield custom_resource_definition(
        bootstrap,
        "KubeadmConfigTemplate",
        "kubeadmconfigtemplates",
        versions=("v1beta2",),
        status=False,
        labels=kubeadm,
    )


# Cluster API core's kinds that flex.plane's parts write or read, as core's CRDs serve them (v1beta2).
CLUSTER_API_CORE_CRDS: tuple[Body, ...] = tuple(_core_crds())
