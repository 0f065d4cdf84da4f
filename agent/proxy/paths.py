"""Where a forwarded request may go: exact methods, plain normalized paths, path patterns, sizes.

A path is never decoded, normalized or repaired: what is checked is exactly what Proxmox receives.
A pattern's placeholders (the keys of :data:`PLACEHOLDERS`) are captured, so that the parameters'
validators can check values against them (a volume against the VM of the path).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agent.proxy.refusal import NotAllowed
from agentclient.identity import DNS_LABEL, LOWER_DNS_LABEL

METHODS = frozenset({"GET", "POST", "PUT", "DELETE"})

# Proxmox UPIDs as PVE writes them: UPID:node:pid:pstart:starttime:type:id:user:
# (id and user restricted to the characters flex.plane's own tasks use).
NODE = DNS_LABEL
_UPID = (
    rf"UPID:{NODE}:[0-9A-Fa-f]{{8}}:[0-9A-Fa-f]{{8,9}}:[0-9A-Fa-f]{{8}}"
    r":[A-Za-z0-9_-]+:[A-Za-z0-9._@!-]*:[A-Za-z0-9._@!-]+:"
)
VMID = r"[1-9][0-9]{2,8}"
POOL = rf"fp-{LOWER_DNS_LABEL}"
# An IPv4 address in dotted quads (no leading zeros).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_PREFIX = r"(?:[12]?[0-9]|3[0-2])"
# An SDN zone or VNet id as flex.plane makes them (Proxmox allows mixed case; at most 8 characters).
SDN_ID = r"[a-z][a-z0-9]{0,7}"
# A firewall IP set's name (Proxmox's pattern, at most 64 characters).
IPSET = r"[A-Za-z][A-Za-z0-9_-]{1,63}"

PLACEHOLDERS: Mapping[str, str] = {
    # A Proxmox node name (a DNS label).
    "node": NODE,
    # A guest id, 100 to 999999999 as Proxmox allows.
    "vmid": VMID,
    # A task id.
    "upid": _UPID,
    # A pool flex.plane owns: fp-<slug> (a VDC's pool), never another pool of the cluster.
    "poolid": POOL,
    # An SDN zone and a VNet (Proxmox's ids are at most 8 characters).
    "zone": SDN_ID,
    "vnet": SDN_ID,
    # A subnet: <zone>-<network address>-<prefix length>, as Proxmox names it.
    "subnet": rf"{SDN_ID}-{IPV4}-{_PREFIX}",
    # A VM firewall's rule position, IP set, and IP set entry (an IPv4 address or network; the / of a
    # network is either a path separator, as the orchestrator sends it, or %2F).
    "pos": r"0|[1-9][0-9]{0,5}",
    "name": IPSET,
    "cidr": rf"{IPV4}(?:(?:/|%2F){_PREFIX})?",
    # The power actions the control plane takes (not suspend, resume or reset).
    "action": r"start|stop|shutdown|reboot",
    # A snapshot's name as Proxmox allows it (pve-configid, at most 40 characters).
    "snapname": r"[A-Za-z][A-Za-z0-9_-]{1,39}",
}

MAX_PATH_LENGTH = 512
MAX_PARAMS = 64
MAX_PARAM_NAME_LENGTH = 64
MAX_PARAM_VALUE_BYTES = 64 * 1024
MAX_PARAMS_TOTAL_BYTES = 256 * 1024

# The only characters a forwarded path may contain: no %, \, ?, #, spaces, nothing decodable.
PATH_CHARACTERS = re.compile(r"[A-Za-z0-9/._:@!-]*")
PARAM_NAME = re.compile(rf"[A-Za-z][A-Za-z0-9_-]{{0,{MAX_PARAM_NAME_LENGTH - 1}}}")
# Names web frameworks read as "treat this request as another method": the method field is the method,
# so a parameter claiming otherwise is refused rather than left for some server to honour (_method
# already fails PARAM_NAME).
METHOD_OVERRIDES = frozenset({"x-http-method-override", "x-http-method", "x-method-override"})
_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")
# The one escape a path may hold: %2F (an encoded /) between an address and a prefix length at the end of
# the path, an IP set entry's network (the cidr placeholder; nothing else admits it).
_ENCODED_PREFIX = re.compile(r"(?<=[0-9])%2F(?=(?:[12]?[0-9]|3[0-2])\Z)")


def compile_pattern(method: str, pattern: str) -> re.Pattern[str]:
    """The regular expression of a path pattern, its placeholders as named groups; ValueError for a
    malformed row."""
    if method not in METHODS:
        raise ValueError(f"allowlist row {method} {pattern}: unknown method")
    if not pattern.startswith("/"):
        raise ValueError(f"allowlist row {method} {pattern}: the pattern must start with /")
    parts = []
    for segment in pattern[1:].split("/"):
        placeholder = _PLACEHOLDER.fullmatch(segment)
        if placeholder is None:
            if not PATH_CHARACTERS.fullmatch(segment) or segment in ("", ".", ".."):
                raise ValueError(f"allowlist row {method} {pattern}: bad segment {segment!r}")
            parts.append(re.escape(segment))
        elif placeholder.group(1) in PLACEHOLDERS:
            name = placeholder.group(1)
            parts.append(f"(?P<{name}>{PLACEHOLDERS[name]})")
        else:
            raise ValueError(f"allowlist row {method} {pattern}: unknown placeholder {segment}")
    return re.compile("/" + "/".join(parts))


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
    if bad := PATH_CHARACTERS.sub("", _ENCODED_PREFIX.sub("", path)):
        raise NotAllowed(f"the path contains {bad[0]!r}, which is never forwarded")
    for segment in path[1:].split("/"):
        if segment == "":
            raise NotAllowed("the path contains an empty segment (// or a trailing /)")
        if segment in (".", ".."):
            raise NotAllowed("the path contains a . or .. segment")


def check_params(params: Mapping[str, str]) -> None:
    """Refuse too many, oversized or oddly named parameters (before any is looked at closer)."""
    if len(params) > MAX_PARAMS:
        raise NotAllowed(f"more than {MAX_PARAMS} parameters")
    total = 0
    for name, value in params.items():
        if not PARAM_NAME.fullmatch(name):
            raise NotAllowed(f"parameter name {name[:MAX_PARAM_NAME_LENGTH]!r} is not allowed")
        if name.lower() in METHOD_OVERRIDES:
            raise NotAllowed(f"parameter {name} would override the method: never forwarded", name)
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_PARAM_VALUE_BYTES:
            raise NotAllowed(f"parameter {name} is larger than {MAX_PARAM_VALUE_BYTES} bytes", name)
        if "\x00" in value:
            raise NotAllowed(f"parameter {name} contains a NUL character", name)
        total += size
    if total > MAX_PARAMS_TOTAL_BYTES:
        raise NotAllowed(f"the parameters are larger than {MAX_PARAMS_TOTAL_BYTES} bytes in all")
