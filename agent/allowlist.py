"""What the Proxmox proxy forwards: an allowlist of methods and path patterns.

A request is forwarded only if its method is one of :data:`METHODS`, spelt exactly so,
and its path is a plain, normalized path matching one row of :data:`ALLOWED` in full.
Everything else is refused before Proxmox is called. The checks are strict on purpose:
a path is never decoded, normalized or repaired, so what is checked is exactly what
Proxmox receives.

To forward another endpoint, add a row to ``ALLOWED``; placeholders are the keys of
:data:`PLACEHOLDERS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

METHODS = frozenset({"GET", "POST", "PUT", "DELETE"})

# Proxmox UPIDs as PVE writes them: UPID:node:pid:pstart:starttime:type:id:user:
# (id and user restricted to the characters flex.plane's own tasks use).
_NODE = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
_UPID = (
    rf"UPID:{_NODE}:[0-9A-Fa-f]{{8}}:[0-9A-Fa-f]{{8,9}}:[0-9A-Fa-f]{{8}}"
    r":[A-Za-z0-9_-]+:[A-Za-z0-9._@!-]*:[A-Za-z0-9._@!-]+:"
)

PLACEHOLDERS: Mapping[str, str] = {
    # A Proxmox node name (a DNS label).
    "node": _NODE,
    # A guest id, 100 to 999999999 as Proxmox allows.
    "vmid": r"[1-9][0-9]{2,8}",
    # A task id.
    "upid": _UPID,
    # A pool flex.plane owns: fp-<slug> (a VDC's pool), never another pool of the cluster.
    "poolid": r"fp-[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?",
    # The power actions the control plane takes (not suspend, resume or reset).
    "action": r"start|stop|shutdown|reboot",
}

# method, path pattern below /api2/json
ALLOWED_ROWS: tuple[tuple[str, str], ...] = (
    ("GET", "/version"),
    ("GET", "/nodes"),
    ("GET", "/cluster/resources"),
    ("GET", "/cluster/status"),
    ("GET", "/cluster/nextid"),
    ("GET", "/nodes/{node}/status"),
    ("GET", "/nodes/{node}/storage"),
    ("GET", "/nodes/{node}/tasks"),
    ("GET", "/nodes/{node}/tasks/{upid}/status"),
    ("GET", "/nodes/{node}/tasks/{upid}/log"),
    # The VM lifecycle. Creating VMs from nothing (POST /nodes/{node}/qemu) is not here: only
    # the agent's own image import does that; the control plane clones templates.
    ("POST", "/nodes/{node}/qemu/{vmid}/clone"),
    ("GET", "/nodes/{node}/qemu/{vmid}/config"),
    ("POST", "/nodes/{node}/qemu/{vmid}/config"),
    ("PUT", "/nodes/{node}/qemu/{vmid}/config"),
    ("GET", "/nodes/{node}/qemu/{vmid}/pending"),
    ("PUT", "/nodes/{node}/qemu/{vmid}/resize"),
    ("POST", "/nodes/{node}/qemu/{vmid}/status/{action}"),
    ("GET", "/nodes/{node}/qemu/{vmid}/status/current"),
    ("DELETE", "/nodes/{node}/qemu/{vmid}"),
    ("GET", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"),
    # Draining a host: the precondition (which nodes, local disks and devices), then the migration.
    ("GET", "/nodes/{node}/qemu/{vmid}/migrate"),
    ("POST", "/nodes/{node}/qemu/{vmid}/migrate"),
    # VDC pools.
    ("GET", "/pools"),
    ("POST", "/pools"),
    ("GET", "/pools/{poolid}"),
    ("PUT", "/pools/{poolid}"),
    ("DELETE", "/pools/{poolid}"),
)

MAX_PATH_LENGTH = 512
MAX_PARAMS = 64
MAX_PARAM_NAME_LENGTH = 64
MAX_PARAM_VALUE_BYTES = 64 * 1024
MAX_PARAMS_TOTAL_BYTES = 256 * 1024

# The only characters a forwarded path may contain: no %, \, ?, #, spaces, nothing decodable.
_PATH_CHARACTERS = re.compile(r"[A-Za-z0-9/._:@!-]*")
_PARAM_NAME = re.compile(rf"[A-Za-z][A-Za-z0-9_-]{{0,{MAX_PARAM_NAME_LENGTH - 1}}}")
# Names web frameworks read as "treat this request as another method": the method field is the method,
# so a parameter claiming otherwise is refused rather than left for some server to honour (_method
# already fails _PARAM_NAME).
METHOD_OVERRIDES = frozenset({"x-http-method-override", "x-http-method", "x-method-override"})
_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")


class NotAllowed(Exception):
    """The request is not forwarded; the message says why, for the caller."""


@dataclass(frozen=True)
class Route:
    """One row of the allowlist: a method and a path pattern with {placeholders}."""

    method: str
    pattern: str
    regex: re.Pattern[str]

    @classmethod
    def compile(cls, method: str, pattern: str) -> Route:
        if method not in METHODS:
            raise ValueError(f"allowlist row {method} {pattern}: unknown method")
        if not pattern.startswith("/"):
            raise ValueError(f"allowlist row {method} {pattern}: the pattern must start with /")
        parts = []
        for segment in pattern[1:].split("/"):
            placeholder = _PLACEHOLDER.fullmatch(segment)
            if placeholder is None:
                if not _PATH_CHARACTERS.fullmatch(segment) or segment in ("", ".", ".."):
                    raise ValueError(f"allowlist row {method} {pattern}: bad segment {segment!r}")
                parts.append(re.escape(segment))
            elif placeholder.group(1) in PLACEHOLDERS:
                parts.append(f"(?:{PLACEHOLDERS[placeholder.group(1)]})")
            else:
                raise ValueError(f"allowlist row {method} {pattern}: unknown placeholder {segment}")
        return cls(method, pattern, re.compile("/" + "/".join(parts)))

    def matches(self, path: str) -> bool:
        return self.regex.fullmatch(path) is not None


def compile_table(rows: Iterable[tuple[str, str]]) -> tuple[Route, ...]:
    return tuple(Route.compile(method, pattern) for method, pattern in rows)


ALLOWED: tuple[Route, ...] = compile_table(ALLOWED_ROWS)


def check_path(path: str) -> None:
    """Refuse a path that is not plain and normalized; returns None for a clean one."""
    if not path:
        raise NotAllowed("the path is empty")
    if len(path) > MAX_PATH_LENGTH:
        raise NotAllowed(f"the path is longer than {MAX_PATH_LENGTH} characters")
    if not path.isascii() or not path.isprintable():
        raise NotAllowed("the path contains control or non-ASCII characters")
    if not path.startswith("/"):
        raise NotAllowed("the path must start with /")
    if bad := _PATH_CHARACTERS.sub("", path):
        raise NotAllowed(f"the path contains {bad[0]!r}, which is never forwarded")
    for segment in path[1:].split("/"):
        if segment == "":
            raise NotAllowed("the path contains an empty segment (// or a trailing /)")
        if segment in (".", ".."):
            raise NotAllowed("the path contains a . or .. segment")


def check_params(params: Mapping[str, str]) -> None:
    """Refuse too many, oversized or oddly named parameters."""
    if len(params) > MAX_PARAMS:
        raise NotAllowed(f"more than {MAX_PARAMS} parameters")
    total = 0
    for name, value in params.items():
        if not _PARAM_NAME.fullmatch(name):
            raise NotAllowed(f"parameter name {name[:MAX_PARAM_NAME_LENGTH]!r} is not allowed")
        if name.lower() in METHOD_OVERRIDES:
            raise NotAllowed(f"parameter {name} would override the method: never forwarded")
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_PARAM_VALUE_BYTES:
            raise NotAllowed(f"parameter {name} is larger than {MAX_PARAM_VALUE_BYTES} bytes")
        if "\x00" in value:
            raise NotAllowed(f"parameter {name} contains a NUL character")
        total += size
    if total > MAX_PARAMS_TOTAL_BYTES:
        raise NotAllowed(f"the parameters are larger than {MAX_PARAMS_TOTAL_BYTES} bytes in all")


def authorize(method: str, path: str, params: Mapping[str, str], table: tuple[Route, ...] = ALLOWED) -> Route:
    """The route that allows this request, or NotAllowed with the reason."""
    if method not in METHODS:
        raise NotAllowed(f"method {method[:16]!r} is not one of {', '.join(sorted(METHODS))}")
    check_path(path)
    check_params(params)
    for route in table:
        if route.method == method and route.matches(path):
            return route
    if any(route.matches(path) for route in table):
        raise NotAllowed(f"{method} {path} is not on the proxy's allowlist (another method is)")
    raise NotAllowed(f"{method} {path} is not on the proxy's allowlist")
