"""The apply step (``flexplane-agent update-apply``): point current, restart, check, roll back."""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

from agent.release import CURRENT, PREVIOUS, Installation
from agent.status import UpdateState
from agent.update.state import LOCK_FILE, LOCK_WAIT, Plan, Result, StateFile, outcome, update_lock
from agentclient.proto.flexplane.agent.v1 import agent_pb2

log = logging.getLogger(__name__)

# The apply step: how long it waits for the restart command, between probes, for one probe.
RESTART_TIMEOUT = 120.0
PROBE_INTERVAL = 0.5
PROBE_TIMEOUT = 3.0
AGENT_SERVICE = agent_pb2.DESCRIPTOR.services_by_name["Agent"].full_name


def restart(plan: Plan) -> str | None:
    """Run service_restart_command; why it failed, or None."""
    command = plan.restart_command
    try:
        done = subprocess.run(  # noqa: S603 - the operator's configured command, no shell
            command, capture_output=True, text=True, timeout=RESTART_TIMEOUT, check=False
        )
    except FileNotFoundError:
        return f"{command[0]} not found"
    except subprocess.TimeoutExpired:
        return f"{' '.join(command)} did not finish within {RESTART_TIMEOUT:g} s"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        return f"{' '.join(command)} exited with {done.returncode}: {said or '(no output)'}"
    return None


def probe(plan: Plan, version: str) -> str | None:
    """None when the agent answers its health check and GetInfo as ``version``; else what it did."""
    # Imported here: only the apply step calls agents.
    from agentclient import AgentPool, AgentTarget, ClientTLS
    from agentclient.errors import AgentError

    target = AgentTarget(plan.identity, plan.address)
    try:
        tls = ClientTLS.from_files(plan.ca, plan.tls_cert, plan.tls_key)
    except OSError as exc:
        return f"cannot read the node's certificate: {exc}"
    with AgentPool(tls, timeout=PROBE_TIMEOUT) as pool:
        try:
            if not pool.check_health(target, service=AGENT_SERVICE):
                return "its health service does not report SERVING"
            info = pool.info(target)
        except AgentError as exc:
            return str(exc)
    if info.version != version:
        return f"version {info.version} answers, not {version}"
    return None


def wait_until_answering(plan: Plan, version: str) -> str | None:
    """Probe until ``version`` answers or health_deadline passes; why it did not, or None."""
    deadline = time.monotonic() + plan.health_deadline
    while True:
        problem = probe(plan, version)
        if problem is None:
            return None
        if time.monotonic() >= deadline:
            return f"{version} did not answer within {plan.health_deadline:g} s: {problem}"
        time.sleep(PROBE_INTERVAL)


def apply(plan: Plan) -> UpdateState:
    """Switch to the plan's version, restart, check; roll back if it does not answer. The outcome."""
    installation = Installation(Path(plan.install_dir))
    state = StateFile(Path(plan.state_file))
    old, new = plan.from_version, plan.to_version
    earlier_previous = installation.pointed(PREVIOUS)
    installation.point(PREVIOUS, old)
    installation.point(CURRENT, new)
    started = time.monotonic()
    log.info("update-apply: current -> %s; restarting the agent", new)
    problem = restart(plan) or wait_until_answering(plan, new)
    if problem is None:
        message = f"{new} answered after {time.monotonic() - started:.0f} s; {old} kept as previous"
        result = outcome(Result.RESULT_UPDATED, old, new, message)
        state.record(result)
        removed = installation.prune({new, old})
        log.info("update-apply: %s%s", message, f"; removed {', '.join(removed)}" if removed else "")
        return result
    log.error("update-apply: %s failed: %s; rolling back to %s", new, problem, old)
    installation.point(CURRENT, old)
    installation.point(PREVIOUS, earlier_previous)
    message = f"{new} failed its health check ({problem}); rolled back to {old}"
    # Recorded before the restart: the old version must not try this release again.
    result = outcome(Result.RESULT_ROLLED_BACK, old, new, message)
    state.record(result, rolled_back=(new, plan.sha256))
    again = restart(plan) or wait_until_answering(plan, old)
    if again is not None:
        message = f"{message}, which does not answer either ({again})"
        result = outcome(Result.RESULT_FAILED, old, new, message)
        state.record(result)
        log.error("update-apply: %s", message)
        return result
    log.warning("update-apply: %s", message)
    return result


def apply_plan(path: Path) -> int:
    """``flexplane-agent update-apply --plan PATH``: 0 updated, 1 rolled back or failed, 2 no plan."""
    try:
        plan = Plan.read(path)
    except (OSError, ValueError, TypeError) as exc:
        log.error("update-apply: cannot read the plan %s: %s", path, exc)
        return 2
    with update_lock(Path(plan.install_dir), wait=LOCK_WAIT) as locked:
        if not locked:
            log.error("update-apply: another update holds %s", Path(plan.install_dir) / LOCK_FILE)
            return 2
        try:
            result = apply(plan)
        finally:
            path.unlink(missing_ok=True)
    return 0 if result.result == Result.RESULT_UPDATED else 1
