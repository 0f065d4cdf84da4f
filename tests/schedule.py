"""The parallel run's order: the costliest modules first.

pytest-xdist's ``loadscope`` hands whole modules to its workers in collection order, a quarter of them at
the start and the rest one at a time as workers free up. In path order a module of a minute could come
last and keep one worker busy while the others have nothing left to do; costliest first, the end of the
run is made of small modules that even the workers out.

A module's cost is its time in a measured run (setup, call and teardown of its tests), kept in
``tests/durations.json``. A module not in it (a new one) counts as the median module. The file only orders
the run: when it is stale the run takes longer, never differently. Write it anew with
``pytest -n 3 --dist loadscope --record-durations tests/durations.json`` (what `make durations` runs).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        metavar="PATH",
        default=None,
        help="write each module's time in this run (seconds, JSON) to PATH: the parallel run's order",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Only a worker's collection orders the run (loadscope schedules modules as its workers collected them).
    if not hasattr(config, "workerinput") or not DURATIONS.exists():
        return
    costs: dict[str, float] = json.loads(DURATIONS.read_text())
    usual = statistics.median(costs.values()) if costs else 0.0
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(module_of(item.nodeid), index)
    position = {id(item): index for index, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[float, int, int]:
        module = module_of(item.nodeid)
        return (-costs.get(module, usual), first[module], position[id(item)])

    items.sort(key=key)


class DurationRecorder:
    """Sums the time of each module's tests as their reports arrive (from every worker) and writes them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        rounded = {module: round(seconds, 2) for module, seconds in sorted(self.seconds.items())}
        self.path.write_text(json.dumps(rounded, indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("record_durations")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(Path(path)), "duration-recorder")
