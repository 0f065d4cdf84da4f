"""``manage.py restore``: put a backup's objects back into the management cluster.

``--file PATH`` or ``--s3 s3://bucket/prefix[/key]`` (the newest backup under a prefix, or the one
named). It refuses a backup the key does not open, one of another platform, and one in a newer format;
otherwise it creates or updates each object in dependency order and says what it did. Running it again
changes nothing, and says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from orchestrator.errors import FlexPlaneError
from orchestrator.management.cluster import management_objects
from orchestrator.services.backup import (
    S3Store,
    read_file,
    restore_backup,
)
from orchestrator.services.backup.options import load_key, s3_settings


class Command(BaseCommand):
    help = "Restore the management plane's state from a backup (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--file", help="Read the backup from this file.")
        where.add_argument("--s3", help="s3://bucket/prefix (its newest backup) or the key of one.")
        parser.add_argument(
            "--key-file", help="The key (base64 of 32 bytes); default FLEXPLANE_BACKUP_KEY_FILE."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            key = load_key(options["key_file"], os.environ)
            if options["file"]:
                source, blob = options["file"], read_file(Path(options["file"]))
            else:
                store = S3Store(options["s3"], s3_settings(os.environ).client())
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
