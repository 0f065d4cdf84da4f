"""``manage.py restore``: put a backup's objects back into the management cluster.

``--file PATH`` or ``--s3 s3://bucket/prefix[/key]`` (the newest backup under a prefix, or the one
named). It refuses a backup the key does not open, one of another platform, and one in a newer format;
otherwise it creates or updates each object in dependency order and says what it did. Running it again
changes nothing, and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from orchestrator.errors import FlexPlaneError
from orchestrator.management.backup_options import add_key_file, add_where, backup_key, bucket
from orchestrator.management.cluster import management_objects
from orchestrator.services.backup import read_file, restore_backup


class Command(BaseCommand):
    help = "Restore the management plane's state from a backup (idempotent)."
    # It reads and writes the management cluster's objects only: Django's checks of the URLs, templates
    # and apps it never uses would cost a CronJob's run about a second.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_where(
            parser,
            file_help="Read the backup from this file.",
            s3_help="s3://bucket/prefix (its newest backup) or the key of one.",
        )
        add_key_file(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            key = backup_key(options)
            if options["file"]:
                source, blob = options["file"], read_file(Path(options["file"]))
            else:
                store = bucket(options)
                found, blob = store.get()
                source = f"s3://{store.bucket}/{found}"
            header, restored = restore_backup(management_objects(), blob, key)
        except FlexPlaneError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"backup of platform {header.platform} made {header.created} from {source}")
        for what, outcome in restored.outcomes:
            if outcome != "unchanged":
                self.stdout.write(f"{outcome}: {what}")
        counts = ", ".join(f"{restored.count(o)} {o}" for o in ("created", "updated", "unchanged"))
        if restored.changed:
            self.stdout.write(f"restored {len(restored.outcomes)} objects: {counts}")
        else:
            self.stdout.write(
                f"nothing to change: all {len(restored.outcomes)} objects already match the backup"
            )
