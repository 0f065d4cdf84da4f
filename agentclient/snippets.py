"""Cloud-init snippets on Proxmox nodes: what the agent accepts as a snippet's name and content.

A snippet is a file in the snippets folder of a node's storage that a VM's ``cicustom`` option
names by its volume id (``<storage>:snippets/<name>``). flex.plane's snippets are all named
``fp-<lowercase letters, digits, hyphens>.yaml``: no other name is written or removed, so no
name can leave the folder or touch a snippet an admin put there.
"""

from __future__ import annotations

import re

SNIPPET_MAX_BYTES = 64 * 1024
SNIPPET_NAME_MAX = 128
_SNIPPET_NAME = re.compile(r"fp-[a-z0-9-]+\.yaml")


def check_snippet_name(name: str) -> str:
    """name if it is a valid snippet name (``fp-[a-z0-9-]+.yaml``), else ValueError."""
    if not isinstance(name, str) or len(name) > SNIPPET_NAME_MAX or not _SNIPPET_NAME.fullmatch(name):
        raise ValueError(
            f"snippet name {str(name)[:SNIPPET_NAME_MAX]!r} is not fp-<lowercase letters, digits, "
            f"hyphens>.yaml of at most {SNIPPET_NAME_MAX} characters"
        )
    return name


def check_snippet_content(content: bytes) -> bytes:
    """content if it fits a snippet (at most SNIPPET_MAX_BYTES), else ValueError."""
    if len(content) > SNIPPET_MAX_BYTES:
        raise ValueError(f"the snippet is {len(content)} bytes; at most {SNIPPET_MAX_BYTES} are accepted")
    return content


def snippet_volume_id(storage: str, name: str) -> str:
    """The Proxmox volume id of snippet name on storage: ``<storage>:snippets/<name>``."""
    return f"{storage}:snippets/{name}"
