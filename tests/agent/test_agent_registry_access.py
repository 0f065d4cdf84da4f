"""The node's registry access (agent.update.registry): where it is sent, how a renewal replaces it."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from agent.release import ReleaseError
from agent.update.registry import Access, Client, Repository, store_renewed

ACCESS = {"registry": "registry.example.com:5000", "username": "nodes", "password": "pull-only"}


def test_a_repository_reference_is_a_host_and_a_lowercase_path() -> None:
    assert Repository.parse("registry.example.com:5000/flexplane/agent") == Repository(
        "registry.example.com:5000", "flexplane/agent"
    )
    assert (
        Repository.parse("[::1]:5000/agent").url("blobs", "sha256:x")
        == "https://[::1]:5000/v2/agent/blobs/sha256:x"
    )
    for wrong in ("registry.example.com", "registry.example.com/Agent", "https://registry/agent", "/agent"):
        with pytest.raises(ValueError, match="is not a registry repository"):
            Repository.parse(wrong)


async def test_credentials_go_only_to_the_registry_they_are_for() -> None:
    access = Access.from_settings(ACCESS)
    async with aiohttp.ClientSession() as session:
        own = Client(session, Repository.parse("registry.example.com:5000/flexplane/agent"), access)
        other = Client(session, Repository.parse("elsewhere.example.com/flexplane/agent"), access)
    assert own.access == access
    assert other.access is None  # a channel naming another registry gets anonymous pulls


def test_a_renewal_replaces_the_access_file_atomically_and_private(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps({**ACCESS, "password": "old"}))
    assert store_renewed(path, {"update_registry": ACCESS})
    assert json.loads(path.read_text()) == ACCESS
    assert path.stat().st_mode & 0o777 == 0o600
    assert not store_renewed(path, {"update_registry": ACCESS})  # unchanged
    assert not store_renewed(path, {"mesh": {}})  # an answer without it leaves it
    assert not store_renewed(None, {"update_registry": ACCESS})  # an agent without the file
    with pytest.raises(ReleaseError, match="names no registry"):
        store_renewed(path, {"update_registry": {"username": "x"}})
    assert json.loads(path.read_text()) == ACCESS
