"""Backup and restore of the management plane, against the devstack's Kubernetes emulator served on
loopback (each test a cluster of its own) and moto's S3 server; the commands end to end as subprocesses
(``manage.py backup`` to a bucket and to a file, ``restore`` from the bucket), their other cases in this
process."""

from __future__ import annotations

import base64
import datetime
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from kubernetes import client
from kubernetes.config import new_client_from_config
from moto.server import ThreadedMotoServer

from devstack.kube.server import KubeServer
from orchestrator.services.backup import (
    NewerFormat,
    NotABackup,
    OtherPlatform,
    S3Settings,
    S3Store,
    Scope,
    WrongKey,
    make_backup,
    restore_backup,
)
from orchestrator.services.backup.contents import read_platform_id, stripped
from orchestrator.services.backup.objects import (
    CONFIG_MAP,
    NAMESPACE,
    ROLE_BINDING,
    SECRET,
    ManagementObjects,
)
from orchestrator.services.backup.operations import scope_from_settings
from orchestrator.services.backup.sealed import MAGIC, unseal
from orchestrator.sources import kube as kube_source
from orchestrator.sources.kube import KubeSource
from orchestrator.sources.kube_objects import KIND_LABEL, VDC_LABEL, config_map_body
from tests.addresses import BACKUP, address

ROOT = Path(__file__).resolve().parents[2]
PLATFORM_NS = "flexplane"
CA_SECRET, HUB_SECRET = "flexplane-agent-ca", "flexplane-mesh-hub"
SCOPE = Scope(PLATFORM_NS, (CA_SECRET, HUB_SECRET))
KEY = bytes(range(32))
HOST = address(BACKUP, 1)


class Cluster:
    """An emulated management cluster of the test's own, reached over HTTP with the official client."""

    def __init__(self, server: KubeServer, kubeconfig: Path) -> None:
        self.server = server
        self.kubeconfig = kubeconfig
        self.api_client = new_client_from_config(str(kubeconfig))
        self.core = client.CoreV1Api(self.api_client)
        self.rbac = client.RbacAuthorizationV1Api(self.api_client)
        self.objects = ManagementObjects(self.api_client, 10.0)

    def state(self) -> dict[str, dict[str, Any]]:
        """Every object a backup would hold, stripped, by kind and name (what a restore must bring back)."""
        found: dict[str, dict[str, Any]] = {}
        for kind, namespace, selector in (
            (NAMESPACE, None, VDC_LABEL),
            (SECRET, PLATFORM_NS, ""),
            (CONFIG_MAP, PLATFORM_NS, KIND_LABEL),
            (ROLE_BINDING, "vdc-alpha", ""),
        ):
            for body in self.objects.list(kind, namespace, selector):
                found[f"{kind.kind}/{body['metadata']['name']}"] = stripped(body)
        return found


def _start_cluster(tmp_path: Path, name: str) -> Cluster:
    server = KubeServer.start(host=HOST, port=0)
    return Cluster(server, server.write_kubeconfig(tmp_path / f"{name}.kubeconfig", namespace=PLATFORM_NS))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = _start_cluster(tmp_path, "platform")
    try:
        seed(made)
        yield made
    finally:
        made.api_client.close()
        made.server.stop()


@pytest.fixture
def other_cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = _start_cluster(tmp_path, "other")
    try:
        made.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=PLATFORM_NS)))
        yield made
    finally:
        made.api_client.close()
        made.server.stop()


def seed(cluster: Cluster) -> None:
    """A platform as the orchestrator leaves it: catalog, gateway and mesh peer ConfigMaps, a join-token
    record, the CA and hub Secrets, a VDC namespace and its RoleBinding; and what is not the platform's
    state: a Lease (a lock), a Secret of the operator's (the backup key), an unlabelled ConfigMap, a
    namespace of another application."""
    core = cluster.core
    meta = client.V1ObjectMeta
    core.create_namespace(client.V1Namespace(metadata=meta(name=PLATFORM_NS)))
    for kind, ident, spec in (
        ("vdc", "alpha", {"name": "Alpha", "quota": {"vcpus": 8}}),
        ("compute-profile", "small", {"vcpus": 1, "memoryMiB": 1024}),
        ("gateway", "alpha-zone-a", {"vdc": "alpha", "zone": "zone-a", "rules": []}),
        ("meshpeer", "10-99-0-2", {"publicKey": "cGVlcg==", "zone": "zone-a"}),
    ):
        body = config_map_body(kind, ident, spec)
        core.create_namespaced_config_map(
            PLATFORM_NS, client.V1ConfigMap(metadata=meta(**body["metadata"]), data=body["data"])
        )
    core.create_namespaced_config_map(PLATFORM_NS, client.V1ConfigMap(metadata=meta(name="kube-root-ca.crt")))
    for name, labels, data in (
        ("join-token-abc", {KIND_LABEL: "join-token"}, {"sha256": "aGFzaA=="}),
        (CA_SECRET, {}, {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}),
        (HUB_SECRET, {}, {"private-key": "cHJpdmF0ZQ==", "public-key": "cHVibGlj"}),
        ("flexplane-backup-key", {}, {"key": base64.b64encode(KEY).decode()}),
    ):
        core.create_namespaced_secret(
            PLATFORM_NS,
            client.V1Secret(metadata=meta(name=name, labels=labels), data=dict[str, bytes | str](data)),
        )
    core.create_namespace(client.V1Namespace(metadata=meta(name="vdc-alpha", labels={VDC_LABEL: "alpha"})))
    core.create_namespace(client.V1Namespace(metadata=meta(name="monitoring")))
    cluster.rbac.create_namespaced_role_binding(
        "vdc-alpha",
        client.V1RoleBinding(
            metadata=meta(name="flexplane-vdc", labels={VDC_LABEL: "alpha"}),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="flexplane-vdc"
            ),
            subjects=[
                client.RbacV1Subject(kind="ServiceAccount", name="orchestrator", namespace=PLATFORM_NS)
            ],
        ),
    )
    client.CoordinationV1Api(cluster.api_client).create_namespaced_lease(
        PLATFORM_NS,
        client.V1Lease(
            metadata=meta(name="lock-vdc-alpha"), spec=client.V1LeaseSpec(holder_identity="replica-1")
        ),
    )


def _objects(blob: bytes) -> list[dict[str, Any]]:
    return unseal(blob, KEY)[1]["objects"]


def _names(items: list[dict[str, Any]]) -> set[str]:
    return {f"{item['kind']}/{item['metadata']['name']}" for item in items}


def test_a_backup_holds_the_platforms_objects_and_nothing_else(cluster: Cluster) -> None:
    platform, _created, count, blob = make_backup(cluster.objects, SCOPE, KEY)

    items = _objects(blob)
    assert count == len(items)
    assert _names(items) == {
        "Namespace/vdc-alpha",
        "Secret/join-token-abc",
        f"Secret/{CA_SECRET}",
        f"Secret/{HUB_SECRET}",
        "ConfigMap/vdc-alpha",
        "ConfigMap/compute-profile-small",
        "ConfigMap/gateway-alpha-zone-a",
        "ConfigMap/meshpeer-10-99-0-2",
        "ConfigMap/platform-id",
        "RoleBinding/flexplane-vdc",
    }
    assert read_platform_id(cluster.objects, PLATFORM_NS) == platform
    for item in items:
        assert set(item["metadata"]) <= {"name", "namespace", "labels", "annotations"}, item
        assert "status" not in item


def test_a_backup_is_sealed_its_header_naming_the_platform(cluster: Cluster) -> None:
    platform, created, _count, blob = make_backup(cluster.objects, SCOPE, KEY)

    head = json.loads(blob[len(MAGIC) : blob.index(b"\n", len(MAGIC))])
    assert (head["format"], head["platform"], head["created"]) == (1, platform, created)
    assert b"cHJpdmF0ZQ==" not in blob
    assert b"compute-profile" not in blob


def test_the_platform_id_is_made_once(cluster: Cluster) -> None:
    first = make_backup(cluster.objects, SCOPE, KEY)[0]
    second = make_backup(cluster.objects, SCOPE, KEY)[0]

    assert first == second


def test_a_restore_brings_back_what_was_deleted_equal(cluster: Cluster) -> None:
    _platform, _created, _count, blob = make_backup(cluster.objects, SCOPE, KEY)
    before = cluster.state()
    cluster.core.delete_namespace("vdc-alpha")
    cluster.core.delete_namespaced_config_map("vdc-alpha", PLATFORM_NS)
    cluster.core.delete_namespaced_secret(CA_SECRET, PLATFORM_NS)
    cluster.core.delete_namespaced_secret("join-token-abc", PLATFORM_NS)

    _header, restored = restore_backup(cluster.objects, blob, KEY)

    assert cluster.state() == before
    assert dict(restored.outcomes)["Namespace vdc-alpha"] == "created"
    assert dict(restored.outcomes)[f"Secret {PLATFORM_NS}/{CA_SECRET}"] == "created"
    assert dict(restored.outcomes)["RoleBinding vdc-alpha/flexplane-vdc"] == "created"
    assert restored.count("created") == 5


def test_a_restore_puts_back_what_was_changed(cluster: Cluster) -> None:
    blob = make_backup(cluster.objects, SCOPE, KEY)[3]
    before = cluster.state()
    cluster.core.patch_namespaced_config_map(
        "compute-profile-small", PLATFORM_NS, {"data": {"spec": json.dumps({"vcpus": 64})}}
    )

    restored = restore_backup(cluster.objects, blob, KEY)[1]

    assert cluster.state() == before
    assert [o for o in restored.outcomes if o[1] != "unchanged"] == [
        (f"ConfigMap {PLATFORM_NS}/compute-profile-small", "updated")
    ]


def test_a_second_restore_changes_nothing(cluster: Cluster) -> None:
    blob = make_backup(cluster.objects, SCOPE, KEY)[3]
    cluster.core.delete_namespace("vdc-alpha")
    restore_backup(cluster.objects, blob, KEY)
    revision = cluster.server.emulator.revision

    restored = restore_backup(cluster.objects, blob, KEY)[1]

    assert not restored.changed
    assert restored.count("unchanged") == len(restored.outcomes) == 10
    assert cluster.server.emulator.revision == revision  # not one write


def test_a_wrong_key_is_refused_before_anything_is_written(cluster: Cluster) -> None:
    blob = make_backup(cluster.objects, SCOPE, KEY)[3]
    cluster.core.delete_namespace("vdc-alpha")

    with pytest.raises(WrongKey, match="the key does not open the backup of platform"):
        restore_backup(cluster.objects, blob, bytes(32))

    assert cluster.core.list_namespace(label_selector=VDC_LABEL).items == []


def test_an_altered_header_is_refused_as_the_key_would_be(cluster: Cluster) -> None:
    blob = make_backup(cluster.objects, SCOPE, KEY)[3]
    altered = blob.replace(b'"created":"', b'"created":"1', 1)

    with pytest.raises(WrongKey):
        restore_backup(cluster.objects, altered, KEY)


def test_a_backup_of_another_platform_is_refused(cluster: Cluster, other_cluster: Cluster) -> None:
    blob = make_backup(cluster.objects, SCOPE, KEY)[3]
    theirs = make_backup(other_cluster.objects, SCOPE, KEY)[0]

    with pytest.raises(OtherPlatform, match=f"this management cluster is platform {theirs}"):
        restore_backup(other_cluster.objects, blob, KEY)

    assert other_cluster.core.list_namespace(label_selector=VDC_LABEL).items == []


def test_a_new_cluster_takes_the_backups_platform(cluster: Cluster, other_cluster: Cluster) -> None:
    platform, _created, _count, blob = make_backup(cluster.objects, SCOPE, KEY)

    restore_backup(other_cluster.objects, blob, KEY)

    assert read_platform_id(other_cluster.objects, PLATFORM_NS) == platform
    # All of the platform's state, and not the operator's key, which never travels in a backup.
    expected = {name: body for name, body in cluster.state().items() if name != "Secret/flexplane-backup-key"}
    assert other_cluster.state() == expected


def test_a_newer_format_is_refused() -> None:
    header = {"format": 2, "platform": "p", "created": "2030-01-01T00:00:00Z", "version": "9.0", "nonce": ""}
    blob = MAGIC + json.dumps(header).encode() + b"\n" + b"sealed"

    with pytest.raises(NewerFormat, match=r"restore it with flex\.plane 9\.0 or newer"):
        restore_backup(ManagementObjects(client.ApiClient(), 1.0), blob, KEY)


def test_what_is_not_a_backup_is_refused() -> None:
    with pytest.raises(NotABackup, match=r"not a flex\.plane backup"):
        restore_backup(ManagementObjects(client.ApiClient(), 1.0), b"PK\x03\x04", KEY)


# ---------------------------------------------------------------------- S3


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address=address(BACKUP, 2), port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def bucket(s3_endpoint: str, request: pytest.FixtureRequest) -> str:
    name = request.node.name.replace("_", "-")[:60].lower()
    S3Settings(s3_endpoint, access_key="test", secret_key="test").client().create_bucket(Bucket=name)
    return name


def test_s3_retention_keeps_this_platforms_newest_backups(s3_endpoint: str, bucket: str) -> None:
    s3 = S3Settings(s3_endpoint, access_key="test", secret_key="test").client()
    store = S3Store(f"s3://{bucket}/backups", s3)
    ours = [store.put("ours", f"2026-12-0{day}T03:00:00Z", b"x") for day in range(1, 5)]
    theirs = store.put("theirs", "2026-11-01T03:00:00Z", b"y")

    deleted = store.keep("ours", 2)

    assert deleted == ours[:2]
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert sorted(listed) == sorted([*ours[2:], theirs])


def test_s3_restore_takes_the_newest_backup_under_a_prefix(s3_endpoint: str, bucket: str) -> None:
    store = S3Store(f"s3://{bucket}/p", S3Settings(s3_endpoint, access_key="t", secret_key="t").client())
    store.put("a", "2026-12-01T03:00:00Z", b"old")
    newest = store.put("b", "2026-12-02T03:00:00Z", b"new")

    assert store.get() == (newest, b"new")


# ---------------------------------------------------------------------- the commands, end to end


def _backup_env(key_file: Path, s3_endpoint: str) -> dict[str, str]:
    """The environment the commands read their key and bucket from."""
    return {
        "FLEXPLANE_BACKUP_KEY_FILE": str(key_file),
        "FLEXPLANE_BACKUP_S3_ENDPOINT": s3_endpoint,
        "FLEXPLANE_BACKUP_S3_ACCESS_KEY": "test",
        "FLEXPLANE_BACKUP_S3_SECRET_KEY": "test",
    }


def _command(
    cluster: Cluster, key_file: Path, s3_endpoint: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """``manage.py`` as the backup CronJob runs it: its settings and cluster from the environment (the
    orchestrator's, the mesh's among them: on by default)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "flexplane.settings",
        "FLEXPLANE_KUBECONFIG": str(cluster.kubeconfig),
        "FLEXPLANE_NAMESPACE": PLATFORM_NS,
        "FLEXPLANE_MESH_RANGE": "10.99.0.0/16",
        "FLEXPLANE_MESH_HUB_SECRET": HUB_SECRET,
        **_backup_env(key_file, s3_endpoint),
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _here(
    monkeypatch: pytest.MonkeyPatch, cluster: Cluster, key_file: Path, s3_endpoint: str, *args: str
) -> str:
    """What a command writes (its CommandError raised as is), run in this process on ``cluster`` with the
    environment ``_command`` gives it: once the way through ``manage.py`` is shown, a process of its own
    would only start Django again."""
    for name, value in _backup_env(key_file, s3_endpoint).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(kube_source, "_source", KubeSource(cluster.api_client, PLATFORM_NS, 10.0))
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def earlier(created: str, days: int) -> str:
    """A backup's time (``2026-12-07T03:00:00Z``), ``days`` before."""
    moment = datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ") - datetime.timedelta(days=days)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_commands_back_up_to_a_bucket_and_restore_from_it(
    cluster: Cluster, s3_endpoint: str, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(base64.b64encode(KEY).decode() + "\n")
    url = f"s3://{bucket}/flexplane"
    s3 = S3Settings(s3_endpoint, access_key="test", secret_key="test").client()
    # Two earlier backups of this platform in the bucket (made here, as the command makes them: a process
    # each would only start Django again), a day and two days old, so that the command's is the newest.
    platform, created, _, blob = make_backup(cluster.objects, SCOPE, KEY)
    store = S3Store(url, s3)
    for days in (2, 1):
        store.put(platform, earlier(created, days), blob)

    made = _command(cluster, key_file, s3_endpoint, "backup", "--s3", url, "--keep", "2")
    assert made.returncode == 0, made.stderr
    assert f"backed up 10 objects of platform {platform}" in made.stdout
    assert "deleted 1" in made.stdout
    held = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert len(held) == 2
    oldest, older = (earlier(created, days).replace("-", "").replace(":", "") for days in (2, 1))
    assert not any(oldest in key for key in held)  # the oldest went
    assert any(older in key for key in held)
    before = cluster.state()  # the platform id made by the first backup included

    cluster.core.delete_namespace("vdc-alpha")
    cluster.core.delete_namespaced_config_map("gateway-alpha-zone-a", PLATFORM_NS)
    restored = _command(cluster, key_file, s3_endpoint, "restore", "--s3", url)
    assert restored.returncode == 0, restored.stderr
    assert "created: ConfigMap flexplane/gateway-alpha-zone-a" in restored.stdout
    assert "restored 10 objects: 3 created, 0 updated, 7 unchanged" in restored.stdout
    assert cluster.state() == before

    again = _here(monkeypatch, cluster, key_file, s3_endpoint, "restore", "--s3", url)
    assert "nothing to change: all 10 objects already match the backup" in again

    key_file.write_text(base64.b64encode(bytes(32)).decode())
    with pytest.raises(CommandError, match="the key does not open the backup"):
        _here(monkeypatch, cluster, key_file, s3_endpoint, "restore", "--s3", url)


def test_the_commands_back_up_to_a_file(
    cluster: Cluster, s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(base64.b64encode(KEY).decode())
    target = tmp_path / "out" / "platform.fpbackup"

    made = _command(cluster, key_file, s3_endpoint, "backup", "--file", str(target))

    assert made.returncode == 0, made.stderr
    assert target.read_bytes().startswith(MAGIC)
    assert target.stat().st_mode & 0o077 == 0
    again = _here(monkeypatch, cluster, key_file, s3_endpoint, "restore", "--file", str(target))
    assert "nothing to change" in again


def test_the_settings_name_the_hub_key_only_with_the_mesh_on() -> None:
    with override_settings(FLEXPLANE_MESH_RANGE=""):
        assert scope_from_settings().named_secrets == (settings.FLEXPLANE_AGENT_CA_SECRET,)
    with override_settings(FLEXPLANE_MESH_RANGE="10.99.0.0/16", FLEXPLANE_MESH_HUB_SECRET="hub-key"):
        assert scope_from_settings().named_secrets == (settings.FLEXPLANE_AGENT_CA_SECRET, "hub-key")


def test_a_named_secret_that_is_not_there_is_said_not_silently_left_out(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The hub's key missing (a setting naming another Secret than the hub's): a restored hub would make a
    new key that no node knows, so the backup says it holds none."""
    _platform, _created, _count, blob = make_backup(
        cluster.objects, Scope(PLATFORM_NS, (CA_SECRET, "no-such")), KEY
    )

    assert "Secret/no-such" not in _names(_objects(blob))
    assert (
        f"the Secret {PLATFORM_NS}/no-such the settings name is not there: the backup holds none"
        in caplog.text
    )
