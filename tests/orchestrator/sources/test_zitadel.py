"""The Zitadel client against the identity provider's Zitadel-shaped API, checked against Zitadel's contract.

Every request the client sends, and every answer the stand-in gives it, is checked field by field
against the subset of Zitadel's published protobuf definitions kept in ``zitadel_contract.txt`` (with
the source file and commit of each part), so neither the client nor the stand-in can drift from the
real API silently. What the calls do (grants, roles, refusals, what a token then carries) is checked on
the emulator and on the in-memory stand-in alike: tests/orchestrator/test_fakezitadel_contract.py.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import requests

from devstack import seed
from devstack.identity.claims import organisation_of
from devstack.identity.client import password_token
from devstack.identity.process import IdentityProvider
from devstack.net import free_port
from orchestrator.errors import Unavailable
from orchestrator.sources.protocols import ZitadelApi
from orchestrator.sources.zitadel import ServiceKey, ZitadelRefused, ZitadelSource
from tests import addresses

if TYPE_CHECKING:
    from devstack.world import World

CONTRACT = Path(__file__).with_name("zitadel_contract.txt")
HOST = addresses.address(addresses.IDENTITY_SUITE, 10)
SCALARS = {"string", "bool", "uint32", "uint64", "Timestamp"}
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


# ------------------------------------------------------------------------------------ the contract


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    number: int
    repeated: bool = False
    required: bool = False
    oneof: str | None = None


@dataclass
class Contract:
    rpcs: dict[str, tuple[str, str]] = field(default_factory=dict)
    messages: dict[str, dict[str, Field]] = field(default_factory=dict)
    enums: dict[str, set[str]] = field(default_factory=dict)
    sources: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Contract:
        contract = cls()
        current: dict[str, Any] | set[str] | None = None
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            words = line.split()
            if not raw.startswith(" "):
                current = None
                if words[0] == "source":
                    contract.sources.append((words[1], words[2]))
                elif words[0] == "rpc":
                    contract.rpcs[words[1]] = (words[2], words[3])
                elif words[0] == "message":
                    current = contract.messages.setdefault(words[1], {})
                elif words[0] == "enum":
                    current = contract.enums.setdefault(words[1], set())
                else:
                    raise ValueError(f"unknown line in the contract: {raw!r}")
                continue
            if isinstance(current, set):
                current.add(words[0])
                continue
            assert isinstance(current, dict), raw
            repeated = words[0] == "repeated"
            if words[0] in ("repeated", "optional"):
                words = words[1:]
            kind, name, _, number, *rest = words
            oneof = rest[rest.index("oneof") + 1] if "oneof" in rest else None
            current[name] = Field(name, kind, int(number), repeated, "required" in rest, oneof)
        return contract

    def check(self, message: str, value: Any, where: str) -> list[str]:
        """What in ``value`` (protobuf JSON) does not fit ``message``."""
        fields = self.messages.get(message)
        if fields is None:
            return [f"{where}: message {message} is not in the contract"]
        if not isinstance(value, Mapping):
            return [f"{where}: {message} must be a JSON object, not {value!r}"]
        by_json = {_camel(f.name): f for f in fields.values()} | dict(fields)
        problems: list[str] = []
        seen_oneofs: dict[str, str] = {}
        for key, item in value.items():
            spec = by_json.get(key)
            if spec is None:
                problems.append(f"{where}.{key}: no such field in {message}")
                continue
            if spec.oneof is not None:
                if spec.oneof in seen_oneofs:
                    problems.append(
                        f"{where}: both {seen_oneofs[spec.oneof]} and {key} of oneof {spec.oneof}"
                    )
                seen_oneofs[spec.oneof] = key
            items = item if spec.repeated else [item]
            if spec.repeated and not isinstance(item, list):
                problems.append(f"{where}.{key}: repeated field must be a list")
                continue
            for index, element in enumerate(items):
                problems += self._value(
                    spec, element, f"{where}.{key}" + (f"[{index}]" if spec.repeated else "")
                )
        for spec in fields.values():
            if spec.required and not (value.get(_camel(spec.name)) or value.get(spec.name)):
                problems.append(f"{where}.{_camel(spec.name)}: required in {message}, missing or empty")
        return problems

    def _value(self, spec: Field, value: Any, where: str) -> list[str]:
        kind = spec.type
        if kind == "string":
            ok = isinstance(value, str)
        elif kind == "bool":
            ok = isinstance(value, bool)
        elif kind in ("uint32", "uint64"):
            # protobuf's JSON: 64-bit integers as strings; either form is accepted for both.
            ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
                isinstance(value, str) and value.isdigit()
            )
        elif kind == "Timestamp":
            ok = isinstance(value, str) and bool(_TIMESTAMP.match(value))
        elif kind in self.enums:
            ok = value in self.enums[kind]
        else:
            return self.check(kind, value, where)
        return [] if ok else [f"{where}: {value!r} is not a valid {kind}"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


# ------------------------------------------------------------------------------------ fixtures


class RecordingSession(requests.Session):
    """A session that keeps every Connect call: its path, its JSON body, its status and answer."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any, int, Any]] = []
        self.token_requests = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        response = super().request(method, url, *args, **kwargs)
        path = str(url).split("/", 3)[3] if str(url).count("/") >= 3 else ""
        if path == "oauth/v2/token":
            self.token_requests += 1
        else:
            try:
                answer = response.json()
            except ValueError:
                answer = None
            self.calls.append((path, kwargs.get("json"), response.status_code, answer))
        return response


@pytest.fixture(scope="module")
def contract() -> Contract:
    return Contract.load(CONTRACT)


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
    with IdentityProvider.start(
        tmp_path_factory.mktemp("zitadel"), HOST, free_port(HOST), seed.USERS, project_id=seed.PROJECT_ID
    ) as provider:
        yield provider


def client(identity: IdentityProvider, **options: Any) -> tuple[ZitadelSource, RecordingSession]:
    session = RecordingSession()
    source = ZitadelSource(
        identity.api_url,
        ServiceKey.from_file(identity.zitadel_key_path),
        seed.PROJECT_ID,
        session=session,
        timeout=5.0,
        **options,
    )
    return source, session


def zitadel_of(world: World) -> ZitadelSource:
    """The orchestrator's Zitadel client of the world's identity provider, as the platform's service user."""
    return ZitadelSource(
        world.identity.api_url, ServiceKey.from_file(world.identity.zitadel_key_path), seed.PROJECT_ID
    )


def restore_seeded_organization(source: ZitadelApi, name: str) -> None:
    """A seeded organization as seeding left it, after a test took its grant away (and Zitadel, with it,
    its users' authorizations): the project granted to it again, each seeded user's roles given again."""
    org = organisation_of(name)[0]
    users = [u for u in seed.USERS if u.get("organization") == name]
    source.grant_project(org, ["USER", "ORG_OWNER"])
    for seeded in users:
        (found,) = [u for u in source.search_users(seeded["username"]) if u.username == seeded["username"]]
        roles = list(seeded["roles"])
        existing = source.authorizations(user_ids=[found.id], organization_id=org)
        if existing:
            source.update_authorization(existing[0].id, roles)
        else:
            source.create_authorization(found.id, org, roles)


# ------------------------------------------------------------------------------------ tests


def test_every_request_the_client_sends_and_every_answer_fits_zitadels_published_api(
    identity: IdentityProvider, contract: Contract
) -> None:
    source, session = client(identity)
    bob = source.search_users("bob")[0]
    assert source.users([bob.id, "000000000000000000"]) == [bob]
    assert source.add_project_role("vdc:contract", "VDC contract", "vdc") is True
    assert source.add_project_role("vdc:contract", "VDC contract", "vdc") is False
    (existing,) = source.authorizations(user_ids=[bob.id], organization_id="100000001")
    source.delete_authorization(existing.id)
    ident = source.create_authorization(bob.id, "100000001", ["vdc:contract"])
    with pytest.raises(ZitadelRefused):
        source.create_authorization(bob.id, "100000001", [])  # one per user, project and organization
    assert source.authorizations(role_key="vdc:contract")[0].user_id == bob.id
    source.update_authorization(ident, list(existing.role_keys))
    source.remove_project_role("vdc:contract")
    assert source.organization("100000001") is not None
    assert source.organization("999") is None
    assert source.project_organization() == "100000001"
    acme = organisation_of("acme")[0]
    source.grant_project(acme, ["USER", "ORG_OWNER"])  # granted at seeding: updated, with the same roles
    assert source.revoke_project(acme) is True
    assert source.revoke_project(acme) is False  # none left: no error
    restore_seeded_organization(source, "acme")

    problems: list[str] = []
    used = set()
    for path, body, status, answer in session.calls:
        rpc = contract.rpcs.get(path)
        if rpc is None:
            problems.append(f"{path}: not a method of Zitadel's published API (in the contract)")
            continue
        used.add(path)
        problems += contract.check(rpc[0], body, f"{path} request")
        if status == 200:
            problems += contract.check(rpc[1], answer, f"{path} response")
        else:
            assert set(answer) == {"code", "message"}, answer  # a Connect error
    assert problems == []
    assert used == set(contract.rpcs), "every method of the contract is exercised"


def test_the_contract_names_the_source_and_commit_of_every_part(contract: Contract) -> None:
    assert contract.sources
    for path, commit in contract.sources:
        assert path.startswith("proto/zitadel/")
        assert "/v2/" in path
        assert re.fullmatch(r"[0-9a-f]{40}", commit)


def test_the_service_token_is_fetched_once_and_kept_for_its_lifetime_only(identity: IdentityProvider) -> None:
    source, session = client(identity)
    source.search_users("alice")
    source.search_users("bob")
    assert session.token_requests == 1
    source._expires = time.monotonic() - 1  # its lifetime is over
    source.search_users("alice")
    assert session.token_requests == 2


def test_a_key_zitadel_does_not_know_gets_no_token(identity: IdentityProvider) -> None:
    known = ServiceKey.from_file(identity.zitadel_key_path)
    source = ZitadelSource(
        identity.api_url, ServiceKey("123", known.user_id, known.private_key), seed.PROJECT_ID
    )
    with pytest.raises(ZitadelRefused) as refused:
        source.search_users("bob")
    assert "unknown key" not in refused.value.message


def test_a_zitadel_that_does_not_answer_is_unavailable_naming_zitadel_within_the_deadline(
    identity: IdentityProvider,
) -> None:
    closed = addresses.address(addresses.IDENTITY_SUITE, 11)
    key = ServiceKey.from_file(identity.zitadel_key_path)
    source = ZitadelSource(f"http://{closed}:{free_port(closed)}", key, seed.PROJECT_ID, timeout=1.0)
    started = time.monotonic()
    with pytest.raises(Unavailable) as down:
        source.search_users("bob")
    assert down.value.where == "Zitadel"
    assert "Zitadel" in down.value.message
    assert time.monotonic() - started < 3


def test_zitadels_own_error_text_is_not_passed_on(identity: IdentityProvider) -> None:
    source, session = client(identity)
    with pytest.raises(ZitadelRefused) as refused:
        source.update_authorization("404404404", ["USER"])
    stand_in_text = session.calls[-1][3]["message"]
    assert refused.value.status == "not_found"
    assert stand_in_text not in refused.value.message
    assert refused.value.message == "Zitadel refused UpdateAuthorization (not_found)"


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        ({"id": "1", "roleKeys": [], "extra": 1}, {"Connect-Protocol-Version": "1"}, "invalid_argument"),
        ({"id": "1", "roleKeys": []}, {}, "invalid_argument"),
        ({"id": "", "roleKeys": []}, {"Connect-Protocol-Version": "1"}, "invalid_argument"),
    ],
    ids=["an unknown field", "no protocol header", "an empty id"],
)
def test_the_stand_in_refuses_what_zitadels_connect_server_refuses(
    identity: IdentityProvider, body: dict[str, Any], headers: dict[str, str], code: str
) -> None:
    source, _ = client(identity)
    response = requests.post(
        f"{identity.api_url}/zitadel.authorization.v2.AuthorizationService/UpdateAuthorization",
        json=body,
        headers={"Authorization": f"Bearer {source.token()}", **headers},
        timeout=5,
    )
    assert response.status_code == 400
    assert response.json()["code"] == code


def test_the_stand_in_refuses_a_token_without_the_api_audience(identity: IdentityProvider) -> None:
    user_token = password_token(identity.issuer, "admin", "admin")
    response = requests.post(
        f"{identity.api_url}/zitadel.user.v2.UserService/ListUsers",
        json={},
        headers={"Authorization": f"Bearer {user_token}", "Connect-Protocol-Version": "1"},
        timeout=5,
    )
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


def test_a_key_file_that_cannot_be_read_is_unavailable_naming_it_and_read_again_next_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The process's client when its key's Secret is not mounted yet: a typed error naming the file (the
    gateway reconciler's pass says it and goes on), not a crash, and the file is read once it is there."""
    from django.test import override_settings

    from orchestrator.sources import zitadel as zitadel_module

    monkeypatch.setattr(zitadel_module, "_source", None)
    monkeypatch.setattr(zitadel_module, "_configured", False)
    key_file = tmp_path / "key.json"
    with override_settings(
        FLEXPLANE_ZITADEL_KEY_FILE=str(key_file), FLEXPLANE_ZITADEL_URL="https://z.example"
    ):
        with pytest.raises(Unavailable, match=f"the service user's key {key_file} cannot be read"):
            zitadel_module.zitadel()
        key_file.write_text('{"keyId": "k1", "userId": "u1", "key": "-----BEGIN RSA PRIVATE KEY-----"}')
        made = zitadel_module.zitadel()
    assert made is not None
    assert made.key.key_id == "k1"
