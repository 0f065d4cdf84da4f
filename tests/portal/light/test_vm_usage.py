"""A VM's usage graphs on its page: CPU, memory, disk and network from Proxmox's RRD, drawn as SVG; one
RRD read per time frame shown, and nobody else's VM."""

from __future__ import annotations

import re

import requests

from orchestrator.sources.proxmox.usage import UsageSample, VmUsage
from portal.vms.usage import graphs
from tests.apikit import Api
from tests.portal.served import LightPortal


def usage(
    site: LightPortal, session: requests.Session, vm: str, timeframe: str | None = None
) -> requests.Response:
    query = f"?timeframe={timeframe}" if timeframe else ""
    return session.get(f"{site.url}/vdc/demo/vms/{vm}/usage/{query}", timeout=30)


def test_the_vm_page_loads_its_usage_graphs(site: LightPortal, alice: requests.Session) -> None:
    page = alice.get(f"{site.url}/vdc/demo/vms/zone-a/100/", timeout=30)
    assert 'hx-get="/vdc/demo/vms/zone-a/100/usage/"' in page.text


def test_a_running_vm_has_four_graphs_from_one_rrd_read(site: LightPortal, alice: requests.Session) -> None:
    pve = site.fakes["zone-a"].pve
    before = pve.rrd_reads

    answer = usage(site, alice, "zone-a/100")

    assert answer.status_code == 200
    assert pve.rrd_reads - before == 1
    assert re.findall(r'data-graph="(\w+)"', answer.text) == ["cpu", "memory", "disk", "network"]
    assert answer.text.count("<polyline") == 6  # CPU, memory, disk read and write, network in and out
    assert 'data-usage="hour"' in answer.text
    assert "<script" not in answer.text  # drawn on the server


def test_each_time_frame_is_one_read_of_that_frame(site: LightPortal, alice: requests.Session) -> None:
    pve = site.fakes["zone-a"].pve
    before = pve.rrd_reads

    answer = usage(site, alice, "zone-a/100", "week")

    assert pve.rrd_reads - before == 1
    assert 'data-usage="week"' in answer.text


def test_a_stopped_vm_shows_that_there_is_no_data(site: LightPortal, alice: requests.Session) -> None:
    answer = usage(site, alice, "zone-a/101")  # db-1, stopped

    assert answer.status_code == 200
    assert "<polyline" not in answer.text
    assert answer.text.count("No data for this time frame") == 4


def test_bob_cannot_read_alices_vms_usage(site: LightPortal) -> None:
    bob = site.session("bob")
    pve = site.fakes["zone-a"].pve
    before = pve.rrd_reads

    assert usage(site, bob, "zone-a/100").status_code == 404
    mine = bob.get(f"{site.url}/vdc/other/vms/zone-a/100/usage/", timeout=30)
    assert mine.status_code == 404
    assert pve.rrd_reads == before


def test_a_gap_in_the_data_splits_the_line() -> None:
    rows = [UsageSample(time=t, cpu=0.5, cores=2) for t in (0, 60)]
    rows += [UsageSample(time=120)]
    rows += [UsageSample(time=t, cpu=0.25, cores=2) for t in (180, 240)]

    cpu = graphs(VmUsage("hour", tuple(rows)))[0]

    assert cpu.top == "100 % of 2 cores"
    (series,) = cpu.series
    assert series.lines == ("0.0,50.0 75.0,50.0", "225.0,75.0 300.0,75.0")
    assert series.latest == "25.0 %"


USAGE = """
query ($id: ID!, $timeframe: UsageTimeframe) {
  virtualMachineUsage(id: $id, timeframe: $timeframe) {
    timeframe
    samples { time cpu cores memoryBytes memoryTotalBytes netInBytesPerSecond }
  }
}
"""


def test_the_api_answers_the_same_samples_the_page_draws(api: Api) -> None:
    answer = api(USAGE, user="alice", variables={"id": "zone-a/100", "timeframe": "DAY"})

    assert answer.errors == []
    usage = answer.data["virtualMachineUsage"]
    assert usage["timeframe"] == "DAY"
    assert len(usage["samples"]) == 70
    last = usage["samples"][-1]
    assert 0 < last["cpu"] < 1
    assert last["cores"] == 2
    assert last["memoryTotalBytes"] == 2048 * 1024 * 1024


def test_the_api_answers_another_vdcs_vm_as_missing(api: Api) -> None:
    theirs = api(USAGE, user="bob", variables={"id": "zone-a/100"})
    missing = api(USAGE, user="bob", variables={"id": "zone-a/99999"})

    assert theirs.codes == missing.codes == ["NOT_FOUND"]
