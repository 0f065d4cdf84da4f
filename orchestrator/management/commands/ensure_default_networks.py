"""``manage.py ensure_default_networks``: give every VDC its default network in each of its zones.

Idempotent: a VDC that has them is left alone. Run once after upgrading from a release without networks
(VDCs made since get theirs when they are made; a VDC's first VM create makes a missing one too).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from orchestrator.auth import ADMIN, Principal
from orchestrator.errors import FlexPlaneError
from orchestrator.models import Vdc
from orchestrator.services import catalog, locks, networks
from orchestrator.services.context import Context


class Command(BaseCommand):
    help = "Give every VDC its default network in each of its zones (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        ctx = Context(Principal("flexplane-upgrade", "flex.plane upgrade", "", frozenset({ADMIN})))
        failed: list[str] = []
        for vdc in catalog.objects(ctx, catalog.VDC, Vdc.from_spec):
            try:
                with locks.vdc_lock(ctx, vdc.id):
                    made = networks.ensure_default_networks(ctx, vdc)
            except FlexPlaneError as exc:
                failed.append(vdc.id)
                self.stderr.write(f"VDC {vdc.id}: {exc.message}")
                continue
            for network in made:
                made_as = f"{network.zone}/{network.name} ({network.cidr}, VNet {network.vnet})"
                self.stdout.write(f"VDC {vdc.id}: made {made_as}")
        if failed:
            raise CommandError(f"{len(failed)} VDC(s) not done: {', '.join(failed)}; run the command again")
