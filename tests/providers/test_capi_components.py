"""The two providers' clusterctl files (``make capi-components``, packaging/build_capi_components.py), read
the way clusterctl reads a provider's release: the metadata's release series for the version, the
components' variables found and substituted (``${VAR}``, ``${VAR:=default}``), every object labelled with
its provider and in one namespace, every manifest valid against Kubernetes' schemas, and the cluster
template generated with its variables and valid against the providers' CRDs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.kubeschema import invalid

ROOT = Path(__file__).resolve().parents[2]
BUILDER = ROOT / "packaging" / "build_capi_components.py"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
PROVIDERS = {
    "infrastructure-flexplane": "infrastructure-components.yaml",
    "control-plane-flexplane": "control-plane-components.yaml",
}
GROUPS = {
    "infrastructure-flexplane": "infrastructure.flexplane.io",
    "control-plane-flexplane": "controlplane.flexplane.io",
}
CLUSTER_SCOPED = {
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
# clusterctl's variable syntax (drone/envsubst): ${NAME}, or with a default after =, :=, - or :-.
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[=-])([^}]*))?\}")
LISTED = re.compile(r"^#   ([A-Z_][A-Z0-9_]*) \((required|default \"([^\"]*)\")\): ", re.MULTILINE)

# What an operator would set for `clusterctl generate cluster demo --target-namespace vdc-demo ...`.
TEMPLATE_VALUES = {
    "CLUSTER_NAME": "demo",
    "KUBERNETES_VERSION": "v1.33.4",
    "FLEXPLANE_VDC": "demo",
    "FLEXPLANE_NETWORK": "demo-net",
    "FLEXPLANE_NODE_IMAGE": "ubuntu-2404-kube-v1.33.4",
    "FLEXPLANE_COMPUTE_PROFILE": "small",
    "FLEXPLANE_STORAGE_PROFILE": "standard",
}


class MissingVariables(Exception):
    """As clusterctl refuses: required variables with no value."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("capi")
    subprocess.run([sys.executable, str(BUILDER), "--out", str(out)], check=True, cwd=ROOT, timeout=120)
    return out


def release(built: Path, label: str) -> Path:
    return built / label / f"v{VERSION}"


def variables(text: str) -> dict[str, str | None]:
    """The variables a file uses, each with its default (None: required), as clusterctl lists them."""
    found: dict[str, str | None] = {}
    for name, operator, default in VARIABLE.findall(text):
        found[name] = default if operator else found.get(name)
    return found


def listed(text: str) -> dict[str, str | None]:
    """The variables the file's leading comment documents, each with its default (None: required)."""
    return {name: (None if kind == "required" else default) for name, kind, default in LISTED.findall(text)}


def substituted(text: str, values: dict[str, str]) -> str:
    """The text with its variables replaced as clusterctl does: the value given, else the default."""
    missing = sorted({name for name, default in variables(text).items() if default is None} - set(values))
    if missing:
        raise MissingVariables(f"value for variables [{', '.join(missing)}] is not set")

    def value(match: re.Match[str]) -> str:
        name, operator, default = match.groups()
        return values.get(name, default if operator else "")

    return VARIABLE.sub(value, text)


def documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def components(built: Path, label: str, values: dict[str, str] | None = None) -> list[dict[str, Any]]:
    text = (release(built, label) / PROVIDERS[label]).read_text(encoding="utf-8")
    return documents(substituted(text, values or {}))


def test_each_provider_is_released_as_clusterctl_reads_a_provider(built: Path) -> None:
    assert {p.name for p in built.iterdir()} == set(PROVIDERS)
    assert {p.name for p in release(built, "infrastructure-flexplane").iterdir()} == {
        "metadata.yaml",
        "infrastructure-components.yaml",
        "cluster-template.yaml",
    }
    assert {p.name for p in release(built, "control-plane-flexplane").iterdir()} == {
        "metadata.yaml",
        "control-plane-components.yaml",
    }


@pytest.mark.parametrize("label", sorted(PROVIDERS))
def test_the_metadata_maps_the_release_series_of_the_version_to_v1beta2(built: Path, label: str) -> None:
    metadata = yaml.safe_load((release(built, label) / "metadata.yaml").read_text())
    major, minor = (int(part) for part in VERSION.split(".")[:2])

    assert metadata["apiVersion"] == "clusterctl.cluster.x-k8s.io/v1alpha3"
    assert metadata["kind"] == "Metadata"
    (series,) = [s for s in metadata["releaseSeries"] if (s["major"], s["minor"]) == (major, minor)]
    assert series["contract"] == "v1beta2"


@pytest.mark.parametrize("label", sorted(PROVIDERS))
def test_every_object_carries_its_provider_label(built: Path, label: str) -> None:
    objects = components(built, label)

    assert objects
    assert [
        o["metadata"]["name"]
        for o in objects
        if o["metadata"]["labels"].get("cluster.x-k8s.io/provider") != label
    ] == []


@pytest.mark.parametrize("label", sorted(PROVIDERS))
def test_the_components_hold_their_crds_rbac_namespace_and_deployment_in_one_namespace(
    built: Path, label: str
) -> None:
    objects = components(built, label, {"FLEXPLANE_NAMESPACE": "cloud"})
    kinds = {o["kind"] for o in objects}

    assert {
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    } <= kinds
    assert {"Role", "RoleBinding", "Deployment"} <= kinds
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"] == ["cloud"]
    namespaced = {o["metadata"].get("namespace") for o in objects if o["kind"] not in CLUSTER_SCOPED}
    assert namespaced == {"cloud"}  # clusterctl's rule: one namespace per provider's components
    assert {crd["spec"]["group"] for crd in objects if crd["kind"] == "CustomResourceDefinition"} == {
        GROUPS[label]
    }


@pytest.mark.parametrize("label", sorted(PROVIDERS))
def test_every_object_validates_against_the_kubernetes_schemas(built: Path, label: str) -> None:
    assert invalid(components(built, label)) == []
    assert invalid(components(built, label, {"FLEXPLANE_MESH_PROXY": "http://mesh.cloud.svc:3128"})) == []


@pytest.mark.parametrize("label", sorted(PROVIDERS))
def test_every_variable_of_the_components_is_listed_with_its_default(built: Path, label: str) -> None:
    text = (release(built, label) / PROVIDERS[label]).read_text(encoding="utf-8")

    assert variables(text) == listed(text)
    assert all(default is not None for default in variables(text).values())  # clusterctl init needs none


def test_each_deployment_runs_its_own_provider_under_its_own_lease_and_account(built: Path) -> None:
    seen = {}
    for label in PROVIDERS:
        (deployment,) = [o for o in components(built, label) if o["kind"] == "Deployment"]
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        seen[label] = (env["FLEXPLANE_PROVIDERS_LEADER_LEASE"], pod["serviceAccountName"])
        assert f"{env['FLEXPLANE_PROVIDERS']}-flexplane" == label
        assert container["image"] == f"ghcr.io/flexplane/flexplane:{VERSION}"
        assert env["FLEXPLANE_NAMESPACE"] == "flexplane"
    leases, accounts = zip(*seen.values(), strict=True)
    assert len(set(leases)) == len(set(accounts)) == len(PROVIDERS)


@pytest.mark.parametrize("label", sorted(PROVIDERS))
def test_the_role_core_aggregates_grants_the_providers_own_group_only(built: Path, label: str) -> None:
    (aggregated,) = [
        o
        for o in components(built, label)
        if o["kind"] == "ClusterRole"
        and o["metadata"]["labels"].get("cluster.x-k8s.io/aggregate-to-manager") == "true"
    ]

    assert aggregated["rules"]
    assert {group for rule in aggregated["rules"] for group in rule["apiGroups"]} == {GROUPS[label]}


def test_every_variable_of_the_cluster_template_is_listed(built: Path) -> None:
    text = (release(built, "infrastructure-flexplane") / "cluster-template.yaml").read_text(encoding="utf-8")

    assert variables(text) == listed(text)
    assert {name for name, default in variables(text).items() if default is None} == set(TEMPLATE_VALUES)


def test_the_cluster_template_wants_its_required_variables(built: Path) -> None:
    text = (release(built, "infrastructure-flexplane") / "cluster-template.yaml").read_text(encoding="utf-8")

    with pytest.raises(MissingVariables, match="FLEXPLANE_NETWORK"):
        substituted(text, {k: v for k, v in TEMPLATE_VALUES.items() if k != "FLEXPLANE_NETWORK"})


def test_the_cluster_template_generates_a_cluster_the_providers_crds_accept(built: Path) -> None:
    text = (release(built, "infrastructure-flexplane") / "cluster-template.yaml").read_text(encoding="utf-8")
    objects = documents(substituted(text, {**TEMPLATE_VALUES, "WORKER_MACHINE_COUNT": "3"}))
    by_kind = {o["kind"]: o for o in objects}

    assert set(by_kind) == {
        "Cluster",
        "ProxmoxCluster",
        "FlexControlPlane",
        "MachineDeployment",
        "ProxmoxMachineTemplate",
        "KubeadmConfigTemplate",
    }
    assert by_kind["Cluster"]["metadata"]["name"] == "demo"
    assert by_kind["MachineDeployment"]["spec"]["replicas"] == 3
    assert by_kind["FlexControlPlane"]["spec"]["replicas"] == 1
    assert by_kind["ProxmoxMachineTemplate"]["spec"]["template"]["spec"]["diskGb"] == 20
    assert by_kind["ProxmoxCluster"]["metadata"]["labels"]["flexplane.io/vdc"] == "demo"
    crds = {
        crd["spec"]["names"]["kind"]: crd
        for label in PROVIDERS
        for crd in components(built, label)
        if crd["kind"] == "CustomResourceDefinition"
    }
    for kind in ("ProxmoxCluster", "FlexControlPlane", "ProxmoxMachineTemplate"):
        (version,) = crds[kind]["spec"]["versions"]
        assert by_kind[kind]["apiVersion"] == f"{crds[kind]['spec']['group']}/{version['name']}"
        jsonschema.validate(by_kind[kind], version["schema"]["openAPIV3Schema"])
