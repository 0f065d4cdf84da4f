"""A tenant control plane's etcd backed up and restored as its ``etcd-backup`` CronJob, its restore Job and
docs/operating.md do it, against Debian's etcd (throwaway members of the test's own on loopback) and
moto's S3; and a three-member etcd that loses a member and keeps taking writes.

The CronJob's own commands, read from the rendered control plane (:func:`providers.controlplane.render.
render_etcd_backup_cronjob`), take the snapshot (``etcdctl snapshot save``) and seal it into the bucket
under ``etcd-<vdc>-<cluster>``; the member's data is wiped; the restore Job's steps
(:func:`providers.controlplane.render.etcd_restore_containers`) fetch and open the newest snapshot
(``manage.py fetch_dump``), make a data directory of it (``snapshot restore``) and put it in the data
directory's place; a member started on it has the keys back. The members speak plain HTTP on loopback:
the CronJob's TLS client settings (``ETCDCTL_CACERT`` and its pair) and the StatefulSet's peer URLs in
the restore are replaced by the test's member's, paths in the pods by the test's directories; the rest
is theirs. Debian's etcd is 3.4, whose etcdctl restores (etcdutl came with 3.5) without the revision
bump that the Job asks of etcdutl.

The tests fail, not skip, where etcd is missing: ``make install`` installs Debian's ``etcd-server`` and
``etcd-client``. Every member is stopped by its pid, and its directory removed, also when a test fails.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from devstack.net import free_port
from orchestrator.services.backup import S3Settings
from providers.controlplane import etcd, model, render
from tests.addresses import ETCD_SUITE, address

ROOT = Path(__file__).resolve().parents[2]
ETCD = Path("/usr/bin/etcd")
ETCDCTL = Path("/usr/bin/etcdctl")
ETCDUTL = Path("/usr/bin/etcdutl")  # etcd 3.5 and newer restore with it; Debian's 3.4 with etcdctl
KEY = bytes(range(32))
BUCKET, PREFIX = "etcd-backups", "flexplane"  # moto keeps buckets per process: a name of its own
CP = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2")
# What an API server keeps in etcd, a few of its keys: /registry/<resource>/<namespace>/<name>.
KEYS = {
    "/registry/namespaces/default": "a namespace",
    "/registry/secrets/default/db-password": "s3cr3t",
}
# Large objects, so that the snapshot spans several of the sealed file's 1 MiB chunks.
LARGE = {f"/registry/configmaps/kube-system/bundle-{n}": f"{n}" * 900_000 for n in range(3)}


def _binaries() -> None:
    for binary in (ETCD, ETCDCTL):
        if not binary.exists():
            pytest.fail(
                f"{binary} is not installed: make install installs Debian's etcd-server and etcd-client"
            )


@dataclass
class Member:
    """One etcd member on a loopback address, and its process once started."""

    name: str
    host: str
    directory: Path
    client_port: int = 0
    peer_port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.client_port = self.client_port or free_port(self.host)
        self.peer_port = self.peer_port or free_port(self.host)

    @property
    def client_url(self) -> str:
        return f"http://{self.host}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://{self.host}:{self.peer_port}"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def start(self, initial_cluster: str, state: str = "new") -> None:
        arguments = [
            str(ETCD),
            f"--name={self.name}",
            f"--data-dir={self.data}",
            f"--listen-client-urls={self.client_url}",
            f"--advertise-client-urls={self.client_url}",
            f"--listen-peer-urls={self.peer_url}",
            f"--initial-advertise-peer-urls={self.peer_url}",
            f"--initial-cluster={initial_cluster}",
            f"--initial-cluster-state={state}",
            "--initial-cluster-token=fpcp-demo-web",
            "--unsafe-no-fsync",  # a throwaway member
        ]
        with (self.directory / "etcd.log").open("ab") as log:  # the member keeps its own descriptor
            self.process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def log(self) -> str:
        path = self.directory / "etcd.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


def etcdctl(*args: str, endpoints: str, stdin: str | None = None) -> str:
    """etcdctl at ``endpoints``; a value too long for an argument goes on its standard input (``put``)."""
    done = subprocess.run(
        [str(ETCDCTL), f"--endpoints={endpoints}", "--dial-timeout=5s", "--command-timeout=20s", *args],
        env={**os.environ, "ETCDCTL_API": "3"},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"etcdctl {' '.join(args)}: {done.stderr}"
    return done.stdout


def get(key: str, endpoints: str, *, local: bool = False) -> str:
    """The key's value ("" when there is none), read with a quorum, or ``local``ly: the member's own copy."""
    consistency = "--consistency=s" if local else "--consistency=l"
    lines = etcdctl("get", key, "--print-value-only", consistency, endpoints=endpoints).splitlines()
    return "\n".join(lines)


def wait_healthy(members: list[Member], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    for member in members:
        while True:
            assert member.process is not None
            if member.process.poll() is not None:
                pytest.fail(f"etcd {member.name} stopped: {member.log()}")
            healthy = subprocess.run(
                [str(ETCDCTL), f"--endpoints={member.client_url}", "--dial-timeout=2s", "endpoint", "health"],
                env={**os.environ, "ETCDCTL_API": "3"},
                capture_output=True,
            )
            if healthy.returncode == 0:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"etcd {member.name} is not healthy within {timeout} s: {member.log()}")
            time.sleep(0.2)


@pytest.fixture
def members() -> Iterator[list[Member]]:
    """Three members' addresses and directories (started by the test); all stopped and removed after."""
    _binaries()
    made: list[Member] = []
    try:
        for index in range(3):
            directory = Path(tempfile.mkdtemp(prefix=f"flexplane-etcd-{index}-"))
            made.append(Member(f"etcd-{index}", address(ETCD_SUITE, 10 + index), directory))
        yield made
    finally:
        for member in made:
            member.stop(signal.SIGKILL)
            shutil.rmtree(member.directory, ignore_errors=True)


def statuses(members: list[Member]) -> dict[str, tuple[int, int]]:
    """Each answering member's (own id, its leader's id: 0 for none yet) by name, from ``endpoint status``."""
    found = {}
    for member in members:
        done = subprocess.run(
            [
                str(ETCDCTL),
                f"--endpoints={member.client_url}",
                "--dial-timeout=2s",
                "endpoint",
                "status",
                "-w",
                "json",
            ],
            env={**os.environ, "ETCDCTL_API": "3"},
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            (status,) = json.loads(done.stdout)
            found[member.name] = (
                int(status["Status"]["header"]["member_id"]),
                int(status["Status"].get("leader", 0)),
            )
    return found


def wait_for_leader(members: list[Member], timeout: float = 30) -> Member:
    """The leader ``members`` agree on, once they have elected one of themselves within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ids = statuses(members)
        own_ids = {own for own, _ in ids.values()}
        leaders = {lead for _, lead in ids.values()}
        if len(ids) == len(members) and len(leaders) == 1 and leaders <= own_ids:
            (name,) = [name for name, (own, lead) in ids.items() if own == lead]
            return next(m for m in members if m.name == name)
        time.sleep(0.2)
    pytest.fail(f"{[m.name for m in members]} elected no leader among themselves within {timeout} s")


def initial_cluster(members: list[Member]) -> str:
    return ",".join(f"{m.name}={m.peer_url}" for m in members)


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address=address(ETCD_SUITE, 5), port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def cronjob_pod() -> dict[str, Any]:
    """The control plane's etcd-backup CronJob's pod, rendered with a bucket."""
    backup = model.EtcdBackup(s3_url=f"s3://{BUCKET}/{PREFIX}", keep=2, key=base64.b64encode(KEY).decode())
    secret, cronjob = render.render_etcd_backup(CP, backup)
    assert (secret["kind"], cronjob["kind"]) == ("Secret", "CronJob")
    pod: dict[str, Any] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return pod


def snapshot(step: dict[str, Any], scratch: Path, endpoint: str) -> None:
    """The CronJob's first step, its etcdctl at the test's member: its endpoint, and no TLS."""
    command = [arg.replace(model.SNAPSHOT_DIR, str(scratch)) for arg in step["command"]]
    assert command[:3] == ["etcdctl", "snapshot", "save"]
    env = {var["name"]: var["value"] for var in step["env"]}
    assert env["ETCDCTL_ENDPOINTS"] == "https://etcd.fpcp-demo-web.svc:2379"
    tls = ("ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY")
    env = {name: value for name, value in env.items() if name not in tls}
    done = subprocess.run(
        [str(ETCDCTL), *command[1:]],
        env={**os.environ, "ETCDCTL_API": "3", **env, "ETCDCTL_ENDPOINTS": endpoint},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def flexplane(command: list[str], s3_endpoint: str, key_file: Path, env: dict[str, str]) -> str:
    """One of flex.plane's commands as the image runs it (``python -m django``), with the bucket's
    settings and the test's key file in place of the mounted Secret's."""
    assert command[:3] == ["python", "-m", "django"]
    done = subprocess.run(
        [sys.executable, "-m", "django", *command[3:]],
        cwd=ROOT,
        env={
            **os.environ,
            **env,
            "FLEXPLANE_BACKUP_KEY_FILE": str(key_file),
            "FLEXPLANE_BACKUP_S3_ENDPOINT": s3_endpoint,
            "FLEXPLANE_BACKUP_S3_ACCESS_KEY": "test",
            "FLEXPLANE_BACKUP_S3_SECRET_KEY": "test",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def member_paths(member: Member, scratch: Path) -> dict[str, str]:
    """The restore Job's paths, replaced by the test's: the member's volume, the snapshot's scratch."""
    return {model.ETCD_VOLUME_DIR: str(member.directory), model.SNAPSHOT_DIR: str(scratch)}


def in_place(command: list[str], paths: dict[str, str]) -> list[str]:
    replaced = []
    for arg in command:
        for container_path, test_path in paths.items():
            arg = arg.replace(container_path, test_path)
        replaced.append(arg)
    return replaced


def restore_step(command: list[str], member: Member) -> list[str]:
    """The restore Job's ``etcdutl snapshot restore`` for the test's member: its peer URL (the Job names
    the StatefulSet's); on Debian's etcd 3.4, etcdctl's, which cannot bump the revision (etcdutl can)."""
    assert command[:3] == ["etcdutl", "snapshot", "restore"]
    ours = {
        "--initial-cluster": f"{member.name}={member.peer_url}",
        "--initial-advertise-peer-urls": member.peer_url,
    }
    theirs = {
        "--initial-cluster": etcd.initial_cluster(CP),
        "--initial-advertise-peer-urls": etcd.peer_url(CP, 0),
    }
    peers = {f"{flag}={theirs[flag]}": f"{flag}={ours[flag]}" for flag in ours}
    assert set(peers) <= set(command)
    command = [peers.get(arg, arg) for arg in command]
    if ETCDUTL.exists():
        return [str(ETCDUTL), *command[1:]]
    unknown_to_etcdctl = ("--bump-revision=", "--mark-compacted")
    return [str(ETCDCTL), *(arg for arg in command[1:] if not arg.startswith(unknown_to_etcdctl))]


def restore(member: Member, s3_endpoint: str, key_file: Path, scratch: Path) -> str:
    """The restore Job's four steps, in order, on the test's member (docs/operating.md); what fetch_dump
    said."""
    backup = model.EtcdBackup(s3_url=f"s3://{BUCKET}/{PREFIX}", keep=2, key=base64.b64encode(KEY).decode())
    fetch, clear, restore_, swap = render.etcd_restore_containers(CP, backup, 0)
    paths = member_paths(member, scratch)
    env = {var["name"]: var["value"] for var in fetch["env"] if "value" in var}
    fetched = flexplane(in_place(fetch["command"], paths), s3_endpoint, key_file, env)
    for step in (clear, restore_, swap):
        command = in_place(step["command"], paths)
        if step is restore_:
            command = restore_step(command, member)
        else:
            assert command[:2] == ["python", "-c"]
            command = [sys.executable, *command[1:]]
        done = subprocess.run(
            command, env={**os.environ, "ETCDCTL_API": "3"}, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{step['name']}: {done.stderr}"
    return fetched


def test_a_snapshot_sealed_in_the_bucket_brings_a_wiped_members_keys_back(
    members: list[Member], s3_endpoint: str, tmp_path: Path
) -> None:
    member = members[0]
    member.start(f"{member.name}={member.peer_url}")
    wait_healthy([member])
    for key, value in KEYS.items():
        etcdctl("put", key, value, endpoints=member.client_url)
    for key, value in LARGE.items():
        etcdctl("put", key, endpoints=member.client_url, stdin=value)
    s3 = S3Settings(s3_endpoint, access_key="test", secret_key="test").client()
    s3.create_bucket(Bucket=BUCKET)
    key_file = tmp_path / "key"
    key_file.write_text(base64.b64encode(KEY).decode() + "\n")

    # The CronJob, three hours: the snapshot, then its sealing into the bucket (keeping 2).
    pod = cronjob_pod()
    (snapshot_step,) = pod["initContainers"]
    (seal_step,) = pod["containers"]
    scratch = tmp_path / "snapshot"
    scratch.mkdir()
    seal = [arg.replace(model.SNAPSHOT_DIR, str(scratch)) for arg in seal_step["command"] + seal_step["args"]]
    seal_env = {var["name"]: var["value"] for var in seal_step["env"] if "value" in var}
    for hour in range(3):
        etcdctl("put", "/registry/events/default/hour", str(hour), endpoints=member.client_url)
        snapshot(snapshot_step, scratch, member.client_url)
        sealed = flexplane(seal, s3_endpoint, key_file, seal_env)
        (scratch / "etcd.db").unlink()  # the pod's emptyDir goes with it
    assert "sealed the etcd-demo-web dump" in sealed
    assert "kept the newest 2 etcd-demo-web dumps; deleted 1" in sealed
    stored = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"])
    assert len(stored) == 2
    assert all(key.startswith(f"{PREFIX}/etcd-demo-web/") and key.endswith(".fpdump") for key in stored)
    newest = s3.get_object(Bucket=BUCKET, Key=stored[-1])["Body"].read()
    assert newest.startswith(b"FLEXPLANE-SEALED-FILE\n")
    assert b"s3cr3t" not in newest

    # The disaster: the member and its volume are gone.
    member.stop()
    shutil.rmtree(member.data)

    # The restore, as documented: the restore Job's steps fetch and open the newest snapshot, restore it
    # beside the member's data and put it in its place; the member starts on it.
    restored = tmp_path / "restore"
    restored.mkdir()
    (member.directory / "restored").mkdir()  # a failed restore's leftover: cleared first
    fetched = restore(member, s3_endpoint, key_file, restored)
    assert f"from s3://{BUCKET}/{PREFIX}/etcd-demo-web/" in fetched
    assert not (member.directory / "restored").exists()
    member.start(f"{member.name}={member.peer_url}")
    wait_healthy([member])

    for key, value in {**KEYS, **LARGE}.items():
        assert get(key, member.client_url) == value
    assert get("/registry/events/default/hour", member.client_url) == "2"  # the newest snapshot's
    etcdctl("put", "/registry/namespaces/after-restore", "written", endpoints=member.client_url)
    assert get("/registry/namespaces/after-restore", member.client_url) == "written"

    # Restored again over living data (a namespace deleted by mistake, one written since): the snapshot's
    # keys, and the data it replaced kept beside it.
    etcdctl("del", "/registry/namespaces/default", endpoints=member.client_url)
    member.stop()
    restore(member, s3_endpoint, key_file, restored)
    assert (member.directory / "data.before-restore" / "member").is_dir()
    member.start(f"{member.name}={member.peer_url}")
    wait_healthy([member])
    assert get("/registry/namespaces/default", member.client_url) == "a namespace"
    assert get("/registry/namespaces/after-restore", member.client_url) == ""


def test_a_three_member_etcd_keeps_taking_writes_when_one_member_is_killed(members: list[Member]) -> None:
    cluster = initial_cluster(members)
    for member in members:
        member.start(cluster)
    wait_healthy(members)
    everyone = ",".join(m.client_url for m in members)
    etcdctl("put", "/registry/namespaces/before", "3 members", endpoints=everyone)

    # The leader is the member to lose: the worst case, a new leader must be elected among the others.
    lost = wait_for_leader(members)
    assert lost.process is not None
    os.kill(lost.process.pid, signal.SIGKILL)
    lost.process.wait(timeout=30)
    survivors = [m for m in members if m is not lost]
    wait_for_leader(survivors)

    for index, member in enumerate(survivors):  # through each survivor, at the first try
        etcdctl("put", f"/registry/namespaces/after-{index}", "2 of 3", endpoints=member.client_url)
    for member in survivors:  # each reads the other's write, with a quorum
        assert get("/registry/namespaces/before", member.client_url) == "3 members"
        assert get("/registry/namespaces/after-0", member.client_url) == "2 of 3"
        assert get("/registry/namespaces/after-1", member.client_url) == "2 of 3"
    gone = subprocess.run(
        [str(ETCDCTL), f"--endpoints={lost.client_url}", "--dial-timeout=2s", "endpoint", "health"],
        env={**os.environ, "ETCDCTL_API": "3"},
        capture_output=True,
    )
    assert gone.returncode != 0

    # The member back on its volume (a pod rescheduled) catches up with what it missed: read from its own
    # copy (a serializable read, which asks no one else).
    lost.start(cluster)
    wait_healthy([lost])
    deadline = time.monotonic() + 30
    while get("/registry/namespaces/after-1", lost.client_url, local=True) != "2 of 3":
        assert time.monotonic() < deadline, "the member back did not catch up within 30 s"
        time.sleep(0.2)
