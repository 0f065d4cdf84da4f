"""What ``flexplane`` prints: answers as a table for people, or as JSON or YAML for scripts (``-o``), and a
task followed to its end with a progress bar (``--wait``).

JSON and YAML carry the API's own field names (camelCase, as in schema.graphql), every field the operation
asked for, so ``flexplane vms list -o json | jq '.[].name'`` reads as the API documents it; a table shows
the columns a person scans for. Everything but the answer (progress, notes, errors) goes to stderr, so
the answer can be piped.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

import typer
import yaml
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from apiclient.client import FlexPlane
from apiclient.errors import ProtocolError
from apiclient.generated.task import TaskTask


class Output(enum.StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


OutputOption = Annotated[
    Output,
    typer.Option("--output", "-o", help="table for people; json or yaml (the API's fields) for scripts"),
]
WaitOption = Annotated[
    bool,
    typer.Option("--wait", "-w", help="follow the task to its end with a progress bar (exit 5 if it fails)"),
]
# A column: its header, and the field (the API's name) it shows.
Column = tuple[str, str]
Payload = TypeVar("Payload")


def group(help: str) -> typer.Typer:
    """A resource's command group (``flexplane vms``): given no command, it prints the ones it has."""
    return typer.Typer(help=help, no_args_is_help=True)


def answered(payload: Payload | None) -> Payload:
    """A mutation's payload, which the API answers unless it raised (the client raises its errors)."""
    if payload is None:
        raise ProtocolError("the API answered a mutation without its payload")
    return payload


def plain(value: Any) -> Any:
    """A generated model (or a list of them) as JSON data, in the API's field names."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def show(console: Console, data: Any, output: Output, columns: Sequence[Column]) -> None:
    """``data`` (a model, a list of them, or JSON data) in ``output``'s format on ``console``."""
    values = plain(data)
    if output is Output.JSON:
        console.print_json(json.dumps(values), indent=2)
    elif output is Output.YAML:
        console.out(yaml.safe_dump(values, sort_keys=False, allow_unicode=True), end="", highlight=False)
    elif isinstance(values, list):
        console.print(table(values, columns))
    else:
        console.print(details(values, columns))


def table(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> Table:
    grid = Table(box=None, pad_edge=False, header_style="bold")
    for header, _ in columns:
        grid.add_column(header, overflow="fold")
    for row in rows:
        grid.add_row(*(cell(row.get(key)) for _, key in columns))
    return grid


def details(values: dict[str, Any], columns: Sequence[Column]) -> Table:
    """One object as field and value, the columns' fields first and then the rest it has."""
    grid = Table(box=None, pad_edge=False, show_header=False)
    grid.add_column(style="bold")
    grid.add_column()
    shown = [key for _, key in columns]
    for key in shown + [key for key in values if key not in shown]:
        grid.add_row(key, cell(values.get(key)))
    return grid


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(cell(item) for item in value) if value else "-"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def follow(api: FlexPlane, task: Any, console: Console, *, timeout: float = 900.0) -> TaskTask:
    """Follow a mutation's task to its end, as ``FlexPlane.follow`` does, with its progress on ``console``
    (stderr); raises ``TaskFailed`` or ``TaskTimedOut`` as it does."""
    if task is None:
        raise ProtocolError("the answer carries no task to follow")
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task(task.title or task.id, total=1.0)

        def seen(current: TaskTask) -> None:
            progress.update(
                bar, completed=current.progress or 0, description=f"{current.title} ({current.status})"
            )

        ended = api.follow(task.id, timeout=timeout, seen=seen)
        progress.update(bar, completed=1.0, description=f"{ended.title} ({ended.status})")
    return ended
