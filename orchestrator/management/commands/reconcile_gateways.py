"""``manage.py reconcile_gateways``: bring hosts in line with edge gateways' desired state.

Sends a gateway again where its host has not confirmed its last change (it did not answer then), moves
it off a host that is cordoned, offline, removed or no longer allowed to run gateways, removes it from
hosts it left once they answer, and rebuilds it on a host that lost it. Idempotent; ``--every N`` runs
it every N seconds (a Deployment's sidecar or a CronJob can run it once).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from orchestrator.auth import ADMIN, Principal
from orchestrator.errors import FlexPlaneError
from orchestrator.services.context import Context
from orchestrator.services.gateways.reconcile import reconcile


class Command(BaseCommand):
    help = "Apply edge gateways' desired state where their hosts lag, and move them off unfit hosts."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--every", type=float, default=0.0, help="Run again every this many seconds.")

    def handle(self, *args: Any, **options: Any) -> None:
        every = float(options["every"])
        while True:
            failed = self.once()
            if every <= 0:
                if failed:
                    raise CommandError(f"{failed} gateway(s) not brought in line; run the command again")
                return
            time.sleep(every)

    def once(self) -> int:
        ctx = Context(Principal("flexplane-gateways", "flex.plane gateways", "", frozenset({ADMIN})))
        try:
            done = reconcile(ctx)
        except FlexPlaneError as exc:
            self.stderr.write(f"gateways: {exc.message}")
            return 1
        failed = 0
        for item in done:
            if item.error:
                failed += 1
                self.stderr.write(f"gateway {item.gateway}: {item.action} on {item.node}: {item.error}")
            elif item.action != "kept":
                self.stdout.write(f"gateway {item.gateway}: {item.action} on {item.node}")
        return failed
