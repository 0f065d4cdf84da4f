"""Where backups go: a file, or an S3-compatible bucket with a retention.

In a bucket, a platform's backups are ``<prefix>/<platform id>/<YYYYmmddTHHMMSSZ>-<random>.fpbackup``:
their names sort by time, and a retention (``keep``) lists and deletes under one platform's folder only,
so several platforms can share a bucket and a prefix without one pruning another's backups. Sealed
database dumps share it as ``<prefix>/<name>/<time>-<random>.fpdump`` (a store of suffix ``DUMP_SUFFIX``):
each kind of store lists, prunes and restores its own suffix only, so the newest object under a prefix
is never a dump to the management plane's restore, nor a backup to a dump's.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

import boto3
from boto3.exceptions import Boto3Error
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from orchestrator.services.backup.sealed import BackupError

SUFFIX = ".fpbackup"
DUMP_SUFFIX = ".fpdump"
T = TypeVar("T")


def write_file(path: Path, blob: bytes) -> None:
    """Write the backup whole or not at all (a temporary file renamed), readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(blob)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BackupError(f"cannot read the backup {path}: {exc.strerror}") from None


@dataclass(frozen=True)
class S3Settings:
    """How to reach the bucket: its endpoint (None: AWS's own), region and credentials (None: boto3's
    usual chain: the environment, a profile, an instance role)."""

    endpoint: str | None = None
    region: str = "us-east-1"
    access_key: str | None = None
    secret_key: str | None = None
    timeout: float = 30.0

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint or None,
            region_name=self.region,
            aws_access_key_id=self.access_key or None,
            aws_secret_access_key=self.secret_key or None,
            config=Config(
                connect_timeout=self.timeout,
                read_timeout=self.timeout,
                retries={"max_attempts": 2},
                # Path-style: self-hosted stores (MinIO, Ceph RGW) rarely have a DNS name per bucket.
                s3={"addressing_style": "path"},
            ),
        )


def _calling(doing: str, call: Callable[[], T]) -> T:
    """The call's answer; the store's refusal or silence as a ``BackupError`` saying what failed."""
    try:
        return call()
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise BackupError(
            f"the bucket refused to {doing}: {error.get('Code')} {error.get('Message')}"
        ) from None
    except (BotoCoreError, Boto3Error) as exc:  # Boto3Error: a transfer's (upload_file's) failures
        raise BackupError(f"could not {doing}: {exc}") from None


@dataclass(frozen=True)
class StoredObject:
    """A backup in the bucket: its key and its size in bytes (sealed)."""

    key: str
    size: int

    @property
    def name(self) -> str:
        """Its name in its folder: ``<YYYYmmddTHHMMSSZ>-<random><suffix>``."""
        return self.key.rsplit("/", 1)[-1]

    @property
    def created(self) -> str:
        """When it was made, RFC 3339 (its name's stamp), or "" for a name not of that form."""
        stamp = self.name.split("-", 1)[0]
        if len(stamp) != 16 or stamp[8] != "T" or not stamp.endswith("Z"):
            return ""
        digits = stamp[:8] + stamp[9:15]
        if not digits.isdigit():
            return ""
        return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}Z"


class S3Store:
    """A platform's backups (or, with ``suffix=DUMP_SUFFIX``, sealed dumps) in a bucket under
    ``s3://bucket/prefix``."""

    def __init__(self, url: str, s3: Any, suffix: str = SUFFIX) -> None:
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise BackupError(f"{url!r} is not an s3://bucket/prefix address")
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.s3 = s3
        self.suffix = suffix

    def _key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def _new_key(self, folder: str, created: str) -> str:
        stamp = created.replace("-", "").replace(":", "")
        return self._key(folder, f"{stamp}-{secrets.token_hex(3)}{self.suffix}")

    def put(self, platform: str, created: str, blob: bytes) -> str:
        """Store a backup; its key."""
        key = self._new_key(platform, created)
        _calling(f"write {key}", lambda: self.s3.put_object(Bucket=self.bucket, Key=key, Body=blob))
        return key

    def put_file(self, folder: str, created: str, path: Path) -> str:
        """Store a file under a folder of the prefix, streamed (in parts when large); its key."""
        key = self._new_key(folder, created)
        _calling(f"write {key}", partial(self.s3.upload_file, str(path), self.bucket, key))
        return key

    def objects(self, under: str) -> list[StoredObject]:
        """The backups under a folder of the prefix, oldest first (their names sort by time)."""
        prefix = self._key(under) + "/" if self._key(under) else ""
        paginator = self.s3.get_paginator("list_objects_v2")
        pages = _calling(
            f"list s3://{self.bucket}/{prefix}",
            lambda: list(paginator.paginate(Bucket=self.bucket, Prefix=prefix)),
        )
        found = [
            StoredObject(o["Key"], int(o.get("Size") or 0))
            for page in pages
            for o in page.get("Contents", ())
            if o["Key"].endswith(self.suffix)
        ]
        return sorted(found, key=lambda stored: stored.name)

    def keys(self, under: str) -> list[str]:
        """The backups' keys under a folder of the prefix, oldest first (their names sort by time)."""
        return [stored.key for stored in self.objects(under)]

    def keep(self, platform: str, count: int) -> list[str]:
        """Delete this platform's backups but the newest ``count``; the keys deleted."""
        found = self.keys(platform)
        old = found[: max(0, len(found) - count)]
        for key in old:
            _calling(f"delete {key}", partial(self.s3.delete_object, Bucket=self.bucket, Key=key))
        return old

    def chosen(self) -> str:
        """The key the address names: the object itself if it is one, else the newest under it."""
        if self.prefix.endswith(self.suffix):
            return self.prefix
        found = self.keys("")
        if not found:
            what = {SUFFIX: "backup", DUMP_SUFFIX: "sealed dump"}.get(self.suffix, self.suffix)
            raise BackupError(f"there is no {what} under s3://{self.bucket}/{self.prefix}")
        return found[-1]

    def get(self) -> tuple[str, bytes]:
        """The backup the address names (``chosen``), and its bytes."""
        key = self.chosen()
        answer = _calling(f"read {key}", lambda: self.s3.get_object(Bucket=self.bucket, Key=key))
        return key, _calling(f"read {key}", lambda: answer["Body"].read())

    def get_file(self, path: Path) -> str:
        """Download the object the address names (``chosen``) to ``path``, streamed; its key."""
        key = self.chosen()
        _calling(f"read {key}", partial(self.s3.download_file, self.bucket, key, str(path)))
        return key
