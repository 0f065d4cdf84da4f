"""Label and field selectors, as ``kubectl -l`` and ``--field-selector`` take them.

Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``, ``a notin (x)``,
``a>1``, ``a<1``; commas are AND. Field selectors: ``metadata.name`` and ``metadata.namespace``,
plus ``type`` for Secrets and ``status.phase`` for Namespaces. Malformed selectors answer 400.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Literal

import kmock

from devstack.kube.errors import ApiError
from devstack.kube.objects import NAMESPACES, SECRETS

COMMON_FIELD_LABELS = frozenset({"metadata.name", "metadata.namespace"})
EXTRA_FIELD_LABELS = {SECRETS: frozenset({"type"}), NAMESPACES: frozenset({"status.phase"})}


@dataclasses.dataclass(frozen=True)
class LabelRequirement:
    """One requirement of a label selector, e.g. ``tier in (web, api)``."""

    key: str
    operator: Literal["=", "!=", "in", "notin", "exists", "!", ">", "<"]
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        match self.operator:
            case "exists":
                return value is not None
            case "!":
                return value is None
            case "=" | "in":
                return value is not None and value in self.values
            case "!=" | "notin":
                return value is None or value not in self.values
            case ">" | "<":
                (bound,) = self.values
                if value is None or not re.fullmatch(r"-?\d+", value):
                    return False
                return int(value) > int(bound) if self.operator == ">" else int(value) < int(bound)


@dataclasses.dataclass(frozen=True)
class FieldRequirement:
    """One requirement of a field selector, e.g. ``metadata.name!=catalog``."""

    path: str
    equal: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        found: Any = obj
        for part in self.path.split("."):
            found = found.get(part) if isinstance(found, Mapping) else None
        value = "" if found is None else str(found)
        return (value == self.value) == self.equal


@dataclasses.dataclass(frozen=True)
class Selector:
    """The label and field selectors of a request: an object must satisfy every requirement."""

    labels: tuple[LabelRequirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.labels) and all(r.matches(obj) for r in self.fields)


_LABEL_KEY = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_REQUIREMENT = re.compile(rf"(?P<key>{_LABEL_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)")
_ORDER_REQUIREMENT = re.compile(rf"(?P<key>{_LABEL_KEY})\s*(?P<op>[<>])\s*(?P<value>-?\d+)")
_EQUALITY_REQUIREMENT = re.compile(rf"(?P<key>{_LABEL_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_LABEL_VALUE})")
_EXISTENCE_REQUIREMENT = re.compile(rf"(?P<not>!?)\s*(?P<key>{_LABEL_KEY})")
_FIELD_REQUIREMENT = re.compile(r"(?P<path>[A-Za-z0-9_.\-]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^,]*)")


def parse_label_selector(text: str) -> tuple[LabelRequirement, ...]:
    """Parse a label selector as ``kubectl -l`` takes it; raise :class:`ApiError` (400) if malformed."""
    if not text.strip():
        return ()
    return tuple(_parse_label_requirement(part.strip()) for part in _split_outside_parentheses(text))


def _split_outside_parentheses(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _parse_label_requirement(text: str) -> LabelRequirement:
    if found := _SET_REQUIREMENT.fullmatch(text):
        values = [value.strip() for value in found["values"].split(",")]
        if values == [""] or not all(re.fullmatch(_LABEL_VALUE, value) for value in values):
            raise ApiError.bad_request(f"unable to parse requirement: invalid set of values in {text!r}")
        return LabelRequirement(found["key"], "in" if found["op"] == "in" else "notin", frozenset(values))
    if found := _ORDER_REQUIREMENT.fullmatch(text):
        return LabelRequirement(found["key"], ">" if found["op"] == ">" else "<", frozenset({found["value"]}))
    if found := _EQUALITY_REQUIREMENT.fullmatch(text):
        return LabelRequirement(
            found["key"], "!=" if found["op"] == "!=" else "=", frozenset({found["value"]})
        )
    if found := _EXISTENCE_REQUIREMENT.fullmatch(text):
        return LabelRequirement(found["key"], "!" if found["not"] else "exists")
    raise ApiError.bad_request(
        f"unable to parse requirement: {text!r} is not a valid label selector requirement"
    )


def parse_field_selector(text: str, supported: frozenset[str]) -> tuple[FieldRequirement, ...]:
    """Parse a field selector over the ``supported`` fields; raise :class:`ApiError` (400) otherwise."""
    if not text.strip():
        return ()
    requirements = []
    for part in text.split(","):
        found = _FIELD_REQUIREMENT.fullmatch(part.strip())
        if found is None:
            raise ApiError.bad_request(f"invalid selector: {text!r}; can't understand {part.strip()!r}")
        if found["path"] not in supported:
            raise ApiError.bad_request(f"field label not supported: {found['path']}")
        requirements.append(FieldRequirement(found["path"], found["op"] != "!=", found["value"].strip()))
    return tuple(requirements)


def selector_of(request: kmock.Request, resource: kmock.resource) -> Selector:
    """The selector of a list, watch or delete-collection request (a watch of one object: its name)."""
    fields = COMMON_FIELD_LABELS | EXTRA_FIELD_LABELS.get(resource, frozenset())
    field_requirements = parse_field_selector(request.params.get("fieldSelector", ""), fields)
    if request.name is not None:  # a watch on one object
        field_requirements += (FieldRequirement("metadata.name", True, request.name),)
    return Selector(parse_label_selector(request.params.get("labelSelector", "")), field_requirements)
