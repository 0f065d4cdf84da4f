"""The audit trail in this process: every mutation of the schema, asked by bob, writes exactly one record
with the right fields, as a log record of ``flexplane.audit`` and as an Event of the management cluster;
a mutation names its VDC only when the caller acts in it. That the orchestrator's process writes them as
JSON lines of its log, and into the real management cluster, is tested against the devstack
(tests/orchestrator/services/test_audit.py)."""

from __future__ import annotations

import datetime
import ipaddress
import logging

import pytest

from orchestrator.services import audit
from tests.kubekit import audit_records
from tests.orchestrator.fakekube import FakeKube
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.orchestrator.services.test_audit import MUTATIONS, error_code_of, mutation_document, subject_of


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_every_mutation_writes_exactly_one_record_with_the_right_fields(
    api: InProcessApi, light: LightWorld, caplog: pytest.LogCaptureFixture, mutation: str
) -> None:
    document, variables = mutation_document(mutation)
    before = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    with caplog.at_level(logging.INFO, logger="flexplane.audit"):
        answer = api(document, user="bob", variables=variables)
    request_id = answer.headers["X-Request-ID"]
    assert request_id
    records = audit_records(light.kube, request_id)
    assert len(records) == 1, records
    record = records[0]
    assert record.operation == mutation
    assert record.subject == subject_of(api, "bob")
    assert record.roles == ("USER",)  # bob acts in no VDC of his here: only the role that mattered
    assert record.via == audit.API
    assert record.client is not None
    assert ipaddress.ip_address(record.client).is_loopback
    assert before <= record.time <= datetime.datetime.now(datetime.UTC)
    assert record.vdc is None  # nothing of a VDC of bob's was named or acted on
    code = error_code_of(answer, mutation)
    if code is None:
        assert (record.outcome, record.error_code) == (audit.SUCCEEDED, None)
    else:
        refused = code in ("FORBIDDEN", "UNAUTHENTICATED")
        assert record.outcome == (audit.REFUSED if refused else audit.FAILED)
        assert record.error_code == code or code == "UPSTREAM_FAILURE"  # a code the domain lacks
    logged = [r for r in caplog.records if getattr(r, "audit", {}).get("request_id") == request_id]
    assert [r.audit["operation"] for r in logged] == [mutation]  # type: ignore[attr-defined]


def snapshot_in_demo(api: InProcessApi, kube: FakeKube, user: str) -> audit.AuditRecord:
    """``user``'s snapshot of a missing VM, naming VDC demo: its one audit record."""
    answer = api(
        'mutation { createSnapshot(vm: "zone-a/999999", name: "x1") { errors { code } } }',
        user=user,
        vdc="demo",
    )
    (record,) = audit_records(kube, answer.headers["X-Request-ID"])
    return record


def test_a_mutation_in_a_vdc_of_the_caller_is_that_vdcs_and_names_its_targets(
    api: InProcessApi, light: LightWorld
) -> None:
    record = snapshot_in_demo(api, light.kube, "alice")
    assert record.vdc == "demo"
    assert record.roles == ("USER", "vdc:demo")
    assert record.targets == {"vm": "zone-a/999999", "name": "x1"}
    assert (record.outcome, record.error_code) == (audit.FAILED, "NOT_FOUND")


def test_naming_a_vdc_one_is_not_a_member_of_writes_nothing_into_its_activity(
    api: InProcessApi, light: LightWorld
) -> None:
    record = snapshot_in_demo(api, light.kube, "bob")
    assert (record.outcome, record.error_code) == (audit.REFUSED, "FORBIDDEN")
    assert record.vdc is None


WINDOW = """query($since: DateTime, $until: DateTime) {
  auditRecords(vdc: "demo", since: $since, until: $until, first: 500) { time requestId }
}"""


def test_the_records_of_a_time_window_are_those_of_that_time_or_later_and_that_time_or_earlier(
    api: InProcessApi,
) -> None:
    answer = api(
        'mutation { createSnapshot(vm: "zone-a/999999", name: "window") { errors { code } } }',
        user="alice",
        vdc="demo",
    )
    mine = answer.headers["X-Request-ID"]
    (record,) = [r for r in api(WINDOW, user="alice").data["auditRecords"] if r["requestId"] == mine]
    at = datetime.datetime.fromisoformat(record["time"])

    def ids(**window: datetime.datetime) -> set[str]:
        variables = {key: moment.isoformat() for key, moment in window.items()}
        return {r["requestId"] for r in api(WINDOW, user="alice", variables=variables).data["auditRecords"]}

    assert mine in ids(since=at, until=at)  # both ends belong to the window
    assert mine not in ids(since=at + datetime.timedelta(seconds=1))
    assert mine not in ids(until=at - datetime.timedelta(seconds=1))
    naive = (at - datetime.timedelta(minutes=1)).replace(tzinfo=None)  # a time without a zone is UTC
    assert mine in ids(since=naive)
