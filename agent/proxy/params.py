"""What a forwarded parameter's value may be: one validator per declared parameter.

A validator takes the value (a string, as the proxy receives every parameter) and :class:`Where` the
request goes (the path's placeholders, and the node's :class:`Policy`), and raises ``ValueError``
saying what is wrong; the check names the parameter. Validators are pure and small: they run on every
forwarded write.

References are checked against the request itself: a disk's volume must belong to the VM of the path,
a cloud-init snippet must be one of that VM's own snippets on the node's snippets storage, a NIC is a
firewalled virtio NIC on an SDN VNet (never the node's own bridges), a pool must be ``fp-<slug>``,
tags must be flex.plane's (``fp-<kind>-...``) or plain labels.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from agent.proxy.paths import IPSET, IPV4, NODE, POOL, SDN_ID, VMID


@dataclass(frozen=True)
class Policy:
    """What this node lets the proxy name beyond the request itself.

    ``snippets_storage`` is the storage of the agent's snippets folder (the only one a ``cicustom`` may
    name). ``bridges`` are bridges other than SDN VNets a NIC may be on (none by default: a NIC is on
    a VNet, :func:`nic`; and the agent's Proxmox role may not use the node's own bridges,
    :mod:`agent.pveadmin`).
    """

    snippets_storage: str | None = None
    bridges: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Where:
    """Where a request goes: its path's placeholders (``node``, ``vmid``, ...) and the node's policy."""

    path: Mapping[str, str]
    policy: Policy


Validator = Callable[[str, Where], None]


def _full(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII)


# ------------------------------------------------------------------------------------ scalars


def integer(low: int, high: int) -> Validator:
    """A decimal integer from low to high, written plainly (no sign, no leading zero, no spaces)."""
    digits = _full(r"0|-?[1-9][0-9]{0,18}")

    def check(value: str, where: Where) -> None:
        if not digits.fullmatch(value) or not low <= int(value) <= high:
            raise ValueError(f"{value[:40]!r} is not an integer from {low} to {high}")

    return check


def boolean(value: str, where: Where) -> None:
    """Proxmox's boolean: 0 or 1."""
    if value not in ("0", "1"):
        raise ValueError(f"{value[:40]!r} is not 0 or 1")


def one_of(*choices: str) -> Validator:
    allowed = frozenset(choices)

    def check(value: str, where: Where) -> None:
        if value not in allowed:
            raise ValueError(f"{value[:40]!r} is not one of {', '.join(sorted(allowed))}")

    return check


def matching(pattern: str, what: str) -> Validator:
    regex = _full(pattern)

    def check(value: str, where: Where) -> None:
        if not regex.fullmatch(value):
            raise ValueError(f"{value[:80]!r} is not {what}")

    return check


def text(limit: int) -> Validator:
    """Free text (a description, a comment): printable, lines and tabs allowed, at most limit characters."""

    def check(value: str, where: Where) -> None:
        if len(value) > limit:
            raise ValueError(f"is longer than {limit} characters")
        if not value.replace("\n", "").replace("\t", "").isprintable():
            raise ValueError("contains control characters")

    return check


node = matching(NODE, "a node name")
vmid = matching(VMID, "a VM id from 100 to 999999999")
pool = matching(POOL, "a pool of flex.plane's, fp-<slug>")
dns_name = matching(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?", "a DNS name")
user_name = matching(r"[a-z_][a-z0-9_.-]{0,31}", "a user name")
# A CPU model alone (kvm64, host, x86-64-v2-AES, custom-<name>): no flags, no other options.
cpu_model = matching(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", "a CPU model")
DRIVE_KEY = r"(?:scsi(?:[12]?[0-9]|30)|virtio(?:[0-9]|1[0-5])|sata[0-5]|ide[0-3])"
drive_key = matching(DRIVE_KEY, "a disk key (scsi0-30, virtio0-15, sata0-5, ide0-3)")
drive_or_unused_key = matching(
    rf"{DRIVE_KEY}|unused(?:[1-9]?[0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])",
    "a disk key (scsi0-30, virtio0-15, sata0-5, ide0-3) or an unused disk (unused0-255)",
)
# A volume's holder (orchestrator/services/volumes): ``<volume>.volume``, a name no VM takes (a VM's name
# is one DNS label).
volume_holder_name = matching(
    r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.volume", "a volume holder's name (<volume>.volume)"
)
# A VM's name, or a holder's: a volume's (``<volume>.volume``) or a volume snapshot's
# (``<snapshot>.snapshot``).
guest_name = matching(
    r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.(?:volume|snapshot)",
    "a DNS name, or a holder's name (<volume>.volume, <snapshot>.snapshot)",
)
disk_size = matching(r"\+?[1-9][0-9]{0,15}(?:\.[0-9]{1,3})?[KMGT]?", "a disk size (32G, +1G)")


def new_vmid(value: str, where: Where) -> None:
    """The id of a VM a request makes: a VM id, not the one of the path."""
    vmid(value, where)
    if value == where.path.get("vmid"):
        raise ValueError("is the id of the VM being cloned")


# ------------------------------------------------------------------------------------ disks

STORAGE = r"[a-z][a-z0-9._-]*[a-z0-9]|[a-z]"
_VOLUME_FORMAT = r"(?:\.(?:raw|qcow2|vmdk))?"
# What a disk option's value may hold: no commas or = (no second option hidden in a value).
_OPTION_VALUE = _full(r"[A-Za-z0-9._+:-]{1,64}")
# The options a disk may carry: performance, caching, identity. Not file= (another volume), nor
# import-from= (a copy of any volume, another VM's included).
DISK_OPTIONS = frozenset(
    {
        "aio",
        "backup",
        "cache",
        "detect_zeroes",
        "discard",
        "format",
        "iothread",
        "media",
        "replicate",
        "rerror",
        "werror",
        "ro",
        "serial",
        "size",
        "snapshot",
        "ssd",
        "wwn",
        *(
            f"{kind}{direction}{limit}"
            for kind in ("iops", "mbps")
            for direction in ("", "_rd", "_wr")
            for limit in ("", "_max", "_max_length")
        ),
    }
)
_VOLUME = _full(rf"(?P<storage>{STORAGE}):(?P<name>[A-Za-z0-9._/-]{{1,255}})")
_NEW_DISK = _full(rf"(?P<storage>{STORAGE}):(?P<gib>[1-9][0-9]{{0,5}})")
MAX_NEW_DISK_GIB = 65536


def owned_volume_name(name: str, owner: str) -> bool:
    """Whether a volume's name (after ``<storage>:``) is a disk or cloud-init volume of VM ``owner``,
    in any of the forms Proxmox writes: ``vm-<id>-disk-<n>``, ``<id>/vm-<id>-disk-<n>.qcow2``, and a
    linked clone's ``base-<t>-disk-<m>/vm-<id>-disk-<n>`` or ``<t>/base-<t>-disk-<m>.qcow2/<id>/...``."""
    own = rf"(?:{owner}/)?vm-{owner}-(?:disk-[0-9]{{1,4}}|cloudinit){_VOLUME_FORMAT}"
    base = rf"(?:(?P<t>{VMID})/base-(?P=t)-disk-[0-9]{{1,4}}{_VOLUME_FORMAT}|base-{VMID}-disk-[0-9]{{1,4}})/"
    return re.fullmatch(rf"(?:{base})?{own}", name, re.ASCII) is not None


def disk(value: str, where: Where) -> None:
    """A disk of the VM of the path: one of its own volumes (or a new cloud-init drive,
    ``<storage>:cloudinit``), with the options of :data:`DISK_OPTIONS`."""
    volume, *options = value.split(",")
    found = _VOLUME.fullmatch(volume)
    if found is None:
        raise ValueError(f"{volume[:80]!r} is not a volume (<storage>:<name>)")
    name, owner = found.group("name"), where.path.get("vmid", "")
    if name != "cloudinit" and not owned_volume_name(name, owner):
        raise ValueError(f"volume {volume[:80]!r} is not a disk of VM {owner}")
    _disk_options(options)


def _disk_options(options: Iterable[str]) -> None:
    seen: set[str] = set()
    for option in options:
        key, sep, setting = option.partition("=")
        if key not in DISK_OPTIONS or not sep or key in seen:
            raise ValueError(f"disk option {key[:40]!r} is not accepted (or is given twice)")
        if not _OPTION_VALUE.fullmatch(setting):
            raise ValueError(f"disk option {key} has the value {setting[:40]!r}, which is not accepted")
        seen.add(key)


def new_disk(value: str, where: Where) -> None:
    """A disk made now: ``<storage>:<size in GiB>`` (1 to 65536) with the options of :data:`DISK_OPTIONS`;
    never an existing volume (another VM's) nor ``import-from``."""
    volume, *options = value.split(",")
    found = _NEW_DISK.fullmatch(volume)
    if found is None or not 1 <= int(found.group("gib")) <= MAX_NEW_DISK_GIB:
        raise ValueError(f"{volume[:80]!r} is not a new disk (<storage>:<GiB>, 1 to {MAX_NEW_DISK_GIB})")
    _disk_options(options)


# ------------------------------------------------------------------------------------ network

_MAC = _full(r"[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}")
# The node's own bridges (Proxmox's vmbr<n>): never a tenant NIC's, whatever the policy says.
_NODE_BRIDGE = _full(r"vmbr[0-9]+")
_SDN_ID = _full(SDN_ID)


def nic(value: str, where: Where) -> None:
    """A tenant NIC: ``virtio[=<MAC>],bridge=<VNet>,firewall=1[,macaddr=<MAC>]`` and nothing else. The
    model is virtio; the bridge an SDN VNet (or a bridge of the node's policy), never the node's own
    ``vmbr<n>``; the Proxmox firewall is on (security groups are enforced by it); no VLAN tag, trunks,
    rate, queues, MTU or link state; one MAC at most."""
    head, *options = value.split(",")
    model, sep, head_mac = head.partition("=")
    if model != "virtio":
        raise ValueError(f"NIC model {model[:40]!r} is not virtio")
    macs = [head_mac] if sep else []
    found: dict[str, str] = {}
    for option in options:
        key, sep, setting = option.partition("=")
        if key not in ("bridge", "firewall", "macaddr") or not sep or key in found:
            raise ValueError(f"NIC option {key[:40]!r} is not accepted (or is given twice)")
        found[key] = setting
    if "macaddr" in found:
        macs.append(found["macaddr"])
    if len(macs) > 1 or not all(_MAC.fullmatch(mac) for mac in macs):
        raise ValueError("names a MAC address that is not one, or two of them")
    if found.get("firewall") != "1":
        raise ValueError("must have firewall=1 (the VM's firewall enforces its security groups)")
    bridge = found.get("bridge")
    if bridge is None:
        raise ValueError("names no bridge")
    allowed = bridge in where.policy.bridges or _SDN_ID.fullmatch(bridge) is not None
    if not allowed or _NODE_BRIDGE.fullmatch(bridge):
        raise ValueError(f"bridge {bridge[:40]!r} is not an SDN VNet flex.plane may attach NICs to")


_DETACHABLE = _full(r"(?:net|ipconfig)(?:[12]?[0-9]|3[01])|scsi(?:[1-9]|[12][0-9]|30)")


def detachable_keys(value: str, where: Where) -> None:
    """A config write's ``delete``: only NICs and their cloud-init addresses (``net<n>``, ``ipconfig<n>``,
    n from 0 to 31) and data disks (``scsi1`` to ``scsi30``), comma-separated, each once. A deleted disk
    is detached, never destroyed: Proxmox keeps its volume as the VM's ``unused<n>`` (no ``force``). Never
    the boot disk ``scsi0``, nor an ``unused<n>``, whose delete would destroy the volume."""
    keys = value.split(",")
    if len(set(keys)) != len(keys):
        raise ValueError("names a key twice")
    for key in keys:
        if not _DETACHABLE.fullmatch(key):
            raise ValueError(
                f"{key[:40]!r} is not a NIC (net0-31), its addresses (ipconfig0-31) or a data disk (scsi1-30)"
            )


def nameservers(value: str, where: Where) -> None:
    """Cloud-init DNS servers: up to three IPv4 addresses, separated by single spaces (none: empty)."""
    servers = value.split(" ") if value else []
    if len(servers) > 3 or not all(_IPV4.fullmatch(server) for server in servers):
        raise ValueError(f"{value[:80]!r} is not up to three IPv4 addresses separated by spaces")


def ipconfig(value: str, where: Where) -> None:
    """A NIC's cloud-init addresses: ``ip=dhcp|<v4>/<prefix>``, ``gw=<v4>``, ``ip6=dhcp|auto|<v6>/<prefix>``,
    ``gw6=<v6>``."""
    seen: set[str] = set()
    for part in value.split(",") if value else []:
        key, sep, setting = part.partition("=")
        if not sep or key in seen:
            raise ValueError(f"{key[:40]!r} is not a field of an ipconfig (or is given twice)")
        seen.add(key)
        try:
            if key == "ip" and setting != "dhcp":
                ipaddress.IPv4Interface(setting if "/" in setting else "x")
            elif key == "ip6" and setting not in ("dhcp", "auto"):
                ipaddress.IPv6Interface(setting if "/" in setting else "x")
            elif key == "gw":
                ipaddress.IPv4Address(setting)
            elif key == "gw6":
                ipaddress.IPv6Address(setting)
            elif key not in ("ip", "ip6"):
                raise ValueError(key)
        except ValueError:
            raise ValueError(f"{key[:40]}={setting[:60]} is not accepted") from None


_IPV4 = _full(IPV4)


def ipv4(value: str, where: Where) -> None:
    """An IPv4 address in dotted quads (no leading zeros)."""
    if not _IPV4.fullmatch(value):
        raise ValueError(f"{value[:60]!r} is not an IPv4 address")


def ipv4_cidr(value: str, where: Where) -> None:
    """An IPv4 network ``<address>/<prefix>``, the address its network's own (no host bits)."""
    address, sep, prefix = value.partition("/")
    if not (sep and _IPV4.fullmatch(address) and re.fullmatch(r"[0-9]|[12][0-9]|3[0-2]", prefix, re.ASCII)):
        raise ValueError(f"{value[:60]!r} is not an IPv4 network (<address>/<prefix>)")
    try:
        ipaddress.IPv4Network(value)
    except ValueError:
        raise ValueError(f"{value[:60]!r} has host bits set: not a network address") from None


def ipv4_or_cidr(value: str, where: Where) -> None:
    """An IPv4 address or network."""
    (ipv4_cidr if "/" in value else ipv4)(value, where)


def ipv4_list(value: str, where: Where) -> None:
    """IPv4 addresses separated by commas (a VXLAN zone's peers): at least one, at most 64, each once."""
    peers = value.split(",")
    if not 1 <= len(peers) <= 64 or len(set(peers)) != len(peers):
        raise ValueError("is not 1 to 64 distinct IPv4 addresses separated by commas")
    for peer in peers:
        ipv4(peer, where)


def node_list(value: str, where: Where) -> None:
    """Node names separated by commas, each once."""
    names = value.split(",")
    if len(set(names)) != len(names) or not all(re.fullmatch(NODE, n, re.ASCII) for n in names):
        raise ValueError(f"{value[:80]!r} is not node names separated by commas")


sdn_id = matching(SDN_ID, "an SDN id (a lowercase letter, then up to 7 lowercase letters and digits)")
# A Linux bridge name (IFNAMSIZ: at most 15 characters).
bridge = matching(r"[A-Za-z][A-Za-z0-9_.-]{0,14}", "a bridge name")
# Proxmox's VNet alias pattern ([\(\)-_.\w\d\s]{0,256}: the range ) to _ included), in ASCII and with a
# space as its only white space: the alias is written into the nodes' network configuration, where a
# line break would start another line.
vnet_alias = matching(r"[()\x29-\x5F.\w ]{0,256}", "a VNet alias (up to 256 letters, digits, spaces, ()-_.)")


# ------------------------------------------------------------------------------------ firewall

_ADDRESS_OR_IPSET = _full(rf"\+{IPSET}")
_PORT = r"(?:[1-9][0-9]{0,4})"


def firewall_address(value: str, where: Where) -> None:
    """A rule's source or destination: an IPv4 address or network, or ``+<ipset>`` of the VM's own."""
    if value.startswith("+"):
        if not _ADDRESS_OR_IPSET.fullmatch(value):
            raise ValueError(f"{value[:70]!r} is not +<the name of an IP set>")
        return
    ipv4_or_cidr(value, where)


# A firewall rule's ports (PVE's ``pve-fw-dport-spec``): at most 15 numbers, a range counting as two.
MAX_PORT_NUMBERS = 15


def port_list(value: str, where: Where) -> None:
    """A rule's destination ports as PVE's firewall takes them: a comma list of ports and ranges
    ``<first>:<last>`` (first <= last), from 1 to 65535, at most 15 numbers (a range counts as two);
    never service names, spaces or empty entries."""
    numbers = 0
    for entry in value.split(","):
        found = re.fullmatch(rf"({_PORT})(?::({_PORT}))?", entry, re.ASCII)
        ports = [int(p) for p in found.groups() if p is not None] if found else []
        if not ports or max(ports) > 65535 or ports[0] > ports[-1]:
            raise ValueError(f"{entry[:40]!r} is not a port or a range <first>:<last> from 1 to 65535")
        numbers += len(ports)
    if numbers > MAX_PORT_NUMBERS:
        raise ValueError(f"names {numbers} ports: at most {MAX_PORT_NUMBERS} (a range counts as two)")


def comment(value: str, where: Where) -> None:
    """A firewall comment: one line of printable text, at most 256 characters."""
    if len(value) > 256 or not value.isprintable():
        raise ValueError("is not one line of printable text of at most 256 characters")


ipset_name = matching(IPSET, "an IP set name (a letter, then 1 to 63 letters, digits, - and _)")
firewall_policy = one_of("ACCEPT", "DROP", "REJECT")


# ------------------------------------------------------------------------------------ cloud-init

_SSH_KEY = _full(
    r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521)|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r" [A-Za-z0-9+/]+={0,3}(?: [^\r\n]*)?"
)


def ssh_keys(value: str, where: Where) -> None:
    """Public SSH keys, one a line, URL-encoded as Proxmox wants them."""
    try:
        decoded = urllib.parse.unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise ValueError("is not URL-encoded UTF-8") from None
    for number, line in enumerate(decoded.split("\n"), 1):
        if line and not (_SSH_KEY.fullmatch(line) and line.isprintable()):
            raise ValueError(f"line {number} is not a public SSH key")


CICUSTOM_PARTS = ("user", "meta", "vendor")


def cicustom(value: str, where: Where) -> None:
    """The VM's own cloud-init snippets on the node's snippets storage, and nothing else: a comma-separated
    list of ``<part>=<storage>:snippets/fp-<vdc>-<vmid>-<part>.yaml``, part ``user``, ``meta`` or
    ``vendor``, each at most once (never ``network``: the NICs' addresses are Proxmox's to generate)."""
    storage = where.policy.snippets_storage
    owner = where.path.get("vmid", "")
    if storage is None:
        raise ValueError("this node keeps no snippets")
    seen: set[str] = set()
    for item in value.split(","):
        part = item.partition("=")[0]
        own = rf"{part}={re.escape(storage)}:snippets/fp-[a-z0-9](?:[a-z0-9-]*[a-z0-9])?-{owner}-{part}\.yaml"
        if part not in CICUSTOM_PARTS or part in seen or not re.fullmatch(own, item, re.ASCII):
            raise ValueError(
                f"{item[:120]!r} is not one of VM {owner}'s own snippets, each once "
                f"(<user|meta|vendor>={storage}:snippets/fp-<vdc>-{owner}-<user|meta|vendor>.yaml)"
            )
        seen.add(part)


# ------------------------------------------------------------------------------------ tags

# Proxmox's pve-tag; flex.plane's own are fp-<kind>-<value>.
_TAG = _full(r"[a-z0-9_][a-z0-9_+.-]{0,127}")
_FLEXPLANE_TAG = _full(r"fp-[a-z]+-[a-z0-9_+.-]+")
MAX_TAGS = 64


def tags(value: str, where: Where) -> None:
    """``;``-separated tags, each flex.plane's (``fp-<kind>-<value>``) or a plain label (a Proxmox tag
    not starting with ``fp-``); at most one VDC tag."""
    listed = [tag for tag in value.split(";") if tag]
    if len(listed) > MAX_TAGS:
        raise ValueError(f"more than {MAX_TAGS} tags")
    for tag in listed:
        if not _TAG.fullmatch(tag):
            raise ValueError(f"{tag[:60]!r} is not a tag (lowercase letters, digits, _ + . -)")
        if tag.startswith("fp-") and not _FLEXPLANE_TAG.fullmatch(tag):
            raise ValueError(f"{tag[:60]!r} is neither flex.plane's (fp-<kind>-<value>) nor a plain label")
    if sum(tag.startswith("fp-vdc-") for tag in listed) > 1:
        raise ValueError("names more than one VDC")


def indexed(prefix: str, indices: Iterable[int], validator: Validator) -> dict[str, Validator]:
    """One declaration per numbered key: ``net0`` ... ``net31``."""
    return {f"{prefix}{index}": validator for index in indices}


DRIVES: dict[str, Validator] = {
    **indexed("scsi", range(31), disk),
    **indexed("virtio", range(16), disk),
    **indexed("sata", range(6), disk),
    **indexed("ide", range(4), disk),
}
