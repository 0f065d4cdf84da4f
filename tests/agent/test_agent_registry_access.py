"""The node's registry access (agent.update.registry): where it is sent, how a renewal replaces it."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from agent.release import ReleaseError, ReleaseRefused
from agent.update.registry import (
    ARTIFACT_TYPE,
    MANIFEST_MEDIA_TYPE,
    Access,
    Client,
    Repository,
    store_renewed,
)
from devstack.pki import CertificateAuthority
from tests import addresses

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


@contextlib.asynccontextmanager
async def https_servers(
    tmp_path: Path, *handlers: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> AsyncIterator[tuple[str, CertificateAuthority, list[int]]]:
    """One HTTPS server per handler (every GET), on a loopback address, with a CA of their own."""
    ca = CertificateAuthority.create(tmp_path / "ca")
    host = addresses.address(addresses.AGENT_SUITE, 240)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*ca.issue_server([host], tmp_path, "server"))
    runners, ports = [], []
    try:
        for handler in handlers:
            app = web.Application()
            app.router.add_get("/{tail:.*}", handler)
            runner = web.AppRunner(app)
            runners.append(runner)
            await runner.setup()
            site = web.TCPSite(runner, host, 0, ssl_context=context)
            await site.start()
            ports.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        yield host, ca, ports
    finally:
        for runner in runners:
            await runner.cleanup()


async def blob(registry: str, access: Access) -> tuple[int, bytes]:
    """A blob asked of the registry at ``registry`` (host:port) through the client: the status and body."""
    async with aiohttp.ClientSession() as session:
        client = Client(session, Repository.parse(f"{registry}/flexplane/agent"), access)
        response = await client.request("GET", client.repository.url("blobs", "sha256:" + "0" * 64))
        body = await response.read()
        response.release()
    return response.status, body


async def test_a_blob_redirected_to_storage_is_fetched_there_without_the_registrys_credentials(
    tmp_path: Path,
) -> None:
    """As registries on object storage answer blobs: a 307 to a presigned URL of another host."""
    seen: dict[str, str | None] = {}
    ports: list[int] = []

    async def storage(request: web.Request) -> web.Response:
        seen["storage"] = request.headers.get("Authorization")
        return web.Response(body=b"the blob")

    async def registry(request: web.Request) -> web.Response:
        seen["registry"] = request.headers.get("Authorization")
        raise web.HTTPTemporaryRedirect(f"https://{request.url.host}:{ports[1]}/bucket/blob?X-Signature=s")

    async with https_servers(tmp_path, registry, storage) as (host, ca, listening):
        ports += listening
        access = Access(f"{host}:{ports[0]}", "nodes", "pull-only", ca.cert_pem.decode())
        answer = await blob(f"{host}:{ports[0]}", access)
    assert answer == (200, b"the blob")
    assert seen["registry"] == "Basic " + base64.b64encode(b"nodes:pull-only").decode()
    assert seen["storage"] is None


async def test_a_manifest_whose_bytes_are_not_the_digest_asked_for_is_refused(tmp_path: Path) -> None:
    """A registry (or what stands in its way) answering other bytes for a digest: nothing is read of them."""
    asked = "sha256:" + hashlib.sha256(b"the manifest the channel named").hexdigest()
    paths: list[str] = []

    async def registry(request: web.Request) -> web.Response:
        paths.append(request.path)
        return web.json_response({"mediaType": MANIFEST_MEDIA_TYPE, "artifactType": ARTIFACT_TYPE})

    async with https_servers(tmp_path, registry) as (host, ca, ports):
        access = Access(f"{host}:{ports[0]}", ca_pem=ca.cert_pem.decode())
        async with aiohttp.ClientSession() as session:
            client = Client(session, Repository.parse(f"{host}:{ports[0]}/flexplane/agent"), access)
            with pytest.raises(ReleaseRefused, match="does not hash to its digest: tampered"):
                await client.pull_envelope(asked)
    assert paths == [f"/v2/flexplane/agent/manifests/{asked}"]  # no blob was asked for


async def test_a_registry_with_token_auth_gets_the_bearer_token_its_realm_hands_the_credentials(
    tmp_path: Path,
) -> None:
    """As Harbor, GitLab or a cloud registry answer: 401 naming a token realm, which takes basic auth."""
    ports: list[int] = []
    asked: list[dict[str, str]] = []

    async def registry(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") == "Bearer pull-token":
            return web.Response(body=b"the blob")
        realm = f"https://{request.url.host}:{ports[1]}/token"
        challenge = f'Bearer realm="{realm}",service="registry",scope="repository:flexplane/agent:pull"'
        return web.Response(status=401, headers={"WWW-Authenticate": challenge})

    async def tokens(request: web.Request) -> web.Response:
        asked.append({**request.query, "auth": request.headers.get("Authorization", "")})
        return web.json_response({"token": "pull-token"})

    async with https_servers(tmp_path, registry, tokens) as (host, ca, listening):
        ports += listening
        access = Access(f"{host}:{ports[0]}", "robot", "pull-only", ca.cert_pem.decode())
        answer = await blob(f"{host}:{ports[0]}", access)
    assert answer == (200, b"the blob")
    assert asked == [
        {
            "service": "registry",
            "scope": "repository:flexplane/agent:pull",
            "auth": "Basic " + base64.b64encode(b"robot:pull-only").decode(),
        }
    ]
