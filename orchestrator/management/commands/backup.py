"""``manage.py backup``: seal what flex.plane keeps in the management cluster into one encrypted file.

``--file PATH`` writes it there; ``--s3 s3://bucket/prefix`` puts it in a bucket, where ``--keep N``
then deletes this platform's older backups but the newest N. What a backup holds and leaves out is
``orchestrator.services.backup.contents``'; the key and the bucket's settings are ``options``'.
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
    make_backup,
    scope_from_settings,
    write_file,
)
from orchestrator.services.backup.options import load_key, s3_settings


class Command(BaseCommand):
    help = "Back up the management plane's state (catalog, platform CA and keys, VDC namespaces), encrypted."

    def add_arguments(self, parser: CommandParser) -> None:
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--file", help="Write the backup to this file.")
        where.add_argument("--s3", help="Put the backup in this bucket: s3://bucket/prefix.")
        parser.add_argument(
            "--keep", type=int, default=0, help="With --s3: keep only this platform's newest N backups."
        )
        parser.add_argument(
            "--key-file", help="The key (base64 of 32 bytes); default FLEXPLANE_BACKUP_KEY_FILE."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        keep = int(options["keep"])
        if keep < 0 or (keep and not options["s3"]):
            raise CommandError("--keep takes a positive count, and only with --s3")
        try:
            key = load_key(options["key_file"], os.environ)
            platform, created, count, blob = make_backup(management_objects(), scope_from_settings(), key)
            if options["file"]:
                write_file(Path(options["file"]), blob)
                where = options["file"]
            else:
                store = S3Store(options["s3"], s3_settings(os.environ).client())
                where = f"s3://{store.bucket}/{store.put(platform, created, blob)}"
                pruned = store.keep(platform, keep) if keep else []
        except FlexPlaneError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"backed up {count} objects of platform {platform} ({created}) to {where}: {len(blob)} bytes"
        )
        if options["s3"] and keep:
            self.stdout.write(f"kept the newest {keep} backups of this platform; deleted {len(pruned)}")
