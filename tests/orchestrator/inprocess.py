"""The GraphQL API and the portal in this process: ``/graphql`` and the pages through Django's test client,
the API's bearer tokens real JWTs of an issuer on loopback, the portal's session the one its login records,
the services on the in-memory management cluster and zones.

Everything of the API runs as it does in the orchestrator (the view, token validation against the issuer's
keys, the schema, the resolvers, the services, the audit trail); what stands in is below the services:
``fakekube.FakeKube`` for the management cluster, and for the zones ``fakeproxmox.FakeProxmox`` (in
memory) or ``lightworld.LightWorld`` (fake Proxmox clusters behind in-process agents). The
devstack's world plays the wiring (HTTP serving, mTLS to the agents, the agents, Zitadel's API); these
are for what the API and the services decide.

The users are the devstack's (``devstack.seed.USERS``): the same names, roles, subjects and organizations.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.signed_cookies import SessionStore
from django.test import Client, override_settings

from devstack import seed
from devstack.identity.claims import (
    ORGANISATION_DOMAIN,
    ORGANISATION_ID,
    RESOURCE_OWNER_CLAIM,
    organisation_of,
    project_roles_claim,
    subject_of,
)
from orchestrator import auth
from orchestrator.sources import clusterapi as clusterapi_source
from orchestrator.sources import kube as kube_source
from orchestrator.sources import proxmox as proxmox_source
from orchestrator.sources import zitadel as zitadel_source
from orchestrator.sources.protocols import ProxmoxApi, ZitadelApi
from portal.auth import EXPIRATION_KEY, remember_user
from portal.models import PortalUser
from tests.apikit import Answer, AsUser
from tests.orchestrator.fakekube import FakeClusterApi, FakeKube

AUDIENCE = seed.PROJECT_ID


class RolesSource(Protocol):
    """Where a user's roles are held now (``tests/orchestrator/fakezitadel.FakeZitadel``): ``{role: {orgId:
    orgDomain}}`` of the user whose ``sub`` is ``user_id``, as Zitadel's roles claim carries them."""

    def roles_of(self, user_id: str) -> dict[str, dict[str, str]]: ...


class LocalIssuer:
    """An OpenID issuer on loopback that publishes its discovery document and keys, and mints tokens for
    the devstack's users with the claims Zitadel gives (roles per organization, the user's organization).

    The roles are those ``roles`` holds when the token is minted (a grant made through the API shows in the
    user's next token, as with the emulator); without it, those ``devstack.seed.USERS`` gives the user."""

    def __init__(self, roles: RolesSource | None = None) -> None:
        self.roles = roles
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = uuid.uuid4().hex[:12]
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        keys = json.dumps({"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}).encode()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body = json.dumps({"issuer": issuer.url, "jwks_uri": f"{issuer.url}/keys"}).encode()
                elif self.path == "/keys":
                    body = keys
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="local-issuer", daemon=True)
        self._thread.start()

    def token(self, username: str) -> str:
        user = next(u for u in seed.USERS if u["username"] == username)
        org_id, domain = (
            organisation_of(user["organization"])
            if user.get("organization")
            else (ORGANISATION_ID, ORGANISATION_DOMAIN)
        )
        subject = subject_of(username)
        granted = (
            self.roles.roles_of(subject)
            if self.roles is not None
            else {role: {org_id: domain} for role in user["roles"]}
        )
        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": [AUDIENCE],
            "sub": subject,
            "iat": now,
            "exp": now + 3600,
            "name": user["name"],
            "email": user["email"],
            "preferred_username": username,
            RESOURCE_OWNER_CLAIM: org_id,
            project_roles_claim(seed.PROJECT_ID): granted,
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class InProcessApi(AsUser):
    """``api(query, user="alice", vdc="demo")`` as ``tests.apikit.GraphQL`` answers it, in this process."""

    issuer: LocalIssuer
    kube: FakeKube
    proxmox: ProxmoxApi

    def __post_init__(self) -> None:
        self.client = Client()
        self._tokens: dict[str, str] = {}

    def token(self, user: str) -> str:
        if user not in self._tokens:
            self._tokens[user] = self.issuer.token(user)
        return self._tokens[user]

    def raw(
        self,
        query: str,
        *,
        headers: dict[str, str] | None = None,
        variables: dict[str, Any] | None = None,
        timeout: float = 30,  # as tests.apikit.GraphQL's: a request here waits for its answer
    ) -> Answer:
        response = self.client.post(
            "/graphql",
            data={"query": query, "variables": variables or {}},
            content_type="application/json",
            headers=headers or {},
        )
        return Answer(response.status_code, json.loads(response.content), response.headers)  # type: ignore[arg-type]


def recorded_login(username: str) -> str:
    """The portal's session key (its signed cookie) as its login records it for the devstack's ``username``:
    the user's claims, renewed now."""
    user = next(u for u in seed.USERS if u["username"] == username)
    org = organisation_of(user["organization"])[0] if user.get("organization") else ORGANISATION_ID
    owner = "ORG_OWNER" in user["roles"]
    profile = PortalUser(
        subject=subject_of(username),
        username=username,
        name=user["name"],
        email=user["email"],
        roles=list(user["roles"]),
        organization=org,
        owned_organizations=[org] if owner else [],
    )
    store = SessionStore()
    store.update(
        {
            SESSION_KEY: profile.subject,
            BACKEND_SESSION_KEY: "portal.oidc.ClaimsBackend",
            HASH_SESSION_KEY: "",
            EXPIRATION_KEY: time.time() + 3600,
        }
    )
    remember_user(store, profile)
    store.save()
    assert store.session_key is not None
    return store.session_key


def signed_in(username: str) -> Client:
    """A browser of the portal signed in as the devstack's ``username`` (Django's test client), CSRF checked
    as a browser's requests are."""
    browser = Client(enforce_csrf_checks=True)
    browser.cookies[settings.SESSION_COOKIE_NAME] = recorded_login(username)
    return browser


@contextmanager
def in_process(
    issuer: LocalIssuer,
    kube: FakeKube,
    proxmox: ProxmoxApi,
    clusterapi: FakeClusterApi | None = None,
    zitadel: ZitadelApi | None = None,
) -> Iterator[InProcessApi]:
    """The API of this process on ``kube``, ``clusterapi`` (an empty one unless given), ``proxmox`` and
    ``zitadel`` (``fakezitadel.FakeZitadel``; unless given, whatever settings configure: none in tests),
    its tokens those of ``issuer``."""
    tenant_clusters = clusterapi or FakeClusterApi()
    with (
        override_settings(
            FLEXPLANE_OIDC_ISSUER=issuer.url,
            FLEXPLANE_OIDC_AUDIENCE=AUDIENCE,
            FLEXPLANE_OIDC_PROJECT_ID=seed.PROJECT_ID,
            FLEXPLANE_OIDC_ALGORITHMS=["RS256"],
            FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE="",
        ),
        pytest.MonkeyPatch.context() as patch,
    ):
        # The process's validator and sources are made from settings on first use: these are this API's.
        patch.setattr(auth, "_validator", None)
        patch.setattr(kube_source, "_source", kube)
        patch.setattr(proxmox_source, "_source", proxmox)
        patch.setattr(clusterapi_source, "clusterapi", lambda: tenant_clusters)
        if zitadel is not None:
            patch.setattr(zitadel_source, "_source", zitadel)
            patch.setattr(zitadel_source, "_configured", True)
        yield InProcessApi(issuer, kube, proxmox)
