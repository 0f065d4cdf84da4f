"""``manage.py reconcile_gateways``: bring hosts in line with edge gateways' desired state.

Sends a gateway again where its host has not confirmed its last change (it did not answer then), moves
it off a host that is cordoned, offline, removed or no longer allowed to run gateways, removes it from
hosts it left once they answer, and rebuilds it on a host that lost it. Then it gives back the public IPs
gateways still hold for tenant clusters' Services whose cluster is gone (``clusters.balancers.sweep``),
and renews tenant clusters' cloud controllers' keys that expire within 30 days, deleting the keys they
replaced an hour later (``clusters.identity.renew_keys``; on the first pass and then every ``--keys-every``
seconds, 10 minutes by default, as it reads each cluster's Secret). A failure of one gateway, cluster
or key is reported and counted; the others go on. Idempotent; ``--every N`` runs it every N seconds (a
Deployment's sidecar or a CronJob can run it once), and with ``--probes-listen HOST:PORT`` it serves its
liveness (a pass ended lately) and readiness (a first pass ended) there (``orchestrator.probes``).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from orchestrator.auth import ADMIN, Principal
from orchestrator.errors import FlexPlaneError
from orchestrator.probes import ProbeAddressError, Probes
from orchestrator.services.clusters import balancers, identity
from orchestrator.services.context import Context
from orchestrator.services.gateways.reconcile import reconcile

# Liveness: the last pass ended within STALE_PASSES intervals (a pass that hangs past its agents' deadlines
# is a process to restart), and never sooner than MIN_STALE seconds.
STALE_PASSES = 3
MIN_STALE = 60.0
# How often a pass also looks at the cloud controllers' keys: renewed 30 days before they expire and
# retired after an hour's grace, so minutes are plenty; each look reads every cluster's Secret.
KEYS_EVERY = 600.0


class Passes:
    """When the reconciler's passes end, as its probes read it."""

    def __init__(self, stale_after: float) -> None:
        self.stale_after = stale_after
        self.started = time.monotonic()
        self.last_end: float | None = None

    def ended(self) -> None:
        self.last_end = time.monotonic()

    def live(self) -> str | None:
        since = time.monotonic() - (self.last_end or self.started)
        if since <= self.stale_after:
            return None
        what = "a pass" if self.last_end is not None else "the first pass"
        return f"no pass ended for {since:.0f} s: {what} has run longer than {self.stale_after:.0f} s"

    def ready(self) -> str | None:
        return None if self.last_end is not None else "the first pass has not ended"


class Command(BaseCommand):
    help = "Apply edge gateways' desired state where their hosts lag, and move them off unfit hosts."
    keys_every = KEYS_EVERY
    keys_looked: float | None = None  # when a pass last looked at the keys (time.monotonic())

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--every", type=float, default=0.0, help="Run again every this many seconds.")
        parser.add_argument(
            "--probes-listen",
            default="",
            metavar="HOST:PORT",
            help="with --every: serve /healthz (a pass ended lately) and /readyz (a first pass ended) here",
        )
        parser.add_argument(
            "--keys-every",
            type=float,
            default=KEYS_EVERY,
            metavar="SECONDS",
            help="with --every: look at the cloud controllers' keys on the first pass and then this often",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        every = float(options["every"])
        self.keys_every = float(options["keys_every"])
        passes = Passes(stale_after=max(MIN_STALE, STALE_PASSES * every))
        probes = None
        if options["probes_listen"] and every > 0:
            try:
                probes = Probes(options["probes_listen"], live=passes.live, ready=passes.ready).start()
            except (ProbeAddressError, OSError) as exc:
                raise CommandError(f"cannot serve the probes: {exc}") from exc
        try:
            while True:
                failed = self.once()
                passes.ended()
                if every <= 0:
                    if failed:
                        raise CommandError(f"{failed} gateway(s) not brought in line; run the command again")
                    return
                time.sleep(every)
        finally:
            if probes is not None:
                probes.stop()

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
        keys = self.renew_keys(ctx) if self.keys_due(time.monotonic()) else 0
        return failed + self.sweep(ctx) + keys

    def keys_due(self, now: float) -> bool:
        """Whether this pass looks at the keys (the first does, then one every ``keys_every`` seconds)."""
        if self.keys_looked is not None and now - self.keys_looked < self.keys_every:
            return False
        self.keys_looked = now
        return True

    def sweep(self, ctx: Context) -> int:
        """Give back what gateways hold for clusters that are gone; the failures, counted."""
        try:
            swept = balancers.sweep(ctx)
        except FlexPlaneError as exc:
            self.stderr.write(f"load balancers: {exc.message}")
            return 1
        for (vdc, cluster), failures in swept.items():
            for failure in failures:
                self.stderr.write(f"cluster {cluster} of VDC {vdc} (gone): {failure}")
            if not failures:
                self.stdout.write(
                    f"cluster {cluster} of VDC {vdc} (gone): its Services' addresses given back"
                )
        return sum(1 for failures in swept.values() if failures)

    def renew_keys(self, ctx: Context) -> int:
        """Renew the cloud controllers' keys that are due and retire those they replaced; the failures,
        counted."""
        try:
            done = identity.renew_keys(ctx)
        except FlexPlaneError as exc:
            self.stderr.write(f"cloud controllers' keys: {exc.message}")
            return 1
        for item in done:
            where = f"cluster {item.cluster} of VDC {item.vdc}"
            if item.error:
                self.stderr.write(f"{where}: cloud controller's key {item.action}: {item.error}")
            elif item.action == "renewed" and item.expires is not None:
                self.stdout.write(
                    f"{where}: cloud controller's key renewed, valid until {item.expires:%Y-%m-%d}"
                )
            elif item.action == "retired":
                self.stdout.write(f"{where}: cloud controller's replaced key deleted")
        return sum(1 for item in done if item.error)
