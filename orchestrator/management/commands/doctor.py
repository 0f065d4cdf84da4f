"""``manage.py doctor``: the management plane's preflight, before installing and after.

    manage.py doctor [--json] [--issuer NAME] [--cluster-issuer NAME] [--no-load-balancer] [--deadline S]

Reads what the platform needs from the settings (the kubeconfig or the in-cluster ServiceAccount, the
platform namespace, the issuer, Zitadel's URL and service user's key, the agent registry and its pull
account) and asks the management cluster and those neighbours (:mod:`orchestrator.services.doctor`
names each check and why it blocks or only warns). Prints a table (or ``--json``); exits 1 when any
finding is a blocker, 0 otherwise (warnings included). The flextenant chart runs it as a Job
(``doctor.enabled``, a ``helm test`` hook).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from orchestrator.services import doctor


class Command(BaseCommand):
    help = "Check what the management plane needs of its cluster and neighbours; exit 1 on a blocker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the findings as JSON.")
        parser.add_argument(
            "--issuer",
            default=doctor.DEFAULT_ISSUER,
            help="The cert-manager Issuer of the platform CA, in the platform namespace ('' to skip).",
        )
        parser.add_argument(
            "--cluster-issuer",
            default="",
            help="A cert-manager ClusterIssuer the Ingress's certificates use.",
        )
        parser.add_argument(
            "--no-load-balancer",
            action="store_true",
            help="The NodePort path: the mesh hub and control planes are not behind LoadBalancer Services.",
        )
        parser.add_argument(
            "--deadline", type=float, default=doctor.DEADLINE, help="Seconds each check may take."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        site = doctor.Site.from_settings(
            issuer=options["issuer"],
            cluster_issuer=options["cluster_issuer"],
            load_balancer=not options["no_load_balancer"],
        )
        probe = doctor.Probe.connect(site)
        try:
            findings = doctor.examine(probe, deadline=float(options["deadline"]))
        finally:
            probe.close()
        self.stdout.write(doctor.as_json(findings) if options["json"] else doctor.table(findings))
        stopped = doctor.blockers(findings)
        if stopped:
            names = ", ".join(f.check for f in stopped)
            raise CommandError(f"{len(stopped)} blocker(s): {names}")
