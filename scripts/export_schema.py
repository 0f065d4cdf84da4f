"""Write schema.graphql, the API's contract for automation users, from the code (`make schema`)."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexplane.settings")
    import django

    django.setup()
    from orchestrator.graphql.schema import schema

    (ROOT / "schema.graphql").write_text(str(schema) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
