"""Cloud-init snippets: small files the agent writes into its node's snippets folder.

Proxmox reads custom cloud-init data only from a file on a storage with the ``snippets``
content type, named in a VM's ``cicustom`` option by its volume id. The agent writes such
files into ``snippets_dir`` (the snippets folder of ``snippets_storage``), and only under
names of the form ``fp-<lowercase letters, digits, hyphens>.yaml`` (see agentclient.snippets):
a name can neither leave the folder nor touch a snippet flex.plane did not write.

A write is atomic: the content goes to a temporary file in the same folder, which is then
renamed over the name, so Proxmox reads either the old snippet or the new one, never half.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

from agentclient.snippets import check_snippet_content, check_snippet_name, snippet_volume_id

log = logging.getLogger(__name__)

# Readable by root and its group (Proxmox runs as root), by nobody else: cloud-init data can hold secrets.
SNIPPET_MODE = 0o640


class SnippetRefused(Exception):
    """The snippet's name or size is not accepted; nothing was written."""


class SnippetStoreError(Exception):
    """The snippet file could not be written or removed; the message says why."""


class SnippetStore:
    """The snippets folder of one storage on this node."""

    def __init__(self, directory: Path, storage: str) -> None:
        self.directory = directory
        self.storage = storage

    def _path(self, name: str) -> Path:
        try:
            return self.directory / check_snippet_name(name)
        except ValueError as exc:
            raise SnippetRefused(str(exc)) from None

    def write(self, name: str, content: bytes) -> str:
        """Write (or replace) the snippet atomically; returns its Proxmox volume id."""
        path = self._path(name)
        try:
            check_snippet_content(content)
        except ValueError as exc:
            raise SnippetRefused(str(exc)) from None
        temporary: Path | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temp_name = tempfile.mkstemp(dir=self.directory, prefix=".fp-", suffix=".tmp")
            temporary = Path(temp_name)
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), SNIPPET_MODE)
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            temporary.replace(path)
            temporary = None
        except OSError as exc:
            raise SnippetStoreError(f"cannot write {path}: {exc.strerror or exc}") from None
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    temporary.unlink()
        log.info("wrote snippet %s (%d bytes)", path, len(content))
        return snippet_volume_id(self.storage, name)

    def delete(self, name: str) -> bool:
        """Remove the snippet; False when there was none."""
        path = self._path(name)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise SnippetStoreError(f"cannot remove {path}: {exc.strerror or exc}") from None
        log.info("removed snippet %s", path)
        return True
