"""The committed client (apiclient/generated/) is exactly what `make schema` generates from schema.graphql
and apiclient/operations, and its operations are valid against the schema the API serves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graphql import GraphQLObjectType, get_named_type

from orchestrator.graphql.schema import schema

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "apiclient" / "generated"


def test_the_committed_client_is_what_the_schema_and_the_operations_generate(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_apiclient.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    fresh = tmp_path / "apiclient" / "generated"

    generated = {path.relative_to(fresh) for path in map(Path, result.stdout.split())}
    committed = {path.relative_to(GENERATED) for path in GENERATED.rglob("*.py")}
    assert generated == committed, "run `make schema` and commit apiclient/generated (files added or gone)"
    drifted = sorted(str(p) for p in generated if (fresh / p).read_bytes() != (GENERATED / p).read_bytes())
    assert drifted == [], f"stale: run `make schema` and commit apiclient/generated ({', '.join(drifted)})"


def test_every_mutation_answers_errors_and_no_query_does() -> None:
    """The client raises a mutation's payload errors by finding ``errors`` in the answer's top-level
    objects (apiclient.client.FlexPlane.get_data): true only while every mutation's payload has them
    and no query's object does."""
    graphql_schema = schema.graphql_schema
    assert graphql_schema.mutation_type is not None

    def with_errors(root: GraphQLObjectType) -> set[str]:
        return {
            name
            for name, field in root.fields.items()
            if isinstance(named := get_named_type(field.type), GraphQLObjectType) and "errors" in named.fields
        }

    mutations = graphql_schema.mutation_type
    assert with_errors(mutations) == set(mutations.fields)
    assert with_errors(graphql_schema.query_type) == set()


def test_importing_the_client_imports_no_operations_models_until_one_is_used() -> None:
    """scripts/codegen_lazy.py: a process that uses the client for one operation (an Ansible task, a CLI
    command) imports that operation's models, not all of them; every name of the package still resolves."""
    probe = (
        "import sys\n"
        "import apiclient\n"
        "from apiclient.generated import input_types\n"
        "shared = {'base_client', 'base_model', 'input_types', 'enums', 'exceptions', 'fragments'}\n"
        "used = {'client', 'task', 'virtual_machines'}  # apiclient.client's own\n"
        "operations = lambda: sorted(m for m in sys.modules if m.startswith('apiclient.generated.')\n"
        "    and m.split('.')[-1] not in shared | used)\n"
        "print(operations())\n"
        "import apiclient.generated as generated\n"
        "generated.CreateNetworkCreateNetwork\n"
        "print(operations())\n"
        "missing = [name for name in generated.__all__ if getattr(generated, name, None) is None]\n"
        "print(missing)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=60, cwd=ROOT
    )

    assert result.returncode == 0, result.stderr
    at_import, after_one, missing = result.stdout.splitlines()
    assert at_import == "[]"
    assert after_one == "['apiclient.generated.create_network']"
    assert missing == "[]"
