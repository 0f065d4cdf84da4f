"""Staged agent rollouts through the API and the channel, in this process on a management cluster in memory:
an admin starts one, the channel answers each host by its wave, the hosts' reports move it on or halt it
once their agents confirm them (GetInfo, answered here by ``FleetZones``: what each test says a host's agent
runs). The soak time passes on an injected clock (time-machine)."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.test import Client, override_settings
from prometheus_client import REGISTRY

from agent.release import BuiltRelease
from agentclient import AgentTarget
from orchestrator.models import Host
from orchestrator.models.zones import host_ident
from orchestrator.services import rollouts
from orchestrator.services.catalog import HOST, ZONE_LABEL
from orchestrator.services.rollouts import reports
from orchestrator.sources.proxmox import AgentReport, CertificateRenewal, FanOut, UpdateOutcome
from tests.apikit import Api
from tests.orchestrator.fakekube import FakeKube
from tests.orchestrator.fakeproxmox import FakeProxmox, seeded_zones
from tests.releasekit import Keys, build_release
from tests.vmkit import payload

HOSTS = ("zone-a/pve1", "zone-a/pve2", "zone-b/pve1")
FIELDS = (
    "version baseline phase canaries canaryPercent soakMinutes healthySince promotesAt updatedHosts "
    "failedHost message"
)
START = f"""mutation($version: String!, $hosts: [String!], $percent: Int, $soak: Int) {{
  startAgentRollout(version: $version, canaryHosts: $hosts, canaryPercent: $percent, soakMinutes: $soak) {{
    rollout {{ {FIELDS} }} errors {{ field message code }} }} }}"""
HALT = f"""mutation($reason: String) {{ haltAgentRollout(reason: $reason) {{
  rollout {{ {FIELDS} }} errors {{ field message code }} }} }}"""
RESUME = f"mutation {{ resumeAgentRollout {{ rollout {{ {FIELDS} }} errors {{ field message code }} }} }}"
ROLLOUT = f"{{ agentRollout {{ {FIELDS} }} }}"
PIN = """mutation($version: String!) { pinAgentVersion(version: $version) { errors { message } } }"""
HALTED_METRIC = "flexplane_agent_rollout_halted"
SERVED = "{ agentReleaseChannel { servedVersion pin { version } } }"


class FleetZones(FakeProxmox):
    """The seeded zones in memory, whose hosts' agents answer GetInfo with what a test says each runs
    (``runs``); a host it said nothing of answers as the in-memory agents do, and a zone made ``silent``
    does not answer. ``asked`` lists the hosts whose agents were asked, in order."""

    def __init__(self) -> None:
        super().__init__(*seeded_zones().zones.values())
        self.said: dict[str, AgentReport] = {}
        self.asked: list[str] = []

    def runs(self, host: str, running: str, result: str = "none", to: str = "", message: str = "") -> None:
        """What ``host``'s agent answers from now on: the version it runs and its last update."""
        self.said[host] = AgentReport(
            version=running,
            proxmox_version=self.version,
            package_version="",
            certificate_expires_at=None,
            renewal=CertificateRenewal(None, "", 0, None),
            last_update=UpdateOutcome(result or "none", "", to, message, None),
        )

    def agent_reports(self, agents: Mapping[str, AgentTarget]) -> FanOut[AgentReport]:
        fan = super().agent_reports(agents)
        self.asked += agents
        fan.results = {key: self.said.get(key, said) for key, said in fan.results.items()}
        return fan


@pytest.fixture
def zones() -> FleetZones:
    return FleetZones()


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release folder publishing 1.0.0, 1.1.0 and 1.2.0, signed (the channel serves what is built)."""
    directory = tmp_path_factory.mktemp("rollout-releases")
    key = Keys.create(directory / "keys").signing()
    folder = directory / "published"
    folder.mkdir()
    for version in ("1.0.0", "1.1.0", "1.2.0"):
        built: BuiltRelease = build_release(version, key, directory)
        for path in (built.artifact, built.envelope):
            (folder / path.name).write_bytes(path.read_bytes())
    return folder


@pytest.fixture
def fleet(api: Api, kube: FakeKube, released: Path) -> Iterator[Api]:
    """The API with three hosts in the catalog, releases published, and the fleet pinned at 1.0.0."""
    for key in HOSTS:
        zone, node = key.split("/")
        host = Host(zone=zone, node=node, endpoint=f"{node}.{zone}.test:7443")
        kube.create_catalog(HOST, host_ident(zone, node), host.to_spec(), labels={ZONE_LABEL: zone})
    with override_settings(FLEXPLANE_AGENT_RELEASES_DIR=str(released), FLEXPLANE_AGENT_REGISTRY=""):
        assert (
            payload(api(PIN, user="admin", variables={"version": "1.0.0"}), "pinAgentVersion")["errors"] == []
        )
        yield api


def start(api: Api, version: str = "1.1.0", **variables: Any) -> dict[str, Any]:
    return payload(api(START, user="admin", variables={"version": version, **variables}), "startAgentRollout")


def rollout(api: Api) -> dict[str, Any]:
    answer = api(ROLLOUT, user="admin")
    assert answer.errors == [], answer.errors
    found: dict[str, Any] = answer.data["agentRollout"]
    return found


def ask(host: str, running: str, result: str = "", to: str = "", message: str = "") -> dict[str, Any]:
    """The channel's answer to a request that says it is ``host``'s agent, what it runs and how its last
    update went: the host's own agent's, or anyone's (the channel cannot tell)."""
    zone, node = host.split("/")
    report = {"zone": zone, "node": node, "running": running, "result": result, "to": to, "message": message}
    response = Client().get("/agent/releases/channel.json", {k: v for k, v in report.items() if v})
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def report(
    zones: FleetZones, host: str, running: str, result: str = "", to: str = "", message: str = ""
) -> dict[str, Any]:
    """A genuine report: ``host``'s agent runs what its request to the channel says."""
    zones.runs(host, running, result, to, message)
    return ask(host, running, result, to, message)


def served_to_others(api: Api) -> dict[str, Any]:
    channel: dict[str, Any] = api(SERVED, user="admin").data["agentReleaseChannel"]
    return channel


def halted_metric(version: str, host: str) -> float | None:
    return REGISTRY.get_sample_value(HALTED_METRIC, {"version": version, "host": host})


@pytest.mark.parametrize(
    ("variables", "field", "said"),
    [
        ({"hosts": ["zone-a/pve9"]}, "canaryHosts", "no such host: zone-a/pve9"),
        ({"percent": 0}, "canaryPercent", "must be 1 to 100, not 0"),
        ({"percent": 101}, "canaryPercent", "must be 1 to 100, not 101"),
        ({"hosts": ["zone-a/pve1"], "percent": 10}, "canaryHosts", "not both"),
        ({}, "canaryHosts", "name canary hosts"),
        ({"version": "3.0.0", "percent": 10}, "version", "not published in the release channel"),
        ({"version": "1.0.0", "percent": 10}, "version", "already serves 1.0.0 to every host"),
        ({"percent": 10, "soak": -1}, "soakMinutes", "the soak time must be 0 to"),
    ],
)
def test_a_rollout_asked_for_wrongly_is_refused_naming_the_input(
    fleet: Api, variables: dict[str, Any], field: str, said: str
) -> None:
    answered = start(fleet, **variables)
    assert answered["rollout"] is None
    (error,) = answered["errors"]
    assert (error["field"], error["code"]) == (field, "INVALID")
    assert said in error["message"]
    assert rollout(fleet) is None


def test_the_canaries_get_the_version_first_and_the_others_once_they_ran_it_healthy_for_the_soak(
    fleet: Api, zones: FleetZones
) -> None:
    begun = datetime.datetime.now(datetime.UTC).replace(microsecond=0) + datetime.timedelta(seconds=1)
    minutes = datetime.timedelta(minutes=1)
    with time_machine.travel(begun, tick=False) as clock:
        started = start(fleet, hosts=["zone-a/pve1"], soak=30)
        assert started["errors"] == []
        assert started["rollout"]["phase"] == "CANARY"
        assert started["rollout"]["baseline"] == "1.0.0"  # the pin's, which made way for the rollout
        assert ask("zone-a/pve1", "1.0.0")["version"] == "1.1.0"
        assert ask("zone-a/pve2", "1.0.0")["version"] == "1.0.0"
        assert served_to_others(fleet) == {"servedVersion": "1.0.0", "pin": None}

        clock.shift(5 * minutes)
        report(zones, "zone-a/pve1", "1.1.0", "updated", "1.1.0")  # the canary runs it
        soaking = rollout(fleet)
        assert soaking["phase"] == "SOAKING"
        assert soaking["healthySince"] == (begun + 5 * minutes).isoformat()
        assert soaking["promotesAt"] == (begun + 35 * minutes).isoformat()
        assert ask("zone-b/pve1", "1.0.0")["version"] == "1.0.0"

        clock.shift(30 * minutes)
        assert ask("zone-b/pve1", "1.0.0")["version"] == "1.1.0"
        assert rollout(fleet)["phase"] == "ROLLING_OUT"
        assert served_to_others(fleet)["servedVersion"] == "1.1.0"
        for host in ("zone-a/pve2", "zone-b/pve1"):
            report(zones, host, "1.1.0", "updated", "1.1.0")
        done = rollout(fleet)
        assert (done["phase"], sorted(done["updatedHosts"])) == ("COMPLETE", sorted(HOSTS))
        assert halted_metric("1.1.0", "") == 0.0


def test_a_failed_health_check_halts_the_rollout_names_the_host_and_reaches_no_further_host(
    fleet: Api, zones: FleetZones
) -> None:
    started = start(fleet, percent=50, soak=0)["rollout"]
    assert (len(started["canaries"]), started["canaryPercent"]) == (2, 50)  # 50 % of 3, rounded up
    failing, waiting = started["canaries"]
    (other,) = set(HOSTS) - {failing, waiting}
    assert ask(failing, "1.0.0")["version"] == "1.1.0"
    failure = ("rolled-back", "1.1.0", "1.1.0 failed its health check (no answer); rolled back")
    zones.runs(failing, "1.0.0", *failure)
    ask(failing, "1.0.0", "rolled-back", "1.1.0", "words of the request")

    halted = rollout(fleet)
    assert (halted["phase"], halted["failedHost"]) == ("HALTED", failing)
    assert f"1.1.0 failed its health check on {failing}" in halted["message"]
    assert "(no answer)" in halted["message"]  # the agent's own words, not the request's
    assert "words of the request" not in halted["message"]
    assert halted_metric("1.1.0", failing) == 1.0
    # Neither the canary that has not updated yet nor the others get it now, soak or not.
    assert ask(waiting, "1.0.0")["version"] == "1.0.0"
    assert ask(other, "1.0.0")["version"] == "1.0.0"

    resumed = payload(fleet(RESUME, user="admin"), "resumeAgentRollout")["rollout"]
    assert (resumed["phase"], resumed["failedHost"]) == ("CANARY", None)  # the failed canary is excused
    ask(failing, "1.0.0", *failure)  # its last update still says so: excused, it halts nothing now
    assert rollout(fleet)["phase"] == "CANARY"
    assert ask(waiting, "1.0.0")["version"] == "1.1.0"
    assert halted_metric("1.1.0", failing) is None


def test_an_admin_halts_a_rollout_and_another_cannot_start_over_one_in_its_canary_phase(fleet: Api) -> None:
    assert start(fleet, hosts=["zone-a/pve1"])["errors"] == []
    refused = start(fleet, "1.2.0", hosts=["zone-a/pve2"])["errors"]
    assert [(e["code"], e["message"]) for e in refused] == [
        ("CONFLICT", "the rollout of 1.1.0 is in its canary phase: halt it first")
    ]
    halted = payload(fleet(HALT, user="admin", variables={"reason": "change freeze"}), "haltAgentRollout")
    assert halted["rollout"]["message"] == "halted by Platform Admin: change freeze"
    assert halted["rollout"]["failedHost"] is None
    assert ask("zone-a/pve1", "1.0.0")["version"] == "1.0.0"  # not even the canary gets it now

    again = start(fleet, "1.2.0", hosts=["zone-a/pve2"])["rollout"]
    assert (again["version"], again["baseline"], again["phase"]) == ("1.2.0", "1.0.0", "CANARY")
    denied = fleet(ROLLOUT, user="alice")
    assert denied.errors[0]["extensions"]["code"] == "FORBIDDEN"


def test_pinning_a_version_ends_the_rollout(fleet: Api) -> None:
    assert start(fleet, hosts=["zone-a/pve1"])["errors"] == []
    assert (
        payload(fleet(PIN, user="admin", variables={"version": "1.2.0"}), "pinAgentVersion")["errors"] == []
    )
    assert rollout(fleet) is None
    for host in ("zone-a/pve1", "zone-a/pve2"):  # the canary and the other alike
        answered = ask(host, "1.0.0")
        assert (answered["version"], answered["pinned"]) == ("1.2.0", True)


def test_a_forged_report_neither_halts_the_rollout_nor_counts_a_canary_early_and_floods_no_log(
    fleet: Api, zones: FleetZones, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    seconds = [0.0]
    monkeypatch.setattr(reports, "_NOT_RECORDED", rollouts.LogBudget(2, 60.0, clock=lambda: seconds[0]))
    caplog.set_level(logging.WARNING, logger=rollouts.__name__)
    assert start(fleet, hosts=["zone-a/pve1"], soak=0)["errors"] == []
    zones.runs("zone-a/pve1", "1.0.0")  # the canary's agent: it has not updated yet

    # The answer is the canary's as ever; the rollout learns nothing from either request.
    assert ask("zone-a/pve1", "1.0.0", "rolled-back", "1.1.0", "forged")["version"] == "1.1.0"
    assert ask("zone-a/pve1", "1.1.0", "updated", "1.1.0")["version"] == "1.1.0"
    found = rollout(fleet)
    assert (found["phase"], found["healthySince"], found["failedHost"]) == ("CANARY", None, None)
    assert ask("zone-b/pve1", "1.0.0")["version"] == "1.0.0"  # soak 0: promoted, it would get 1.1.0
    ask("zone-c/pve9", "1.0.0", "rolled-back", "1.1.0")  # no such host: no agent to ask
    assert zones.asked == ["zone-a/pve1", "zone-a/pve1"]
    seconds[0] = 61.0
    ask("zone-c/pve9", "1.0.0", "rolled-back", "1.1.0")
    assert rollout(fleet)["phase"] == "CANARY"

    prefix = "agent rollout: a report for "
    assert [r.getMessage().removeprefix(prefix) for r in caplog.records if prefix in r.getMessage()] == [
        "zone-a/pve1 was not recorded: its agent contradicts it: the query says it runs '1.0.0', its last "
        "update 'rolled-back' (to '1.1.0'); the agent, it runs '1.0.0'",
        "zone-a/pve1 was not recorded: its agent contradicts it: the query says it runs '1.1.0', its last "
        "update 'updated' (to '1.1.0'); the agent, it runs '1.0.0'",
        # the first unknown host's line was over the budget of two a minute; the next says so
        "zone-c/pve9 was not recorded: no such host in the catalog (1 more such reports were not logged)",
    ]


def test_a_report_whose_agent_does_not_answer_is_not_recorded_until_the_host_reports_again(
    fleet: Api, zones: FleetZones
) -> None:
    assert start(fleet, hosts=["zone-b/pve1"], soak=30)["errors"] == []
    zones.silent.add("zone-b")
    assert report(zones, "zone-b/pve1", "1.1.0", "updated", "1.1.0")["version"] == "1.1.0"
    assert rollout(fleet)["phase"] == "CANARY"
    zones.silent.clear()
    report(zones, "zone-b/pve1", "1.1.0", "updated", "1.1.0")
    assert rollout(fleet)["phase"] == "SOAKING"
