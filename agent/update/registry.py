"""Agent releases in an OCI registry: the artifact's layout, pushing one, and pulling one by digest.

A release is pushed as an OCI artifact (an image manifest whose ``artifactType`` says what it is,
its config the empty descriptor) under the tag of its version::

    artifactType  application/vnd.flexplane.agent.release.v1
    layers[0]     application/vnd.flexplane.agent.release.manifest.v1+json   the signed manifest file
    layers[1]     application/vnd.flexplane.agent.zipapp.v1                  flexplane-agent.pyz

It speaks the registry's HTTP API (the OCI distribution spec) directly, over aiohttp, which the
agent has anyway: a pull is three GETs (the manifest by digest, two blobs), a push a few POST/PUTs,
and the agent ships with no other dependency (distributions/flexplane-agent); the ``oras`` SDK
would add its own HTTP stack for those few requests. Auth is basic, or a bearer token fetched
from the realm a ``401`` names (``WWW-Authenticate: Bearer``), as registries with token auth do.

The registry is not trusted: the manifest's bytes must hash to the digest asked for, the media
types must be these, and the signed manifest inside then vouches for the zipapp layer's digest
and size, which the download checks as the orchestrator-served path does (:mod:`agent.release`).

The same client resolves a container image's tag to its digest (:meth:`Client.tag_digest`), which
``make pin-images`` (packaging/pin_images.py) asks of the third-party images' registries: anonymous
bearer tokens as ghcr.io, quay.io and Docker Hub hand out, and registry.k8s.io's redirect of manifests
to the backend that serves them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import ssl
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from agent.release import MAX_ENVELOPE_BYTES, Manifest, ReleaseError, ReleaseRefused

MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
# A container image's manifests, as a tag names them: the multi-arch index (OCI's, Docker's manifest list)
# first, so a registry that holds one answers it rather than one platform's image, then a single image's.
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST_MEDIA_TYPE = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST_MEDIA_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
IMAGE_MEDIA_TYPES = (
    INDEX_MEDIA_TYPE,
    DOCKER_LIST_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    DOCKER_MANIFEST_MEDIA_TYPE,
)
# The largest manifest the distribution spec has registries accept (an index of many platforms and
# attestations is a few kilobytes).
MAX_IMAGE_MANIFEST_BYTES = 4 * 1024 * 1024
ARTIFACT_TYPE = "application/vnd.flexplane.agent.release.v1"
ENVELOPE_MEDIA_TYPE = "application/vnd.flexplane.agent.release.manifest.v1+json"
ZIPAPP_MEDIA_TYPE = "application/vnd.flexplane.agent.zipapp.v1"
EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY_CONFIG = b"{}"
VERSION_ANNOTATION = "org.opencontainers.image.version"
MAX_MANIFEST_BYTES = 64 * 1024
# The key of the registry access in the orchestrator's answers to a join and a renewal.
REGISTRY_SETTING = "update_registry"
# Where the bootstrap writes it, beside the agent's configuration.
CREDENTIALS_NAME = "registry.json"
# Registry hosts and repository paths (the distribution spec's grammar, lowercase).
_REPOSITORY = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*")
_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_CHALLENGE_PARAM = re.compile(r'(\w+)=(?:"([^"]*)"|([^\s,"]+))')
REDIRECTS = frozenset({301, 302, 303, 307, 308})


class RegistryUnavailable(Exception):
    """The registry did not answer, or not as a registry does (down, wrong credentials, 5xx)."""


class ManifestUnknown(Exception):
    """The registry holds no manifest under that tag (404)."""


class NotAnImage(Exception):
    """What a tag names is no image this client pins: another media type (a schema 1 manifest), or a
    digest that is not sha256 or not the bytes'."""


def bearer_challenge(header: str) -> dict[str, str] | None:
    """A ``WWW-Authenticate: Bearer realm="…",service="…",scope="…"`` challenge's parameters (quoted or
    not, in any order); None for another scheme (Basic) or none."""
    scheme, _, params = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return {name: quoted or bare for name, quoted, bare in _CHALLENGE_PARAM.findall(params)}


@dataclass(frozen=True)
class Repository:
    """``host[:port]/path``: where a site's agent releases live."""

    host: str
    path: str

    @classmethod
    def parse(cls, reference: str) -> Repository:
        """A repository reference; ValueError naming what is wrong."""
        host, _, path = reference.strip().partition("/")
        if not _HOST.fullmatch(host) or not _REPOSITORY.fullmatch(path):
            raise ValueError(f"{reference!r} is not a registry repository (host[:port]/path, lowercase)")
        return cls(host, path)

    def __str__(self) -> str:
        return f"{self.host}/{self.path}"

    def url(self, kind: str, name: str) -> str:
        """``https://host/v2/<path>/<kind>/<name>``."""
        return f"https://{self.host}/v2/{self.path}/{kind}/{name}"


@dataclass(frozen=True)
class Access:
    """How this node reaches its registry: read-only credentials for one host, and the CA it serves with.

    The file (update_registry_credentials) comes with enrollment and renews with the certificate::

        {"registry": "host:port", "username": "...", "password": "...", "ca": "<PEM, optional>"}
    """

    registry: str
    username: str = ""
    password: str = ""
    ca_pem: str = ""

    @classmethod
    def from_settings(cls, data: Any) -> Access:
        if not isinstance(data, dict) or not isinstance(data.get("registry"), str):
            raise ValueError("the registry access names no registry")
        fields = {k: data.get(k) or "" for k in ("username", "password", "ca")}
        if not all(isinstance(v, str) for v in fields.values()):
            raise ValueError("the registry access's username, password and ca must be strings")
        return cls(data["registry"], fields["username"], fields["password"], fields["ca"])

    @classmethod
    def read(cls, path: Path) -> Access:
        try:
            return cls.from_settings(json.loads(path.read_bytes()))
        except OSError as exc:
            raise ReleaseError(
                f"cannot read the registry credentials {path}: {exc.strerror or exc}"
            ) from None
        except ValueError as exc:
            raise ReleaseError(f"{path} is not registry credentials: {exc}") from None

    def to_settings(self) -> dict[str, str]:
        values = {"registry": self.registry, "username": self.username, "password": self.password}
        return {**values, "ca": self.ca_pem} if self.ca_pem else values

    def ssl_context(self, fallback: ssl.SSLContext | None = None) -> ssl.SSLContext:
        """The system's trust, plus the registry's own CA when it has one (its storage, which blobs
        may redirect to, may have either)."""
        if self.ca_pem:
            context = ssl.create_default_context()
            context.load_verify_locations(cadata=self.ca_pem)
            return context
        return fallback or ssl.create_default_context()


def store_renewed(path: Path | None, settings: Any) -> bool:
    """Replace the credentials file with the registry access a renewal answered (0600, atomically);
    whether it changed. Nothing when this agent has no such file or the answer carries none."""
    if path is None or not isinstance(settings, dict) or settings.get(REGISTRY_SETTING) is None:
        return False
    from agent.certs import write_atomically

    try:
        access = Access.from_settings(settings[REGISTRY_SETTING])
    except ValueError as exc:
        raise ReleaseError(f"the renewal's registry access: {exc}") from None
    content = json.dumps(access.to_settings(), indent=2).encode() + b"\n"
    try:
        if path.read_bytes() == content:
            return False
    except OSError:
        pass
    write_atomically(path, content, 0o600)
    return True


@dataclass(frozen=True)
class Timeouts:
    connect: float = 30.0
    read: float = 60.0


class Client:
    """The distribution API of one repository, authenticated as the access says (or anonymous)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        repository: Repository,
        access: Access | None,
        *,
        timeouts: Timeouts | None = None,
        fallback_ssl: ssl.SSLContext | None = None,
    ) -> None:
        self.session = session
        self.repository = repository
        # Credentials go only to the registry they are for, whatever a channel names.
        self.access = access if access is not None and access.registry == repository.host else None
        self.ssl = (access or Access(repository.host)).ssl_context(fallback_ssl)
        self.timeouts = timeouts or Timeouts()
        self._authorization: str | None = None
        if self.access is not None and self.access.username:
            self._authorization = _basic(self.access)

    def _timeout(self, total: float | None = None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=total, connect=self.timeouts.connect, sock_read=self.timeouts.read)

    async def request(
        self, method: str, url: str, *, headers: dict[str, str] | None = None, data: Any = None
    ) -> aiohttp.ClientResponse:
        """Send, answering a bearer challenge once; the response is the caller's to release."""
        for attempt in (1, 2):
            sent = dict(headers or {})
            if self._authorization:
                sent["Authorization"] = self._authorization
            followed = False
            try:
                response = await self.session.request(
                    method,
                    url,
                    headers=sent,
                    data=data,
                    ssl=self.ssl,
                    timeout=self._timeout(),
                    allow_redirects=False,
                )
                if response.status in REDIRECTS and method in ("GET", "HEAD"):
                    response = await self._follow(method, response, headers or {})
                    followed = True
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise RegistryUnavailable(
                    f"the registry {self.repository.host} did not answer: {_say(exc)}"
                ) from None
            challenge = bearer_challenge(response.headers.get("WWW-Authenticate", ""))
            if response.status == 401 and attempt == 1 and challenge is not None and not followed:
                response.release()
                self._authorization = f"Bearer {await self._token(challenge)}"
                continue
            if response.status in (401, 403):
                response.release()
                who = f"as {self.access.username}" if self.access and self.access.username else "anonymously"
                raise RegistryUnavailable(
                    f"the registry {self.repository.host} refused {method} {urllib.parse.urlsplit(url).path} "
                    f"{who} ({response.status}): check the registry credentials"
                )
            return response
        raise AssertionError("unreachable")

    async def _follow(
        self, method: str, response: aiohttp.ClientResponse, headers: dict[str, str]
    ) -> aiohttp.ClientResponse:
        """A redirect followed without the registry's credentials, which belong to the registry alone: a
        blob's to the registry's storage (a presigned URL; the digest still checks the bytes), or a
        manifest's to the registry that serves it (registry.k8s.io's to Artifact Registry), with the
        request's other headers (Accept). A bearer challenge there is answered anonymously, from its realm."""
        response.release()
        location = urllib.parse.urljoin(str(response.url), response.headers.get("Location", ""))
        if urllib.parse.urlsplit(location).scheme != "https":
            raise RegistryUnavailable(f"the registry {self.repository.host} redirected to {location!r}")
        kept = {name: value for name, value in headers.items() if name.lower() != "authorization"}
        followed = await self.session.request(
            method, location, headers=kept, ssl=self.ssl, timeout=self._timeout()
        )
        challenge = bearer_challenge(followed.headers.get("WWW-Authenticate", ""))
        if followed.status != 401 or challenge is None:
            return followed
        followed.release()
        token = await self._token(challenge, credentials=False)
        return await self.session.request(
            method,
            location,
            headers={**kept, "Authorization": f"Bearer {token}"},
            ssl=self.ssl,
            timeout=self._timeout(),
        )

    async def _token(self, challenge: dict[str, str], *, credentials: bool = True) -> str:
        """A bearer token from the challenge's realm, for its service and scope (with the registry's
        basic credentials, when it has them and ``credentials``: anonymous otherwise)."""
        params = dict(challenge)
        realm = params.pop("realm", "")
        if urllib.parse.urlsplit(realm).scheme != "https":
            raise RegistryUnavailable(f"the registry {self.repository.host} names no https token realm")
        send = credentials and self.access is not None and bool(self.access.username)
        headers = {"Authorization": _basic(self.access)} if send else {}
        try:
            async with self.session.get(
                realm, params=params, headers=headers, ssl=self.ssl, timeout=self._timeout(60)
            ) as response:
                body = await read_at_most(response.content, MAX_MANIFEST_BYTES)
                if response.status != 200:
                    raise RegistryUnavailable(f"the registry's token service answered {response.status}")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RegistryUnavailable(f"the registry's token service did not answer: {_say(exc)}") from None
        try:
            document = json.loads(body)
            token = document.get("token") or document.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise RegistryUnavailable("the registry's token service answered no token")
        return token

    # ----------------------------------------------------------------------------------- pull

    async def read(self, url: str, accept: str, limit: int) -> tuple[int, bytes, str]:
        """GET a small document: its status, at most ``limit`` bytes of it, and its content type."""
        response = await self.request("GET", url, headers={"Accept": accept})
        try:
            body = await read_at_most(response.content, limit)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RegistryUnavailable(f"the registry {self.repository.host} broke off: {_say(exc)}") from None
        finally:
            response.release()
        if response.status >= 500:
            raise RegistryUnavailable(f"the registry {self.repository.host} answered {response.status}")
        if len(body) > limit:
            raise ReleaseRefused(f"{url} is larger than {limit} bytes")
        return response.status, body, response.headers.get("Content-Type", "")

    async def pull_envelope(self, digest: str) -> tuple[dict[str, Any], bytes]:
        """The release's OCI manifest (by digest, checked) and its signed manifest file's bytes."""
        if not DIGEST.fullmatch(digest):
            raise ReleaseRefused(f"{digest!r} is not a sha256 digest")
        status, body, _ = await self.read(
            self.repository.url("manifests", digest), MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES
        )
        where = f"{self.repository}@{digest}"
        if status == 404:
            raise RegistryUnavailable(f"{where} is not in the registry (404)")
        if status != 200:
            raise RegistryUnavailable(f"the registry answered {status} for {where}")
        if sha256_digest(body) != digest:
            raise ReleaseRefused(f"the registry's manifest for {where} does not hash to its digest: tampered")
        oci = release_layers(body, where)
        envelope_layer = oci["envelope"]
        status, envelope, _ = await self.read(
            self.repository.url("blobs", envelope_layer["digest"]), "*/*", MAX_ENVELOPE_BYTES
        )
        if status != 200:
            raise RegistryUnavailable(f"the registry answered {status} for the signed manifest of {where}")
        if sha256_digest(envelope) != envelope_layer["digest"]:
            raise ReleaseRefused(f"the signed manifest of {where} does not hash to its digest: tampered")
        return oci, envelope

    def blob_url(self, manifest: Manifest) -> str:
        return self.repository.url("blobs", f"sha256:{manifest.sha256}")

    # ------------------------------------------------------------------------------ a tag's digest

    async def tag_digest(self, tag: str) -> str:
        """The digest of the image ``tag`` names now: its multi-arch index's when it has one (what a
        runtime resolves, then picks its platform's image from), else its image manifest's.

        A HEAD, as ``crane digest`` and container runtimes ask (no body; Docker Hub counts no pull), read
        from its ``Docker-Content-Digest``; a registry that names none is asked a GET, whose bytes are
        hashed. ManifestUnknown for a tag it does not hold, NotAnImage for another kind of manifest or a
        malformed digest, RegistryUnavailable for the rest."""
        url = self.repository.url("manifests", tag)
        accept = {"Accept": ", ".join(IMAGE_MEDIA_TYPES)}
        where = f"{self.repository}:{tag}"
        head = await self.request("HEAD", url, headers=accept)
        head.release()
        said = head.headers.get("Docker-Content-Digest", "")
        if head.status == 200 and said:
            _check_image_type(head.headers.get("Content-Type", ""), where)
            return _checked_digest(said, where)
        if head.status not in (200, 405):  # 405: a registry that answers no HEAD of manifests
            _check_found(head.status, where, self.repository.host)
        response = await self.request("GET", url, headers=accept)
        try:
            body = await read_at_most(response.content, MAX_IMAGE_MANIFEST_BYTES)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RegistryUnavailable(f"the registry {self.repository.host} broke off: {_say(exc)}") from None
        finally:
            response.release()
        _check_found(response.status, where, self.repository.host)
        if len(body) > MAX_IMAGE_MANIFEST_BYTES:
            raise NotAnImage(f"the manifest of {where} is larger than {MAX_IMAGE_MANIFEST_BYTES} bytes")
        try:
            document = json.loads(body)
        except ValueError:
            raise NotAnImage(f"the manifest of {where} is not JSON") from None
        kind = response.headers.get("Content-Type", "") or (
            str(document.get("mediaType", "")) if isinstance(document, dict) else ""
        )
        _check_image_type(kind, where, required=True)
        digest = sha256_digest(body)
        said = response.headers.get("Docker-Content-Digest", "")
        if said and said != digest:
            raise NotAnImage(f"the registry names {said} for {where}, whose bytes hash to {digest}")
        return digest

    # ----------------------------------------------------------------------------------- push

    async def push_blob(self, data: bytes, *, media_type: str = "application/octet-stream") -> dict[str, Any]:
        """Upload a blob (monolithic POST then PUT) unless it is there; its descriptor."""
        digest = sha256_digest(data)
        descriptor = {"mediaType": media_type, "digest": digest, "size": len(data)}
        head = await self.request("HEAD", self.repository.url("blobs", digest))
        head.release()
        if head.status == 200:
            return descriptor
        started = await self.request("POST", self.repository.url("blobs", "uploads/"))
        started.release()
        location = started.headers.get("Location")
        if started.status != 202 or not location:
            raise RegistryUnavailable(f"the registry answered {started.status} to starting an upload")
        upload = urllib.parse.urljoin(self.repository.url("blobs", "uploads/"), location)
        separator = "&" if "?" in upload else "?"
        put = await self.request(
            "PUT",
            f"{upload}{separator}digest={urllib.parse.quote(digest)}",
            headers={"Content-Type": "application/octet-stream"},
            data=data,
        )
        put.release()
        if put.status != 201:
            raise RegistryUnavailable(f"the registry answered {put.status} to uploading {digest}")
        return descriptor

    async def push_manifest(self, tag: str, body: bytes, *, media_type: str = MANIFEST_MEDIA_TYPE) -> str:
        """PUT the manifest (an OCI image manifest unless ``media_type`` says otherwise) under ``tag``, a tag
        or its own digest; its digest."""
        response = await self.request(
            "PUT",
            self.repository.url("manifests", tag),
            headers={"Content-Type": media_type},
            data=body,
        )
        try:
            said = (await read_at_most(response.content, 2000)).decode("utf-8", "replace")
        finally:
            response.release()
        if response.status != 201:
            raise RegistryUnavailable(f"the registry refused the manifest ({response.status}): {said[:300]}")
        return sha256_digest(body)


async def read_at_most(content: aiohttp.StreamReader, limit: int) -> bytes:
    """The whole body, or its first ``limit + 1`` bytes when it is longer (a read may return less)."""
    data = bytearray()
    while len(data) <= limit:
        chunk = await content.read(limit + 1 - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _basic(access: Access | None) -> str:
    assert access is not None
    return "Basic " + base64.b64encode(f"{access.username}:{access.password}".encode()).decode()


def _say(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def sha256_digest(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def _check_found(status: int, where: str, host: str) -> None:
    if status == 404:
        raise ManifestUnknown(f"{where} is not in the registry (404)")
    if status != 200:
        raise RegistryUnavailable(f"the registry {host} answered {status} for {where}")


def _check_image_type(content_type: str, where: str, *, required: bool = False) -> None:
    """An image's manifest or index (a HEAD may name no type; a GET's body must have one)."""
    kind = content_type.partition(";")[0].strip()
    if (kind or required) and kind not in IMAGE_MEDIA_TYPES:
        raise NotAnImage(
            f"{where} is a {kind or 'manifest of no media type'}, not an image manifest or index"
        )


def _checked_digest(digest: str, where: str) -> str:
    if not DIGEST.fullmatch(digest):
        raise NotAnImage(f"the registry names {digest!r} for {where}: not sha256:<64 hex digits>")
    return digest


def release_layers(body: bytes, where: str) -> dict[str, Any]:
    """The envelope and zipapp descriptors of an agent release's OCI manifest; ReleaseRefused if it is
    not one (another media type or artifact type, layers missing, duplicated or malformed)."""
    try:
        document = json.loads(body)
    except ValueError:
        raise ReleaseRefused(f"the registry's manifest for {where} is not JSON") from None
    if not isinstance(document, dict) or document.get("mediaType") != MANIFEST_MEDIA_TYPE:
        raise ReleaseRefused(f"{where} is not an OCI image manifest ({MANIFEST_MEDIA_TYPE})")
    if document.get("artifactType") != ARTIFACT_TYPE:
        raise ReleaseRefused(
            f"{where} is not an agent release: its artifactType is {document.get('artifactType')!r}, "
            f"not {ARTIFACT_TYPE}"
        )
    layers = document.get("layers")
    found: dict[str, Any] = {}
    for layer in layers if isinstance(layers, list) else []:
        if not isinstance(layer, dict) or not DIGEST.fullmatch(str(layer.get("digest"))):
            raise ReleaseRefused(f"{where} has a malformed layer")
        kind = {ENVELOPE_MEDIA_TYPE: "envelope", ZIPAPP_MEDIA_TYPE: "zipapp"}.get(str(layer.get("mediaType")))
        if kind is None or kind in found:
            raise ReleaseRefused(
                f"{where} has a layer of media type {layer.get('mediaType')!r}: an agent release has one "
                f"{ENVELOPE_MEDIA_TYPE} and one {ZIPAPP_MEDIA_TYPE}"
            )
        found[kind] = layer
    if set(found) != {"envelope", "zipapp"}:
        raise ReleaseRefused(f"{where} lacks its signed manifest or its zipapp layer")
    return {**document, **found}


def check_layer(oci: dict[str, Any], manifest: Manifest, where: str) -> None:
    """The zipapp layer is the one the signed manifest names (digest and size)."""
    layer = oci["zipapp"]
    if layer.get("digest") != f"sha256:{manifest.sha256}" or layer.get("size") != manifest.size:
        raise ReleaseRefused(
            f"the zipapp layer of {where} ({layer.get('digest')}, {layer.get('size')} bytes) is not the "
            f"artifact the signed manifest names (sha256:{manifest.sha256}, {manifest.size} bytes): "
            "substituted"
        )


def manifest_body(
    config: dict[str, Any], envelope: dict[str, Any], zipapp: dict[str, Any], version: str
) -> bytes:
    """The OCI manifest of a release, from its three descriptors."""
    document = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": ARTIFACT_TYPE,
        "config": config,
        "layers": [envelope, zipapp],
        "annotations": {VERSION_ANNOTATION: version},
    }
    return json.dumps(document, indent=2).encode()


async def push_release(client: Client, artifact: Path, envelope: bytes, manifest: Manifest, tag: str) -> str:
    """Push a verified release under ``tag``; the manifest's digest."""
    config = await client.push_blob(EMPTY_CONFIG, media_type=EMPTY_MEDIA_TYPE)
    envelope_layer = await client.push_blob(envelope, media_type=ENVELOPE_MEDIA_TYPE)
    zipapp_layer = await client.push_blob(artifact.read_bytes(), media_type=ZIPAPP_MEDIA_TYPE)
    zipapp_layer["annotations"] = {"org.opencontainers.image.title": artifact.name}
    return await client.push_manifest(
        tag, manifest_body(config, envelope_layer, zipapp_layer, manifest.version)
    )


async def push_files(
    repository: Repository, access: Access | None, artifact: Path, envelope_path: Path, manifest: Manifest
) -> str:
    """``flexplane-agent release push``: the release's files pushed under the tag of its version."""
    async with aiohttp.ClientSession() as session:
        client = Client(session, repository, access)
        return await push_release(client, artifact, envelope_path.read_bytes(), manifest, manifest.version)
