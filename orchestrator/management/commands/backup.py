"""``manage.py backup``: seal what flex.plane keeps in the management cluster into one encrypted file.

``--file PATH`` writes it there; ``--s3 s3://bucket/prefix`` puts it in a bucket, where ``--keep N``
then deletes this platform's older backups but the newest N. What a backup holds and leaves out is
``orchestrator.services.backup.contents``'; the key and the bucket's settings are ``options``'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from orchestrator.errors import FlexPlaneError
from orchestrator.management.backup_options import (
    add_keep,
    add_key_file,
    add_where,
    backup_key,
    bucket,
    keep_count,
)
from orchestrator.management.cluster import management_objects
from orchestrator.services.backup import make_backup, scope_from_settings, write_file


class Command(BaseCommand):
    help = "Back up the management plane's state (catalog, platform CA and keys, VDC namespaces), encrypted."
    # It reads and writes the management cluster's objects only: Django's checks of the URLs, templates
    # and apps it never uses would cost a CronJob's run about a second.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_where(
            parser,
            file_help="Write the backup to this file.",
            s3_help="Put the backup in this bucket: s3://bucket/prefix.",
        )
        add_keep(parser, of="backups of this platform")
        add_key_file(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        keep = keep_count(options)
        try:
            key = backup_key(options)
            platform, created, count, blob = make_backup(management_objects(), scope_from_settings(), key)
            if options["file"]:
                write_file(Path(options["file"]), blob)
                where = options["file"]
            else:
                store = bucket(options)
                where = f"s3://{store.bucket}/{store.put(platform, created, blob)}"
                pruned = store.keep(platform, keep) if keep else []
        except FlexPlaneError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"backed up {count} objects of platform {platform} ({created}) to {where}: {len(blob)} bytes"
        )
        if options["s3"] and keep:
            self.stdout.write(f"kept the newest {keep} backups of this platform; deleted {len(pruned)}")
