"""``manage.py fetch_dump --to DUMP``: fetch a sealed database dump and open it for ``pg_restore``.

``--s3 s3://bucket/prefix[/name][/key]`` takes the newest dump under the address, or the one it names;
``--file PATH`` opens a sealed file. The dump is written to ``--to`` whole or not at all, readable by its
owner only (it holds every user's password hash); a wrong key, an altered or cut file, and a newer
format are refused and leave nothing behind. Like ``backup_dump`` it reads none of the orchestrator's
settings. The identity chart's restore procedure (docs/operating.md) then runs ``pg_restore`` on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from orchestrator.errors import FlexPlaneError
from orchestrator.management.backup_options import add_key_file, add_where, backup_key, bucket
from orchestrator.services.backup import DUMP_SUFFIX, fetch_dump, open_dump


class Command(BaseCommand):
    help = "Fetch a sealed database dump (the newest under a prefix, or one named) and open it to a file."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_where(
            parser,
            file_help="Open this sealed file.",
            s3_help="s3://bucket/prefix (its newest dump) or the key of one.",
        )
        parser.add_argument("--to", required=True, help="Write the opened dump to this file.")
        add_key_file(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        target = Path(options["to"])
        try:
            key = backup_key(options)
            if options["file"]:
                source = options["file"]
                header, size = open_dump(Path(source), target, key)
            else:
                source, header, size = fetch_dump(bucket(options, DUMP_SUFFIX), target, key)
        except FlexPlaneError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"opened the {header.name} dump made {header.created} from {source} to {target}: {size} bytes"
        )
