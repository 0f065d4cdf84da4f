"""The tenant cluster's cloud controller beside its hosted control plane: its settings, its Secret and
Deployment as rendered, and the step that makes them while the VDC holds the cluster's key (against the
devstack's Kubernetes emulator as the management cluster)."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from devstack.kube import KubeServer
from orchestrator.sources.kube_objects import CLOUD_CONTROLLER_KEY, cloud_controller_secret
from providers.cloud.__main__ import arguments
from providers.controlplane import handlers, model, pki, render, steps, tenant
from providers.controlplane.kube import Kube
from tests.kubeschema import invalid

CP = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", endpoint_host="10.20.0.7")
CLOUD = model.CloudController(
    url="https://flexplane.example.com",
    identity_url="https://id.example.com",
    project_id="301",
    image="registry.example.com/flexplane/flexplane:1.2.3",
)
KEY = json.dumps({"type": "serviceaccount", "keyId": "k1", "key": "PEM", "userId": "u1"}).encode()
CA_BUNDLE = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
VDC_NS = "vdc-demo"
CP_NS = "fpcp-demo-web"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return pki.ensure_pki({}, CP.names)


def rendered(files: dict[str, bytes], cloud: model.CloudController = CLOUD) -> tuple[dict, dict]:
    secret, deployment = render.render_cloud_controller(CP, cloud, files, KEY)
    return secret, deployment


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(only)


def env(deployment: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container(deployment)["env"]}


def mounted(secret: dict[str, Any], deployment: dict[str, Any], path: str) -> bytes:
    """The bytes the container reads at ``path``: the key of the Secret mounted whole at its directory."""
    (volume_mount,) = [
        m for m in container(deployment)["volumeMounts"] if path.startswith(m["mountPath"] + "/")
    ]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes[volume_mount["name"]]["secret"]["secretName"] == secret["metadata"]["name"]
    return base64.b64decode(secret["data"][path.removeprefix(volume_mount["mountPath"] + "/")])


# ------------------------------------------------------------------------------------ settings


def test_without_a_url_the_providers_deploy_no_cloud_controller() -> None:
    assert not model.CloudController.from_environment({}).enabled


def test_the_settings_come_from_the_environment_with_the_ca_bundles_text(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.crt"
    bundle.write_text(CA_BUNDLE)
    cloud = model.CloudController.from_environment(
        {
            "FLEXPLANE_PROVIDERS_CLOUD_URL": "https://flexplane.example.com/",
            "FLEXPLANE_PROVIDERS_CLOUD_IDENTITY_URL": "https://id.example.com",
            "FLEXPLANE_PROVIDERS_CLOUD_PROJECT_ID": "301",
            "FLEXPLANE_PROVIDERS_CLOUD_CA_FILE": str(bundle),
        }
    )
    assert cloud.enabled
    assert (cloud.url, cloud.identity_url, cloud.project_id) == (
        "https://flexplane.example.com",
        "https://id.example.com",
        "301",
    )
    assert cloud.ca_bundle == CA_BUNDLE


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"URL": "https://flexplane.example.com"}, "FLEXPLANE_PROVIDERS_CLOUD_IDENTITY_URL"),
        ({"URL": "flexplane.example.com", "IDENTITY_URL": "https://id", "PROJECT_ID": "1"}, "CLOUD_URL"),
        ({"URL": "https://f", "IDENTITY_URL": "id.example.com", "PROJECT_ID": "1"}, "CLOUD_IDENTITY_URL"),
        (
            {"URL": "https://f", "IDENTITY_URL": "https://id", "PROJECT_ID": "1", "CA_FILE": "/nowhere"},
            "CA_FILE",
        ),
    ],
)
def test_a_setting_that_cannot_work_is_refused_by_name(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        model.CloudController.from_environment(
            {f"FLEXPLANE_PROVIDERS_CLOUD_{name}": value for name, value in environ.items()}
        )


def test_a_ca_file_without_a_certificate_is_refused(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.crt"
    bundle.write_text("not a certificate")
    with pytest.raises(ValueError, match="CA_FILE holds no PEM certificate"):
        model.CloudController.from_environment(
            {
                "FLEXPLANE_PROVIDERS_CLOUD_URL": "https://f",
                "FLEXPLANE_PROVIDERS_CLOUD_IDENTITY_URL": "https://id",
                "FLEXPLANE_PROVIDERS_CLOUD_PROJECT_ID": "1",
                "FLEXPLANE_PROVIDERS_CLOUD_CA_FILE": str(bundle),
            }
        )


def test_the_provider_takes_them_at_each_reconcile_and_stops_on_one_that_cannot_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_CLOUD_URL", "https://flexplane.example.com")
    with pytest.raises(kopf.PermanentError, match="FLEXPLANE_PROVIDERS_CLOUD_IDENTITY_URL"):
        handlers.settings()
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_CLOUD_IDENTITY_URL", "https://id.example.com")
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_CLOUD_PROJECT_ID", "301")
    assert handlers.settings().cloud.url == "https://flexplane.example.com"


# ------------------------------------------------------------------------------------ render


def test_its_secret_and_deployment_validate_against_the_kubernetes_schema(files: dict[str, bytes]) -> None:
    with_ca = dataclasses.replace(CLOUD, ca_bundle=CA_BUNDLE)
    assert invalid([*rendered(files), *rendered(files, with_ca), *tenant.cloud_controller_rbac()]) == []


def test_it_lives_in_the_control_planes_namespace_apart_from_the_control_planes_pods(
    files: dict[str, bytes],
) -> None:
    secret, deployment = rendered(files)
    for manifest in (secret, deployment):
        assert (manifest["metadata"]["name"], manifest["metadata"]["namespace"]) == (
            "cloud-controller",
            CP_NS,
        )
        assert manifest["metadata"]["labels"]["flexplane.io/control-plane"] == "web"
    selector = deployment["spec"]["selector"]["matchLabels"]
    control_plane = model.selector_labels(CP)
    # Neither selects the other's pods: the API server's Service and PDB never take the controller's pod.
    assert not set(control_plane.items()) <= set(deployment["spec"]["template"]["metadata"]["labels"].items())
    assert set(selector.items()) <= set(deployment["spec"]["template"]["metadata"]["labels"].items())
    assert selector != control_plane


def test_the_process_accepts_the_settings_the_pod_gives_it_and_reads_the_mounted_files(
    files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret, deployment = rendered(files)
    for name, value in env(deployment).items():
        monkeypatch.setenv(name, value)
    settings = arguments([])
    assert (settings.url, settings.identity_url, settings.project) == (
        "https://flexplane.example.com",
        "https://id.example.com",
        "301",
    )
    assert (settings.cluster, settings.vdc) == ("web", "demo")
    assert settings.ca is None  # no bundle: the image's system CAs
    assert mounted(secret, deployment, settings.key) == KEY
    kubeconfig = yaml.safe_load(mounted(secret, deployment, settings.kubeconfig))
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://kube-apiserver.fpcp-demo-web.svc:6443"
    assert container(deployment)["command"] == ["python", "-m", "providers.cloud"]
    assert container(deployment)["image"] == CLOUD.image


def test_a_ca_bundle_is_mounted_and_named_to_the_process(files: dict[str, bytes]) -> None:
    secret, deployment = rendered(files, dataclasses.replace(CLOUD, ca_bundle=CA_BUNDLE))
    assert mounted(secret, deployment, env(deployment)["FLEXPLANE_CA_FILE"]) == CA_BUNDLE.encode()


def test_without_an_image_setting_it_runs_flexplanes_image_of_this_version(files: dict[str, bytes]) -> None:
    _, deployment = rendered(files, dataclasses.replace(CLOUD, image=""))
    assert container(deployment)["image"] == render.flexplane_image()


def test_its_kubeconfig_is_its_own_user_which_the_api_servers_certificate_and_the_tenants_rbac_accept(
    files: dict[str, bytes],
) -> None:
    """Its own identity, not the admin's: a client certificate of the cluster CA for the user the tenant
    binds to a role of Nodes, Services' status and Events only; the server's name is one the API server's
    certificate carries."""
    secret, deployment = rendered(files)
    kubeconfig = yaml.safe_load(mounted(secret, deployment, env(deployment)["FLEXPLANE_CLOUD_KUBECONFIG"]))
    cert = x509.load_pem_x509_certificate(
        base64.b64decode(kubeconfig["users"][0]["user"]["client-certificate-data"])
    )
    ca = x509.load_pem_x509_certificate(files["ca.crt"])
    cert.verify_directly_issued_by(ca)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "flexplane:cloud-controller"
    assert not cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)  # no group (system:masters)
    dns, _ = pki.san_names(x509.load_pem_x509_certificate(files["apiserver.crt"]))
    assert "kube-apiserver.fpcp-demo-web.svc" in dns

    role, binding = tenant.cloud_controller_rbac()
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "flexplane:cloud-controller"}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    allowed = {
        (resource, verb) for rule in role["rules"] for resource in rule["resources"] for verb in rule["verbs"]
    }
    # What providers/cloud/tenant.py calls, and the two watches.
    needed = {
        ("nodes", "list"), ("nodes", "watch"), ("nodes", "patch"), ("nodes", "delete"),
        ("nodes/status", "patch"),
        ("services", "list"), ("services", "watch"), ("services/status", "patch"),
        ("events", "get"), ("events", "create"), ("events", "patch"),
    }  # fmt: skip
    assert needed <= allowed
    assert not {resource for resource, _ in allowed} & {"secrets", "pods", "*"}
    assert all(rule["apiGroups"] == [""] for rule in role["rules"])
    assert role in tenant.tenant_manifests(CP, files["ca.crt"])


def test_it_runs_restricted_with_probes_on_its_probes_port(files: dict[str, bytes]) -> None:
    _, deployment = rendered(files)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"] == model.pod_security()
    assert pod["automountServiceAccountToken"] is False
    main = container(deployment)
    assert main["securityContext"] == model.security_context()
    assert main["securityContext"]["readOnlyRootFilesystem"]
    port = int(env(deployment)["FLEXPLANE_PROBES_LISTEN"].rsplit(":", 1)[1])
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port, "scheme": "HTTP"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port, "scheme": "HTTP"}
    assert main["resources"]["requests"]
    assert main["resources"]["limits"]["memory"]
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_a_new_key_restarts_the_pod_and_the_same_one_does_not(files: dict[str, bytes]) -> None:
    def digest(key: bytes) -> str:
        _, deployment = render.render_cloud_controller(CP, CLOUD, files, key)
        return str(
            deployment["spec"]["template"]["metadata"]["annotations"][
                model.CLOUD_CONTROLLER_DIGEST_ANNOTATION
            ]
        )

    assert digest(KEY) == digest(KEY)
    assert digest(KEY) != digest(KEY + b" ")


# ------------------------------------------------------------------------------------ the step


def ensure(kube: Kube, files: dict[str, bytes], cloud: model.CloudController = CLOUD) -> bool:
    return steps.ensure_cloud_controller(kube, CP, files, VDC_NS, steps.Settings(cloud=cloud))


def vdc_key(kube: Kube, key: bytes) -> None:
    """The orchestrator's side: the cluster's key in the VDC's namespace."""
    kube.ensure(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": cloud_controller_secret("web"), "namespace": VDC_NS},
            "data": {CLOUD_CONTROLLER_KEY: base64.b64encode(key).decode()},
        }
    )


def ours(kube: Kube) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    return (
        kube.get("v1", "Secret", "cloud-controller", CP_NS),
        kube.get("apps/v1", "Deployment", "cloud-controller", CP_NS),
    )


def test_without_the_vdcs_key_nothing_is_rendered(kube: Kube, files: dict[str, bytes]) -> None:
    for namespace in (VDC_NS, CP_NS):
        kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    assert ensure(kube, files) is False
    assert ours(kube) == (None, None)


def test_without_the_url_the_vdcs_key_deploys_nothing(kube: Kube, files: dict[str, bytes]) -> None:
    vdc_key(kube, KEY)
    assert ensure(kube, files, model.NO_CLOUD_CONTROLLER) is False
    assert ours(kube) == (None, None)


def test_once_the_key_is_there_it_is_copied_and_the_controller_deployed(
    kube: Kube, files: dict[str, bytes]
) -> None:
    assert ensure(kube, files) is True
    secret, deployment = ours(kube)
    assert secret is not None
    assert deployment is not None
    assert base64.b64decode(secret["data"]["key.json"]) == KEY
    assert env(deployment)["FLEXPLANE_CLOUD_CLUSTER"] == "web"


def test_a_second_pass_writes_nothing(server: KubeServer, kube: Kube, files: dict[str, bytes]) -> None:
    before = server.emulator.revision
    assert ensure(kube, files) is True
    assert server.emulator.revision == before


def test_a_new_key_in_the_vdc_reaches_the_copy_and_restarts_the_pod(
    kube: Kube, files: dict[str, bytes]
) -> None:
    _, before = ours(kube)
    vdc_key(kube, KEY + b"\n")
    ensure(kube, files)
    secret, after = ours(kube)
    assert secret is not None
    assert before is not None
    assert after is not None
    assert base64.b64decode(secret["data"]["key.json"]) == KEY + b"\n"
    annotation = model.CLOUD_CONTROLLER_DIGEST_ANNOTATION
    assert (
        after["spec"]["template"]["metadata"]["annotations"][annotation]
        != before["spec"]["template"]["metadata"]["annotations"][annotation]
    )


def test_the_url_unset_takes_the_controller_and_its_copy_away(kube: Kube, files: dict[str, bytes]) -> None:
    assert ensure(kube, files, model.NO_CLOUD_CONTROLLER) is False
    assert ours(kube) == (None, None)


def test_the_key_taken_from_the_vdc_takes_the_controller_away(kube: Kube, files: dict[str, bytes]) -> None:
    ensure(kube, files)
    assert ours(kube) != (None, None)
    kube.delete("v1", "Secret", cloud_controller_secret("web"), VDC_NS)
    assert ensure(kube, files) is False
    assert ours(kube) == (None, None)
