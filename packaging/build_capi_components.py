#!/usr/bin/env python3
"""``make capi-components``: the two Cluster API providers as clusterctl installs providers.

    python3 packaging/build_capi_components.py [--out .build/capi]

clusterctl's provider contract: a provider's release is a folder of files clusterctl reads by name. This
writes one per provider, laid out as a clusterctl local repository (``<out>/<label>/v<version>/``), which
a ``clusterctl.yaml`` providers config points at:

- ``infrastructure-flexplane/v<version>/``: ``metadata.yaml``, ``infrastructure-components.yaml`` (the
  ProxmoxCluster, ProxmoxMachine and ProxmoxMachineTemplate CRDs, RBAC, namespace, Deployment) and
  ``cluster-template.yaml`` (a tenant cluster, for ``clusterctl generate cluster``);
- ``control-plane-flexplane/v<version>/``: ``metadata.yaml`` and ``control-plane-components.yaml`` (the
  FlexControlPlane CRD, RBAC, namespace, Deployment).

``metadata.yaml`` maps the project's release series (pyproject.toml's major.minor) to the contract
v1beta2. Every object of a components file carries ``cluster.x-k8s.io/provider`` (clusterctl's label of
the provider's objects: ``infrastructure-flexplane``, ``control-plane-flexplane``).

Why the chart's templates, rendered, rather than a second set of manifests: the RBAC, the admission
fence, the Deployment's security settings and environment are reviewed and tested once, in
charts/providers; a builder that wrote its own would drift from them. Each provider is the chart rendered
with its own name (so its own ServiceAccount, roles, fence and leader Lease) and ``FLEXPLANE_PROVIDERS``
set to run that provider only; the aggregated role Cluster API core uses keeps that provider's API group
only, and its roles keep only the grants that provider's code needs (``RBAC_NEEDS``: the
infrastructure provider cannot write a control plane's objects, nor the control-plane provider a
ProxmoxMachine). What an operator chooses becomes a clusterctl variable (``${VAR:=default}``): the chart is
rendered with a stand-in value for each (one its values.schema.json accepts) and the stand-in is then
replaced by the variable in the rendered text. The namespace is a variable too, not clusterctl's
``--target-namespace``: clusterctl moves every namespaced object to the target namespace but cannot
rewrite names inside strings (the fence's service account name, ``FLEXPLANE_SERVICE_ACCOUNT``), so the
providers install into the platform namespace ``FLEXPLANE_NAMESPACE`` names (the flextenant release's,
where the catalog and the VDCs' locks are).

Each file starts with a comment listing its variables, what each means and its default; the test
(tests/providers/test_capi_components.py) holds that list to the variables the file uses.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))

from build_deb import project_version  # noqa: E402

CHART = ROOT / "charts" / "providers"
CONTRACT = "v1beta2"
PROVIDER_LABEL = "cluster.x-k8s.io/provider"
PROVIDER_NAME = "flexplane"
METADATA_API_VERSION = "clusterctl.cluster.x-k8s.io/v1alpha3"
# Helm's bookkeeping labels: meaningless once clusterctl, not Helm, manages the objects.
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")


@dataclass(frozen=True)
class Variable:
    """A clusterctl variable: its name, what it sets, and its default (None: required)."""

    name: str
    means: str
    default: str | None = None

    @property
    def reference(self) -> str:
        """How the files write it: ``${NAME}`` when required, ``${NAME:=default}`` otherwise."""
        return f"${{{self.name}}}" if self.default is None else f"${{{self.name}:={self.default}}}"


@dataclass(frozen=True)
class ComponentVariable:
    """A variable of the components: the stand-in value the chart is rendered with, then replaced."""

    variable: Variable
    stand_in: str


NAMESPACE = ComponentVariable(
    Variable(
        "FLEXPLANE_NAMESPACE",
        "the platform namespace (the flextenant release's): the providers run there, and read the catalog "
        "and take the VDCs' locks there",
        "flexplane",
    ),
    "capi-variable-namespace",
)
COMPONENT_VARIABLES = (
    NAMESPACE,
    ComponentVariable(
        Variable(
            "FLEXPLANE_IMAGE_REPOSITORY",
            "the image's repository (the orchestrator's image holds the providers), without a tag",
            "ghcr.io/flexplane/flexplane",
        ),
        "capi-variable-image-repository",
    ),
    ComponentVariable(
        Variable(
            "FLEXPLANE_SECRET_KEY_SECRET",
            "the Secret in the platform namespace whose key secret-key holds FLEXPLANE_SECRET_KEY (the "
            "flextenant chart's)",
            "flexplane-secret-key",
        ),
        "capi-variable-secret-key-secret",
    ),
    ComponentVariable(
        Variable(
            "FLEXPLANE_CAPI_AGENT_TLS_SECRET",
            "the Secret holding the providers' client certificate for the agents (CN flexplane-capi; "
            "keys ca.crt, tls.crt, tls.key), made by cert-manager from the platform CA",
            "flexplane-capi-agent-tls",
        ),
        "capi-variable-agent-tls-secret",
    ),
    ComponentVariable(
        Variable(
            "FLEXPLANE_MESH_PROXY",
            "the mesh hub's CONNECT proxy the agents are reached through "
            "(http://<flextenant>-mesh-proxy.<namespace>.svc:3128); empty: the agents' own addresses",
            "",
        ),
        "http://capi-variable-mesh-proxy",
    ),
    ComponentVariable(
        Variable(
            "FLEXPLANE_NODEPORT_ADDRESS",
            "the address nodes reach a NodePort control plane Service on; empty: NodePort control planes "
            "wait",
            "",
        ),
        "capi-variable-nodeport-address",
    ),
)

# The cluster template's variables. clusterctl sets the first four from `clusterctl generate cluster
# <name> --kubernetes-version ... --control-plane-machine-count ... --worker-machine-count ...`.
TEMPLATE_VARIABLES = (
    Variable("CLUSTER_NAME", "the tenant cluster's name (clusterctl's argument)"),
    Variable("KUBERNETES_VERSION", "the Kubernetes version, e.g. v1.33.4 (--kubernetes-version)"),
    Variable("CONTROL_PLANE_MACHINE_COUNT", "API server replicas of the hosted control plane (1 or 3)", "1"),
    Variable("WORKER_MACHINE_COUNT", "worker VMs of the node pool 'workers'", "2"),
    Variable(
        "FLEXPLANE_VDC", "the VDC the cluster belongs to (its namespace is vdc-<vdc>: --target-namespace)"
    ),
    Variable("FLEXPLANE_NETWORK", "the VDC's network the workers sit on"),
    Variable("FLEXPLANE_NODE_IMAGE", "the catalog image of the workers (with kubeadm and the kubelet)"),
    Variable("FLEXPLANE_COMPUTE_PROFILE", "the catalog compute profile of the workers"),
    Variable("FLEXPLANE_STORAGE_PROFILE", "the catalog storage profile of the workers' disks"),
    Variable("FLEXPLANE_DISK_GB", "each worker's disk, in GB", "20"),
)


@dataclass(frozen=True)
class Provider:
    """One provider as clusterctl names it: its type, its selection of ``python -m providers``, its kinds."""

    kind: str  # clusterctl's type prefix: "infrastructure" or "control-plane"
    group: str
    components: str

    @property
    def label(self) -> str:
        return f"{self.kind}-{PROVIDER_NAME}"

    @property
    def fullname(self) -> str:
        return f"{PROVIDER_NAME}-{self.kind}"


INFRASTRUCTURE = Provider("infrastructure", "infrastructure.flexplane.io", "infrastructure-components.yaml")
CONTROL_PLANE = Provider("control-plane", "controlplane.flexplane.io", "control-plane-components.yaml")
PROVIDERS = (INFRASTRUCTURE, CONTROL_PLANE)


def metadata(version: str) -> dict[str, Any]:
    """clusterctl's metadata.yaml: this release series (major.minor) speaks the contract v1beta2."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return {
        "apiVersion": METADATA_API_VERSION,
        "kind": "Metadata",
        "releaseSeries": [{"major": major, "minor": minor, "contract": CONTRACT}],
    }


def chart_values(provider: Provider, version: str) -> dict[str, Any]:
    """The chart's values for one provider: its own names and Lease, the stand-ins of the variables."""
    stand_in = {each.variable.name: each.stand_in for each in COMPONENT_VARIABLES}
    return {
        "fullnameOverride": provider.fullname,
        "image": {"repository": stand_in["FLEXPLANE_IMAGE_REPOSITORY"], "tag": version},
        "leaderElection": {"leaseName": f"{provider.fullname}-leader"},
        "config": {
            "namespace": "",  # the release namespace: the platform namespace
            "meshProxy": stand_in["FLEXPLANE_MESH_PROXY"],
            "nodePortAddress": stand_in["FLEXPLANE_NODEPORT_ADDRESS"],
        },
        "secretKey": {"existingSecret": stand_in["FLEXPLANE_SECRET_KEY_SECRET"]},
        "agentTLS": {"secretName": stand_in["FLEXPLANE_CAPI_AGENT_TLS_SECRET"]},
        "extraEnv": [{"name": "FLEXPLANE_PROVIDERS", "value": provider.kind}],
    }


def rendered(provider: Provider, version: str) -> list[dict[str, Any]]:
    """The chart's objects for one provider, with the variables in place of their stand-ins."""
    import helm_python

    with helm_python.Chart.load(CHART) as chart:
        templates = chart.render(
            chart_values(provider, version),
            name=provider.fullname,
            namespace=NAMESPACE.stand_in,
            is_install=True,
        )
    objects = []
    for path, text in sorted(templates.items()):
        if not path.endswith((".yaml", ".yml")):
            continue
        for each in COMPONENT_VARIABLES:
            text = text.replace(each.stand_in, each.variable.reference)
        objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return objects


def crds(provider: Provider) -> list[dict[str, Any]]:
    """The chart's CRDs of the provider's API group."""
    found = [
        yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted((CHART / "crds").glob("*.yaml"))
    ]
    return [crd for crd in found if crd["spec"]["group"] == provider.group]


def namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE.variable.reference}}


# What each provider's code needs of the chart's RBAC, which grants both providers' needs (the chart runs
# them in one Deployment): tests/charts/test_rbac.py names the call behind each grant. Keyed by the
# chart's role (``cluster``: <fullname>; ``platform``: the Role <fullname> in the platform namespace;
# ``vdc`` and ``control-plane``: the Secrets roles the providers bind themselves to, <fullname>-vdc in
# vdc-* and <fullname>-control-plane in fpcp-*), then by (API group, resource): the verbs. A provider's
# components keep of the chart's rules only these (the chart stays the upper bound: a grant named here
# that the chart dropped is not given back), and drop a role left with none. What both need comes from
# providers/common and the process: kopf's Events, Cluster API core's contract check (providers/compat.py),
# the leader Lease, the RoleBinding to a Secrets role (providers/common/access.py).
Needs = dict[str, dict[tuple[str, str], frozenset[str]]]
_READ = frozenset({"get", "list", "watch"})
_ENSURE = frozenset({"get", "create", "patch"})
_COMMON: Needs = {
    "cluster": {
        ("", "events"): frozenset({"create"}),
        ("apiextensions.k8s.io", "customresourcedefinitions"): frozenset({"get"}),
        ("rbac.authorization.k8s.io", "rolebindings"): frozenset({"get", "create"}),
    },
    "platform": {("coordination.k8s.io", "leases"): frozenset({"get", "create", "update"})},
}
RBAC_NEEDS: dict[str, Needs] = {
    # providers/infrastructure: ProxmoxClusters and ProxmoxMachines, their owner Machine (watched for its
    # bootstrap data) and Cluster; the bootstrap data Secret in the VDC's namespace, read; a VM made and
    # deleted through the orchestrator's create path (the catalog, the VDCs' quota locks, audit Events).
    "infrastructure": {
        "cluster": {
            **_COMMON["cluster"],
            **{
                ("infrastructure.flexplane.io", kind): _READ | {"patch"}
                for kind in ("proxmoxclusters", "proxmoxmachines")
            },
            **{
                ("infrastructure.flexplane.io", f"{kind}/status"): frozenset({"patch"})
                for kind in ("proxmoxclusters", "proxmoxmachines")
            },
            ("cluster.x-k8s.io", "clusters"): frozenset({"get"}),
            ("cluster.x-k8s.io", "machines"): _READ,
            ("rbac.authorization.k8s.io", "clusterroles"): frozenset({"bind"}),
        },
        "platform": {
            ("", "configmaps"): frozenset({"get", "list"}),
            ("coordination.k8s.io", "leases"): frozenset({"get", "list", "create", "update", "delete"}),
            ("events.k8s.io", "events"): frozenset({"create"}),
        },
        "vdc": {("", "secrets"): frozenset({"get"})},
    },
    # providers/controlplane: FlexControlPlanes, the Clusters they serve, the node pools they upgrade; the
    # hosted control planes' namespaces and objects (providers/controlplane/kube.py, steps.py, restore.py);
    # Cluster API's Secrets in the VDC's namespace and the control plane's own in its namespace.
    "control-plane": {
        "cluster": {
            **_COMMON["cluster"],
            ("controlplane.flexplane.io", "flexcontrolplanes"): _READ | {"patch"},
            ("controlplane.flexplane.io", "flexcontrolplanes/status"): frozenset({"patch"}),
            ("cluster.x-k8s.io", "clusters"): _READ,
            ("cluster.x-k8s.io", "machinedeployments"): frozenset({"list", "patch"}),
            ("rbac.authorization.k8s.io", "rolebindings"): _ENSURE,
            ("rbac.authorization.k8s.io", "clusterroles"): frozenset({"bind"}),
            ("", "namespaces"): _ENSURE | {"delete"},
            ("", "configmaps"): _ENSURE,
            ("", "services"): _READ | _ENSURE,
            ("apps", "deployments"): _READ | _ENSURE | {"delete"},
            ("apps", "statefulsets"): _READ | _ENSURE,
            ("policy", "poddisruptionbudgets"): _ENSURE,
            ("batch", "cronjobs"): _ENSURE,
            ("batch", "jobs"): _ENSURE | {"delete"},
            # A control plane made anew by a platform restore: its etcd members' volume claims.
            ("", "persistentvolumeclaims"): _ENSURE,
        },
        "platform": _COMMON["platform"],
        "vdc": {("", "secrets"): _ENSURE | {"delete"}},
        "control-plane": {
            ("", "secrets"): _ENSURE | {"delete"},
            ("monitoring.coreos.com", "servicemonitors"): _ENSURE | {"delete"},
        },
    },
}


def _role_of(obj: dict[str, Any], provider: Provider) -> str | None:
    """Which of the chart's providers roles obj is (see RBAC_NEEDS), None for any other object."""
    name = obj["metadata"]["name"]
    if obj["kind"] == "Role" and name == provider.fullname:
        return "platform"
    if obj["kind"] == "ClusterRole":
        return {
            provider.fullname: "cluster",
            f"{provider.fullname}-vdc": "vdc",
            f"{provider.fullname}-control-plane": "control-plane",
        }.get(name)
    return None


def needed_rules(obj: dict[str, Any], provider: Provider) -> dict[str, Any] | None:
    """One of the chart's providers roles narrowed to what the provider needs (RBAC_NEEDS); None when it
    needs none of it. The ``bind`` rule keeps only the Secrets roles the provider has. Any other object
    is returned as it is."""
    role = _role_of(obj, provider)
    if role is None:
        return obj
    needs = RBAC_NEEDS[provider.kind].get(role, {})
    kept_roles = {
        f"{provider.fullname}-{r}" for r in ("vdc", "control-plane") if r in RBAC_NEEDS[provider.kind]
    }
    rules = []
    for rule in obj["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                verbs = [v for v in rule["verbs"] if v in needs.get((group, resource), ())]
                if not verbs:
                    continue
                narrowed: dict[str, Any] = {"apiGroups": [group], "resources": [resource], "verbs": verbs}
                if "resourceNames" in rule:
                    names = [
                        n for n in rule["resourceNames"] if resource != "clusterroles" or n in kept_roles
                    ]
                    if not names:
                        continue
                    narrowed["resourceNames"] = names
                rules.append(narrowed)
    if not rules:
        return None
    return {**obj, "rules": rules}


def own_rules_only(obj: dict[str, Any], provider: Provider) -> dict[str, Any]:
    """The role aggregated into Cluster API core's manager, narrowed to the provider's own API group."""
    labels = obj["metadata"].get("labels") or {}
    if obj["kind"] == "ClusterRole" and labels.get("cluster.x-k8s.io/aggregate-to-manager") == "true":
        obj["rules"] = [rule for rule in obj["rules"] if rule["apiGroups"] == [provider.group]]
    return obj


def labelled(obj: dict[str, Any], provider: Provider) -> dict[str, Any]:
    """The object with clusterctl's provider label, Helm's bookkeeping labels dropped."""
    labels = {k: v for k, v in (obj["metadata"].get("labels") or {}).items() if k not in HELM_LABELS}
    labels[PROVIDER_LABEL] = provider.label
    obj["metadata"]["labels"] = labels
    return obj


def components(provider: Provider, version: str) -> list[dict[str, Any]]:
    """Every object of the provider's components file: the namespace, the CRDs, then the chart's."""
    objects = [namespace(), *crds(provider), *rendered(provider, version)]
    narrowed = [needed_rules(obj, provider) for obj in objects]
    return [labelled(own_rules_only(obj, provider), provider) for obj in narrowed if obj is not None]


def cluster_template() -> list[dict[str, Any]]:
    """A tenant cluster as the orchestrator writes one (orchestrator.services.clusters.objects), with one
    node pool "workers", its values the template's variables."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexplane.settings")
    import django

    django.setup()
    from orchestrator.services.clusters.objects import ClusterPlan, PoolPlan, all_objects

    ref = {v.name: v.reference for v in TEMPLATE_VARIABLES}
    # Numbers are variables here: clusterctl substitutes the text, and YAML reads the result as a number.
    pool = PoolPlan(
        name="workers",
        compute_profile=ref["FLEXPLANE_COMPUTE_PROFILE"],
        storage_profile=ref["FLEXPLANE_STORAGE_PROFILE"],
        count=cast(int, ref["WORKER_MACHINE_COUNT"]),
        disk_gb=cast(int, ref["FLEXPLANE_DISK_GB"]),
        vcpus=0,  # the compute profile's; not written into the objects
        memory_mib=0,
    )
    plan = ClusterPlan(
        vdc=ref["FLEXPLANE_VDC"],
        name=ref["CLUSTER_NAME"],
        version=ref["KUBERNETES_VERSION"],
        image=ref["FLEXPLANE_NODE_IMAGE"],
        network=ref["FLEXPLANE_NETWORK"],
        control_plane_replicas=cast(int, ref["CONTROL_PLANE_MACHINE_COUNT"]),
        pools=(pool,),
    )
    return [body for _resource, body in all_objects(plan)]


def header(title: str, variables: tuple[Variable, ...]) -> str:
    """The file's leading comment: what it is, and each variable (required, or its default)."""
    lines = [
        f"# {title}",
        "#",
        "# Variables (clusterctl substitutes them; set them in the environment or clusterctl.yaml):",
    ]
    for v in variables:
        default = "required" if v.default is None else f'default "{v.default}"'
        lines.append(f"#   {v.name} ({default}): {v.means}")
    return "\n".join(lines) + "\n"


# The template's variables that stand for numbers: written bare, so that YAML reads what clusterctl puts
# there as a number. Every other value holding a variable is written in double quotes, so that it stays a
# string whatever is substituted (an empty default, a VDC named "123", a "true").
NUMBERS = {v.reference for v in TEMPLATE_VARIABLES if v.name.endswith(("_COUNT", "_GB"))}


class _Dumper(yaml.SafeDumper):
    """YAML with each value that holds a variable quoted, but for the numbers'."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if "${" in value and value not in NUMBERS else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def dump(objects: list[dict[str, Any]]) -> str:
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, width=120)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build(out: Path, version: str) -> list[Path]:
    """Both providers' files under ``out``; returns the paths written."""
    written = []
    component_variables = tuple(each.variable for each in COMPONENT_VARIABLES)
    for provider in PROVIDERS:
        folder = out / provider.label / f"v{version}"
        written.append(write(folder / "metadata.yaml", dump([metadata(version)])))
        title = f"flex.plane's {provider.kind} provider {version} (clusterctl components)"
        body = header(title, component_variables) + "---\n" + dump(components(provider, version))
        written.append(write(folder / provider.components, body))
    title = f"A flex.plane tenant cluster (clusterctl generate cluster), provider version {version}"
    template = header(title, TEMPLATE_VARIABLES) + "---\n" + dump(cluster_template())
    written.append(write(out / INFRASTRUCTURE.label / f"v{version}" / "cluster-template.yaml", template))
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".build" / "capi")
    parser.add_argument("--version", default=project_version())
    args = parser.parse_args()
    for path in build(args.out, args.version):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
