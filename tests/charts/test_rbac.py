"""The three charts' RBAC, installed side by side as the install guide has it, evaluated: no account of ours
reads a Secret outside its namespaces, none can escalate, each grant is one the code uses, and the
admission fences admit every write the product makes.

The charts are rendered offline; :mod:`tests.charts.rbac` answers what Kubernetes' RBAC authorizer and the
charts' ValidatingAdmissionPolicies (their CEL, evaluated) would answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from orchestrator.sources.kube_objects import cloud_controller_secret
from tests.charts.kit import Manifest, manifests
from tests.charts.rbac import RBAC_GROUP, WORKLOADS, Account, Cluster, Grant

ROOT = Path(__file__).resolve().parents[2]
PLATFORM, IDENTITY = "flexplane", "identity"
VDC, CONTROL_PLANE = "vdc-acme", "fpcp-acme-k8s"
# Every namespace a write or a read is tried in: ours, the identity chart's, and the cluster's own.
NAMESPACES = (PLATFORM, IDENTITY, VDC, CONTROL_PLANE, "kube-system", "default", "cert-manager")

ORCHESTRATOR = Account(PLATFORM, "flextenant")
HUB = Account(PLATFORM, "flextenant-mesh")
PROVIDERS = Account(PLATFORM, "providers")
SETUP = Account(IDENTITY, "identity-setup")
# Where each account works: the namespaces whose Secrets it may read and where it may write.
OWNED = {
    ORCHESTRATOR: {PLATFORM, VDC},
    HUB: {PLATFORM},
    PROVIDERS: {PLATFORM, VDC, CONTROL_PLANE},
    SETUP: {PLATFORM},
}
HUB_SECRET = "flexplane-mesh-hub"
VDC_ROLE = "flextenant-vdc"
# The roles the providers bind themselves to, in a VDC's namespace and in a control plane's.
PROVIDERS_VDC_ROLE, PROVIDERS_CP_ROLE = "providers-vdc", "providers-control-plane"
SA_TOKEN = "kubernetes.io/service-account-token"
# The providers' SNI router on, so that its account is weighed too.
SNI_ON: dict[str, Any] = {"sni": {"enabled": True, "domain": "k8s.example.com"}}

# The charts as the install guide installs them: (chart, release, namespace, values file, more values).
INSTALLS: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    ("flextenant", "flextenant", PLATFORM, "k3s-values.yaml", {}),
    ("providers", "providers", PLATFORM, "example-values.yaml", SNI_ON),
    ("identity", "identity", IDENTITY, "k3s-values.yaml", {}),
)


def rendered(
    chart: str, release: str, namespace: str, values_file: str, more: dict[str, Any]
) -> list[Manifest]:
    path = ROOT / "charts" / chart
    values = yaml.safe_load((path / "ci" / values_file).read_text()) | more
    with helm_python.Chart.load(path) as loaded:
        return manifests(loaded.render(values, name=release, namespace=namespace, is_install=True))


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(m for install in INSTALLS for m in rendered(*install))


@pytest.fixture(scope="module")
def bound(cluster: Cluster) -> dict[Account, list[Manifest]]:
    """The bindings each account makes for itself (the providers' before they touch a Secret)."""
    return {account: cluster.escalated(account, NAMESPACES) for account in OWNED}


ACCOUNTS = pytest.mark.parametrize("account", list(OWNED), ids=str)


def permissions(grants: Iterable[Grant]) -> Iterator[tuple[Grant, str, str, str]]:
    """Each (grant, API group, resource, verb) the grants' rules list: a rule grants every combination."""
    for grant in grants:
        for group in grant.rule["apiGroups"]:
            for resource in grant.rule["resources"]:
                for verb in grant.rule["verbs"]:
                    yield grant, group, resource, verb


def test_every_fence_is_enforced_and_its_cel_compiles(cluster: Cluster) -> None:
    # One for each account of ours: the orchestrator's, the hub's, the providers', the setup jobs'.
    assert len(cluster.fences) == len(OWNED)
    for fence in cluster.fences:
        assert fence.policy["spec"]["failurePolicy"] == "Fail"
        assert fence.policy["spec"]["matchConstraints"]["resourceRules"][0]["resources"] == ["*/*"]
        fence.compiles()


# --- reading Secrets ---------------------------------------------------------------------------------


def secret_readers(cluster: Cluster, account: Account) -> dict[str, list[str]]:
    """The namespaces outside its own whose Secrets ``account`` reads, with it all it could gain."""
    gained = cluster.escalated(account, NAMESPACES)
    return {
        namespace: sorted({g.role for g in grants})
        for namespace in NAMESPACES
        if namespace not in OWNED[account] and (grants := cluster.reads_secrets(account, namespace, gained))
    }


@pytest.mark.parametrize("account", [ORCHESTRATOR, HUB, SETUP], ids=str)
def test_no_account_of_ours_reads_a_secret_outside_its_namespaces(cluster: Cluster, account: Account) -> None:
    assert secret_readers(cluster, account) == {}


def test_the_providers_read_no_secret_outside_their_namespaces(cluster: Cluster) -> None:
    assert secret_readers(cluster, PROVIDERS) == {}


def test_the_hub_reads_its_key_secret_and_no_other(cluster: Cluster) -> None:
    grants = cluster.reads_secrets(HUB, PLATFORM, cluster.escalated(HUB, NAMESPACES))
    assert grants
    assert {tuple(g.rule.get("resourceNames") or ["*"]) for g in grants} == {(HUB_SECRET,)}
    assert not cluster.rbac_allows(HUB, "get", "", "secrets", PLATFORM, "flexplane-agent-ca")


# --- escalation ---------------------------------------------------------------------------------------


@ACCOUNTS
def test_no_rule_of_ours_escalates_impersonates_or_binds_any_role(cluster: Cluster, account: Account) -> None:
    for grant in cluster.grants(account):
        verbs, names = set(grant.rule["verbs"]), grant.rule.get("resourceNames")
        assert not verbs & {"*", "escalate", "impersonate"}, grant
        assert "*" not in grant.rule["resources"], grant
        assert "*" not in grant.rule["apiGroups"], grant
        assert "bind" not in verbs or names, f"{grant}: bind on any role"


def test_the_orchestrator_can_bind_itself_to_the_vdc_role_in_a_vdc_namespace_and_nowhere_else(
    cluster: Cluster,
) -> None:
    gained = cluster.escalated(ORCHESTRATOR, NAMESPACES)
    assert [(b["kind"], b["metadata"].get("namespace"), b["roleRef"]["name"]) for b in gained] == [
        ("RoleBinding", VDC, VDC_ROLE)
    ]
    # RBAC alone would let it: the fence is what stops it.
    assert cluster.rbac_allows(ORCHESTRATOR, "create", RBAC_GROUP, "rolebindings", "kube-system")
    binding = {
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": VDC_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": ORCHESTRATOR.name, "namespace": PLATFORM}],
    }
    refusals = cluster.refusals(
        ORCHESTRATOR, "create", RBAC_GROUP, "rolebindings", "kube-system", "x", binding
    )
    assert refusals


def own_binding(account: Account, role: str) -> Manifest:
    return {
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account.name, "namespace": account.namespace}],
    }


def test_the_providers_bind_themselves_to_their_secrets_roles_in_their_namespaces_and_nowhere_else(
    cluster: Cluster,
) -> None:
    gained = cluster.escalated(PROVIDERS, NAMESPACES)
    assert sorted((b["kind"], b["metadata"].get("namespace"), b["roleRef"]["name"]) for b in gained) == [
        ("RoleBinding", CONTROL_PLANE, PROVIDERS_CP_ROLE),
        ("RoleBinding", VDC, PROVIDERS_VDC_ROLE),
    ]
    # RBAC alone would let them: the fence is what stops a binding elsewhere, to the other role, or of
    # another account.
    assert cluster.rbac_allows(PROVIDERS, "create", RBAC_GROUP, "rolebindings", "kube-system")
    tries = [
        ("kube-system", own_binding(PROVIDERS, PROVIDERS_VDC_ROLE)),
        (CONTROL_PLANE, own_binding(PROVIDERS, PROVIDERS_VDC_ROLE)),
        (VDC, own_binding(PROVIDERS, PROVIDERS_CP_ROLE)),
        (VDC, own_binding(ORCHESTRATOR, PROVIDERS_VDC_ROLE)),
    ]
    for namespace, binding in tries:
        assert cluster.refusals(PROVIDERS, "create", RBAC_GROUP, "rolebindings", namespace, "x", binding)


@pytest.mark.parametrize("account", [HUB, SETUP], ids=str)
def test_no_other_account_of_ours_can_bind_itself_to_anything(cluster: Cluster, account: Account) -> None:
    assert cluster.escalated(account, NAMESPACES) == []


@ACCOUNTS
def test_no_account_of_ours_runs_a_pod_outside_its_namespaces(cluster: Cluster, account: Account) -> None:
    allowed = [
        (namespace, resource)
        for namespace in NAMESPACES
        if namespace not in OWNED[account]
        for group, resource in WORKLOADS
        if cluster.may_write(account, "create", group, resource, namespace, "x")
    ]
    assert allowed == []


@ACCOUNTS
def test_no_account_of_ours_mints_a_service_account_token(cluster: Cluster, account: Account) -> None:
    token = {"metadata": {"name": "t"}, "type": SA_TOKEN}
    assert [n for n in NAMESPACES if cluster.may_write(account, "create", "", "secrets", n, "t", token)] == []


@ACCOUNTS
def test_no_account_of_ours_writes_outside_its_namespaces(cluster: Cluster, account: Account) -> None:
    written = [
        (namespace, grant.rule["resources"])
        for namespace in NAMESPACES
        if namespace not in OWNED[account]
        for grant, group, resource, verb in permissions(cluster.grants(account))
        if "/" not in resource
        and verb in ("create", "update", "patch", "delete")
        and cluster.may_write(account, verb, group, resource, namespace, "x")
    ]
    assert written == []


@pytest.mark.parametrize(
    ("account", "name", "made"),
    [
        (ORCHESTRATOR, VDC, True),
        (ORCHESTRATOR, "kube-public", False),
        (ORCHESTRATOR, CONTROL_PLANE, False),
        (PROVIDERS, CONTROL_PLANE, True),
        (PROVIDERS, VDC, False),
        (PROVIDERS, "kube-public", False),
        (HUB, VDC, False),
        (SETUP, VDC, False),
    ],
)
def test_only_our_namespaces_are_made(cluster: Cluster, account: Account, name: str, made: bool) -> None:
    assert cluster.may_write(account, "create", "", "namespaces", "", name) is made


# --- what the product does is admitted ----------------------------------------------------------------

# Writes the code makes, each of which RBAC and the fences must both let through.
CATALOG = {"metadata": {"name": "fp-host-a", "labels": {"flexplane.io/kind": "host"}}}
PEER = {"metadata": {"name": "fp-meshpeer-10-99-0-2", "labels": {"flexplane.io/kind": "meshpeer"}}}
OPAQUE = {"metadata": {"name": "s"}, "type": "Opaque"}
TLS = {"metadata": {"name": "apiserver-metrics"}, "type": "kubernetes.io/tls"}
MONITORING = "monitoring.coreos.com"
OWN_BINDING = own_binding(ORCHESTRATOR, VDC_ROLE)
PROVIDERS_VDC_BINDING = own_binding(PROVIDERS, PROVIDERS_VDC_ROLE)
PROVIDERS_CP_BINDING = own_binding(PROVIDERS, PROVIDERS_CP_ROLE)
PRODUCT_WRITES = [
    (ORCHESTRATOR, "create", "", "configmaps", PLATFORM, "fp-host-a", CATALOG),
    (ORCHESTRATOR, "update", "", "configmaps", PLATFORM, "fp-host-a", CATALOG),
    (ORCHESTRATOR, "delete", "", "configmaps", PLATFORM, "fp-host-a", None),
    (ORCHESTRATOR, "create", "", "secrets", PLATFORM, "join-token-x", OPAQUE),
    (ORCHESTRATOR, "update", "", "secrets", PLATFORM, "join-token-x", OPAQUE),
    (ORCHESTRATOR, "create", "coordination.k8s.io", "leases", PLATFORM, "lock", None),
    (ORCHESTRATOR, "create", "events.k8s.io", "events", PLATFORM, "audit", None),
    (ORCHESTRATOR, "create", "", "namespaces", "", VDC, None),
    (ORCHESTRATOR, "create", RBAC_GROUP, "rolebindings", VDC, VDC_ROLE, OWN_BINDING),
    (ORCHESTRATOR, "create", "cluster.x-k8s.io", "clusters", VDC, "k8s", None),
    (ORCHESTRATOR, "patch", "cluster.x-k8s.io", "machinedeployments", VDC, "k8s-workers", None),
    (ORCHESTRATOR, "delete", "controlplane.flexplane.io", "flexcontrolplanes", VDC, "k8s", None),
    (ORCHESTRATOR, "create", "", "secrets", VDC, cloud_controller_secret("k8s"), OPAQUE),
    (ORCHESTRATOR, "update", "", "secrets", VDC, cloud_controller_secret("k8s"), OPAQUE),
    (ORCHESTRATOR, "delete", "", "secrets", VDC, cloud_controller_secret("k8s"), None),
    (HUB, "create", "", "secrets", PLATFORM, HUB_SECRET, OPAQUE),
    (HUB, "update", "", "configmaps", PLATFORM, PEER["metadata"]["name"], PEER),
    (PROVIDERS, "create", "coordination.k8s.io", "leases", PLATFORM, "flexplane-providers-leader", None),
    (PROVIDERS, "create", "events.k8s.io", "events", PLATFORM, "audit", None),
    (PROVIDERS, "patch", "infrastructure.flexplane.io", "proxmoxmachines", VDC, "m", None),
    (PROVIDERS, "create", RBAC_GROUP, "rolebindings", VDC, PROVIDERS_VDC_ROLE, PROVIDERS_VDC_BINDING),
    (PROVIDERS, "create", RBAC_GROUP, "rolebindings", CONTROL_PLANE, PROVIDERS_CP_ROLE, PROVIDERS_CP_BINDING),
    (PROVIDERS, "create", "", "secrets", VDC, "k8s-kubeconfig", OPAQUE),
    (PROVIDERS, "delete", "", "secrets", VDC, "k8s-kubeconfig", None),
    (PROVIDERS, "create", "", "namespaces", "", CONTROL_PLANE, None),
    (PROVIDERS, "delete", "", "namespaces", "", CONTROL_PLANE, None),
    (PROVIDERS, "create", "", "secrets", CONTROL_PLANE, "pki", OPAQUE),
    (PROVIDERS, "create", "apps", "deployments", CONTROL_PLANE, "control-plane", None),
    (PROVIDERS, "create", "apps", "statefulsets", CONTROL_PLANE, "etcd", None),
    (PROVIDERS, "create", "batch", "cronjobs", CONTROL_PLANE, "etcd-backup", None),
    (PROVIDERS, "create", "batch", "jobs", CONTROL_PLANE, "etcd-restore-0", None),
    (PROVIDERS, "delete", "batch", "jobs", CONTROL_PLANE, "etcd-restore-0", None),
    (PROVIDERS, "create", "", "persistentvolumeclaims", CONTROL_PLANE, "data-etcd-0", None),
    (PROVIDERS, "create", "", "secrets", CONTROL_PLANE, "etcd-backup", OPAQUE),
    (PROVIDERS, "create", MONITORING, "servicemonitors", CONTROL_PLANE, "apiserver-metrics", None),
    (PROVIDERS, "patch", MONITORING, "servicemonitors", CONTROL_PLANE, "apiserver-metrics", None),
    (PROVIDERS, "delete", MONITORING, "servicemonitors", CONTROL_PLANE, "apiserver-metrics", None),
    (PROVIDERS, "create", "", "secrets", CONTROL_PLANE, "apiserver-metrics", TLS),
    (PROVIDERS, "create", "", "events", VDC, "k8s.1", None),
    (SETUP, "create", "", "secrets", PLATFORM, "flexplane-zitadel-service-user", OPAQUE),
    (SETUP, "patch", "", "secrets", PLATFORM, "flexplane-portal-oidc", OPAQUE),
]


@pytest.mark.parametrize(
    ("account", "verb", "group", "resource", "namespace", "name", "obj"),
    PRODUCT_WRITES,
    ids=[f"{w[0].name}-{w[1]}-{w[3]}-{w[4] or 'cluster'}" for w in PRODUCT_WRITES],
)
def test_the_fences_admit_each_write_the_product_makes(
    cluster: Cluster,
    bound: dict[Account, list[Manifest]],
    account: Account,
    verb: str,
    group: str,
    resource: str,
    namespace: str,
    name: str,
    obj: Any,
) -> None:
    named = None if verb == "create" else name
    assert cluster.rbac_allows(account, verb, group, resource, namespace, named, bound[account])
    assert cluster.refusals(account, verb, group, resource, namespace, name, obj) == []


@pytest.mark.parametrize("verb", ["get", "create", "patch", "delete"])
def test_the_providers_hold_service_monitors_in_a_control_planes_namespace_only(
    cluster: Cluster, bound: dict[Account, list[Manifest]], verb: str
) -> None:
    """Each hosted API server's ServiceMonitor (providers/controlplane/monitoring.py), through the role they
    bind themselves to in an fpcp-* namespace: in no other namespace, not even read."""
    reached = [
        namespace
        for namespace in NAMESPACES
        if cluster.rbac_allows(
            PROVIDERS, verb, MONITORING, "servicemonitors", namespace, "x", bound[PROVIDERS]
        )
    ]
    assert reached == [CONTROL_PLANE]


@pytest.mark.parametrize(
    ("account", "verb", "resource", "name", "obj"),
    [
        (HUB, "create", "secrets", "flexplane-agent-ca", OPAQUE),
        (HUB, "update", "configmaps", "fp-host-a", CATALOG),
        (SETUP, "create", "secrets", "flexplane-agent-ca", OPAQUE),
    ],
)
def test_the_fences_narrow_what_rbac_cannot_narrow_by_name(
    cluster: Cluster, account: Account, verb: str, resource: str, name: str, obj: Any
) -> None:
    assert cluster.rbac_allows(account, verb, "", resource, PLATFORM)
    assert cluster.refusals(account, verb, "", resource, PLATFORM, name, obj)


@pytest.mark.parametrize("verb", ["create", "update", "delete"])
def test_the_orchestrator_writes_no_secret_of_a_vdc_namespace_but_a_cloud_controllers_key(
    cluster: Cluster, bound: dict[Account, list[Manifest]], verb: str
) -> None:
    """A cluster's CA (``<cluster>-ca``) is the control-plane provider's: the orchestrator only reads it."""
    named, obj = (None, OPAQUE) if verb == "create" else ("k8s-ca", None if verb == "delete" else OPAQUE)
    assert cluster.rbac_allows(ORCHESTRATOR, verb, "", "secrets", VDC, named, bound[ORCHESTRATOR])
    assert cluster.refusals(ORCHESTRATOR, verb, "", "secrets", VDC, "k8s-ca", obj)


# --- each grant is one the code uses ------------------------------------------------------------------

KUBE = "orchestrator/sources/kube.py"
CAPI = "orchestrator/sources/clusterapi.py"
MESH = "orchestrator/services/mesh.py"
SETUP_SCRIPT = "charts/identity/files/zitadel_bootstrap.py"
PROVIDERS_KUBE = "providers/common/kube.py"
CP_KUBE = "providers/controlplane/kube.py"
CP_STEPS = "providers/controlplane/steps.py"
CP_HANDLERS = "providers/controlplane/handlers.py"
INFRA_HANDLERS = "providers/infrastructure/handlers.py"
INFRA_MACHINES = "providers/infrastructure/machines.py"
ACCESS = "providers/common/access.py"
# Where a grant applies: in a namespace, or everywhere ("*", a ClusterRoleBinding).
EVERYWHERE = "*"
CLUSTER_API_KINDS = {
    "cluster.x-k8s.io": ("clusters", "machinedeployments"),
    "bootstrap.cluster.x-k8s.io": ("kubeadmconfigtemplates",),
    "infrastructure.flexplane.io": ("proxmoxclusters", "proxmoxmachinetemplates"),
    "controlplane.flexplane.io": ("flexcontrolplanes",),
}
Needs = dict[tuple[str, str, str, str], tuple[str, str]]


def needs(where: str, group: str, resources: tuple[str, ...], path: str, calls: dict[str, str]) -> Needs:
    """Grants of ``verb`` on each of ``resources``, each needed by the text ``calls[verb]`` of ``path``."""
    return {(where, group, r, verb): (path, text) for r in resources for verb, text in calls.items()}


def orchestrator_needs() -> Needs:
    out: Needs = {}
    crud = {"get": "read_namespaced_{}", "list": "list_namespaced_{}", "create": "create_namespaced_{}"}
    crud |= {"update": "replace_namespaced_{}", "delete": "delete_namespaced_{}"}
    for resource, noun in (("configmaps", "config_map"), ("secrets", "secret")):
        out |= needs(PLATFORM, "", (resource,), KUBE, {v: t.format(noun) for v, t in crud.items()})
    out |= needs(
        PLATFORM, "coordination.k8s.io", ("leases",), KUBE, {v: t.format("lease") for v, t in crud.items()}
    )
    events = {"create": "create_namespaced_event", "list": "list_namespaced_event"}
    out |= needs(PLATFORM, "events.k8s.io", ("events",), KUBE, events)
    objects = {"list": "list_cluster_custom_object", "create": "create_namespaced_custom_object"}
    objects |= {"patch": "patch_namespaced_custom_object", "delete": "delete_namespaced_custom_object"}
    for group, resources in CLUSTER_API_KINDS.items():
        out |= needs(EVERYWHERE, group, resources, CAPI, objects)
    out |= needs(EVERYWHERE, "cluster.x-k8s.io", ("machines",), CAPI, {"list": "list_cluster_custom_object"})
    out |= needs(
        EVERYWHERE, "infrastructure.flexplane.io", ("proxmoxmachines",), CAPI, {"list": "list_cluster"}
    )
    out |= needs(EVERYWHERE, "", ("namespaces",), CAPI, {"create": "self.core.create_namespace("})
    out |= needs(
        EVERYWHERE, RBAC_GROUP, ("rolebindings",), CAPI, {"create": "create_namespaced_role_binding"}
    )
    out |= needs(EVERYWHERE, RBAC_GROUP, ("clusterroles",), CAPI, {"bind": "role_ref=client.V1RoleRef("})
    # The VDC role, which it binds itself to in each VDC's namespace: a cluster's CA, to sign kubeconfigs;
    # a cluster's cloud controller's key, written and deleted.
    secrets = {"get": "self.core.read_namespaced_secret", "create": "self.core.create_namespaced_secret"}
    secrets |= {
        "update": "self.core.replace_namespaced_secret",
        "delete": "self.core.delete_namespaced_secret",
    }
    out |= needs(VDC, "", ("secrets",), CAPI, secrets)
    return out


def hub_needs() -> Needs:
    return needs(
        PLATFORM, "", ("secrets",), MESH, {"get": "source.get_secret(", "create": "source.create_secret("}
    ) | needs(
        PLATFORM,
        "",
        ("configmaps",),
        MESH,
        {"list": "source.list_catalog([", "update": "source.replace_catalog(PEER"},
    )


def setup_needs() -> Needs:
    calls = {"create": '"POST", f"/api/v1/namespaces/{namespace}/secrets"'}
    calls |= {
        "get": '"GET", f"/api/v1/namespaces/{namespace}/secrets/{name}"',
        "patch": '"PATCH", path, {"data"',
    }
    return needs(PLATFORM, "", ("secrets",), SETUP_SCRIPT, calls)


def providers_needs() -> Needs:
    out: Needs = {}
    # The catalog, the leader Lease and quota locks, and audit Events, through the orchestrator's create path.
    out |= needs(PLATFORM, "", ("configmaps",), KUBE, {"get": "read_namespaced_config_map"})
    out |= needs(PLATFORM, "", ("configmaps",), KUBE, {"list": "list_namespaced_config_map"})
    lease = {
        "get": "read_namespaced_lease",
        "list": "list_namespaced_lease",
        "create": "create_namespaced_lease",
    }
    lease |= {"update": "replace_namespaced_lease", "delete": "delete_namespaced_lease"}
    out |= needs(PLATFORM, "coordination.k8s.io", ("leases",), KUBE, lease)
    out |= needs(PLATFORM, "events.k8s.io", ("events",), KUBE, {"create": "create_namespaced_event"})
    # Their own kinds, across namespaces: watched by kopf, read and merge-patched.
    infra = ("proxmoxclusters", "proxmoxmachines")
    out |= needs(
        EVERYWHERE,
        "infrastructure.flexplane.io",
        infra,
        PROVIDERS_KUBE,
        {"get": "def get(", "patch": "patch_namespaced_custom_object"},
    )
    out |= needs(
        EVERYWHERE,
        "infrastructure.flexplane.io",
        infra,
        PROVIDERS_KUBE,
        {"list": "list_namespaced_custom_object"},
    )
    out |= needs(
        EVERYWHERE, "infrastructure.flexplane.io", infra, INFRA_HANDLERS, {"watch": "@kopf.on.create("}
    )
    status = tuple(f"{r}/status" for r in infra)
    out |= needs(
        EVERYWHERE,
        "infrastructure.flexplane.io",
        status,
        PROVIDERS_KUBE,
        {"patch": "patch_namespaced_custom_object_status"},
    )
    fcp = ("flexcontrolplanes",)
    out |= needs(
        EVERYWHERE,
        "controlplane.flexplane.io",
        fcp,
        CP_HANDLERS,
        {"get": '"FlexControlPlane"', "list": "@kopf.on.create(*_FCP", "watch": "@kopf.on.create(*_FCP"},
    )
    out |= needs(
        EVERYWHERE,
        "controlplane.flexplane.io",
        fcp,
        CP_STEPS,
        {"patch": 'kube.patch(FCP_API, "FlexControlPlane"'},
    )
    out |= needs(
        EVERYWHERE,
        "controlplane.flexplane.io",
        ("flexcontrolplanes/status",),
        CP_STEPS,
        {"patch": 'subresource="status"'},
    )
    # Cluster API core's objects: read, watched where a change wakes a reconcile, the node pools patched.
    out |= needs(
        EVERYWHERE, "cluster.x-k8s.io", ("clusters",), CP_STEPS, {"get": "kube.get(CLUSTER_API, CLUSTER.kind"}
    )
    out |= needs(
        EVERYWHERE,
        "cluster.x-k8s.io",
        ("clusters",),
        CP_HANDLERS,
        {"list": "@kopf.on.event(CLUSTER.", "watch": "@kopf.on.event(CLUSTER."},
    )
    out |= needs(EVERYWHERE, "cluster.x-k8s.io", ("machines",), INFRA_MACHINES, {"get": "kube.get(MACHINE,"})
    out |= needs(
        EVERYWHERE,
        "cluster.x-k8s.io",
        ("machines",),
        INFRA_HANDLERS,
        {"list": "@kopf.on.event(MACHINE.", "watch": "@kopf.on.event(MACHINE."},
    )
    workers = "providers/controlplane/workers.py"
    md = {"list": '("labelSelector"', "patch": 'kube.request("PATCH", f"{path}/{name}"'}
    out |= needs(EVERYWHERE, "cluster.x-k8s.io", ("machinedeployments",), workers, md)
    # The hosted control planes' objects, made or brought back to their manifests; namespaces and
    # Secrets deleted.
    ensure = {
        "get": 'self.request("GET", manifest_path(manifest))',
        "create": '"POST", manifest_path(manifest, collection=True)',
    }
    ensure |= {"patch": 'self.request("PATCH", manifest_path(manifest)'}
    out |= needs(EVERYWHERE, "", ("namespaces", "configmaps", "services"), CP_KUBE, ensure)
    out |= needs(EVERYWHERE, "apps", ("deployments", "statefulsets"), CP_KUBE, ensure)
    out |= needs(EVERYWHERE, "policy", ("poddisruptionbudgets",), CP_KUBE, ensure)
    out |= needs(EVERYWHERE, "batch", ("cronjobs",), CP_KUBE, ensure)
    # An etcd restore's Jobs: made (ensure), read until they end, deleted.
    out |= needs(EVERYWHERE, "batch", ("jobs",), CP_KUBE, ensure)
    restore = "providers/controlplane/restore.py"
    out |= needs(EVERYWHERE, "batch", ("jobs",), restore, {"delete": 'kube.delete("batch/v1", "Job"'})
    # A control plane made anew by a platform restore: its etcd members' volume claims, made (ensure).
    out |= needs(EVERYWHERE, "", ("persistentvolumeclaims",), CP_KUBE, ensure)
    out |= needs(EVERYWHERE, "", ("namespaces",), CP_STEPS, {"delete": 'kube.delete("v1", "Namespace"'})
    # The cloud controller's Deployment and its Secret, taken away with flex.plane's URL or the VDC's key.
    out |= needs(
        EVERYWHERE, "apps", ("deployments",), CP_STEPS, {"delete": 'kube.delete("apps/v1", "Deployment"'}
    )
    out |= needs(CONTROL_PLANE, "", ("secrets",), CP_STEPS, {"delete": 'kube.delete("v1", "Secret"'})
    # Secrets through the roles they bind themselves to (providers/common/access.py): a control plane's
    # PKI and kubeconfigs in its namespace; in the VDC's, Cluster API's two Secrets (deleted with the
    # control plane) and the machines' bootstrap data.
    out |= needs(
        EVERYWHERE, RBAC_GROUP, ("rolebindings",), PROVIDERS_KUBE, {"get": "read_namespaced_role_binding"}
    )
    out |= needs(
        EVERYWHERE,
        RBAC_GROUP,
        ("rolebindings",),
        PROVIDERS_KUBE,
        {"create": "create_namespaced_role_binding"},
    )
    out |= needs(EVERYWHERE, RBAC_GROUP, ("rolebindings",), CP_KUBE, {"patch": ensure["patch"]})
    out |= needs(EVERYWHERE, RBAC_GROUP, ("clusterroles",), ACCESS, {"bind": '"roleRef": {"apiGroup"'})
    out |= needs(CONTROL_PLANE, "", ("secrets",), CP_KUBE, ensure)
    # Each hosted API server's ServiceMonitor (metrics.serviceMonitor): made or brought back to its manifest;
    # read, and deleted with its Secret, once the setting is off.
    out |= needs(CONTROL_PLANE, "monitoring.coreos.com", ("servicemonitors",), CP_KUBE, ensure)
    out |= needs(
        CONTROL_PLANE,
        "monitoring.coreos.com",
        ("servicemonitors",),
        CP_STEPS,
        {"delete": 'kube.delete(monitoring.API_VERSION, "ServiceMonitor"'},
    )
    out |= needs(VDC, "", ("secrets",), CP_KUBE, ensure)
    out |= needs(VDC, "", ("secrets",), CP_STEPS, {"delete": 'kube.delete("v1", "Secret"'})
    watched = {"list": "@kopf.on.event(", "watch": "@kopf.on.event("}
    out |= needs(EVERYWHERE, "", ("services",), CP_HANDLERS, watched)
    out |= needs(EVERYWHERE, "apps", ("deployments", "statefulsets"), CP_HANDLERS, watched)
    out |= needs(
        EVERYWHERE, "", ("events",), "providers/common/operator.py", {"create": "settings.posting.level"}
    )
    # Cluster API core's Cluster CRD, read once at start for its contract (the rule names that CRD only).
    out |= needs(
        EVERYWHERE,
        "apiextensions.k8s.io",
        ("customresourcedefinitions",),
        "providers/compat.py",
        {"get": "read_custom_resource_definition(CLUSTER_CRD"},
    )
    return out


NEEDED = {ORCHESTRATOR: orchestrator_needs, HUB: hub_needs, SETUP: setup_needs, PROVIDERS: providers_needs}


def held(cluster: Cluster, account: Account) -> set[tuple[str, str, str, str]]:
    """Every (where, group, resource, verb) ``account`` holds, the bindings it makes itself included."""
    grants = cluster.grants(account, cluster.escalated(account, NAMESPACES))
    return {
        (g.namespace or EVERYWHERE, group, resource, verb) for g, group, resource, verb in permissions(grants)
    }


@pytest.mark.parametrize("account", list(NEEDED), ids=str)
def test_each_grant_is_one_the_code_uses_and_each_use_is_granted(cluster: Cluster, account: Account) -> None:
    needed = NEEDED[account]()
    assert sorted(held(cluster, account) - needed.keys()) == [], "granted, and no code needs it"
    assert sorted(needed.keys() - held(cluster, account)) == [], "the code needs it, and it is not granted"
    for path, text in set(needed.values()):
        assert text in (ROOT / path).read_text(), f"{path} no longer says {text!r}"
