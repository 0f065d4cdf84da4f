"""The promises the suites check, and what they measured, summed up at the end of the run.

A test names the promise it checks with ``@pytest.mark.promise("tokens")`` (a module may set
``pytestmark``), and records its measurements with the ``record_figure`` fixture::

    record_figure("graphql-abuse", "1000 aliases refused in (ms)", 12.5)

After the run, pytest prints how many tests of each promise passed, failed and were skipped, then a
table of figures per suite, so that ``make test`` ends with the numbers a reviewer asks for.
A figure recorded twice under one name keeps the last value; numbers are shown with at most
three decimals.

Under pytest-xdist the workers collect and run the tests, and the controller prints the summary: a
test's promise travels with its reports (``user_properties``), and each worker's figures come back
in its ``workeroutput`` when it finishes. With ``--promises-ledger=PATH`` (one word: pytest reads its
arguments before it knows this option), a run adds what an earlier one left at PATH to its summary and
leaves the sum there: ``make test`` runs the tests marked ``alone`` in a run of their own after the
parallel one, and ends with the summary of both.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

MARKER = "promise"
OUTCOMES = ("passed", "failed", "skipped")
# The key of a worker's figures in its xdist workeroutput.
FIGURES = "flexplane-promise-figures"

RecordFigure = Callable[[str, str, Any], None]


@dataclass(eq=False)  # a pytest plugin: hashed by identity
class Ledger:
    """What the run found: the promise of each test, its outcome, and the suites' figures."""

    promise_of: dict[str, str] = field(default_factory=dict)
    outcome_of: dict[str, str] = field(default_factory=dict)
    figures: defaultdict[str, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep a test's worst outcome over its setup, call and teardown (a hook: the ledger is a plugin)."""
        promise = next((value for key, value in report.user_properties if key == MARKER), None)
        if promise is None:
            return
        self.promise_of[report.nodeid] = str(promise)
        if report.failed:
            self.outcome_of[report.nodeid] = "failed"
        elif report.skipped:
            self.outcome_of.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcome_of.setdefault(report.nodeid, "passed")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """In the xdist controller: a worker is done, with the figures it recorded."""
        for suite, figures in getattr(node, "workeroutput", {}).get(FIGURES, {}).items():
            self.figures[suite].update(figures)

    def carried(self, path: Path) -> None:
        """Add what an earlier run left at ``path`` (this run's outcomes and figures win); leave the sum."""
        if path.exists():
            earlier = json.loads(path.read_text())
            self.promise_of = {**earlier["promise_of"], **self.promise_of}
            self.outcome_of = {**earlier["outcome_of"], **self.outcome_of}
            for suite, figures in earlier["figures"].items():
                self.figures[suite] = {**figures, **self.figures[suite]}
        path.parent.mkdir(parents=True, exist_ok=True)
        ledger = {"promise_of": self.promise_of, "outcome_of": self.outcome_of, "figures": self.figures}
        path.write_text(json.dumps(ledger, default=str))

    def counts(self) -> dict[str, Counter[str]]:
        per_promise: dict[str, Counter[str]] = defaultdict(Counter)
        for nodeid, promise in self.promise_of.items():
            if nodeid in self.outcome_of:
                per_promise[promise][self.outcome_of[nodeid]] += 1
        return dict(sorted(per_promise.items()))


LEDGER = pytest.StashKey[Ledger]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--promises-ledger",
        type=Path,
        default=None,
        metavar="PATH",
        help="add the promises and figures an earlier run left at PATH to the summary; leave the sum there",
    )


def pytest_configure(config: pytest.Config) -> None:
    ledger = Ledger()
    config.stash[LEDGER] = ledger
    config.pluginmanager.register(ledger, "flexplane-promises-ledger")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's promise goes into its reports, where the ledger (of this process or the controller's)
    reads it."""
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            continue
        if len(marker.args) != 1 or not isinstance(marker.args[0], str):
            raise pytest.UsageError(f'{item.nodeid}: use @pytest.mark.promise("name") with one name')
        item.user_properties.append((MARKER, marker.args[0]))


@pytest.fixture(scope="session")
def record_figure(pytestconfig: pytest.Config) -> RecordFigure:
    """``record_figure(suite, name, value)``: a measurement for the end-of-run summary."""
    figures = pytestconfig.stash[LEDGER].figures

    def record(suite: str, name: str, value: Any) -> None:
        figures[suite][name] = value

    return record


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker: hand the figures to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[FIGURES] = {
            suite: dict(figures) for suite, figures in session.config.stash[LEDGER].figures.items()
        }


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    ledger = config.stash[LEDGER]
    carry = config.getoption("promises_ledger")
    if carry is not None and not hasattr(config, "workerinput"):
        ledger.carried(carry)
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
