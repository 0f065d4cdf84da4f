"""flex.plane's side of a new Zitadel, run by the identity chart's jobs in the orchestrator's image.

``handover`` (the setup job, after ``zitadel setup``): the service user's JSON key, which Zitadel
writes once, on the first instance's setup, goes into a Secret of the orchestrator's namespace.
``bootstrap`` (after every install and upgrade): as that service user, the project with its roles
(added, never removed: the orchestrator adds ``vdc:<id>`` roles of its own), the first admin's grant,
and the portal's OIDC client, whose id and secret go into a Secret too; the project's id joins the
service user's Secret. Every step looks first and creates only what is missing, so a run repeated
after a failure, or at an upgrade, finishes the work without duplicating it.

Zitadel's management API v1 (REST) is used throughout: a Zitadel of v2.x has no v2 service for
projects, roles, grants or applications. The standard library speaks HTTP; PyJWT signs the assertion.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt

# (method, url, headers, body) -> (status, body)
Transport = Callable[[str, str, dict[str, str], bytes | None], tuple[int, bytes]]

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
LABELS = {"app.kubernetes.io/managed-by": "flexplane-identity", "app.kubernetes.io/part-of": "flexplane"}
EQUALS = "TEXT_QUERY_METHOD_EQUALS"


class Failure(Exception):
    """What stops the job, said in one line."""


def urllib_transport(context: ssl.SSLContext | None = None, timeout: float = 10.0) -> Transport:
    def send(method: str, url: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
        request = urllib.request.Request(url, data=body, headers=headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:  # noqa: S310
                return int(answer.status), bytes(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    return send


class Kube:
    """The Secrets of the orchestrator's namespace, through the Kubernetes API as the job's ServiceAccount."""

    def __init__(self, base: str, token: str, transport: Transport) -> None:
        self.base, self.token, self.transport = base.rstrip("/"), token, transport

    @classmethod
    def in_cluster(cls) -> Kube:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        context = ssl.create_default_context(cafile=str(SERVICE_ACCOUNT / "ca.crt"))
        token = (SERVICE_ACCOUNT / "token").read_text().strip()
        return cls(f"https://{host}:{port}", token, urllib_transport(context))

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, content_type: str
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = content_type
        status, answer = self.transport(method, self.base + path, headers, data)
        return status, json.loads(answer) if answer else {}

    def read(self, namespace: str, name: str) -> dict[str, str] | None:
        """The Secret's data, decoded; None when there is no such Secret."""
        status, secret = self._call("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}", None, "")
        if status == 404:
            return None
        if status != 200:
            raise Failure(f"reading Secret {namespace}/{name}: HTTP {status} {secret.get('message', '')}")
        return {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}

    def write(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """Creates the Secret with these keys, or sets them in the existing one (others kept)."""
        encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
            "type": "Opaque",
            "data": encoded,
        }
        status, answer = self._call(
            "POST", f"/api/v1/namespaces/{namespace}/secrets", secret, "application/json"
        )
        if status == 409:
            path = f"/api/v1/namespaces/{namespace}/secrets/{name}"
            status, answer = self._call("PATCH", path, {"data": encoded}, "application/merge-patch+json")
        if status not in (200, 201):
            raise Failure(f"writing Secret {namespace}/{name}: HTTP {status} {answer.get('message', '')}")


class Zitadel:
    """Zitadel's API as the service user: a JWT profile grant, the token kept for its lifetime."""

    def __init__(
        self, api: str, issuer: str, key: dict[str, str], transport: Transport, host: str = ""
    ) -> None:
        self.api, self.issuer, self.key, self.transport = api.rstrip("/"), issuer, key, transport
        # Through the Service: Zitadel finds its instance by the host, and names its issuer (the
        # assertion's audience) with the scheme the ingress would have forwarded.
        forwarded = {"Host": host, "X-Forwarded-Proto": urllib.parse.urlsplit(issuer).scheme}
        self.headers = forwarded if host else {}
        self._token, self._expires = "", 0.0

    def assertion(self, now: float) -> str:
        claims: dict[str, str | int] = {
            "iss": self.key["userId"],
            "sub": self.key["userId"],
            "aud": self.issuer,
        }
        claims |= {"iat": int(now), "exp": int(now) + 300}
        return jwt.encode(claims, self.key["key"], algorithm="RS256", headers={"kid": self.key["keyId"]})

    def wait_ready(self, deadline: float) -> None:
        while True:
            try:
                status, _ = self.transport("GET", f"{self.api}/debug/ready", dict(self.headers), None)
            except OSError as error:
                status, reason = 0, str(error)
            else:
                reason = f"HTTP {status}"
            if status == 200:
                return
            if time.monotonic() > deadline:
                raise Failure(f"Zitadel at {self.api} is not ready ({reason})")
            time.sleep(3)

    def token(self) -> str:
        now = time.time()
        if self._token and now < self._expires - 30:
            return self._token
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "scope": "openid urn:zitadel:iam:org:project:id:zitadel:aud",
            "assertion": self.assertion(now),
        }
        headers = self.headers | {"Content-Type": "application/x-www-form-urlencoded"}
        body = urllib.parse.urlencode(form).encode()
        status, answer = self.transport("POST", f"{self.api}/oauth/v2/token", headers, body)
        if status != 200:
            raise Failure(f"Zitadel refused the service user's key: HTTP {status} {answer[:200]!r}")
        granted = json.loads(answer)
        self._token, self._expires = granted["access_token"], now + float(granted.get("expires_in", 300))
        return self._token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        headers = self.headers | {"Authorization": f"Bearer {self.token()}", "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        status, answer = self.transport(method, self.api + path, headers, data)
        result: dict[str, Any] = json.loads(answer) if answer else {}
        if status != 200:
            raise Failure(f"Zitadel {method} {path}: HTTP {status} {result.get('message', '')}")
        return result


def ensure_project(zitadel: Zitadel, name: str, roles: list[dict[str, str]]) -> str:
    """The project's id: found by name or created (roles asserted in tokens), with every role added."""
    query = {"queries": [{"nameQuery": {"name": name, "method": EQUALS}}]}
    found = zitadel.call("POST", "/management/v1/projects/_search", query).get("result", [])
    if found:
        project_id = str(found[0]["id"])
    else:
        settings = {
            "name": name,
            "projectRoleAssertion": True,
            "projectRoleCheck": False,
            "hasProjectCheck": False,
        }
        project_id = str(zitadel.call("POST", "/management/v1/projects", settings)["id"])
        print(f"created project {name} ({project_id})")
    have = zitadel.call("POST", f"/management/v1/projects/{project_id}/roles/_search", {}).get("result", [])
    missing = [role for role in roles if role["key"] not in {r["key"] for r in have}]
    if missing:
        added = [{"key": r["key"], "displayName": r.get("displayName") or r["key"]} for r in missing]
        zitadel.call("POST", f"/management/v1/projects/{project_id}/roles/_bulk", {"roles": added})
        print(f"added roles {', '.join(r['key'] for r in missing)}")
    return project_id


def grant_admin(zitadel: Zitadel, username: str, project_id: str, roles: list[str]) -> None:
    """Gives the first admin these roles of the project (kept alongside any others)."""
    if not roles:
        return
    query = {"queries": [{"userNameQuery": {"userName": username, "method": EQUALS}}]}
    users = zitadel.call("POST", "/management/v1/users/_search", query).get("result", [])
    if not users:
        raise Failure(f"no user {username} in Zitadel: was the first instance set up with another admin?")
    user_id = users[0]["id"]
    filters = [{"userIdQuery": {"userId": user_id}}, {"projectIdQuery": {"projectId": project_id}}]
    grants = zitadel.call("POST", "/management/v1/users/grants/_search", {"queries": filters}).get(
        "result", []
    )
    if not grants:
        zitadel.call(
            "POST", f"/management/v1/users/{user_id}/grants", {"projectId": project_id, "roleKeys": roles}
        )
        print(f"granted {username} {', '.join(roles)}")
        return
    have = list(grants[0].get("roleKeys", []))
    if set(roles) - set(have):
        keys = have + [role for role in roles if role not in have]
        zitadel.call("PUT", f"/management/v1/users/{user_id}/grants/{grants[0]['id']}", {"roleKeys": keys})
        print(f"granted {username} {', '.join(keys)}")


def portal_config(url: str) -> dict[str, Any]:
    base = url.rstrip("/")
    return {
        "redirectUris": [f"{base}/oidc/callback/"],
        "responseTypes": ["OIDC_RESPONSE_TYPE_CODE"],
        "grantTypes": ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"],
        "appType": "OIDC_APP_TYPE_WEB",
        "authMethodType": "OIDC_AUTH_METHOD_TYPE_BASIC",
        "postLogoutRedirectUris": [f"{base}/"],
        "version": "OIDC_VERSION_1_0",
        "devMode": False,
        "accessTokenType": "OIDC_TOKEN_TYPE_JWT",
        "accessTokenRoleAssertion": True,
        "idTokenRoleAssertion": True,
        "idTokenUserinfoAssertion": True,
    }


def ensure_portal(
    zitadel: Zitadel, project_id: str, url: str, current: dict[str, str] | None
) -> dict[str, str]:
    """The portal's client id and secret: the app created, or its redirects updated and its secret kept
    (a new secret is generated only when the Secret lost it: Zitadel shows a secret once)."""
    name, config = "flexplane-portal", portal_config(url)
    apps_path = f"/management/v1/projects/{project_id}/apps"
    query = {"queries": [{"nameQuery": {"name": name, "method": EQUALS}}]}
    apps = zitadel.call("POST", f"{apps_path}/_search", query).get("result", [])
    if not apps:
        created = zitadel.call("POST", f"{apps_path}/oidc", {"name": name} | config)
        print(f"created the portal's client {created['clientId']}")
        return {"client-id": created["clientId"], "client-secret": created["clientSecret"]}
    app = apps[0]
    have = app.get("oidcConfig", {})
    client = {"client-id": str(have.get("clientId", ""))}
    if have.get("redirectUris") != config["redirectUris"] or (
        have.get("postLogoutRedirectUris") != config["postLogoutRedirectUris"]
    ):
        zitadel.call("PUT", f"{apps_path}/{app['id']}/oidc_config", config)
        print(f"updated the portal's redirects to {url}")
    if current and current.get("client-id") == client["client-id"] and current.get("client-secret"):
        return client | {"client-secret": current["client-secret"]}
    generated = zitadel.call("POST", f"{apps_path}/{app['id']}/oidc_config/_generate_client_secret", {})
    print("generated a new secret for the portal's client")
    return client | {"client-secret": generated["clientSecret"]}


def handover(kube: Kube, key_file: Path, namespace: str, name: str, key: str) -> None:
    """Puts the key `zitadel setup` wrote into the Secret; a later setup writes none, and the Secret stays."""
    written = key_file.read_text() if key_file.exists() else ""
    if written.strip():
        parsed = json.loads(written)
        if not {"keyId", "key", "userId"} <= set(parsed):
            raise Failure(f"{key_file} is not a Zitadel key (keyId, key, userId)")
        kube.write(namespace, name, {key: written})
        print(f"handed the service user's key {parsed['keyId']} over in Secret {namespace}/{name}")
        return
    current = kube.read(namespace, name)
    if not current or not current.get(key):
        raise Failure(
            f"zitadel setup wrote no key (the instance was set up before) and Secret {namespace}/{name} "
            f"holds no {key}: add a key to the service user in the console and put its JSON there"
        )
    print(f"the service user's key is already in Secret {namespace}/{name}")


def bootstrap(kube: Kube, zitadel: Zitadel, settings: dict[str, Any]) -> None:
    namespace, name, key = settings["serviceUserNamespace"], settings["serviceUserSecret"], settings["keyKey"]
    project_id = ensure_project(zitadel, settings["project"], settings["roles"])
    grant_admin(zitadel, settings["admin"], project_id, settings["adminRoles"])
    if (kube.read(namespace, name) or {}).get("project-id") != project_id:
        kube.write(namespace, name, {"project-id": project_id})
    portal = settings.get("portal")
    if portal:
        current = kube.read(portal["namespace"], portal["secret"])
        client = ensure_portal(zitadel, project_id, portal["url"], current)
        if (current or {}) | client != (current or {}):
            kube.write(portal["namespace"], portal["secret"], client)
    print(f"project {settings['project']} ({project_id}) is set up; key in {namespace}/{name} ({key})")


def zitadel_from(settings: dict[str, Any], key: dict[str, str]) -> Zitadel:
    context = ssl.create_default_context()
    return Zitadel(
        settings["apiURL"], settings["issuer"], key, urllib_transport(context), settings.get("host", "")
    )


def main(argv: list[str]) -> int:
    settings: dict[str, Any] = json.loads(os.environ["IDENTITY_BOOTSTRAP"])
    kube = Kube.in_cluster()
    namespace, name, key = settings["serviceUserNamespace"], settings["serviceUserSecret"], settings["keyKey"]
    try:
        if argv[1:] == ["handover"]:
            handover(kube, Path(settings["keyFile"]), namespace, name, key)
        elif argv[1:] == ["bootstrap"]:
            stored = kube.read(namespace, name) or {}
            if not stored.get(key):
                raise Failure(f"Secret {namespace}/{name} holds no {key}: did the setup job run?")
            zitadel = zitadel_from(settings, json.loads(stored[key]))
            zitadel.wait_ready(time.monotonic() + float(settings["timeoutSeconds"]))
            bootstrap(kube, zitadel, settings)
        else:
            print("usage: zitadel_bootstrap.py handover|bootstrap", file=sys.stderr)
            return 2
    except Failure as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
