"""A database dump sealed and stored, and fetched and opened again: ``manage.py backup_dump`` and
``fetch_dump``, which the identity chart's CronJob and its restore procedure run for Zitadel's database.

flex.plane reads nothing of the dump: ``pg_dump`` writes it and ``pg_restore`` reads it. What it adds
is what the management plane's backup has: the operator's key (``files``: sealed in chunks), the same
bucket (``stores``: under ``<prefix>/<name>/``, suffix ``.fpdump``) and a retention per name.
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.services.backup.contents import flexplane_version
from orchestrator.services.backup.files import FileHeader, new_header, open_file, seal_file
from orchestrator.services.backup.stores import S3Store


@dataclass(frozen=True)
class SealedDump:
    """A dump sealed: its header, the dump's size, where the sealed file went, what the retention deleted."""

    header: FileHeader
    size: int
    where: str
    pruned: list[str] = field(default_factory=list)


def _stamp(now: datetime.datetime | None) -> str:
    return (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def _scratch(beside: Path) -> Iterator[Path]:
    """A path for the sealed copy next to ``beside`` (the volume that has room for it), gone afterwards."""
    path = beside.parent / f".{beside.name}.{secrets.token_hex(4)}.sealed"
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def seal_dump(
    dump: Path, target: Path, key: bytes, *, name: str, now: datetime.datetime | None = None
) -> SealedDump:
    """Seal ``dump`` into the file ``target``."""
    header = new_header(name, created=_stamp(now), version=flexplane_version())
    return SealedDump(header, seal_file(dump, target, key, header), str(target))


def store_dump(
    dump: Path, store: S3Store, key: bytes, *, name: str, keep: int = 0, now: datetime.datetime | None = None
) -> SealedDump:
    """Seal ``dump`` and put it in the bucket under ``<prefix>/<name>/``; with ``keep``, delete that
    name's dumps but the newest ``keep``."""
    header = new_header(name, created=_stamp(now), version=flexplane_version())
    with _scratch(dump) as sealed:
        size = seal_file(dump, sealed, key, header)
        stored = store.put_file(name, header.created, sealed)
    pruned = store.keep(name, keep) if keep else []
    return SealedDump(header, size, f"s3://{store.bucket}/{stored}", pruned)


def open_dump(sealed: Path, target: Path, key: bytes) -> tuple[FileHeader, int]:
    """Open the sealed file ``sealed`` into ``target``: its header and the dump's size."""
    return open_file(sealed, target, key)


def fetch_dump(store: S3Store, target: Path, key: bytes) -> tuple[str, FileHeader, int]:
    """Fetch the dump the bucket's address names (the newest under a prefix, or one by its key) and open
    it into ``target``: the object's key, its header and the dump's size."""
    with _scratch(target) as sealed:
        target.parent.mkdir(parents=True, exist_ok=True)
        found = store.get_file(sealed)
        header, size = open_file(sealed, target, key)
    return f"s3://{store.bucket}/{found}", header, size
