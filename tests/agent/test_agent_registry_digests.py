"""A tag's digest through the registry client (agent.update.registry's ``Client.tag_digest``), against
stand-ins for what public registries do that Debian's docker-registry does not: an anonymous bearer token
from the challenge's realm (ghcr.io, quay.io, Docker Hub), no ``Docker-Content-Digest`` on a HEAD, and
registry.k8s.io's redirect of manifests to the registry that serves them, which asks a token of its own.
The real registry's answers are tests/packaging/test_pin_images.py's."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from agent.update.registry import (
    DOCKER_LIST_MEDIA_TYPE,
    INDEX_MEDIA_TYPE,
    Access,
    Client,
    ManifestUnknown,
    NotAnImage,
    Repository,
    bearer_challenge,
)
from tests.agent.test_agent_registry_access import https_servers

INDEX = json.dumps({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": []}).encode()
INDEX_DIGEST = "sha256:" + hashlib.sha256(INDEX).hexdigest()


def test_a_bearer_challenge_is_read_whatever_its_quoting_and_order() -> None:
    docker_hub = (
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/postgres:pull"'
    )
    assert bearer_challenge(docker_hub) == {
        "realm": "https://auth.docker.io/token",
        "service": "registry.docker.io",
        "scope": "repository:library/postgres:pull",
    }
    # A scope naming two actions keeps its comma; unquoted values and another order read the same.
    assert bearer_challenge('bearer scope="repository:a/b:pull,push", realm=https://ghcr.io/token') == {
        "scope": "repository:a/b:pull,push",
        "realm": "https://ghcr.io/token",
    }
    assert bearer_challenge('Basic realm="registry"') is None
    assert bearer_challenge("") is None


async def test_an_anonymous_token_is_asked_of_the_realm_and_a_manifest_without_a_digest_header_is_hashed(
    tmp_path: Path,
) -> None:
    """As ghcr.io answers a first request (401 naming its realm), with a registry that names no digest."""
    ports: list[int] = []
    asked: list[dict[str, str]] = []
    methods: list[str] = []

    async def registry(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer anonymous-token":
            realm = f"https://{request.url.host}:{ports[1]}/token"
            challenge = f'Bearer realm="{realm}",service="ghcr.io",scope="repository:zitadel/zitadel:pull"'
            return web.Response(status=401, headers={"WWW-Authenticate": challenge})
        methods.append(request.method)
        assert request.headers["Accept"].startswith(INDEX_MEDIA_TYPE)
        return web.Response(body=INDEX, content_type=INDEX_MEDIA_TYPE)

    async def tokens(request: web.Request) -> web.Response:
        asked.append({**request.query, "auth": request.headers.get("Authorization", "")})
        return web.json_response({"token": "anonymous-token"})

    async with https_servers(tmp_path, registry, tokens) as (host, ca, listening):
        ports += listening
        repository = Repository.parse(f"{host}:{ports[0]}/zitadel/zitadel")
        async with aiohttp.ClientSession() as session:
            # The CA only: no credentials (they would be for another registry).
            client = Client(session, repository, Access("elsewhere.example", ca_pem=ca.cert_pem.decode()))
            digest = await client.tag_digest("v2.71.18")
    assert digest == INDEX_DIGEST
    assert methods == ["HEAD", "GET"]  # the HEAD named no digest: the GET's bytes are hashed
    assert asked == [{"service": "ghcr.io", "scope": "repository:zitadel/zitadel:pull", "auth": ""}]


async def test_a_manifest_redirected_to_the_registry_that_serves_it_keeps_its_accept_and_not_the_credentials(
    tmp_path: Path,
) -> None:
    """As registry.k8s.io answers a manifest: a 307 to Artifact Registry, which may challenge on its own."""
    ports: list[int] = []
    seen: list[tuple[str, str, str]] = []
    asked: list[str] = []

    async def front(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(
            f"https://{request.url.host}:{ports[1]}/v2/k8s/images{request.path[3:]}"
        )

    async def backend(request: web.Request) -> web.Response:
        seen.append(
            (request.method, request.headers.get("Authorization", ""), request.headers.get("Accept", ""))
        )
        if request.path == "/token":
            asked.append(request.headers.get("Authorization", ""))
            return web.json_response({"token": "backend-token"})
        if request.headers.get("Authorization") != "Bearer backend-token":
            realm = f"https://{request.url.host}:{ports[1]}/token"
            return web.Response(
                status=401, headers={"WWW-Authenticate": f'Bearer realm="{realm}",service="ar"'}
            )
        if request.path.endswith("/missing"):
            return web.Response(status=404)
        headers = {"Docker-Content-Digest": INDEX_DIGEST, "Content-Type": DOCKER_LIST_MEDIA_TYPE}
        return web.Response(body=INDEX if request.method == "GET" else None, headers=headers)

    async with https_servers(tmp_path, front, backend) as (host, ca, listening):
        ports += listening
        front_host = f"{host}:{ports[0]}"
        access = Access(front_host, "robot", "secret", ca.cert_pem.decode())
        async with aiohttp.ClientSession() as session:
            client = Client(session, Repository.parse(f"{front_host}/etcd"), access)
            digest = await client.tag_digest("3.6.5-0")
            with pytest.raises(ManifestUnknown, match="is not in the registry"):
                await client.tag_digest("missing")
    assert digest == INDEX_DIGEST
    basic = "Basic " + base64.b64encode(b"robot:secret").decode()
    assert all(basic not in auth for _, auth, _ in seen)  # the front's credentials never left it
    assert asked == ["", ""]  # the backend's tokens, asked anonymously
    assert all(accept.startswith(INDEX_MEDIA_TYPE) for method, _, accept in seen if method == "HEAD")


async def test_a_schema_1_manifest_or_a_malformed_digest_is_no_image_to_pin(
    tmp_path: Path,
) -> None:
    answers = {
        "/v2/old/manifests/1": {
            "Content-Type": "application/vnd.docker.distribution.manifest.v1+prettyjws",
            "Docker-Content-Digest": INDEX_DIGEST,
        },
        "/v2/odd/manifests/1": {"Content-Type": INDEX_MEDIA_TYPE, "Docker-Content-Digest": "sha512:abc"},
    }

    async def registry(request: web.Request) -> web.Response:
        return web.Response(headers=answers[request.path])

    async with https_servers(tmp_path, registry) as (host, ca, ports):
        access = Access(f"{host}:{ports[0]}", ca_pem=ca.cert_pem.decode())
        async with aiohttp.ClientSession() as session:
            old = Client(session, Repository.parse(f"{host}:{ports[0]}/old"), access)
            with pytest.raises(NotAnImage, match="not an image manifest or index"):
                await old.tag_digest("1")
            odd = Client(session, Repository.parse(f"{host}:{ports[0]}/odd"), access)
            with pytest.raises(NotAnImage, match="not sha256"):
                await odd.tag_digest("1")
