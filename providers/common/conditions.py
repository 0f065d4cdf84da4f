"""Conditions in metav1's shape (``type``, ``status`` "True"/"False"/"Unknown", ``reason``, ``message``,
``lastTransitionTime``, ``observedGeneration``), as Cluster API's v1beta2 contracts read them.

Pure: a status's conditions in, the new list out. ``lastTransitionTime`` changes only when the status
does, so a reconcile that finds nothing new writes nothing new.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

READY = "Ready"
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
# metav1.Condition's limits: a reason is CamelCase up to 1024 characters, a message up to 32768.
MAX_MESSAGE = 32768

Condition = dict[str, Any]


def timestamp(now: datetime.datetime | None = None) -> str:
    """RFC 3339 in UTC, to the second, as the API server writes metav1.Time."""
    moment = now or datetime.datetime.now(datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(value: bool | str) -> str:
    if isinstance(value, bool):
        return TRUE if value else FALSE
    if value not in (TRUE, FALSE, UNKNOWN):
        raise ValueError(f"a condition's status is True, False or Unknown, not {value!r}")
    return value


def condition(
    kind: str,
    status: bool | str,
    reason: str,
    message: str = "",
    generation: int | None = None,
    now: datetime.datetime | None = None,
) -> Condition:
    """A condition, stamped now."""
    made: Condition = {
        "type": kind,
        "status": _status(status),
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "lastTransitionTime": timestamp(now),
    }
    if generation is not None:
        made["observedGeneration"] = generation
    return made


def find(conditions: Iterable[Mapping[str, Any]] | None, kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions or () if c.get("type") == kind), None)


def is_true(conditions: Iterable[Mapping[str, Any]] | None, kind: str) -> bool:
    found = find(conditions, kind)
    return found is not None and found.get("status") == TRUE


def set_condition(conditions: Iterable[Mapping[str, Any]] | None, new: Condition) -> list[Condition]:
    """``conditions`` with ``new`` in place of the one of its type (appended if none); the old
    ``lastTransitionTime`` is kept when the status did not change."""
    result: list[Condition] = []
    placed = False
    for old in conditions or ():
        if old.get("type") != new["type"]:
            result.append(dict(old))
            continue
        merged = dict(new)
        if old.get("status") == new["status"] and old.get("lastTransitionTime"):
            merged["lastTransitionTime"] = old["lastTransitionTime"]
        result.append(merged)
        placed = True
    if not placed:
        result.append(dict(new))
    return result


def same(a: Iterable[Mapping[str, Any]] | None, b: Iterable[Mapping[str, Any]] | None) -> bool:
    """Whether two lists of conditions say the same (every field but the transition time)."""

    def key(conditions: Iterable[Mapping[str, Any]] | None) -> list[tuple[Any, ...]]:
        return sorted(
            (c.get("type"), c.get("status"), c.get("reason"), c.get("message"), c.get("observedGeneration"))
            for c in conditions or ()
        )

    return key(a) == key(b)
