"""A zone's templates through its agents' EnsureTemplate: a wait that ends while the agent still downloads
is ``ImagePreparing`` saying how far it is, and a start goes once the agent has looked for the template
(sources/proxmox/zone.py). The agent's stream is played by a stub pool: no agent, no world."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentclient import (
    AgentDeadlineExceeded,
    AgentTarget,
    AgentUnavailable,
    TemplatePhase,
    TemplateProgress,
    host_identity,
)
from agentclient.templates import TemplateRef
from orchestrator.errors import ImagePreparing, Unavailable
from orchestrator.sources.proxmox import ProxmoxSource, TemplatePreparing, ZoneApi, ZoneTargets
from orchestrator.sources.proxmox import zone as zone_module
from orchestrator.sources.proxmox.zone import describe

MIB = 1024**2
TARGET = AgentTarget(identity=host_identity("zone-a", "pve1"), address="pve1:7443")
LOOKING = TemplateProgress(TemplatePhase.CHECKING, message="looking for fp-tpl-debian-12 on local-lvm")
CHECKING_URL = TemplateProgress(TemplatePhase.CHECKING, message="checking http://images/debian.qcow2")


def downloading(done_mib: int, total_mib: int = 400) -> TemplateProgress:
    return TemplateProgress(TemplatePhase.DOWNLOADING, done_mib * MIB, total_mib * MIB, "downloading")


class StubPool:
    """EnsureTemplate as a list of reports, then an end: a template, or an error (a deadline passing)."""

    def __init__(self, reports: list[TemplateProgress], end: TemplateRef | Exception) -> None:
        self.reports = reports
        self.end = end
        self.delivered = 0

    def ensure_template(
        self, *_: object, on_progress: Callable[[TemplateProgress], None] | None = None, **__: object
    ) -> TemplateRef:
        """AgentPool.ensure_template's stream; the target, image and deadline do not change it."""
        for report in self.reports:
            assert on_progress is not None
            self.delivered += 1
            on_progress(report)  # what it raises cancels the call and propagates, as the real pool's
        if isinstance(self.end, Exception):
            raise self.end
        return self.end


class StubSource(ProxmoxSource):
    def __init__(self, pool: StubPool) -> None:  # no channels, no executor
        self.pool = pool  # type: ignore[assignment]  # EnsureTemplate is all the zone asks of it here


def zone_with(pool: StubPool) -> ZoneApi:
    return ZoneApi(StubSource(pool), ZoneTargets("zone-a", (TARGET,)))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The zone's monotonic clock: each reading takes the next value of the list."""
    ticks: list[float] = []

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return ticks.pop(0)

    monkeypatch.setattr(zone_module, "time", Clock)
    return ticks


def ensure(zone: ZoneApi) -> Any:
    return zone.ensure_template(
        "pve1", "debian-12", "http://images/debian.qcow2", "sha256:00", "local-lvm", timeout=5
    )


def test_a_template_still_downloading_when_the_wait_ends_is_image_preparing_saying_how_far(
    clock: list[float],
) -> None:
    clock.extend([0.0, 1.0, 3.0])  # 100 MiB at 1 s, 200 MiB at 3 s: 50 MiB/s, 200 MiB left
    pool = StubPool([LOOKING, downloading(100), downloading(200)], AgentDeadlineExceeded(TARGET, 5))
    with pytest.raises(ImagePreparing) as refused:
        ensure(zone_with(pool))
    assert refused.value.where == "zone-a/pve1"
    assert refused.value.code == "UNAVAILABLE"
    assert refused.value.message == (
        "image debian-12 is not ready on host pve1 of zone zone-a yet: its agent is downloading it, "
        "200 MiB of 400 MiB (50%), about 4 s left at 50 MiB/s"
    )
    assert refused.value.retry_after == pytest.approx(4.0)


def test_one_report_tells_how_far_but_not_how_long() -> None:
    pool = StubPool([downloading(100)], AgentDeadlineExceeded(TARGET, 5))
    with pytest.raises(ImagePreparing) as refused:
        ensure(zone_with(pool))
    assert refused.value.message.endswith("its agent is downloading it, 100 MiB of 400 MiB (25%)")
    assert refused.value.retry_after is None


def test_an_agent_that_reported_nothing_within_the_wait_is_unavailable_not_preparing() -> None:
    with pytest.raises(Unavailable) as refused:
        ensure(zone_with(StubPool([], AgentDeadlineExceeded(TARGET, 5))))
    assert not isinstance(refused.value, ImagePreparing)
    assert "could not be made ready on pve1" in refused.value.message


def test_a_template_ready_within_the_wait_is_answered() -> None:
    pool = StubPool(
        [LOOKING, TemplateProgress(TemplatePhase.DONE, template_vmid=9001, node="pve1")],
        TemplateRef(9001, "pve1"),
    )
    assert ensure(zone_with(pool)).vmid == 9001


def test_a_start_goes_once_the_agent_has_looked_for_the_template() -> None:
    # The download goes on at the agent: the start stops following at the report after the agent's look.
    pool = StubPool([LOOKING, CHECKING_URL, downloading(1)], AgentDeadlineExceeded(TARGET, 5))
    zone_with(pool).start_template(
        "pve1", "debian-12", "http://images/d.qcow2", "sha256:00", "local-lvm", timeout=5
    )
    assert pool.delivered == 2


def test_a_start_of_a_job_already_under_way_goes_at_its_first_report() -> None:
    pool = StubPool([downloading(300), downloading(301)], AgentDeadlineExceeded(TARGET, 5))
    zone_with(pool).start_template(
        "pve1", "debian-12", "http://images/d.qcow2", "sha256:00", "local-lvm", timeout=5
    )
    assert pool.delivered == 1


def test_a_start_the_agent_does_not_answer_is_unavailable() -> None:
    pool = StubPool([], AgentUnavailable(TARGET, "connection refused"))
    with pytest.raises(Unavailable):
        zone_with(pool).start_template(
            "pve1", "debian-12", "http://i/d.qcow2", "sha256:00", "local-lvm", timeout=5
        )


@pytest.mark.parametrize(
    ("preparing", "said"),
    [
        (TemplatePreparing("checking"), "its agent is checking the image's source"),
        (TemplatePreparing("downloading", 3 * MIB), "its agent is downloading it, 3 MiB so far"),
        (TemplatePreparing("verifying", 9, 9), "its agent is verifying the download's checksum"),
        (
            TemplatePreparing("importing", MIB, 4 * MIB, rate=MIB / 40),
            "its agent is importing it into Proxmox, 1 MiB of 4 MiB (25%), about 2 min left at 25.6 KiB/s",
        ),
    ],
)
def test_how_far_an_image_is_reads_as_words(preparing: TemplatePreparing, said: str) -> None:
    assert describe(preparing) == said
