"""A service account's key drives the client: exchanged at the devstack's identity provider (a real
``python -m devstack.identity`` process, Zitadel's JWT bearer grant) for tokens the API in this process
accepts, the next one asked for before the current one expires, and a key whose account is gone refused.

The client's clock is moved rather than waited on: tokens live 12 hours."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator

import httpx
import jwt
import pytest
from django.test import override_settings

from apiclient import FlexPlane, ServiceAccountKey, Unauthenticated
from devstack import seed
from devstack.identity.claims import ORGANISATION_ID
from devstack.identity.process import IdentityProvider
from orchestrator import auth
from orchestrator.sources.zitadel import ZitadelSource
from tests import addresses
from tests.apiclient.conftest import ORIGIN
from tests.identitykit import identity_fixture, zitadel_fixture

HOST = addresses.address(addresses.IDENTITY_SUITE, 21)
VDC = "sa-client"


identity = identity_fixture(HOST)
zitadel = zitadel_fixture(f"vdc:{VDC}", "the client's suite")


def service_account(zitadel: ZitadelSource, name: str) -> tuple[str, str]:
    """A machine user with USER in the VDC and JWT access tokens, as createServiceAccount makes one: its
    id and its key file."""
    user_id = zitadel.create_machine_user(ORGANISATION_ID, f"sa.{VDC}.{name}", name, "a script")
    zitadel.use_jwt_access_tokens(user_id, ORGANISATION_ID, name, "a script")
    zitadel.create_authorization(user_id, ORGANISATION_ID, ["USER", f"vdc:{VDC}"])
    tomorrow = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
    return user_id, zitadel.add_machine_key(user_id, tomorrow)


@pytest.fixture
def api_trusting(identity: IdentityProvider) -> Iterator[None]:
    """The API in this process taking the identity provider's tokens, as the orchestrator is set up for
    Zitadel (tests/orchestrator/inprocess.py does the same for its own issuer)."""
    with (
        override_settings(
            FLEXPLANE_OIDC_ISSUER=identity.issuer,
            FLEXPLANE_OIDC_AUDIENCE=seed.PROJECT_ID,
            FLEXPLANE_OIDC_PROJECT_ID=seed.PROJECT_ID,
            FLEXPLANE_OIDC_ALGORITHMS=["RS256"],
            FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE="at+jwt",
        ),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(auth, "_validator", None)
        yield


class Clock:
    """The client's idea of the time: the real one, plus what the test moved it on by."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


def test_a_keys_token_is_renewed_before_it_expires(
    identity: IdentityProvider, zitadel: ZitadelSource, api_trusting: None, transport: httpx.WSGITransport
) -> None:
    user_id, key = service_account(zitadel, "renewed")
    clock = Clock()
    credentials = ServiceAccountKey(json.loads(key), identity.api_url, seed.PROJECT_ID, clock=clock)

    with FlexPlane(ORIGIN, credentials, transport=transport) as api:
        first = api.me().me
        token = credentials.token()
        expires = jwt.decode(token, options={"verify_signature": False})["exp"]
        assert api.me().me.subject == user_id
        assert credentials.exchanges == 1
        # Half a minute before the token's end (the client renews a minute before).
        clock.ahead = expires - 30 - time.time()
        second = api.me().me

    assert first.subject == second.subject == user_id
    assert first.vdcs == second.vdcs == [VDC]
    assert credentials.exchanges == 2
    assert credentials.token() != token


def test_a_key_whose_account_was_deleted_gets_no_token(
    identity: IdentityProvider, zitadel: ZitadelSource, api_trusting: None, transport: httpx.WSGITransport
) -> None:
    user_id, key = service_account(zitadel, "revoked")
    zitadel.delete_user(user_id)
    credentials = ServiceAccountKey(json.loads(key), identity.api_url, seed.PROJECT_ID)

    with (
        FlexPlane(ORIGIN, credentials, transport=transport) as api,
        pytest.raises(Unauthenticated) as refused,
    ):
        api.me()

    assert "unknown key" in refused.value.message
    assert json.loads(key)["keyId"] in refused.value.message
