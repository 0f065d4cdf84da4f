"""Every long-running container the three charts run has a liveness and a readiness probe (issue 32, item
1): the orchestrator and portal, the mesh hub, the gateway reconciler, the providers, Zitadel and its
PostgreSQL, with every example values file of each chart, so that the kubelet restarts a process that
stopped working and keeps traffic and rollouts off one that is not ready. Jobs and CronJobs run to their
end and need none."""

from __future__ import annotations

import pytest

from tests.charts.kit import manifests
from tests.charts.test_renders_are_stable import RENDERS, render_once

LONG_RUNNING = {"Deployment", "StatefulSet", "DaemonSet"}


@pytest.mark.parametrize(("chart", "values_file"), RENDERS, ids=lambda v: v or "required-only")
def test_every_long_running_container_has_both_probes(chart: str, values_file: str) -> None:
    rendered = manifests(render_once(chart, values_file))
    containers = {
        f"{m['kind']}/{m['metadata']['name']}/{c['name']}": c
        for m in rendered
        if m["kind"] in LONG_RUNNING
        for c in m["spec"]["template"]["spec"]["containers"]
    }
    assert containers, f"{chart} runs nothing long-running with {values_file or 'its required values'}"
    missing = {
        name: [p for p in ("livenessProbe", "readinessProbe") if p not in c] for name, c in containers.items()
    }
    assert {name: probes for name, probes in missing.items() if probes} == {}
