"""``manage.py backup_dump DUMP``: seal a database dump with the backup key and store it.

The identity chart's CronJob runs it on Zitadel's ``pg_dump --format=custom`` file: ``--s3
s3://bucket/prefix`` puts it under ``<prefix>/<name>/`` (``--name``, default ``identity``) beside the
management plane's backups, where ``--keep N`` then deletes that name's older dumps but the newest N;
``--file PATH`` writes the sealed file there. It reads none of the orchestrator's settings (no cluster,
no secret key): the key and the bucket come from the options and the environment, as for ``backup``.
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
from orchestrator.services.backup import DUMP_SUFFIX, seal_dump, store_dump


class Command(BaseCommand):
    help = "Seal a database dump (Zitadel's, pg_dump --format=custom) with the backup key and store it."
    # A file tool: the checks would load the orchestrator's URLs and settings, which it never uses.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dump", help="The dump to seal (pg_dump --format=custom's file).")
        add_where(
            parser,
            file_help="Write the sealed dump to this file.",
            s3_help="Put the sealed dump in this bucket, under <prefix>/<name>/: s3://bucket/prefix.",
        )
        parser.add_argument(
            "--name", default="identity", help="What the dump is of: its folder in the bucket (identity)."
        )
        add_keep(parser, of="dumps of this name")
        add_key_file(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        keep = keep_count(options)
        dump = Path(options["dump"])
        try:
            key = backup_key(options)
            if options["file"]:
                sealed = seal_dump(dump, Path(options["file"]), key, name=options["name"])
            else:
                store = bucket(options, DUMP_SUFFIX)
                sealed = store_dump(dump, store, key, name=options["name"], keep=keep)
        except FlexPlaneError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"sealed the {sealed.header.name} dump {dump} ({sealed.header.created}, {sealed.size} bytes) "
            f"to {sealed.where}"
        )
        if keep:
            self.stdout.write(
                f"kept the newest {keep} {sealed.header.name} dumps; deleted {len(sealed.pruned)}"
            )
