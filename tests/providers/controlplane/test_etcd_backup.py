"""The etcd snapshots' CronJob of each control plane: rendered only with a bucket, its two steps (etcdctl
as the API server's etcd client, then flex.plane's backup_dump), locked down as the control plane's pods
are, on a schedule a FlexControlPlane may override; the settings it is made of, from the environment.

tests/orchestrator/test_etcd_backup.py runs these same commands against a real etcd and bucket.
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml
from cryptography import x509

from providers.controlplane import model, pki, render, steps
from providers.controlplane.kube import Kube
from tests.charts import kit
from tests.kubeschema import invalid

KEY = base64.b64encode(bytes(range(32))).decode()
BACKUP = model.EtcdBackup(
    s3_url="s3://backups/flexplane",
    endpoint="https://s3.example.net",
    region="eu-central-1",
    keep=48,
    image="registry.example.internal/flexplane/flexplane:1.4.0",
    key=KEY,
    access_key="AKIAEXAMPLE",
    secret_key="the-secret-key",
)
CP = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", endpoint_host="10.20.0.7")
CRD = (
    Path(__file__).resolve().parents[3]
    / "charts/providers/crds/flexcontrolplanes.controlplane.flexplane.io.yaml"
)


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return pki.ensure_pki({}, CP.names)


def backup_objects(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in manifests if m["metadata"]["name"] == model.ETCD_BACKUP]


def pod(cronjob: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in container["env"]}


def test_without_a_bucket_there_is_no_cronjob_nor_its_secret(files: dict[str, bytes]) -> None:
    assert backup_objects(render.management_manifests(CP, files)) == []
    assert backup_objects(render.management_manifests(CP, files, model.NO_ETCD_BACKUP)) == []


def test_with_a_bucket_the_secret_and_cronjob_live_in_the_namespace_and_validate(
    files: dict[str, bytes],
) -> None:
    secret, cronjob = backup_objects(render.management_manifests(CP, files, BACKUP))
    assert (secret["kind"], cronjob["kind"]) == ("Secret", "CronJob")
    assert invalid([secret, cronjob]) == []
    for manifest in (secret, cronjob):
        assert manifest["metadata"]["namespace"] == "fpcp-demo-web"
        assert manifest["metadata"]["labels"]["flexplane.io/control-plane"] == "web"
    assert {key: base64.b64decode(value).decode() for key, value in secret["data"].items()} == {
        "key": KEY,
        "access-key": "AKIAEXAMPLE",
        "secret-key": "the-secret-key",
    }


def test_the_first_step_saves_a_snapshot_with_the_api_servers_etcd_client_certificate() -> None:
    (snapshot,) = pod(render.render_etcd_backup_cronjob(CP, BACKUP))["initContainers"]
    assert snapshot["image"] == "registry.k8s.io/etcd:3.6.5-0"  # the control plane's etcd's, with etcdctl
    assert snapshot["command"] == ["etcdctl", "snapshot", "save", "/snapshot/etcd.db"]
    assert env(snapshot) == {
        "ETCDCTL_ENDPOINTS": "https://etcd.fpcp-demo-web.svc:2379",
        "ETCDCTL_CACERT": "/etc/kubernetes/pki/etcd-ca.crt",
        "ETCDCTL_CERT": "/etc/kubernetes/pki/apiserver-etcd-client.crt",
        "ETCDCTL_KEY": "/etc/kubernetes/pki/apiserver-etcd-client.key",
        "ETCDCTL_DIAL_TIMEOUT": "10s",
        "ETCDCTL_COMMAND_TIMEOUT": "5m",
    }
    mounts = {m["name"]: m for m in snapshot["volumeMounts"]}
    assert mounts["etcd-client-pki"] == {
        "name": "etcd-client-pki",
        "mountPath": "/etc/kubernetes/pki",
        "readOnly": True,
    }
    assert mounts["snapshot"] == {"name": "snapshot", "mountPath": "/snapshot"}


def test_the_endpoint_is_a_name_every_members_serving_certificate_carries(files: dict[str, bytes]) -> None:
    certificate = x509.load_pem_x509_certificate(files["etcd-server.crt"])
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "etcd.fpcp-demo-web.svc" in names.get_values_for_type(x509.DNSName)


def test_the_second_step_seals_the_snapshot_into_the_bucket_under_the_clusters_name() -> None:
    (seal,) = pod(render.render_etcd_backup_cronjob(CP, BACKUP))["containers"]
    assert seal["image"] == "registry.example.internal/flexplane/flexplane:1.4.0"
    assert seal["command"] + seal["args"] == [
        "python", "-m", "django", "backup_dump", "/snapshot/etcd.db",
        "--s3=s3://backups/flexplane", "--name=etcd-demo-web", "--keep=48",
    ]  # fmt: skip
    assert env(seal) == {
        "DJANGO_SETTINGS_MODULE": "flexplane.settings.base",
        "PYTHONDONTWRITEBYTECODE": "1",
        "FLEXPLANE_BACKUP_KEY_FILE": "/etc/flexplane/backup/key",
        "FLEXPLANE_BACKUP_S3_REGION": "eu-central-1",
        "FLEXPLANE_BACKUP_S3_ENDPOINT": "https://s3.example.net",
        "FLEXPLANE_BACKUP_S3_ACCESS_KEY": {"secretKeyRef": {"name": "etcd-backup", "key": "access-key"}},
        "FLEXPLANE_BACKUP_S3_SECRET_KEY": {"secretKeyRef": {"name": "etcd-backup", "key": "secret-key"}},
    }
    mounts = {m["name"]: m for m in seal["volumeMounts"]}
    assert mounts["backup-key"] == {
        "name": "backup-key",
        "mountPath": "/etc/flexplane/backup",
        "readOnly": True,
    }
    assert mounts["snapshot"]["mountPath"] == "/snapshot"


def test_without_credentials_the_seal_uses_the_pods_own_and_the_secret_holds_the_key_only() -> None:
    keyed_only = model.EtcdBackup(s3_url="s3://backups/flexplane", key=KEY)
    secret, cronjob = render.render_etcd_backup(CP, keyed_only)
    assert sorted(secret["data"]) == ["key"]
    (seal,) = pod(cronjob)["containers"]
    assert "FLEXPLANE_BACKUP_S3_ACCESS_KEY" not in env(seal)
    assert "FLEXPLANE_BACKUP_S3_ENDPOINT" not in env(seal)
    assert seal["image"].startswith("ghcr.io/flexplane/flexplane:")


def test_the_pod_is_non_root_read_only_and_without_an_account_token() -> None:
    spec = pod(render.render_etcd_backup_cronjob(CP, BACKUP))
    assert spec["automountServiceAccountToken"] is False
    assert spec["restartPolicy"] == "Never"
    assert spec["securityContext"]["runAsNonRoot"] is True
    for container in [*spec["initContainers"], *spec["containers"]]:
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True
        assert context["runAsNonRoot"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["etcd-client-pki"]["secret"]["items"] == [
        {"key": "etcd-ca.crt", "path": "etcd-ca.crt"},
        {"key": "apiserver-etcd-client.crt", "path": "apiserver-etcd-client.crt"},
        {"key": "apiserver-etcd-client.key", "path": "apiserver-etcd-client.key"},
    ]  # the client pair and the CA, no other key of the PKI
    assert volumes["backup-key"]["secret"] == {
        "secretName": "etcd-backup",
        "items": [{"key": "key", "path": "key"}],
        "defaultMode": 0o440,
    }
    assert "emptyDir" in volumes["snapshot"]


def test_the_schedule_is_hourly_unless_the_flexcontrolplane_overrides_it() -> None:
    cluster = {"metadata": {"name": "web", "namespace": "vdc-demo"}}
    fcp: dict[str, Any] = {"metadata": {"namespace": "vdc-demo"}, "spec": {"version": "v1.34.2"}}
    plain = steps.control_plane(fcp, cluster, steps.Settings())
    assert render.render_etcd_backup_cronjob(plain, BACKUP)["spec"]["schedule"] == "@hourly"
    fcp["spec"]["etcdBackup"] = {"schedule": "*/15 * * * *"}
    overridden = steps.control_plane(fcp, cluster, steps.Settings())
    cronjob = render.render_etcd_backup_cronjob(overridden, BACKUP)
    assert cronjob["spec"]["schedule"] == "*/15 * * * *"
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"


@pytest.mark.parametrize(
    ("schedule", "valid"),
    [
        ("@hourly", True),
        ("@daily", True),
        ("*/15 * * * *", True),
        ("0 3 * * MON-FRI", True),
        ("5 */2 1,15 * ?", True),
        ("every hour", False),
        ("* * * *", False),
        ("@sometimes", False),
        ("* * * * *; rm -rf /", False),
    ],
)
def test_the_crd_admits_cron_schedules_only(schedule: str, valid: bool) -> None:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    field = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["etcdBackup"]
    pattern = field["properties"]["schedule"]["pattern"]
    assert bool(re.search(pattern, schedule)) is valid


def test_the_settings_come_from_the_environment() -> None:
    prefix = "FLEXPLANE_PROVIDERS_ETCD_BACKUP_"
    backup = model.EtcdBackup.from_environment(
        {
            f"{prefix}S3_URL": "s3://backups/flexplane",
            f"{prefix}S3_ENDPOINT": "https://s3.example.net",
            f"{prefix}S3_ACCESS_KEY": "AKIAEXAMPLE",
            f"{prefix}S3_SECRET_KEY": "the-secret-key",
            f"{prefix}KEY": KEY + "\n",
            f"{prefix}KEEP": "12",
            f"{prefix}IMAGE": "registry.example.internal/flexplane/flexplane:1.4.0",
        }
    )
    assert backup.enabled
    assert (backup.s3_url, backup.region, backup.keep, backup.key) == (
        "s3://backups/flexplane",
        "us-east-1",
        12,
        KEY,
    )
    assert KEY not in repr(backup)
    assert "the-secret-key" not in repr(backup)
    assert model.EtcdBackup.from_environment({}) == model.NO_ETCD_BACKUP
    assert not model.NO_ETCD_BACKUP.enabled


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"S3_URL": "s3://backups/flexplane"}, "no backup key"),
        ({"S3_URL": "https://backups", "KEY": KEY}, "must be s3://bucket/prefix"),
        ({"S3_URL": "s3://b/p", "KEY": "bm90IDMyIGJ5dGVz"}, "32 bytes"),
        ({"S3_URL": "s3://b/p", "KEY": "not base64!"}, "must be base64"),
        ({"S3_URL": "s3://b/p", "KEY": KEY, "KEEP": "a day"}, "number of snapshots"),
        ({"S3_URL": "s3://b/p", "KEY": KEY, "KEEP": "0"}, "1 snapshot or more"),
        ({"S3_URL": "s3://b/p", "KEY": KEY, "S3_ACCESS_KEY": "AKIA"}, "both an access key and a secret key"),
    ],
)
def test_wrong_settings_are_refused_naming_what_is_wrong(settings: dict[str, str], message: str) -> None:
    environ = {f"FLEXPLANE_PROVIDERS_ETCD_BACKUP_{name}": value for name, value in settings.items()}
    with pytest.raises(ValueError, match=message):
        model.EtcdBackup.from_environment(environ)


def test_the_reconcile_writes_the_cronjob_and_its_secret_in_the_namespace(
    kube: Kube, files: dict[str, bytes]
) -> None:
    steps.ensure_namespace(kube, CP)
    steps.ensure_control_plane_objects(kube, CP, files, BACKUP)
    cronjob = kube.get("batch/v1", "CronJob", "etcd-backup", CP.namespace)
    secret = kube.get("v1", "Secret", "etcd-backup", CP.namespace)
    assert cronjob is not None
    assert secret is not None
    assert cronjob["spec"]["schedule"] == "@hourly"
    assert base64.b64decode(secret["data"]["key"]).decode() == KEY


# ------------------------------------------------------------------------------------ the providers chart

CHART = Path(__file__).resolve().parents[3] / "charts" / "providers"
CHART_VALUES: dict[str, Any] = {
    "secretKey": {"existingSecret": "flexplane-secret-key"},
    "image": {"tag": "1.4.0"},
    "etcdBackup": {
        "s3": {
            "url": "s3://backups/flexplane",
            "endpoint": "https://s3.example.net",
            "credentialsSecret": "s3",
        },
        "keySecret": "flexplane-backup-key",
        "keep": 12,
    },
}


def providers_env(values: dict[str, Any]) -> dict[str, Any]:
    """The providers container's environment, the chart rendered with ``values``."""
    with helm_python.Chart.load(CHART) as chart:
        rendered = kit.manifests(chart.render(values, name="fp", namespace="cloud-system", is_install=True))
    (deployment,) = [
        m for m in rendered if m["kind"] == "Deployment" and m["metadata"]["name"] == "fp-providers"
    ]
    return kit.env_of(kit.sole_container(deployment["spec"]["template"]["spec"]))


def test_the_chart_gives_the_provider_the_bucket_its_image_and_the_secrets_by_reference() -> None:
    env = {name: value for name, value in providers_env(CHART_VALUES).items() if "ETCD_BACKUP" in name}
    prefix = "FLEXPLANE_PROVIDERS_ETCD_BACKUP_"
    assert env == {
        f"{prefix}S3_URL": "s3://backups/flexplane",
        f"{prefix}S3_ENDPOINT": "https://s3.example.net",
        f"{prefix}S3_REGION": "us-east-1",
        f"{prefix}KEEP": "12",
        f"{prefix}IMAGE": "ghcr.io/flexplane/flexplane:1.4.0",
        f"{prefix}KEY": {"secretKeyRef": {"name": "flexplane-backup-key", "key": "key"}},
        f"{prefix}S3_ACCESS_KEY": {"secretKeyRef": {"name": "s3", "key": "access-key"}},
        f"{prefix}S3_SECRET_KEY": {"secretKeyRef": {"name": "s3", "key": "secret-key"}},
    }
    # What the provider reads of it, the Secrets' values as the kubelet fills them in.
    plain = {name: value for name, value in env.items() if isinstance(value, str)}
    secrets = {f"{prefix}KEY": KEY, f"{prefix}S3_ACCESS_KEY": "AKIA", f"{prefix}S3_SECRET_KEY": "secret"}
    backup = model.EtcdBackup.from_environment({**plain, **secrets})
    assert (backup.s3_url, backup.keep, backup.image) == ("s3://backups/flexplane", 12, env[f"{prefix}IMAGE"])


def test_the_chart_sets_nothing_without_a_bucket_and_refuses_a_bucket_without_a_key() -> None:
    env = providers_env({"secretKey": {"existingSecret": "flexplane-secret-key"}})
    assert [name for name in env if "ETCD_BACKUP" in name] == []
    keyless = kit.merged(CHART_VALUES, {"etcdBackup": {"keySecret": ""}})
    with pytest.raises(helm_python.HelmRenderError, match=r"etcdBackup\.keySecret"):
        providers_env(keyless)


# ------------------------------------------------------------------------------------ the restore Job

CP3 = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", etcd_members=3)


def test_the_restore_job_validates_and_writes_the_members_own_volume() -> None:
    job = render.render_etcd_restore_job(CP3, BACKUP, 1)
    assert invalid([job]) == []
    assert job["metadata"]["name"] == "etcd-restore-1"
    assert job["metadata"]["namespace"] == "fpcp-demo-web"
    assert job["spec"]["backoffLimit"] == 0
    spec = job["spec"]["template"]["spec"]
    assert [c["name"] for c in [*spec["initContainers"], *spec["containers"]]] == [
        "fetch",
        "clear",
        "restore",
        "swap",
    ]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["data"] == {"name": "data", "persistentVolumeClaim": {"claimName": "data-etcd-1"}}
    assert "etcd-client-pki" not in volumes  # no etcd to talk to: only its files
    assert spec["automountServiceAccountToken"] is False
    for container in [*spec["initContainers"], *spec["containers"]]:
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["runAsNonRoot"] is True


def test_the_restore_fetches_the_newest_snapshot_or_the_one_named() -> None:
    fetch = render.etcd_restore_containers(CP3, BACKUP, 0)[0]
    assert fetch["command"] == [
        "python", "-m", "django", "fetch_dump",
        "--s3=s3://backups/flexplane/etcd-demo-web", "--to=/snapshot/etcd.db",
    ]  # fmt: skip
    assert env(fetch)["FLEXPLANE_BACKUP_KEY_FILE"] == "/etc/flexplane/backup/key"
    named = render.etcd_restore_containers(CP3, BACKUP, 0, "2026-12-06T22:00:00Z-1a2b.fpdump")[0]
    assert "--s3=s3://backups/flexplane/etcd-demo-web/2026-12-06T22:00:00Z-1a2b.fpdump" in named["command"]


def test_each_member_is_restored_as_itself_in_the_same_new_cluster() -> None:
    commands = [render.etcd_restore_containers(CP3, BACKUP, member)[2]["command"] for member in range(3)]
    cluster = ",".join(f"etcd-{n}=https://etcd-{n}.etcd.fpcp-demo-web.svc:2380" for n in range(3))
    for member, command in enumerate(commands):
        assert command == [
            "etcdutl", "snapshot", "restore", "/snapshot/etcd.db",
            "--data-dir=/var/lib/etcd/restored",
            f"--name=etcd-{member}",
            f"--initial-cluster={cluster}",
            f"--initial-advertise-peer-urls=https://etcd-{member}.etcd.fpcp-demo-web.svc:2380",
            "--initial-cluster-token=fpcp-demo-web",
            "--bump-revision=1000000000",
            "--mark-compacted",
        ]  # fmt: skip
    # The StatefulSet's members are started with these same names, URLs and token, on that directory.
    (statefulset,) = [m for m in render.etcd.render_etcd(CP3) if m["kind"] == "StatefulSet"]
    args = statefulset["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--initial-cluster={cluster}" in args
    assert "--initial-cluster-token=fpcp-demo-web" in args
    assert "--data-dir=/var/lib/etcd/data" in args


def test_the_swap_keeps_the_replaced_data_beside_the_restored(tmp_path: Path) -> None:
    swap = render.etcd_restore_containers(CP, BACKUP, 0)[3]
    volume = tmp_path / "volume"
    (volume / "data" / "member").mkdir(parents=True)
    (volume / "data" / "member" / "old").write_text("old")
    (volume / "restored" / "member").mkdir(parents=True)
    (volume / "restored" / "member" / "new").write_text("new")
    (volume / "data.before-restore").mkdir()  # an earlier restore's: replaced
    command = [arg.replace("/var/lib/etcd", str(volume)) for arg in swap["command"]]
    subprocess.run([sys.executable, *command[1:]], check=True, timeout=30)
    assert sorted(p.name for p in volume.iterdir()) == ["data", "data.before-restore"]
    assert (volume / "data" / "member" / "new").read_text() == "new"
    assert (volume / "data.before-restore" / "member" / "old").read_text() == "old"


def test_the_operators_restore_jobs_are_one_per_member_from_the_providers_settings() -> None:
    settings = steps.Settings(
        etcd_members=3, image_registry="mirror.example.internal/k8s", etcd_backup=BACKUP
    )
    jobs = steps.etcd_restore_jobs(settings, "demo", "web")
    assert [job["metadata"]["name"] for job in jobs] == ["etcd-restore-0", "etcd-restore-1", "etcd-restore-2"]
    restore = jobs[2]["spec"]["template"]["spec"]["initContainers"][2]
    assert restore["image"] == "mirror.example.internal/k8s/etcd:3.6.5-0"
    assert "--name=etcd-2" in restore["command"]
    with pytest.raises(ValueError, match="no snapshot to restore"):
        steps.etcd_restore_jobs(steps.Settings(), "demo", "web")
