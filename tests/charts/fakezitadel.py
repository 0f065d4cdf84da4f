"""Zitadel's management API v1 as the identity chart's jobs meet it
(charts/identity/files/zitadel_bootstrap.py), in memory: projects, roles, users, grants and OIDC apps,
and tokens for a service user's valid assertion, checked with the key's public half as Zitadel's token
endpoint does. Called as the script's transport (tests/charts/test_identity_bootstrap.py) or served
over HTTP (tests/artifacts/test_image.py)."""

from __future__ import annotations

import itertools
import json
import re
import urllib.parse
from typing import Any

import jwt

ISSUER, API, HOST = "https://id.example.com", "http://idp-identity.identity.svc:8080", "id.example.com"


class FakeZitadel:
    """The management API's projects, roles, users, grants and OIDC apps; tokens for a valid assertion."""

    def __init__(self, public_key: Any) -> None:
        self.public_key = public_key
        self.ids = (str(n) for n in itertools.count(300000000000000000))
        self.projects: dict[str, dict[str, Any]] = {}
        self.roles: dict[str, list[str]] = {}
        self.users = {"zitadel-admin": "200000000000000001"}
        self.grants: dict[str, dict[str, Any]] = {}
        self.apps: dict[str, dict[str, Any]] = {}
        self.writes: list[str] = []

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, bytes]:
        assert url.startswith(API)
        assert headers["Host"] == HOST  # Zitadel finds its instance by the host
        assert headers["X-Forwarded-Proto"] == "https"  # and its issuer by the scheme forwarded
        path = url.removeprefix(API)
        if path == "/debug/ready":
            return 200, b"ok"
        if path == "/oauth/v2/token":
            return self.token(urllib.parse.parse_qs((body or b"").decode()))
        if headers.get("Authorization") != "Bearer access-token":
            return 401, b'{"code": 16, "message": "Errors.Token.Invalid"}'
        data = json.loads(body) if body else {}
        if not path.endswith("_search"):
            self.writes.append(f"{method} {path}")
        return 200, json.dumps(self.route(method, path, data)).encode()

    def token(self, form: dict[str, list[str]]) -> tuple[int, bytes]:
        assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
        assert "urn:zitadel:iam:org:project:id:zitadel:aud" in form["scope"][0].split()
        try:
            jwt.decode(form["assertion"][0], self.public_key, algorithms=["RS256"], audience=ISSUER)
        except jwt.InvalidTokenError:
            return 400, b'{"error": "invalid_grant"}'
        return 200, json.dumps({"access_token": "access-token", "expires_in": 43199}).encode()

    def route(self, method: str, path: str, data: dict[str, Any]) -> dict[str, Any]:
        def query(name: str) -> str:
            (first,) = data["queries"][:1]
            return str(first[name][{"nameQuery": "name", "userNameQuery": "userName"}[name]])

        if path == "/management/v1/projects/_search":
            return {"result": [p for p in self.projects.values() if p["name"] == query("nameQuery")]}
        if path == "/management/v1/projects":
            project = {"id": next(self.ids), **data}
            self.projects[project["id"]] = project
            self.roles[project["id"]] = []
            return {"id": project["id"]}
        if match := re.fullmatch(r"/management/v1/projects/(\d+)/roles/(_search|_bulk)", path):
            project_id, action = match.groups()
            if action == "_bulk":
                self.roles[project_id] += [role["key"] for role in data["roles"]]
                return {}
            return {"result": [{"key": key} for key in self.roles[project_id]]}
        if path == "/management/v1/users/_search":
            name = query("userNameQuery")
            return {"result": [{"id": self.users[name]}] if name in self.users else []}
        if path == "/management/v1/users/grants/_search":
            user, project = (
                data["queries"][0]["userIdQuery"]["userId"],
                data["queries"][1]["projectIdQuery"]["projectId"],
            )
            return {
                "result": [
                    g for g in self.grants.values() if (g["userId"], g["projectId"]) == (user, project)
                ]
            }
        if match := re.fullmatch(r"/management/v1/users/(\d+)/grants(?:/(\d+))?", path):
            user, grant = match.groups()
            if grant:
                self.grants[grant]["roleKeys"] = data["roleKeys"]
                return {}
            grant = next(self.ids)
            self.grants[grant] = {"id": grant, "userId": user, **data}
            return {"userGrantId": grant}
        if match := re.fullmatch(r"/management/v1/projects/(\d+)/apps(/.*)", path):
            return self.app(match.group(2), data)
        raise AssertionError(f"unexpected call {method} {path}")

    def app(self, rest: str, data: dict[str, Any]) -> dict[str, Any]:
        if rest == "/_search":
            name = data["queries"][0]["nameQuery"]["name"]
            return {"result": [a for a in self.apps.values() if a["name"] == name]}
        if rest == "/oidc":
            app_id = next(self.ids)
            config = {k: v for k, v in data.items() if k != "name"} | {"clientId": f"{app_id}@flexplane"}
            self.apps[app_id] = {"id": app_id, "name": data["name"], "oidcConfig": config}
            return {"appId": app_id, "clientId": config["clientId"], "clientSecret": f"secret-{app_id}"}
        app_id, action = rest.strip("/").split("/", 1)
        if action == "oidc_config":
            self.apps[app_id]["oidcConfig"] |= data
            return {}
        assert action == "oidc_config/_generate_client_secret"
        return {"clientSecret": f"new-secret-{next(self.ids)}"}
