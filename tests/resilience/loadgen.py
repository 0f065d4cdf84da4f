"""The load suite's clients, run in processes of their own.

The fake Proxmox zones and the Kubernetes emulator live in the test process: two hundred client threads
beside them would take its interpreter from them, and the stand-ins, not the orchestrator, would set the
pace. So the listers run in a few spawned processes, each with its threads, and report what they saw.
Only the standard library and requests are imported here: a spawned process starts quickly.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

LIST = "{ virtualMachines(first: 500) { edges { node { id } } } }"


@dataclass
class Seen:
    """What listers saw: each answer's time and status, how many were partial, and what was wrong."""

    times: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    partial: int = 0
    problems: list[str] = field(default_factory=list)

    def add(self, other: Seen) -> None:
        self.times += other.times
        self.statuses += other.statuses
        self.partial += other.partial
        self.problems += other.problems


def check(seen: Seen, response: requests.Response, baseline: frozenset[str]) -> None:
    """A listing must be whole (no error), list no VM twice, and list every VM that existed before."""
    if response.status_code != 200:
        seen.problems.append(f"HTTP {response.status_code}: {response.text[:200]}")
        return
    body = response.json()
    if body.get("errors"):
        seen.partial += 1
        seen.problems.append(f"partial: {[e.get('message', '')[:200] for e in body['errors']]}")
        return
    ids = [edge["node"]["id"] for edge in body["data"]["virtualMachines"]["edges"]]
    if len(ids) != len(set(ids)):
        seen.problems.append(f"listed twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    if missing := baseline - set(ids):
        seen.problems.append(f"lost: {sorted(missing)}")


def list_until(url: str, token: str, baseline: frozenset[str], threads: int, stop: Path) -> Seen:
    """``threads`` clients listing VMs over keep-alive connections of their own, as dashboards polling
    would, until the file ``stop`` exists."""
    headers = {"Authorization": f"Bearer {token}"}
    per_thread = [Seen() for _ in range(threads)]

    def lister(seen: Seen) -> None:
        with requests.Session() as session:
            while not stop.exists():
                started = time.monotonic()
                response = session.post(url, json={"query": LIST}, headers=headers, timeout=120)
                seen.times.append(time.monotonic() - started)
                seen.statuses.append(response.status_code)
                check(seen, response, baseline)

    workers = [threading.Thread(target=lister, args=(seen,)) for seen in per_thread]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    total = Seen()
    for seen in per_thread:
        total.add(seen)
    return total
