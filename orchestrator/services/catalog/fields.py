"""Typed, validated reads of a catalog input's values: each bad value is a ``ValidationFailed`` naming it."""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.conf import settings

from agentclient.identity import DNS_LABEL, LOWER_DNS_LABEL
from agentclient.templates import IMAGE_NAME, IMAGE_NAME_RULE
from agentclient.urlpolicy import UrlRefused, check_url, parse_checksum
from orchestrator.errors import ValidationFailed
from orchestrator.models.catalog import MAX_DESCRIPTION_LENGTH, MAX_TITLE_LENGTH, Input

# Catalog names (profiles, images): one rule, the one every reader holds them to; the agent's, which
# names an image's template and tags after it, is the strictest (agentclient.templates).
_NAME = IMAGE_NAME
# Ids of zones and VDCs, and Proxmox node names: DNS labels.
_SLUG = re.compile(LOWER_DNS_LABEL)
STORAGE_ID = re.compile(r"[a-zA-Z][a-zA-Z0-9._-]{0,62}[a-zA-Z0-9]")  # Proxmox's pve-storage-id
CPU_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
_HOST_NAME = re.compile(rf"(?=.{{1,253}}\Z){DNS_LABEL}(?:\.{DNS_LABEL})*")

NAME_RULE = f"a catalog name: {IMAGE_NAME_RULE}"
SLUG_RULE = "a lowercase slug of letters, digits and '-' (at most 63 characters, no leading or trailing '-')"


class Fields:
    """Typed, validated reads of an input's values: each bad value is a ``ValidationFailed`` naming it.

    Field names are the inputs' own (snake_case; the API shows them in camelCase). A nested input
    (``quota``) names its fields ``quota.<field>``.
    """

    def __init__(self, values: Mapping[str, Any], prefix: str = "") -> None:
        self.values = values
        self.prefix = prefix

    def path(self, field: str) -> str:
        return f"{self.prefix}{field}"

    def fail(self, field: str, message: str) -> ValidationFailed:
        return ValidationFailed(self.path(field), message)

    def present(self, field: str) -> Any:
        value = self.values.get(field)
        if value is None:
            raise self.fail(field, f"{label(field)} is required")
        return value

    def string(self, field: str) -> str:
        value = self.present(field)
        if not isinstance(value, str):
            raise self.fail(field, f"{label(field)} must be a string")
        return value

    def name(self, field: str) -> str:
        value = self.string(field)
        if not _NAME.fullmatch(value):
            raise self.fail(field, f"{label(field)} {value!r} is not {NAME_RULE}")
        return value

    def slug(self, field: str) -> str:
        value = self.string(field)
        if not _SLUG.fullmatch(value):
            raise self.fail(field, f"{label(field)} {value!r} is not {SLUG_RULE}")
        return value

    def title(self, field: str, default: str) -> str:
        """A display name: trimmed, one line, defaulting to ``default`` when empty."""
        value = self.values.get(field)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(field, f"{label(field)} must be a string")
        value = value.strip()
        if len(value) > MAX_TITLE_LENGTH:
            raise self.fail(field, f"{label(field)} is longer than {MAX_TITLE_LENGTH} characters")
        if not value.isprintable():
            raise self.fail(field, f"{label(field)} must be one line of printable characters")
        return value or default

    def text(self, field: str, max_length: int = MAX_DESCRIPTION_LENGTH) -> str:
        value = self.values.get(field)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(field, f"{label(field)} must be a string")
        if len(value) > max_length:
            raise self.fail(field, f"{label(field)} is longer than {max_length} characters")
        if any(not (char.isprintable() or char in "\n\t") for char in value):
            raise self.fail(field, f"{label(field)} contains control characters")
        return value.strip()

    def integer(self, field: str, low: int, high: int, unit: str = "") -> int:
        value = self.present(field)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"{label(field)} must be a whole number")
        if not low <= value <= high:
            raise self.fail(field, f"{label(field)} must be between {low} and {high}{unit}, not {value}")
        return value

    def optional_integer(self, field: str, low: int, high: int, unit: str = "") -> int | None:
        return None if self.values.get(field) is None else self.integer(field, low, high, unit)

    def number(self, field: str, low: float, high: float) -> float:
        value = self.present(field)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(field, f"{label(field)} must be a number")
        if not low <= value <= high:
            raise self.fail(field, f"{label(field)} must be between {low:g} and {high:g}, not {value:g}")
        return float(value)

    def boolean(self, field: str) -> bool:
        value = self.present(field)
        if not isinstance(value, bool):
            raise self.fail(field, f"{label(field)} must be true or false")
        return value

    def choice(self, field: str, choices: Iterable[str]) -> str:
        value = self.string(field)
        allowed = tuple(choices)
        if value not in allowed:
            raise self.fail(field, f"{label(field)} must be one of {', '.join(allowed)}, not {value!r}")
        return value

    def names(self, field: str, rule: Callable[[str], bool], what: str) -> list[str]:
        """A list of names, without duplicates, in the order given; each must pass ``rule``."""
        value = self.values.get(field)
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise self.fail(field, f"{label(field)} must be a list of names")
        out: list[str] = []
        for item in value:
            if not isinstance(item, str) or not rule(item):
                raise self.fail(field, f"{label(field)}: {item!r} is not {what}")
            if item not in out:
                out.append(item)
        return out

    def declared(self, declared: Input) -> Any:
        """A value checked as its declaration says: a number within its limits, a flag, one of its
        choices, or a string no longer than its limit (what more a string must be, its kind checks)."""
        field = declared.name
        present = declared.required or declared.default is not None
        if declared.choices:
            return self.choice(field, declared.choices)
        if declared.type is bool:
            return self.boolean(field)
        if declared.type is int and declared.low is not None and declared.high is not None:
            low, high = int(declared.low), int(declared.high)
            if present:
                return self.integer(field, low, high, declared.unit)
            return self.optional_integer(field, low, high, declared.unit)
        if declared.type is float and declared.low is not None and declared.high is not None:
            return self.number(field, declared.low, declared.high)
        if declared.type is str:
            if declared.default is not None and self.values.get(field) is None:
                return declared.default
            value = self.string(field)
            if declared.max_length is not None and len(value) > declared.max_length:
                raise self.fail(field, f"{label(field)} is longer than {declared.max_length} characters")
            return value
        raise TypeError(f"{field}: no generic check for {declared.type.__name__}; check it by name")

    def nested(self, field: str) -> Fields:
        value = self.present(field)
        if not isinstance(value, Mapping):
            raise self.fail(field, f"{label(field)} must be an object")
        return Fields(value, prefix=f"{self.path(field)}.")


def label(field: str) -> str:
    """How a message names a field: ``memory_mib`` -> ``memoryMib``, as the API spells it."""
    head, *rest = field.split("_")
    return head + "".join(part.capitalize() for part in rest)


def is_name(value: str) -> bool:
    return _NAME.fullmatch(value) is not None


def is_slug(value: str) -> bool:
    return _SLUG.fullmatch(value) is not None


def check_fields(values: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse fields this kind does not have (a portal form or a client out of step)."""
    allowed = set(known)
    for field in values:
        if field not in allowed:
            raise ValidationFailed(field, f"there is no field {label(field)!r} here")


def endpoint(fields: Fields, declared: Input) -> str:
    """An agent endpoint: ``host:port`` with an IP address, ``[IPv6]`` or a DNS name."""
    field = declared.name
    value = fields.declared(declared).strip()
    host, sep, port = value.rpartition(":")
    bad = fields.fail(field, f"{label(field)} {value!r} must be host:port (an address or DNS name)")
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        raise bad
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise bad from None
    elif not _HOST_NAME.fullmatch(host):
        raise bad
    return value


def source_url(fields: Fields, declared: Input) -> str:
    """An image URL flex.plane may fetch: http(s), a host, no credentials, not a private literal address.

    Names are resolved by the agent that downloads, on its node, and checked again there.
    """
    field = declared.name
    value = fields.declared(declared).strip()
    try:
        check_url(value, allow_hosts=settings.FLEXPLANE_IMAGE_ALLOW_HOSTS, resolve=False)
    except UrlRefused as exc:
        raise fields.fail(field, str(exc)) from None
    return value


def checksum(fields: Fields, declared: Input) -> str:
    field = declared.name
    value = fields.declared(declared)
    try:
        algorithm, digest = parse_checksum(value)
    except ValueError as exc:
        raise fields.fail(field, f"{label(field)}: {exc}") from None
    return f"{algorithm}:{digest}"
