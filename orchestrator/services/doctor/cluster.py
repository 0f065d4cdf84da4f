"""The checks of the management cluster itself, over its API (read only; clusterrole_doctor.yaml grants
exactly these reads). Objects are read as the API's JSON, not the client's typed models: those refuse a
document that lacks a field they require, which is the client's strictness, not the cluster's fault."""

from __future__ import annotations

import json
import re
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from orchestrator.services.doctor.findings import Finding, Probe, Status, blocker, ok, warning

MINIMUM_KUBERNETES = (1, 30)
# Cluster API's first release with the v1beta2 contract (docs/kubernetes.md).
MINIMUM_CLUSTER_API = (1, 11)
CLUSTER_API_GROUP = "cluster.x-k8s.io"
CLUSTER_API_CONTRACT = "v1beta2"
CLUSTER_API_CRDS = ("clusters", "machines", "machinedeployments", "machinesets")
CLUSTERCTL = ("clusterctl.cluster.x-k8s.io", "v1alpha3", "providers")
CERT_MANAGER_GROUP = "cert-manager.io"
CERT_MANAGER_CRDS = ("certificates", "issuers", "clusterissuers")
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
DEFAULT_INGRESS_CLASS = "ingressclass.kubernetes.io/is-default-class"
_VERSION = re.compile(r"v?(\d+)\.(\d+)")

Body = dict[str, Any]


def _json(probe: Probe, call: Any, *args: Any) -> Body:
    """One read, answered as the API's JSON."""
    answer = call(*args, _preload_content=False, _request_timeout=probe.timeout)
    body: Body = json.loads(answer.data)
    return body


def _items(probe: Probe, call: Any, *args: Any) -> list[Body]:
    items: list[Body] = _json(probe, call, *args).get("items") or []
    return items


def _meta(obj: Body) -> Body:
    meta: Body = obj.get("metadata") or {}
    return meta


def _where(obj: Body) -> str:
    return f"{_meta(obj).get('namespace')}/{_meta(obj).get('name')}"


def kubernetes(probe: Probe) -> Finding:
    name = "kubernetes"
    git_version = str(_json(probe, client.VersionApi(probe.kube()).get_code).get("gitVersion") or "")
    found = _VERSION.match(git_version)
    if found is None:
        return blocker(name, f"the API server names no version ({git_version!r})", "check the kubeconfig")
    minimum = ".".join(map(str, MINIMUM_KUBERNETES))
    if (int(found[1]), int(found[2])) < MINIMUM_KUBERNETES:
        return blocker(
            name,
            f"{git_version}: older than {minimum}, which the chart's admission fence "
            "(a ValidatingAdmissionPolicy, admissionregistration.k8s.io/v1) needs",
            f"upgrade the management cluster to Kubernetes {minimum} or newer",
        )
    return ok(name, f"{git_version} (at least {minimum})")


def _crd(probe: Probe, name: str) -> Body | None:
    """A CustomResourceDefinition, or None when the cluster has none of that name."""
    try:
        return _json(probe, client.ApiextensionsV1Api(probe.kube()).read_custom_resource_definition, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _served(crd: Body) -> list[str]:
    return [str(v.get("name")) for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")]


def cluster_api(probe: Probe) -> Finding:
    name = "cluster-api"
    crds = {plural: _crd(probe, f"{plural}.{CLUSTER_API_GROUP}") for plural in CLUSTER_API_CRDS}
    found = {plural: crd for plural, crd in crds.items() if crd is not None}
    if not found:
        return warning(
            name,
            "Cluster API core is not installed (no clusters.cluster.x-k8s.io): tenant Kubernetes "
            "clusters cannot be made; VMs and networks do not need it",
            "clusterctl init --bootstrap kubeadm (Cluster API 1.11 or newer), then the providers chart",
        )
    if len(found) < len(crds):
        missing = ", ".join(plural for plural in crds if plural not in found)
        return blocker(
            name,
            f"Cluster API core is installed in part: no CRD for {missing}",
            "install Cluster API core again: clusterctl init --bootstrap kubeadm",
        )
    old = {p: _served(crd) for p, crd in found.items() if CLUSTER_API_CONTRACT not in _served(crd)}
    if old:
        serves = "; ".join(f"{p} serves {', '.join(v) or 'nothing'}" for p, v in old.items())
        return blocker(
            name,
            f"Cluster API core does not serve {CLUSTER_API_CONTRACT}, the contract flex.plane writes "
            f"({serves})",
            f"clusterctl upgrade apply --contract {CLUSTER_API_CONTRACT} (Cluster API 1.11 or newer)",
        )
    label = f"{CLUSTER_API_GROUP}/{CLUSTER_API_CONTRACT}"
    labelled = [p for p, crd in found.items() if label in (_meta(crd).get("labels") or {})]
    contract = f"serves {CLUSTER_API_CONTRACT}" + (
        f" (contract label on {', '.join(labelled)})" if labelled else ""
    )
    version = _core_version(probe)
    if version is None:
        return ok(
            name, f"{contract}; no clusterctl Provider object names its version (not installed by clusterctl)"
        )
    parsed = _VERSION.match(version)
    minimum = ".".join(map(str, MINIMUM_CLUSTER_API))
    if parsed is None or (int(parsed[1]), int(parsed[2])) < MINIMUM_CLUSTER_API:
        return blocker(
            name,
            f"{contract}, but clusterctl says Cluster API core is {version}, older than {minimum}",
            f"clusterctl upgrade apply --core cluster-api:v{minimum}.0 (or newer)",
        )
    return ok(name, f"Cluster API {version}, {contract}")


def _core_version(probe: Probe) -> str | None:
    """The CoreProvider's version as clusterctl recorded it; None without clusterctl's objects."""
    custom = client.CustomObjectsApi(probe.kube())
    try:
        providers = _items(probe, custom.list_cluster_custom_object, *CLUSTERCTL)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    for item in providers:
        if item.get("type") == "CoreProvider":
            return str(item.get("version") or "unknown")
    return None


def cert_manager(probe: Probe) -> Finding:
    name = "cert-manager"
    missing = [p for p in CERT_MANAGER_CRDS if _crd(probe, f"{p}.{CERT_MANAGER_GROUP}") is None]
    if missing:
        return blocker(
            name,
            f"cert-manager is not installed (no CRD for {', '.join(missing)}): the agents' client "
            "certificates are neither issued nor renewed",
            "helm install cert-manager jetstack/cert-manager -n cert-manager --create-namespace "
            "--set crds.enabled=true",
        )
    said = ["installed"]
    issuers = [("Issuer", probe.site.issuer, probe.site.namespace)] if probe.site.issuer else []
    if probe.site.cluster_issuer:
        issuers.append(("ClusterIssuer", probe.site.cluster_issuer, ""))
    worst, todo = Status.OK, ""
    for kind, issuer, namespace in issuers:
        status, words, fix = _issuer(probe, kind, issuer, namespace)
        said.append(words)
        if _rank(status) > _rank(worst):
            worst, todo = status, fix
    return Finding(name, worst, "; ".join(said), todo)


def _issuer(probe: Probe, kind: str, issuer: str, namespace: str) -> tuple[Status, str, str]:
    """What an Issuer (in ``namespace``) or ClusterIssuer (``namespace`` "") says of itself."""
    custom = client.CustomObjectsApi(probe.kube())
    where = f"{kind} {namespace + '/' if namespace else ''}{issuer}"
    try:
        if namespace:
            args = (CERT_MANAGER_GROUP, "v1", namespace, "issuers", issuer)
            body = _json(probe, custom.get_namespaced_custom_object, *args)
        else:
            body = _json(
                probe, custom.get_cluster_custom_object, CERT_MANAGER_GROUP, "v1", "clusterissuers", issuer
            )
    except ApiException as exc:
        if exc.status != 404:
            raise
        if kind == "Issuer":
            return (
                Status.WARNING,
                f"no {where} yet",
                f"make it as step 5 of docs/install.md (an Issuer of kind CA on Secret {issuer})",
            )
        return Status.BLOCKER, f"no {where}", f"make the ClusterIssuer {issuer}, or name the one you have"
    conditions = (body.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None:
        return Status.WARNING, f"{where} has no Ready condition yet", "check that cert-manager's pods run"
    if ready.get("status") != "True":
        reason = ready.get("message") or ready.get("reason") or "no reason given"
        return Status.BLOCKER, f"{where} is not Ready: {reason}", f"kubectl describe {kind.lower()} {issuer}"
    return Status.OK, f"{where} is Ready", ""


def _rank(status: Status) -> int:
    return (Status.OK, Status.WARNING, Status.BLOCKER).index(status)


def _address(service: Body) -> str:
    """The first address a LoadBalancer Service was given, or ""."""
    for ingress in ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        if ingress.get("ip") or ingress.get("hostname"):
            return str(ingress.get("ip") or ingress.get("hostname"))
    return ""


def load_balancer(probe: Probe) -> Finding:
    name = "load-balancer"
    if not probe.site.load_balancer:
        return ok(name, "not checked: the NodePort path was chosen (--no-load-balancer)")
    services = _items(probe, client.CoreV1Api(probe.kube()).list_service_for_all_namespaces)
    balanced = [s for s in services if (s.get("spec") or {}).get("type") == "LoadBalancer"]
    served = [s for s in balanced if _address(s)]
    if served:
        return ok(
            name,
            f"{len(served)} of {len(balanced)} LoadBalancer Services have an address "
            f"(e.g. {_where(served[0])}: {_address(served[0])})",
        )
    todo = (
        "install a LoadBalancer implementation (k3s: ServiceLB; MetalLB; your cloud's), or take the NodePort "
        "path: mesh.service.type=NodePort and the providers' config.nodePortAddress, then --no-load-balancer"
    )
    if balanced:
        waiting = ", ".join(_where(s) for s in balanced[:5])
        return blocker(name, f"no LoadBalancer Service has an address ({waiting} wait)", todo)
    return warning(
        name, "no Service of type LoadBalancer yet: whether one would get an address is unknown", todo
    )


def _defaults(objects: list[Body], annotations: tuple[str, ...]) -> list[str]:
    """The names of the objects annotated as the cluster's default."""
    return [
        str(_meta(o).get("name"))
        for o in objects
        if any((_meta(o).get("annotations") or {}).get(a) == "true" for a in annotations)
    ]


def ingress_class(probe: Probe) -> Finding:
    name = "ingress-class"
    classes = _items(probe, client.NetworkingV1Api(probe.kube()).list_ingress_class)
    if not classes:
        return warning(
            name,
            "no IngressClass: the portal's Ingress (ingress.enabled) would not be served",
            "install an ingress controller (k3s: Traefik; ingress-nginx), or expose the Service yourself",
        )
    names = ", ".join(str(_meta(c).get("name")) for c in classes)
    default = _defaults(classes, (DEFAULT_INGRESS_CLASS,))
    if default:
        return ok(name, f"{names} (default: {default[0]})")
    return ok(name, f"{names} (none is the default: name one in ingress.className)")


def storage(probe: Probe) -> Finding:
    name = "storage"
    classes = _items(probe, client.StorageV1Api(probe.kube()).list_storage_class)
    default = _defaults(classes, DEFAULT_CLASS_ANNOTATIONS)
    if default:
        return ok(name, f"default StorageClass {default[0]} ({len(classes)} in all)")
    named = ", ".join(str(_meta(c).get("name")) for c in classes) or "none at all"
    return blocker(
        name,
        f"no default StorageClass (classes: {named}): Zitadel's PostgreSQL and the tenant clusters' etcds "
        "claim volumes of the default class and would wait forever",
        "kubectl annotate storageclass <name> storageclass.kubernetes.io/is-default-class=true "
        "(k3s ships local-path as the default)",
    )
