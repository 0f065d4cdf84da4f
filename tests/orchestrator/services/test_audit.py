"""The audit trail against the devstack: a mutation's record as a JSON line of the orchestrator's log and
as an Event of the management cluster, and who may read which records. Every mutation's one record and its
fields are tested in-process: tests/orchestrator/api/light/test_audit.py."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from typing import Any

import pytest
from graphql import GraphQLInputObjectType, GraphQLList, GraphQLNonNull, GraphQLType, build_schema

from devstack.world import World
from orchestrator.auth import Principal
from orchestrator.errors import NotFound, PermissionDenied
from orchestrator.graphql.schema import schema
from orchestrator.services import audit
from orchestrator.services.context import Context
from orchestrator.sources.kube import KubeSource
from tests.apikit import Answer, Api, GraphQL
from tests.kubekit import audit_records, world_kube

SDL = build_schema(str(schema))
MUTATIONS = sorted(SDL.mutation_type.fields)  # type: ignore[union-attr]  # it has one


@pytest.fixture(scope="module")
def events(world: World) -> Iterator[KubeSource]:
    """A kube source on the world's cluster, to read the Events the orchestrator wrote."""
    source = world_kube(world)
    yield source
    source.core.api_client.close()


def log_records(world: World, request_id: str) -> list[dict[str, Any]]:
    """The audit lines of the orchestrator's log (its stdout) for one request."""
    lines = (world.cfg.scratch / "logs" / "orchestrator.log").read_text(errors="replace").splitlines()
    found = []
    for line in lines:
        if '"audit"' not in line or request_id not in line:
            continue
        entry = json.loads(line[line.index("{") :])
        if entry.get("audit", {}).get("request_id") == request_id:
            found.append(entry)
    return found


# ------------------------------------------------------------------------ every mutation of the schema


def harmless_value(kind: GraphQLType) -> Any:
    """A harmless value of a type: what exists nowhere (ids, names), the smallest number, false."""
    if isinstance(kind, GraphQLNonNull):
        return harmless_value(kind.of_type)
    if isinstance(kind, GraphQLList):
        return []
    if isinstance(kind, GraphQLInputObjectType):
        return {
            name: harmless_value(f.type)
            for name, f in kind.fields.items()
            if isinstance(f.type, GraphQLNonNull)
        }
    name = getattr(kind, "name", "")
    values = getattr(kind, "values", None)
    if values:
        return next(iter(values))
    scalars = {"ID": "zone-a/999999", "Int": 1, "Float": 1.0, "Boolean": False, "DateTime": "2000-01-01"}
    return scalars.get(name, "no-such-thing")


def mutation_document(mutation: str) -> tuple[str, dict[str, Any]]:
    """The mutation with each required argument set harmlessly, asking for its errors' codes."""
    field = SDL.mutation_type.fields[mutation]  # type: ignore[union-attr]
    required = {n: a for n, a in field.args.items() if isinstance(a.type, GraphQLNonNull)}
    params = ", ".join(f"${n}: {a.type}" for n, a in required.items())
    args = ", ".join(f"{n}: ${n}" for n in required)
    header = f"mutation({params})" if params else "mutation"
    call = f"{mutation}({args})" if args else mutation
    document = f"{header} {{ {call} {{ errors {{ code }} }} }}"
    return document, {n: harmless_value(a.type) for n, a in required.items()}


def error_code_of(answer: Answer, mutation: str) -> str | None:
    """The error code the answer gave: top-level (FORBIDDEN, ...) or in the payload's errors."""
    if answer.codes:
        return answer.codes[0]
    errors = ((answer.data or {}).get(mutation) or {}).get("errors") or []
    return str(errors[0]["code"]) if errors else None


def subject_of(api: Api, user: str) -> str:
    subject: str = api("{ me { subject } }", user=user).data["me"]["subject"]
    return subject


def test_a_mutations_record_is_an_event_of_the_cluster_and_a_json_line_of_the_orchestrators_log(
    api: GraphQL, world: World, events: KubeSource
) -> None:
    """Through the orchestrator's process, as deployed: the server's view of the client, the JSON log line,
    the Event in the management cluster (every mutation's fields: api/light/test_audit.py)."""
    mutation = "createSnapshot"
    document, variables = mutation_document(mutation)
    answer = api(document, user="bob", variables=variables)
    request_id = answer.headers["X-Request-ID"]
    (record,) = audit_records(events, request_id)
    assert (record.operation, record.subject, record.via) == (mutation, subject_of(api, "bob"), audit.API)
    assert record.client is not None
    assert ipaddress.ip_address(record.client).is_loopback  # the test's own address, as the server saw it
    assert record.error_code == error_code_of(answer, mutation)
    assert [line["audit"]["operation"] for line in log_records(world, request_id)] == [mutation]


def test_every_answer_names_its_request_id_and_the_log_is_json_lines_carrying_it(
    api: GraphQL, world: World
) -> None:
    answer = api("{ me { subject } }", user="alice")
    assert answer.headers["X-Request-ID"]  # every answer carries its request's id
    lines = [
        json.loads(line)
        for line in (world.cfg.scratch / "logs" / "orchestrator.log").read_text(errors="replace").splitlines()
        if line.startswith("{")
    ]
    assert lines, "the orchestrator's log is JSON lines"
    assert all({"time", "level", "logger", "message", "request_id"} <= set(line) for line in lines)


# ------------------------------------------------------------------------ who reads what


def _ctx(*roles: str, subject: str = "tester", vdc: str | None = None) -> Context:
    return Context(Principal(subject=subject, name=subject, email="", roles=frozenset(roles)), vdc=vdc)


@pytest.fixture
def wired_kube(events: KubeSource) -> Iterator[None]:
    from orchestrator.sources import kube as kube_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", events)
        yield


def test_bob_never_sees_alices_vdcs_records(api: GraphQL, wired_kube: None) -> None:
    api(
        'mutation { createSnapshot(vm: "zone-a/999999", name: "x2") { errors { code } } }',
        user="alice",
        vdc="demo",
    )
    bob = _ctx("USER", "vdc:other", subject="bob")
    with pytest.raises(NotFound):
        audit.recent(bob, vdc="demo")
    with pytest.raises(PermissionDenied):
        audit.recent(bob)  # every VDC's: ADMIN only
    assert all(r.vdc == "other" for r in audit.recent(bob, vdc="other", limit=1000))
    alice = _ctx("USER", "vdc:demo", subject="alice")
    mine = audit.recent(alice, vdc="demo", limit=1000)
    assert mine
    assert all(r.vdc == "demo" for r in mine)
    admin = _ctx("ADMIN")
    everyone = audit.recent(admin, limit=1000)
    assert {r.vdc for r in everyone} >= {"demo", None}
    assert [r.time for r in everyone] == sorted((r.time for r in everyone), reverse=True)


def test_the_admin_filters_by_user_and_operation(api: GraphQL, wired_kube: None) -> None:
    api('mutation { deleteSnapshot(vm: "zone-a/999999", name: "x3") { errors { code } } }', user="alice")
    subject = subject_of(api, "alice")
    found = audit.recent(_ctx("ADMIN"), user=subject, operation="deleteSnapshot", limit=1000)
    assert found
    assert {(r.subject, r.operation) for r in found} == {(subject, "deleteSnapshot")}


AUDIT_RECORDS = """query($vdc: ID, $operation: String) {
  auditRecords(vdc: $vdc, operation: $operation, first: 500) {
    time subject roles vdc operation targets { key value } outcome errorCode requestId client via } }"""


def test_the_api_answers_a_vdcs_records_to_its_members_and_every_record_to_admin(api: GraphQL) -> None:
    request_id = api(
        'mutation { createSnapshot(vm: "zone-a/999999", name: "x4") { errors { code } } }',
        user="alice",
        vdc="demo",
    ).headers["X-Request-ID"]
    mine = api(AUDIT_RECORDS, user="alice", variables={"vdc": "demo", "operation": "createSnapshot"})
    assert mine.errors == []
    records = mine.data["auditRecords"]
    assert {r["vdc"] for r in records} == {"demo"}
    (record,) = [r for r in records if r["requestId"] == request_id]
    assert record["targets"] == [{"key": "vm", "value": "zone-a/999999"}, {"key": "name", "value": "x4"}]
    assert (record["outcome"], record["errorCode"], record["via"]) == ("failed", "NOT_FOUND", "api")
    assert api(AUDIT_RECORDS, user="bob", variables={"vdc": "demo"}).codes == ["NOT_FOUND"]
    assert api(AUDIT_RECORDS, user="bob").codes == ["FORBIDDEN"]
    everything = api(AUDIT_RECORDS, user="admin").data["auditRecords"]
    assert request_id in {r["requestId"] for r in everything}


# ------------------------------------------------------------------------ what a record holds


def test_targets_are_the_names_of_objects_never_what_an_input_carries() -> None:
    args = {
        "input": {
            "name": "web",
            "zone": "zone-a",
            "userData": "#cloud-config\npassword: hunter2",
            "sshKeys": ["ssh-ed25519 AAAA"],
            "description": "secret plans",
            "token": "t0ken",
        },
        "id": "zone-a/100",
    }
    assert audit.targets_of(args) == {"id": "zone-a/100", "name": "web", "zone": "zone-a"}
