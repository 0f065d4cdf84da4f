"""``flexplane-agent update now``: check the channel at once, through the serving agent's updater.

The knockknock idea, a local request to update: the same :class:`~agent.update.Updater` the
agent runs every update_interval, with the same rules (signature, downgrade, rolled-back versions),
the same update lock (a check of the agent itself waits for neither), and the same detached apply
step, which restarts the service and rolls back a release that does not answer. The command then
waits for the apply step's outcome in the state file, and exits 0 when the node runs the channel's
version (updated now, or already), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from agent.config import ConfigError, load_config
from agent.release import CURRENT, Installation
from agent.update.apply import RESTART_TIMEOUT
from agent.update.state import RESULT_NAMES, Result, StateFile
from agent.update.updater import Updater

POLL = 0.5
# What the apply step records when it is done.
APPLIED = (Result.RESULT_UPDATED, Result.RESULT_ROLLED_BACK, Result.RESULT_FAILED)


def run_update_now(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"flexplane-agent update now: {exc}", file=sys.stderr)
        return 2
    if config.update is None:
        print("flexplane-agent update now: self-update is off (no update_channel_url)", file=sys.stderr)
        return 2
    running = Installation(config.update.install_dir).pointed(CURRENT)
    if running is None:
        print(
            f"flexplane-agent update now: no release is installed in {config.update.install_dir}",
            file=sys.stderr,
        )
        return 2
    state = StateFile(config.update.state_file)
    updater = Updater(config, config.update, state, running=running)
    started = time.time()
    said = asyncio.run(updater.check())
    print(f"flexplane-agent update now: {said}", flush=True)
    if not updater.handed_over:  # refused or failed (recorded), or nothing to do
        return 0 if updater.offered == running else 1
    if not args.wait:
        return 0
    deadline = time.monotonic() + 2 * (config.update.health_deadline + RESTART_TIMEOUT)
    while time.monotonic() < deadline:
        last = state.last()
        if last.at >= started and last.to_version == updater.offered and last.result in APPLIED:
            print(f"flexplane-agent update now: {RESULT_NAMES[last.result]}: {last.message}")
            return 0 if last.result == Result.RESULT_UPDATED else 1
        time.sleep(POLL)
    print("flexplane-agent update now: the apply step did not report in time; see update-apply.log")
    return 1
