"""Agent releases: the channel the agents update from, and the admin's pin.

The releases are where the operator publishes them, read again on every request (the stateless rule):

- in the site's OCI registry (FLEXPLANE_AGENT_REGISTRY, ``flexplane-agent release push``): the
  repository's tags that are versions. The channel names the served version's manifest digest, and
  agents pull it from the registry with the read-only account they got at enrollment
  (:mod:`agent.update.registry`); the orchestrator serves no bytes;
- else, the fallback, the files ``flexplane-agent release build`` writes (``flexplane-agent-<version>.pyz``
  and its signed manifest ``flexplane-agent-<version>.release.json``) in FLEXPLANE_AGENT_RELEASES_DIR,
  a read-only volume, which the channel serves itself.

The channel serves the version an admin pinned, else a staged rollout's wave for the asking host
(:mod:`orchestrator.services.rollouts`), else the highest one published.

The orchestrator never verifies a signature (it does not hold the release key, and need not be
trusted with it): each agent verifies the manifest against its release public key, and the
artifact against the manifest. The orchestrator reads the manifests only to know the versions.
What it does vouch for is the pin, which lets agents accept an older version: it is a ConfigMap
of the platform namespace (kind ``agent-release``, id ``pin``), which only an ADMIN writes.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from packaging.version import InvalidVersion, Version

from orchestrator.errors import Conflict, NotFound, Unavailable, UpstreamFailure, ValidationFailed
from orchestrator.models import Host
from orchestrator.services import access, catalog
from orchestrator.services.context import Context
from orchestrator.sources.protocols import KubeApi

logger = logging.getLogger(__name__)

PIN_KIND = "agent-release"
PIN_ID = "pin"
# A staged rollout (orchestrator.services.rollouts), beside the pin; pinning a version ends it.
ROLLOUT_ID = "rollout"
WHERE = "release channel"
MANIFEST_SUFFIX = ".release.json"
# The files the channel serves: what the release build writes, nothing else of the folder.
RELEASE_FILE = re.compile(r"flexplane-agent-[0-9A-Za-z.+-]{1,64}\.(?:pyz|release\.json)")
# A signed manifest is a few hundred bytes.
MAX_MANIFEST_BYTES = 64 * 1024
REGISTRY_WHERE = "agent registry"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
TIMEOUT = 10.0
# An agent's check now: the channel, the registry, a download of the release.
UPDATE_NOW_TIMEOUT = 120.0
# Tags listed per request (the registry may page with a Link header), and pages at most.
TAGS_PAGE, MAX_PAGES = 1000, 20
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class PublishedRelease:
    """A release in the folder: its version, its signed manifest as stored, its artifact's file name."""

    version: str
    envelope: dict[str, Any]
    artifact: str
    # From a registry: its manifest's digest, once resolved (the envelope is the registry's then).
    digest: str = ""

    @property
    def sort_key(self) -> Version:
        return Version(self.version)


@dataclass(frozen=True)
class Pin:
    """The version an admin told every agent to run, even if older."""

    version: str
    pinned_by: str
    pinned_at: datetime.datetime


@dataclass(frozen=True)
class Channel:
    """What the channel serves now: every published version, the pin, and the release served."""

    versions: list[str]
    pin: Pin | None
    served: PublishedRelease | None


# --------------------------------------------------------------------------------------- reading


def _folder() -> Path:
    configured = settings.FLEXPLANE_AGENT_RELEASES_DIR
    if not configured:
        raise Unavailable(WHERE, "no release channel is configured (FLEXPLANE_AGENT_RELEASES_DIR)")
    folder = Path(configured)
    if not folder.is_dir():
        raise Unavailable(WHERE, f"the release folder {folder} is missing")
    return folder


def _read_release(path: Path) -> PublishedRelease:
    """A signed manifest's version and artifact (unverified: agents verify); ValueError if unreadable."""
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ValueError("larger than a signed manifest")
    envelope = json.loads(path.read_bytes())
    if not isinstance(envelope, dict) or not isinstance(envelope.get("manifest"), str):
        raise ValueError("not a signed manifest")
    try:
        manifest = json.loads(base64.b64decode(envelope["manifest"], validate=True))
    except binascii.Error:
        raise ValueError("its manifest is not base64") from None
    version, artifact = manifest.get("version"), manifest.get("url")
    if not isinstance(version, str) or not isinstance(artifact, str):
        raise ValueError("its manifest names no version or url")
    Version(version)
    if path.name != f"flexplane-agent-{version}{MANIFEST_SUFFIX}":
        raise ValueError(f"it is the manifest of version {version}")
    return PublishedRelease(version, envelope, artifact)


@dataclass(frozen=True)
class Registry:
    """The site's registry repository for agent releases, and the read-only account nodes pull with."""

    repository: str
    username: str
    password: str
    ca: str

    @property
    def host(self) -> str:
        return self.repository.partition("/")[0]

    def url(self, kind: str, name: str) -> str:
        host, _, path = self.repository.partition("/")
        return f"https://{host}/v2/{path}/{kind}/{name}"

    def ca_pem(self) -> str:
        if not self.ca:
            return ""
        try:
            return Path(self.ca).read_text(encoding="ascii")
        except (OSError, ValueError) as exc:
            raise Unavailable(
                REGISTRY_WHERE, f"cannot read FLEXPLANE_AGENT_REGISTRY_CA {self.ca}: {exc}"
            ) from None

    def node_access(self) -> dict[str, str]:
        """What nodes get with enrollment and renewal (agent.update.registry.Access)."""
        access = {"registry": self.host, "username": self.username, "password": self.password}
        pem = self.ca_pem()
        return {**access, "ca": pem} if pem else access

    def get(self, url: str, *, method: str = "GET", accept: str = "") -> requests.Response:
        """A request as the read-only account: basic auth, or the bearer token a 401 asks for."""
        headers = {"Accept": accept} if accept else {}
        auth = (self.username, self.password) if self.username else None
        verify: str | bool = self.ca or True
        try:
            response = requests.request(
                method, url, headers=headers, auth=auth, verify=verify, timeout=TIMEOUT
            )
            challenge = response.headers.get("WWW-Authenticate", "")
            if response.status_code == 401 and challenge.lower().startswith("bearer "):
                headers["Authorization"] = f"Bearer {self._token(challenge, auth, verify)}"
                response = requests.request(method, url, headers=headers, verify=verify, timeout=TIMEOUT)
        except (requests.RequestException, ValueError) as exc:
            raise Unavailable(
                REGISTRY_WHERE, f"the agent registry {self.host} did not answer: {exc}"
            ) from None
        if response.status_code in (401, 403) or response.status_code >= 500:
            raise Unavailable(
                REGISTRY_WHERE,
                f"the agent registry {self.host} answered {response.status_code} to {method} "
                f"{url.split(self.host, 1)[-1]}: check FLEXPLANE_AGENT_REGISTRY_USERNAME and _PASSWORD",
            )
        return response

    def _token(self, challenge: str, auth: tuple[str, str] | None, verify: str | bool) -> str:
        params = dict(_CHALLENGE.findall(challenge))
        realm = params.pop("realm", "")
        answer = requests.get(realm, params=params, auth=auth, verify=verify, timeout=TIMEOUT)
        body = answer.json() if answer.ok else {}
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str):
            raise Unavailable(REGISTRY_WHERE, f"the registry's token service answered {answer.status_code}")
        return token

    def tags(self) -> list[str]:
        """Every tag of the repository (none if the registry does not know it yet)."""
        tags: list[str] = []
        url = self.url("tags", f"list?n={TAGS_PAGE}")
        for _ in range(MAX_PAGES):
            response = self.get(url)
            if response.status_code == 404:
                return tags
            try:
                listed = response.json().get("tags") or []
            except (ValueError, AttributeError):
                raise Unavailable(REGISTRY_WHERE, f"the agent registry {self.host} listed no tags") from None
            tags += [str(tag) for tag in listed]
            following = response.links.get("next", {}).get("url")
            if not following:
                return tags
            url = f"https://{self.host}{following}" if following.startswith("/") else following
        return tags

    def digest(self, tag: str) -> str:
        """The digest of the manifest a tag names now."""
        response = self.get(self.url("manifests", tag), method="HEAD", accept=OCI_MANIFEST)
        digest = response.headers.get("Docker-Content-Digest", "")
        if response.status_code != 200 or not _DIGEST.fullmatch(digest):
            raise Unavailable(
                REGISTRY_WHERE,
                f"the agent registry {self.host} answered {response.status_code} for {self.repository}:{tag}",
            )
        return digest


def registry() -> Registry | None:
    """The site's registry for agent releases (FLEXPLANE_AGENT_REGISTRY), or None: the folder is used."""
    repository = settings.FLEXPLANE_AGENT_REGISTRY.strip()
    if not repository:
        return None
    return Registry(
        repository,
        settings.FLEXPLANE_AGENT_REGISTRY_USERNAME,
        settings.FLEXPLANE_AGENT_REGISTRY_PASSWORD,
        settings.FLEXPLANE_AGENT_REGISTRY_CA,
    )


def configured() -> bool:
    """Whether releases are published somewhere: a registry, or the folder."""
    return bool(settings.FLEXPLANE_AGENT_REGISTRY.strip() or settings.FLEXPLANE_AGENT_RELEASES_DIR)


def published() -> list[PublishedRelease]:
    """Every release published, oldest first: the registry's version tags, else the folder's readable
    releases (unreadable manifests are skipped and logged)."""
    site = registry()
    if site is not None:
        found = []
        for tag in site.tags():
            try:
                if str(Version(tag)) == tag:
                    found.append(PublishedRelease(tag, {}, ""))
            except InvalidVersion:
                continue  # not a release's tag (e.g. latest)
        return sorted(found, key=lambda release: release.sort_key)
    releases = []
    for path in sorted(_folder().glob(f"*{MANIFEST_SUFFIX}")):
        try:
            releases.append(_read_release(path))
        except (OSError, ValueError, InvalidVersion) as exc:
            logger.warning("release channel: skipping %s: %s", path.name, exc)
    return sorted(releases, key=lambda release: release.sort_key)


def current_pin(source: KubeApi) -> Pin | None:
    entry = source.get_catalog(PIN_KIND, PIN_ID)
    if entry is None:
        return None
    try:
        return Pin(
            version=str(entry.spec["version"]),
            pinned_by=str(entry.spec.get("pinnedBy", "")),
            pinned_at=datetime.datetime.fromisoformat(str(entry.spec["pinnedAt"])),
        )
    except (KeyError, ValueError) as exc:
        logger.warning("release channel: ignoring the unreadable pin: %r", exc)
        return None


def _channel(source: KubeApi) -> Channel:
    releases = published()
    pin = current_pin(source)
    if pin is not None:
        served = next((r for r in releases if r.version == pin.version), None)
    else:
        served = releases[-1] if releases else None
    return Channel([r.version for r in releases], pin, served)


def serve_channel(
    source: KubeApi, *, version: str | None = None, pinned: bool = False
) -> tuple[PublishedRelease, bool]:
    """The release the agents are to run and whether it is pinned (no authorization: agents ask).

    ``version`` (with ``pinned``, whether it may be a downgrade) is a rollout's choice for the asking
    host (:mod:`orchestrator.services.rollouts`); without it, the pin's, else the highest version.
    ``NotFound`` when there is none to serve: nothing published, or the version chosen gone. From a
    registry, with the digest its tag names now: every node pulls those bytes, whatever the tag
    says later.
    """
    if version is not None:
        served = next((r for r in published() if r.version == version), None)
        if served is None:
            raise NotFound("agent release of the rollout", version)
    else:
        channel = _channel(source)
        if channel.served is None:
            if channel.pin is not None:
                raise NotFound("pinned agent release", channel.pin.version)
            raise NotFound("agent release", "latest")
        served, pinned = channel.served, channel.pin is not None
    site = registry()
    if site is not None:
        served = dataclasses.replace(served, digest=site.digest(served.version))
    return served, pinned


def channel_document(source: KubeApi, *, version: str | None = None, pinned: bool = False) -> dict[str, Any]:
    """``channel.json``: the release to run and whether it is pinned; from a registry, where to pull
    it (the agents' own registry access says how), else its signed manifest (the files beside).
    ``version`` and ``pinned``: a rollout's choice, as :func:`serve_channel` takes them."""
    release, pinned = serve_channel(source, version=version, pinned=pinned)
    document: dict[str, Any] = {"version": release.version, "pinned": pinned}
    site = registry()
    if site is not None:
        document["registry"] = {"repository": site.repository, "digest": release.digest}
    else:
        document["release"] = release.envelope
    return document


def release_file(name: str) -> Path:
    """A file of the release folder the channel serves (an artifact or a signed manifest); none when
    releases come from a registry (the orchestrator serves no release bytes then)."""
    if registry() is not None:
        raise NotFound("release file", name)
    path = _folder() / name
    if not RELEASE_FILE.fullmatch(name) or not path.is_file():
        raise NotFound("release file", name)
    return path


# ------------------------------------------------------------------------------------------ admin


def channel(ctx: Context) -> Channel:
    """What the channel serves, and why. ADMIN only."""
    access.require_admin(ctx)
    return _channel(ctx.kube)


def pin_version(ctx: Context, version: str) -> Pin:
    """Make the channel serve ``version`` to every agent, even those running a newer one; it ends any
    rollout (orchestrator.services.rollouts). ADMIN only."""
    access.require_admin(ctx)
    version = version.strip()
    try:
        if str(Version(version)) != version:
            raise InvalidVersion
    except InvalidVersion:
        raise ValidationFailed("version", f"{version!r} is not a release version (e.g. 1.4.0)") from None
    versions = [release.version for release in published()]
    if version not in versions:
        raise ValidationFailed(
            "version",
            f"version {version} is not published in the release channel "
            f"(published: {', '.join(versions) or 'none'})",
        )
    pin = Pin(version, ctx.principal.subject, datetime.datetime.now(datetime.UTC).replace(microsecond=0))
    spec = {"version": pin.version, "pinnedBy": pin.pinned_by, "pinnedAt": pin.pinned_at.isoformat()}
    source = ctx.kube
    stored = source.get_catalog(PIN_KIND, PIN_ID)
    if stored is None:
        source.create_catalog(PIN_KIND, PIN_ID, spec)
    else:
        source.replace_catalog(PIN_KIND, PIN_ID, spec, stored.resource_version)
    if source.delete_catalog(PIN_KIND, ROLLOUT_ID):
        logger.info("agent releases: the pin ends the agent rollout")
    logger.info("agent releases: %s pinned version %s", pin.pinned_by, version)
    return pin


def unpin_version(ctx: Context) -> Pin | None:
    """Let the channel serve the highest version again; the pin removed, None if there was none. ADMIN."""
    access.require_admin(ctx)
    pin = current_pin(ctx.kube)
    if ctx.kube.delete_catalog(PIN_KIND, PIN_ID):
        logger.info("agent releases: %s removed the pin", ctx.principal.subject)
    return pin


# ------------------------------------------------------------------------- update a host now


@dataclass(frozen=True)
class HostUpdateNow:
    """What a host's agent did when asked to check the release channel now."""

    host: Host
    outcome: str
    offered_version: str | None
    applying: bool
    running_version: str


def update_host_now(ctx: Context, zone: str, host: str) -> HostUpdateNow:
    """Have a host's agent check the release channel now, through the updater it runs every
    update_interval (same rules, same apply step). ADMIN only.

    Answers once the check is done: a release it installed is applied in the background (restart,
    health check, rollback), and the host's last update says how that went.
    """
    access.require_admin(ctx)
    entry = catalog.host(ctx, zone, host)
    try:
        answer = ctx.proxmox.agents.update_now(entry.target, where=entry.key, timeout=UPDATE_NOW_TIMEOUT)
    except Conflict as exc:
        raise Conflict(f"host {entry.key} does not update itself: {exc.message}") from None
    except (Unavailable, UpstreamFailure) as exc:
        raise Unavailable(entry.key, exc.message) from exc
    logger.info(
        "agent releases: %s asked %s to update now: %s", ctx.principal.subject, entry.key, answer.outcome
    )
    return HostUpdateNow(
        entry, answer.outcome, answer.offered_version or None, answer.applying, answer.running_version
    )
