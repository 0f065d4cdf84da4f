"""How much of a run's time the whole devstack costs: each test's time (setup, call and teardown) is
counted as world-bound when the ``world`` fixture is among those it uses, directly or through others, and
the share is said at the end of the run (``world-bound: 412 of 800 s (52%), 950 of 1,700 tests``).

Tests that bring up worlds of their own (the mesh's, the gateways' namespaces) are not world-bound by
this count: they pay for what they test. The share is what in-process tests on the in-memory stand-ins
(``tests/orchestrator/fakekube.py``, ``fakezone.py``) take down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

WORLD = "world"
_PROPERTY = "world-bound"


@dataclass
class Share:
    seconds: dict[bool, float] = field(default_factory=lambda: {True: 0.0, False: 0.0})
    tests: dict[bool, set[str]] = field(default_factory=lambda: {True: set(), False: set()})

    def add(self, report: pytest.TestReport) -> None:
        bound = dict(report.user_properties).get(_PROPERTY)
        if bound is None:
            return
        self.seconds[bool(bound)] += report.duration
        self.tests[bool(bound)].add(report.nodeid)

    def line(self) -> str | None:
        total = self.seconds[True] + self.seconds[False]
        if total <= 0:
            return None
        tests = len(self.tests[True]) + len(self.tests[False])
        return (
            f"world-bound: {self.seconds[True]:,.0f} of {total:,.0f} s ({self.seconds[True] / total:.0%}), "
            f"{len(self.tests[True]):,} of {tests:,} tests"
        )


def pytest_itemcollected(item: pytest.Item) -> None:
    """Each test's reports say whether it is world-bound (the property travels from xdist's workers)."""
    item.user_properties.append((_PROPERTY, WORLD in getattr(item, "fixturenames", ())))


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without workers) sums them up
        config.pluginmanager.register(_Reporter(), "world-share")


class _Reporter:
    def __init__(self) -> None:
        self.share = Share()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.share.add(report)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if line := self.share.line():
            terminalreporter.write_line(line)
