"""Steps 1 and 2 of the bootstrap: the agent's Proxmox token, then the certificate the orchestrator
issues for this node's key (which never leaves the node)."""

from __future__ import annotations

from typing import Any

import requests
from cryptography.hazmat.primitives.asymmetric import ec

from agent.bootstrap.options import BootstrapError, Options, at, say
from agent.certs import CertificateRefused, check_issued
from agent.pveadmin import AGENT_USER, Change, ProxmoxAdmin, ProxmoxAdminError, agent_roles, token_id
from agentclient.enrollment import JOIN_PATH

REQUEST_TIMEOUT = 30.0


def setup_proxmox(admin: ProxmoxAdmin, opts: Options) -> tuple[str, Change]:
    """The agent's roles (for the node's Proxmox VE version), user and permissions, the snippets storage,
    and this node's token: its secret, and what was done to it."""
    known = opts.secret_path.read_text(encoding="utf-8").strip() if opts.secret_path.is_file() else None
    try:
        version = admin.version().strip()
        major = admin.major()
        say("proxmox version", f"{version} (privileges of Proxmox VE {major})")
        say(  # first: where the operator keeps the storage to themselves, a refusal changes nothing
            f"proxmox storage {opts.snippets_storage} content snippets",
            admin.ensure_snippets(opts.snippets_storage, may_change=opts.storage_changes),
        )
        say(f"proxmox roles {', '.join(agent_roles(major))}", admin.ensure_role(major))
        say(f"proxmox user {AGENT_USER}", admin.ensure_user())
        say(f"proxmox permissions of {AGENT_USER}", admin.ensure_grant())
        change, secret = admin.ensure_token(opts.token.host, known)
    except ProxmoxAdminError as exc:
        raise BootstrapError(str(exc), opts.retry_plan()) from None
    say(f"proxmox token {token_id(opts.token.host)}", change)
    return secret, change


def enroll(opts: Options, csr: str, mesh_public_key: str | None = None) -> dict[str, Any]:
    """POST the CSR with the token (and the node's WireGuard public key: its private key stays here);
    the orchestrator's answer, or BootstrapError with a plan."""
    url = opts.orchestrator + JOIN_PATH
    body = {"token": str(opts.token), "csr": csr, "endpoint": opts.endpoint}
    if mesh_public_key is not None:
        body["mesh_public_key"] = mesh_public_key
    try:
        response = requests.post(
            url,
            json=body,
            timeout=REQUEST_TIMEOUT,
            verify=str(opts.ca_file) if opts.ca_file else True,
            allow_redirects=False,
        )
    except requests.exceptions.SSLError as exc:
        raise BootstrapError(
            f"TLS with the orchestrator at {url} failed: {exc}",
            opts.retry_plan() + " If its certificate is from a private CA, pass that CA with --ca-file.",
        ) from None
    except requests.RequestException as exc:
        raise BootstrapError(f"cannot reach the orchestrator at {url}: {exc}", opts.retry_plan()) from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code == 200 and isinstance(answer, dict):
        return answer
    error = answer.get("error") if isinstance(answer, dict) else None
    message = error.get("message") if isinstance(error, dict) else f"{response.status_code} {response.reason}"
    plan = {
        401: "Nothing was written. Ask an admin for a new join token (createHostJoinToken), run this again.",
        503: opts.retry_plan(),
    }.get(response.status_code, "Nothing was written.")
    raise BootstrapError(f"the orchestrator refused the enrollment: {message}", plan)


def issued(
    opts: Options, answer: dict[str, Any], key: ec.EllipticCurvePrivateKey
) -> tuple[bytes, bytes, dict[str, Any]]:
    """The certificate, CA bundle and settings answered, checked against what was asked for."""
    try:
        certificate = check_issued(str(answer.get("certificate", "")), key, opts.identity)
    except CertificateRefused as exc:
        raise BootstrapError(str(exc)) from None
    settings = answer.get("settings")
    ca = answer.get("ca")
    if not isinstance(settings, dict) or not isinstance(ca, str) or not ca.strip():
        raise BootstrapError("the orchestrator's answer lacks the CA bundle or the settings")
    if (settings.get("zone"), settings.get("node")) != (opts.token.zone, opts.token.host):
        raise BootstrapError(
            f"the orchestrator enrolled {settings.get('node')} of {settings.get('zone')}, not this host"
        )
    say(f"certificate for {opts.identity}", f"issued, valid until {at(certificate.not_valid_after_utc)}")
    return answer["certificate"].encode("ascii"), ca.encode("ascii"), settings
