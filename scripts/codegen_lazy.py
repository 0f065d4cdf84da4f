"""An ariadne-codegen plugin (apiclient/codegen.toml names it; scripts/gen_apiclient.py, which runs from
this folder, finds it): the generated client imports each operation's models when that operation is
first called, not all of them when the package is imported.

ariadne-codegen's client imports the result models of every operation at its top, and the package's
``__init__`` imports everything: about 300 pydantic models, 0.2 to 0.3 s of every process that uses the
client once (an Ansible task, a CLI command). With this plugin:

- ``client.py`` imports the operations' models under ``TYPE_CHECKING`` only (its annotations are
  strings: ``from __future__ import annotations``), and each method imports what it returns first;
- ``__init__.py`` keeps its names and ``__all__`` for type checkers (under ``TYPE_CHECKING``) and
  loads a name's module when the name is first read (a module ``__getattr__``, PEP 562).

The input types, the enums and the base classes stay imported at the top: every call needs them.
"""

from __future__ import annotations

import ast
from typing import Any

from ariadne_codegen.plugins.base import Plugin
from graphql import GraphQLSchema

# What every operation needs, imported at the client's top as ariadne-codegen writes it.
EAGER = frozenset({"base_client", "base_model", "input_types", "enums", "exceptions"})


def _future() -> ast.ImportFrom:
    return ast.ImportFrom(module="__future__", names=[ast.alias(name="annotations")], level=0)


def _type_checking(imports: list[ast.stmt]) -> list[ast.stmt]:
    """``from typing import TYPE_CHECKING`` and ``if TYPE_CHECKING:`` around ``imports``."""
    return [
        ast.ImportFrom(module="typing", names=[ast.alias(name="TYPE_CHECKING")], level=0),
        ast.If(test=ast.Name(id="TYPE_CHECKING", ctx=ast.Load()), body=imports, orelse=[]),
    ]


def _split(module: ast.Module) -> tuple[list[ast.stmt], list[ast.ImportFrom], list[ast.stmt]]:
    """The module's imports but those of operations, those, and the rest of its statements."""
    imports: list[ast.stmt] = []
    lazy: list[ast.ImportFrom] = []
    rest: list[ast.stmt] = []
    for statement in module.body:
        if isinstance(statement, ast.ImportFrom) and statement.level == 1 and statement.module not in EAGER:
            lazy.append(statement)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            imports.append(statement)
        else:
            rest.append(statement)
    return imports, lazy, rest


class LazyOperations(Plugin):
    """See the module."""

    def __init__(self, schema: GraphQLSchema, config_dict: dict[str, Any]) -> None:
        super().__init__(schema, config_dict)
        self.sources: dict[str, str] = {}  # a model's name -> its module, in the client

    def generate_client_module(self, module: ast.Module) -> ast.Module:
        imports, lazy, rest = _split(module)
        for statement in lazy:
            for alias in statement.names:
                self.sources[alias.asname or alias.name] = str(statement.module)
        for node in ast.walk(module):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self._import_first(node)
        module.body = [_future(), *imports, *_type_checking(list(lazy)), *rest]
        return module

    def _import_first(self, method: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """The models the method's body uses, imported at its start (its annotations are strings)."""
        used = sorted(
            {
                node.id
                for statement in method.body
                for node in ast.walk(statement)
                if isinstance(node, ast.Name) and node.id in self.sources
            }
        )
        imports: list[ast.stmt] = [
            ast.ImportFrom(module=self.sources[name], names=[ast.alias(name=name)], level=1) for name in used
        ]
        method.body = [*imports, *method.body]

    def generate_init_module(self, module: ast.Module) -> ast.Module:
        imports, lazy, rest = _split(module)
        sources = {
            alias.asname or alias.name: str(statement.module)
            for statement in lazy
            for alias in statement.names
        }
        table = ast.Assign(
            targets=[ast.Name(id="_SOURCES", ctx=ast.Store())],
            value=ast.Dict(  # by name: ariadne-codegen's order of a module's names varies from run to run
                keys=[ast.Constant(name) for name in sorted(sources)],
                values=[ast.Constant(f".{sources[name]}") for name in sorted(sources)],
            ),
            lineno=0,
        )
        getter = ast.parse(
            "def __getattr__(name: str) -> Any:\n"
            '    """A model of the package, its module imported when it is first read (PEP 562)."""\n'
            "    source = _SOURCES.get(name)\n"
            "    if source is None:\n"
            '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")\n'
            "    value = getattr(import_module(source, __name__), name)\n"
            "    globals()[name] = value\n"
            "    return value\n"
        ).body
        head: list[ast.stmt] = [
            _future(),
            ast.ImportFrom(module="importlib", names=[ast.alias(name="import_module")], level=0),
            ast.ImportFrom(module="typing", names=[ast.alias(name="Any")], level=0),
            *imports,
            *_type_checking(list(lazy)),
        ]
        module.body = [*head, *rest, table, *getter]
        return module
