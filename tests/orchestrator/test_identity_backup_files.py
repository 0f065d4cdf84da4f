"""A sealed file (``orchestrator.services.backup.files``): any file, Zitadel's dump, sealed in chunks with
the backup key; what it refuses (another key, a file cut at a chunk's end, chunks reordered, an altered
header, a newer format, a management backup) before writing anything; and how sealed dumps share a
bucket with the management plane's backups (moto's S3 server on loopback) without either taking the
other's place."""

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

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from kubernetes import client
from moto.server import ThreadedMotoServer

from orchestrator.services.backup import (
    DUMP_SUFFIX,
    BackupError,
    NewerFormat,
    NotABackup,
    S3Settings,
    S3Store,
    WrongKey,
    fetch_dump,
    restore_backup,
    store_dump,
)
from orchestrator.services.backup.files import (
    MAGIC,
    TAG_BYTES,
    FileHeader,
    new_header,
    open_file,
    open_stream,
    seal_file,
    seal_stream,
)
from orchestrator.services.backup.objects import ManagementObjects
from tests.addresses import BACKUP, address

ROOT = Path(__file__).resolve().parents[2]
KEY = bytes(range(32))
CHUNK = 64  # small chunks, so that a few hundred bytes make several


def header(chunk: int = CHUNK) -> FileHeader:
    return new_header("identity", created="2026-12-06T03:37:00Z", version="0.1.0", chunk=chunk)


def sealed(plain: bytes, chunk: int = CHUNK, key: bytes = KEY) -> bytes:
    out = io.BytesIO()
    seal_stream(io.BytesIO(plain), out, key, header(chunk))
    return out.getvalue()


def opened(blob: bytes, key: bytes = KEY) -> bytes:
    out = io.BytesIO()
    open_stream(io.BytesIO(blob), out, key)
    return out.getvalue()


def split(blob: bytes, chunk: int = CHUNK) -> tuple[bytes, list[bytes]]:
    """A sealed file's header bytes and its sealed chunks."""
    end = blob.index(b"\n", len(MAGIC)) + 1
    body, size = blob[end:], chunk + TAG_BYTES
    return blob[:end], [body[i : i + size] for i in range(0, len(body), size)]


@pytest.mark.parametrize("length", [0, 1, CHUNK - 1, CHUNK, 3 * CHUNK, 3 * CHUNK + 5])
def test_a_file_of_any_length_comes_back_whole(length: int) -> None:
    plain = os.urandom(length)

    blob = sealed(plain)

    assert opened(blob) == plain
    assert len(split(blob)[1]) == max(1, -(-length // CHUNK))  # no empty chunk after a full one


def test_the_header_is_plain_and_the_contents_are_not() -> None:
    plain = b"zitadel-admin@acme.example " * 20

    blob = sealed(plain)

    head = json.loads(blob[len(MAGIC) : blob.index(b"\n", len(MAGIC))])
    assert (head["format"], head["name"], head["created"], head["chunk"]) == (
        1,
        "identity",
        "2026-12-06T03:37:00Z",
        CHUNK,
    )
    assert b"acme.example" not in blob
    assert sealed(plain) != blob  # a fresh salt, so a fresh key, every time


def test_another_key_is_refused() -> None:
    with pytest.raises(WrongKey, match="the key does not open the sealed identity file made 2026-12-06"):
        opened(sealed(b"users" * 100), key=bytes(32))


def test_an_altered_header_is_refused_as_the_key_would_be() -> None:
    blob = sealed(b"users" * 100)

    with pytest.raises(WrongKey):
        opened(blob.replace(b'"name":"identity"', b'"name":"identitz"', 1))


def test_a_file_cut_at_a_chunks_end_is_refused() -> None:
    head, chunks = split(sealed(os.urandom(3 * CHUNK + 5)))

    with pytest.raises(NotABackup, match="cut short at its chunk 1"):
        opened(head + chunks[0] + chunks[1])  # the last two chunks gone
    with pytest.raises(NotABackup, match="cut short"):
        opened(head)  # all of them


def test_chunks_in_another_order_are_refused() -> None:
    head, chunks = split(sealed(os.urandom(3 * CHUNK + 5)))

    with pytest.raises(NotABackup, match="altered or cut short at its chunk 1"):
        opened(head + chunks[0] + chunks[2] + chunks[1] + chunks[3])


def test_a_newer_format_is_refused_before_the_key_is_needed() -> None:
    blob = sealed(b"users")
    newer = blob.replace(b'"format":1', b'"format":2', 1)

    with pytest.raises(NewerFormat, match=r"open it with flex\.plane 0\.1\.0 or newer"):
        opened(newer, key=bytes(32))


def test_a_management_backup_and_a_sealed_file_each_refuse_the_other() -> None:
    with pytest.raises(NotABackup, match=r"not a flex\.plane sealed file"):
        opened(b"FLEXPLANE-BACKUP\n{}\n")
    with pytest.raises(NotABackup, match=r"not a flex\.plane backup"):
        restore_backup(ManagementObjects(client.ApiClient(), 1.0), sealed(b"users"), KEY)


def test_a_file_that_does_not_open_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "zitadel.dump").write_bytes(os.urandom(300))
    seal_file(tmp_path / "zitadel.dump", tmp_path / "sealed", KEY, header())
    target = tmp_path / "restore" / "zitadel.dump"

    with pytest.raises(WrongKey):
        open_file(tmp_path / "sealed", target, bytes(32))

    assert list(target.parent.iterdir()) == []
    open_file(tmp_path / "sealed", target, KEY)
    assert target.read_bytes() == (tmp_path / "zitadel.dump").read_bytes()
    assert target.stat().st_mode & 0o077 == 0  # a dump holds every user's password hash


def test_a_name_that_is_no_folder_is_refused() -> None:
    with pytest.raises(BackupError, match="cannot name a sealed file"):
        new_header("../identity", created="2026-12-06T03:37:00Z", version="0.1.0")


def command(*args: str, key: bytes = KEY) -> subprocess.CompletedProcess[str]:
    """``manage.py`` as the identity chart's CronJob runs it: with the shared settings alone."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "flexplane.settings.base",
        "FLEXPLANE_BACKUP_KEY": base64.b64encode(key).decode(),
    }
    env.pop("FLEXPLANE_BACKUP_KEY_FILE", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def refusal(monkeypatch: pytest.MonkeyPatch, *args: str, key: bytes = KEY) -> str:
    """Why the command refuses ``args`` (the CommandError ``manage.py`` prints and exits 1 with), the key in
    the environment as ``command`` gives it: run in this process, where a process of its own would only
    start Django again (``command`` shows the way through ``manage.py``)."""
    monkeypatch.setenv("FLEXPLANE_BACKUP_KEY", base64.b64encode(key).decode())
    monkeypatch.delenv("FLEXPLANE_BACKUP_KEY_FILE", raising=False)
    with pytest.raises(CommandError) as refused:
        call_command(*args, stdout=io.StringIO(), stderr=io.StringIO())
    return str(refused.value)


def test_the_commands_seal_to_a_file_and_refuse_what_they_cannot_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump, sealed_file, target = tmp_path / "zitadel.dump", tmp_path / "zitadel.fpdump", tmp_path / "out.dump"
    dump.write_bytes(os.urandom(3000))

    made = command("backup_dump", str(dump), "--file", str(sealed_file))
    assert made.returncode == 0, made.stderr
    assert f"sealed the identity dump {dump}" in made.stdout

    wrong = refusal(monkeypatch, "fetch_dump", "--file", str(sealed_file), "--to", str(target), key=bytes(32))
    assert "the key does not open the sealed identity file" in wrong
    assert not target.exists()
    keep = refusal(monkeypatch, "backup_dump", str(dump), "--file", str(sealed_file), "--keep", "2")
    assert "--keep takes a positive count, and only with --s3" in keep
    missing = refusal(monkeypatch, "backup_dump", str(tmp_path / "none.dump"), "--file", str(sealed_file))
    assert f"cannot read {tmp_path / 'none.dump'}" in missing
    fetched = command("fetch_dump", "--file", str(sealed_file), "--to", str(target))
    assert fetched.returncode == 0, fetched.stderr
    assert target.read_bytes() == dump.read_bytes()


# ---------------------------------------------------------------------- one bucket for both


@pytest.fixture(scope="module")
def s3_settings() -> Iterator[S3Settings]:
    server = ThreadedMotoServer(ip_address=address(BACKUP, 3), port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield S3Settings(f"http://{host}:{port}", access_key="test", secret_key="test")
    finally:
        server.stop()


def test_dumps_and_backups_share_a_prefix_each_kept_and_restored_on_its_own(
    s3_settings: S3Settings, tmp_path: Path
) -> None:
    s3 = s3_settings.client()
    s3.create_bucket(Bucket="shared-backups")  # moto's buckets are the process's: a name of this test's
    url = "s3://shared-backups/flexplane"
    backups, dumps = S3Store(url, s3), S3Store(url, s3, DUMP_SUFFIX)
    platform_backup = backups.put("5f0c", "2026-12-01T03:17:00Z", b"the platform's")
    dump = tmp_path / "zitadel.dump"
    made = []
    for day in range(1, 4):
        dump.write_bytes(f"dump of day {day}".encode())
        made.append(
            store_dump(dump, dumps, KEY, name="identity", keep=2, now=_day(day)).where.removeprefix(
                "s3://shared-backups/"
            )
        )
    newer_backup = backups.put("5f0c", "2026-12-05T03:17:00Z", b"newer")

    listed = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="shared-backups")["Contents"])
    assert listed == sorted([platform_backup, newer_backup, *made[1:]])
    assert all(key.startswith("flexplane/identity/") and key.endswith(".fpdump") for key in made)
    assert backups.get() == (newer_backup, b"newer")  # the newest backup, never a dump
    found, opened_header, _size = fetch_dump(dumps, tmp_path / "out" / "zitadel.dump", KEY)
    assert found == f"s3://shared-backups/{made[-1]}"
    assert (tmp_path / "out" / "zitadel.dump").read_bytes() == b"dump of day 3"
    assert opened_header.created == "2026-12-03T03:37:00Z"
    assert sorted(p.name for p in tmp_path.rglob("*")) == [
        "out",
        "zitadel.dump",
        "zitadel.dump",
    ]  # no scratch


def _day(day: int) -> datetime.datetime:
    return datetime.datetime(2026, 12, day, 3, 37, tzinfo=datetime.UTC)
