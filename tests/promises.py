"""The promises the suites check, and what they measured, summed up at the end of the run.

A test names the promise it checks with ``@pytest.mark.promise("tokens")`` (a module may set
``pytestmark``), and records its measurements with the ``record_figure`` fixture::

    record_figure("graphql-abuse", "1000 aliases refused in (ms)", 12.5)

After the run, pytest prints how many tests of each promise passed, failed and were skipped, then a
table of figures per suite, so that ``make test`` ends with the numbers a reviewer asks for.
A figure recorded twice under one name keeps the last value; numbers are shown with at most
three decimals.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

MARKER = "promise"
OUTCOMES = ("passed", "failed", "skipped")

RecordFigure = Callable[[str, str, Any], None]


@dataclass(eq=False)  # a pytest plugin: hashed by identity
class Ledger:
    """What the run found: the promise of each test, its outcome, and the suites' figures."""

    promise_of: dict[str, str] = field(default_factory=dict)
    outcome_of: dict[str, str] = field(default_factory=dict)
    figures: defaultdict[str, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep a test's worst outcome over its setup, call and teardown (a hook: the ledger is a plugin)."""
        if report.nodeid not in self.promise_of:
            return
        if report.failed:
            self.outcome_of[report.nodeid] = "failed"
        elif report.skipped:
            self.outcome_of.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcome_of.setdefault(report.nodeid, "passed")

    def counts(self) -> dict[str, Counter[str]]:
        per_promise: dict[str, Counter[str]] = defaultdict(Counter)
        for nodeid, promise in self.promise_of.items():
            if nodeid in self.outcome_of:
                per_promise[promise][self.outcome_of[nodeid]] += 1
        return dict(sorted(per_promise.items()))


LEDGER = pytest.StashKey[Ledger]()


def pytest_configure(config: pytest.Config) -> None:
    ledger = Ledger()
    config.stash[LEDGER] = ledger
    config.pluginmanager.register(ledger, "flexplane-promises-ledger")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ledger = config.stash[LEDGER]
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            continue
        if len(marker.args) != 1 or not isinstance(marker.args[0], str):
            raise pytest.UsageError(f'{item.nodeid}: use @pytest.mark.promise("name") with one name')
        ledger.promise_of[item.nodeid] = marker.args[0]


@pytest.fixture(scope="session")
def record_figure(pytestconfig: pytest.Config) -> RecordFigure:
    """``record_figure(suite, name, value)``: a measurement for the end-of-run summary."""
    figures = pytestconfig.stash[LEDGER].figures

    def record(suite: str, name: str, value: Any) -> None:
        figures[suite][name] = value

    return record


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    ledger = config.stash[LEDGER]
    counts = ledger.counts()
    if not counts and not ledger.figures:
        return
    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "promises")
    width = max([len("promise"), *(len(name) for name in counts)])
    write(f"{'promise':<{width}}  " + "  ".join(f"{outcome:>7}" for outcome in OUTCOMES))
    for promise, outcomes in counts.items():
        write(f"{promise:<{width}}  " + "  ".join(f"{outcomes[outcome]:>7}" for outcome in OUTCOMES))
    for suite, figures in sorted(ledger.figures.items()):
        terminalreporter.write_sep("-", f"{suite}: figures")
        name_width = max(len(name) for name in figures)
        for name, value in figures.items():
            write(f"  {name:<{name_width}}  {_shown(value)}")


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    return str(value)
