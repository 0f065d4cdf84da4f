"""The checks of the platform's neighbours, as the orchestrator reaches them: DNS for the names in the
settings, the OIDC issuer, Zitadel's API with the service user's key, the agent registry with the nodes'
pull account."""

from __future__ import annotations

import ipaddress
import socket

import requests

from orchestrator.errors import FlexPlaneError
from orchestrator.services import releases
from orchestrator.services.doctor.findings import Finding, Probe, blocker, ok, warning
from orchestrator.sources.zitadel import ServiceKey, ZitadelRefused, ZitadelSource


def dns(probe: Probe) -> Finding:
    name = "dns"
    names = probe.site.names
    if not names:
        return warning(name, "the settings name no host to look up", "set FLEXPLANE_OIDC_ISSUER at least")
    unresolved = [(setting, host, by_us) for setting, host, by_us in names if not _resolves(host)]
    if not unresolved:
        return ok(name, f"{len(names)} names resolve ({', '.join(host for _, host, _ in names)})")
    said = ", ".join(f"{host} ({setting})" for setting, host, _ in unresolved)
    todo = "add the records to DNS (or correct the setting)"
    if any(by_us for _, _, by_us in unresolved):
        return blocker(name, f"not resolved here, and the orchestrator dials them: {said}", todo)
    return warning(
        name,
        f"not resolved here: {said}; nodes and browsers dial these, and may resolve them otherwise",
        todo,
    )


def _resolves(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    try:
        return bool(socket.getaddrinfo(host, None))
    except (OSError, UnicodeError):
        return False


def oidc_issuer(probe: Probe) -> Finding:
    name = "oidc-issuer"
    issuer = probe.site.oidc_issuer.rstrip("/")
    if not issuer:
        return blocker(name, "FLEXPLANE_OIDC_ISSUER is not set", "set config.oidc.issuer to Zitadel's URL")
    url = f"{issuer}/.well-known/openid-configuration"
    todo = "check config.oidc.issuer, and that Zitadel runs (kubectl -n identity get pods)"
    try:
        answer = requests.get(url, timeout=probe.site.zitadel_timeout)
        document = answer.json() if answer.ok else {}
    except (requests.RequestException, ValueError) as exc:
        return blocker(name, f"{url} did not answer ({exc}): the pods' /readyz waits for it", todo)
    if not isinstance(document, dict) or document.get("issuer", "").rstrip("/") != issuer:
        said = f"HTTP {answer.status_code}" if not answer.ok else f"issuer {document.get('issuer')!r}"
        return blocker(name, f"{url} answered {said}, not this issuer's discovery document", todo)
    return ok(name, f"{issuer} answers its discovery document")


def zitadel(probe: Probe) -> Finding:
    name = "zitadel"
    site = probe.site
    if not site.zitadel_key_file:
        return warning(
            name,
            "no service user key (FLEXPLANE_ZITADEL_KEY_FILE): access management answers UNAVAILABLE "
            "and VDC roles are not kept",
            "set zitadelServiceUser.secretName (the identity chart's flexplane-zitadel-service-user)",
        )
    try:
        key = ServiceKey.from_file(site.zitadel_key_file)
    except (OSError, ValueError) as exc:
        return blocker(
            name, f"the key file {site.zitadel_key_file}: {exc}", "mount the service user's key.json"
        )
    source = ZitadelSource(
        site.zitadel_url,
        key,
        site.project_id,
        timeout=site.zitadel_timeout,
        audience=site.zitadel_audience or None,
    )
    as_who = f"service user {key.user_id} (key {key.key_id}) at {site.zitadel_url}"
    try:
        organization = source.project_organization()
    except ZitadelRefused as exc:
        todo = {
            "unauthenticated": "the key was refused: hand over a current key (the identity chart's setup "
            "job)",
            "not_found": "FLEXPLANE_OIDC_PROJECT_ID names no project: take the project-id of the service "
            "user's Secret",
            "permission_denied": "grant the service user the project's owner role (the identity chart does)",
        }.get(exc.status, "see Zitadel's log")
        return blocker(name, f"{as_who}: {exc.message}", todo)
    except FlexPlaneError as exc:
        return blocker(name, f"{as_who}: {exc.message}", "check config.zitadel.url, and that Zitadel runs")
    return ok(name, f"{as_who} reads project {site.project_id} (organization {organization})")


def agent_registry(probe: Probe) -> Finding:
    name = "agent-registry"
    site = probe.site
    if not site.registry:
        if site.releases_dir:
            return ok(name, f"not used: agent releases are served from {site.releases_dir}")
        return warning(
            name,
            "no agent release channel (neither FLEXPLANE_AGENT_REGISTRY nor FLEXPLANE_AGENT_RELEASES_DIR): "
            "nodes run the agent they were bootstrapped with",
            "set agentReleases (docs/install.md)",
        )
    registry = releases.Registry(
        site.registry, site.registry_username, site.registry_password, site.registry_ca
    )
    account = site.registry_username or "anonymous"
    try:
        tags = registry.tags()
    except FlexPlaneError as exc:
        return blocker(
            name,
            f"{site.registry} as {account}: {exc.message}",
            "check agentReleases.registry (the repository, the pull account's Secret, the CA)",
        )
    return ok(name, f"{site.registry} as {account}: {len(tags)} tags")
