"""Proxmox's QEMU config strings, parsed and rendered: the one place that knows their syntax.

Pure: no I/O, no Django. ``sources`` turns what Proxmox answers into these values and renders what it
sends from them; the services above speak of drives, sizes and changes, never of strings like
``local-lvm:vm-100-disk-0,size=32G``. Every parser here has its renderer, and
``parse(render(x)) == x`` holds for every value these types can hold (tests/orchestrator/sources).

- sizes: ``32G``, ``512M``, ``1.5T``, ``4096`` (bytes), as in a drive's ``size=`` and a resize;
- drives: ``<volume>[,<option>=<value>...]`` under the keys ``scsi0``, ``virtio1``, ``ide2``, ...;
- network devices (``net*``): ``<model>[=<mac>][,<option>=<value>...]``;
- cloud-init addresses (``ipconfig*``): ``ip=dhcp,gw=...,ip6=...,gw6=...``;
- tags: ``a;b`` (older releases also separated with ``,`` or spaces).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

# ------------------------------------------------------------------------------------------ sizes

_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGT]?)")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_size(text: str) -> int:
    """Bytes of a Proxmox size (``32G``, ``512M``, ``1.5T``; no suffix: bytes); ``ValueError`` otherwise."""
    found = _SIZE.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is not a Proxmox size")
    return int(float(found.group(1)) * _UNITS[found.group(2)])


def render_size(size: int) -> str:
    """A size in bytes as Proxmox writes it: in the largest unit that holds it exactly (``32G``)."""
    if size < 0:
        raise ValueError("a size is never negative")
    for suffix in ("T", "G", "M", "K"):
        unit = _UNITS[suffix]
        if size and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


# ------------------------------------------------------------------------------------------ options


def _split_options(parts: Iterable[str], what: str) -> tuple[tuple[str, str], ...]:
    options: list[tuple[str, str]] = []
    for part in parts:
        name, _, value = part.partition("=")
        if not name:
            raise ValueError(f"{part!r} is not an option of {what}")
        options.append((name, value))
    return tuple(options)


def _render_options(options: Iterable[tuple[str, str]]) -> list[str]:
    return [f"{name}={value}" for name, value in options]


def _option(options: Iterable[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in options if key == name), None)


def _with_options(
    options: tuple[tuple[str, str], ...], changes: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """The options with ``changes`` set: the others kept in their order, the changed ones after, sorted."""
    kept = tuple((k, v) for k, v in options if k not in changes)
    return kept + tuple(sorted(changes.items()))


# ------------------------------------------------------------------------------------------ drives

# The config keys of a QEMU guest's drives.
DRIVE_KEY = re.compile(r"(?P<bus>ide|sata|scsi|virtio|unused|efidisk|tpmstate)(?P<index>[0-9]+)")
# The buses a guest boots from (in the order a boot disk is looked for when the boot order says none).
DISK_BUSES = ("scsi", "virtio", "sata", "ide")
# Where Proxmox may put a cloud-init drive, in the order flex.plane picks a free slot.
CLOUD_INIT_SLOTS = ("ide2", "ide3", "ide1", "ide0")
_STORAGE_ID = re.compile(r"[a-zA-Z][a-zA-Z0-9._-]*")


def is_drive_key(key: str) -> bool:
    return DRIVE_KEY.fullmatch(key) is not None


@dataclass(frozen=True)
class Drive:
    """One drive of a guest: its config key (``scsi0``), its volume and its options, in Proxmox's order."""

    key: str
    volume: str
    options: tuple[tuple[str, str], ...] = ()

    @property
    def bus(self) -> str:
        found = DRIVE_KEY.fullmatch(self.key)
        return found.group("bus") if found else ""

    @property
    def index(self) -> int:
        found = DRIVE_KEY.fullmatch(self.key)
        return int(found.group("index")) if found else 0

    def option(self, name: str) -> str | None:
        return _option(self.options, name)

    @property
    def size(self) -> int:
        """Its size in bytes as the config records it (0 when it does not)."""
        text = self.option("size")
        try:
            return parse_size(text) if text is not None else 0
        except ValueError:
            return 0

    @property
    def storage(self) -> str:
        """The storage its volume is on (``""`` for none, e.g. an empty CD-ROM drive or a path)."""
        storage, sep, _ = self.volume.partition(":")
        return storage if sep and _STORAGE_ID.fullmatch(storage) else ""

    @property
    def is_cdrom(self) -> bool:
        return self.option("media") == "cdrom"

    @property
    def is_cloud_init(self) -> bool:
        """Proxmox names a cloud-init volume ``vm-<vmid>-cloudinit``: the only CD-ROM that is no ISO."""
        if "cloudinit" in self.volume:
            return True
        return self.is_cdrom and self.volume not in ("none", "cdrom") and "iso/" not in self.volume

    @property
    def is_disk(self) -> bool:
        """A disk a guest can boot from: on a disk bus, neither a CD-ROM nor its cloud-init drive."""
        return self.bus in DISK_BUSES and not self.is_cdrom and "cloudinit" not in self.volume

    def with_options(self, changes: Mapping[str, str]) -> Drive:
        """This drive with ``changes`` set (its other options kept)."""
        return replace(self, options=_with_options(self.options, changes))


def cloud_init_drive(slot: str, storage: str) -> Drive:
    """A new cloud-init drive in ``slot`` on ``storage`` (Proxmox allocates its volume)."""
    return Drive(slot, f"{storage}:cloudinit")


def parse_drive(key: str, value: str) -> Drive:
    """A drive from its config key and value; ``ValueError`` for what is none."""
    if not is_drive_key(key):
        raise ValueError(f"{key!r} is not a drive")
    head, *rest = value.split(",")
    if "=" in head:
        name, _, volume = head.partition("=")
        if name != "file":
            raise ValueError(f"drive {key} names no volume: {value!r}")
        head = volume
    return Drive(key, head, _split_options(rest, f"drive {key}"))


def render_drive(drive: Drive) -> str:
    return ",".join([drive.volume, *_render_options(drive.options)])


# ------------------------------------------------------------------------------------------ network

NET_KEY = re.compile(r"net([0-9]+)")
MAX_NICS = 32
NIC_MODELS = frozenset(
    {
        "e1000",
        "e1000-82540em",
        "e1000-82544gc",
        "e1000-82545em",
        "e1000e",
        "i82551",
        "i82557b",
        "i82559er",
        "ne2k_isa",
        "ne2k_pci",
        "pcnet",
        "rtl8139",
        "virtio",
        "vmxnet3",
    }
)


@dataclass(frozen=True)
class NetDevice:
    """A guest's network device: its model, its MAC (None: Proxmox picks one), and its options."""

    model: str
    macaddr: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    def option(self, name: str) -> str | None:
        return _option(self.options, name)

    @property
    def bridge(self) -> str | None:
        return self.option("bridge")


def parse_net(value: str) -> NetDevice:
    head, *rest = value.split(",")
    model, sep, mac = head.partition("=")
    if model == "model":  # the long form: model=virtio[,macaddr=...]
        options = _split_options(rest, "a network device")
        found = _option(options, "macaddr")
        return NetDevice(mac, found, tuple(o for o in options if o[0] != "macaddr"))
    if model not in NIC_MODELS:
        raise ValueError(f"{value!r} names no network device model")
    return NetDevice(model, mac if sep else None, _split_options(rest, "a network device"))


def render_net(net: NetDevice) -> str:
    head = f"{net.model}={net.macaddr}" if net.macaddr is not None else net.model
    return ",".join([head, *_render_options(net.options)])


# ------------------------------------------------------------------------------------------ cloud-init

IPCONFIG_KEY = re.compile(r"ipconfig([0-9]+)")
_IP_FIELDS = ("ip", "gw", "ip6", "gw6")


@dataclass(frozen=True)
class IpConfig:
    """A NIC's cloud-init addresses: ``ip`` is ``dhcp`` or ``<address>/<prefix>``, ``ip6`` also ``auto``."""

    ip: str | None = None
    gw: str | None = None
    ip6: str | None = None
    gw6: str | None = None


DHCP = IpConfig(ip="dhcp")


def parse_ipconfig(value: str) -> IpConfig:
    found: dict[str, str] = {}
    for name, text in _split_options(value.split(",") if value else [], "an ipconfig"):
        if name not in _IP_FIELDS or name in found:
            raise ValueError(f"{name!r} is not a field of an ipconfig (or is given twice)")
        found[name] = text
    return IpConfig(**found)


def render_ipconfig(config: IpConfig) -> str:
    return ",".join(
        f"{name}={getattr(config, name)}" for name in _IP_FIELDS if getattr(config, name) is not None
    )


# ------------------------------------------------------------------------------------------ tags

_TAG_SEPARATORS = re.compile(r"[;, ]+")
# Proxmox's pve-tag format: what a tag may contain.
_TAG = re.compile(r"[a-z0-9_][a-z0-9_\-+.]*", re.IGNORECASE)


def parse_tags(raw: str | None) -> list[str]:
    """Proxmox's tag string (``a;b``; older releases also used ``,`` or spaces) as a list."""
    return [tag for tag in _TAG_SEPARATORS.split(raw or "") if tag]


def render_tags(tags: Iterable[str]) -> str:
    """Tags as Proxmox stores them, ``;``-separated, without duplicates."""
    return ";".join(dict.fromkeys(tags))


def is_tag(value: str) -> bool:
    """Whether Proxmox accepts ``value`` as a tag."""
    return bool(_TAG.fullmatch(value))


# ------------------------------------------------------------------------------------------ a config


@dataclass(frozen=True)
class QemuConfig:
    """What flex.plane reads of a guest's config (``/nodes/{node}/qemu/{vmid}/config``)."""

    drives: tuple[Drive, ...] = ()
    boot_order: tuple[str, ...] = ()
    description: str = ""
    nets: tuple[tuple[int, NetDevice], ...] = ()
    ipconfigs: tuple[tuple[int, IpConfig], ...] = ()
    tags: tuple[str, ...] = ()
    # Every key the config has, drives and the rest (a free slot is one not among them).
    keys: frozenset[str] = field(default_factory=frozenset)
    # The guest's SMBIOS uuid (``smbios1: uuid=...``; Proxmox gives every new VM and clone its own).
    smbios_uuid: str | None = None

    def ipconfig(self, index: int) -> IpConfig | None:
        """The cloud-init addresses of NIC ``index`` (None: it has none)."""
        return next((config for i, config in self.ipconfigs if i == index), None)

    @property
    def free_net_index(self) -> int | None:
        """The lowest ``netN`` slot not taken (None: all of Proxmox's 32 are)."""
        taken = {index for index, _net in self.nets}
        return next((index for index in range(MAX_NICS) if index not in taken), None)

    @property
    def boot_disk(self) -> Drive | None:
        """The disk it boots from: the first disk of the boot order, else the first disk by bus and index."""
        disks = {d.key: d for d in self.drives if d.is_disk}
        for key in self.boot_order:
            if key in disks:
                return disks[key]
        for bus in DISK_BUSES:
            on_bus = sorted((d for d in disks.values() if d.bus == bus), key=lambda d: d.index)
            if on_bus:
                return on_bus[0]
        return None

    @property
    def has_cloud_init_drive(self) -> bool:
        return any(d.is_cloud_init for d in self.drives if d.bus in DISK_BUSES)

    @property
    def free_cloud_init_slot(self) -> str | None:
        """A free IDE slot for a cloud-init drive (None: all are taken)."""
        return next((slot for slot in CLOUD_INIT_SLOTS if slot not in self.keys), None)

    @property
    def storages(self) -> list[str]:
        """The storages its drives are on, in the order of their keys (CD-ROMs too)."""
        found: list[str] = []
        for drive in sorted(self.drives, key=lambda d: d.key):
            if drive.storage and drive.storage not in found:
                found.append(drive.storage)
        return found


def _boot_order(value: str) -> tuple[str, ...]:
    for part in value.split(","):
        name, sep, devices = part.partition("=")
        if sep and name == "order":
            return tuple(d for d in devices.split(";") if d)
    return ()


_SMBIOS_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def parse_smbios_uuid(value: str) -> str | None:
    """The ``uuid`` of an ``smbios1`` value (``uuid=<uuid>[,manufacturer=...]``), lowercase; None without
    one."""
    for part in value.split(","):
        key, sep, setting = part.partition("=")
        if sep and key == "uuid" and _SMBIOS_UUID.fullmatch(setting):
            return setting.lower()
    return None


def parse_config(config: Mapping[str, Any]) -> QemuConfig:
    """The config as Proxmox answered it; values that do not parse are left out (never a failed read)."""
    drives: list[Drive] = []
    nets: list[tuple[int, NetDevice]] = []
    ipconfigs: list[tuple[int, IpConfig]] = []
    for key, raw in config.items():
        value = str(raw)
        try:
            if is_drive_key(key):
                drives.append(parse_drive(key, value))
            elif found := NET_KEY.fullmatch(key):
                nets.append((int(found.group(1)), parse_net(value)))
            elif found := IPCONFIG_KEY.fullmatch(key):
                ipconfigs.append((int(found.group(1)), parse_ipconfig(value)))
        except ValueError:
            continue
    return QemuConfig(
        drives=tuple(drives),
        boot_order=_boot_order(str(config.get("boot") or "")),
        description=str(config.get("description") or ""),
        nets=tuple(sorted(nets, key=lambda n: n[0])),
        ipconfigs=tuple(sorted(ipconfigs, key=lambda n: n[0])),
        tags=tuple(parse_tags(str(config.get("tags") or ""))),
        keys=frozenset(config),
        smbios_uuid=parse_smbios_uuid(str(config.get("smbios1") or "")),
    )


@dataclass(frozen=True)
class ConfigChange:
    """A change to a guest's config; what is None (or empty) is left as it is."""

    cores: int | None = None
    sockets: int | None = None
    memory_mib: int | None = None
    cpu: str | None = None
    guest_agent: bool | None = None
    ciuser: str | None = None
    ipconfigs: tuple[tuple[int, IpConfig], ...] = ()
    ssh_keys: tuple[str, ...] = ()
    cicustom: str | None = None
    drives: tuple[Drive, ...] = ()
    tags: tuple[str, ...] | None = None
    nets: tuple[tuple[int, NetDevice], ...] = ()
    # cloud-init's resolvers for the whole guest (Proxmox keeps one list, not one per NIC)
    nameservers: tuple[str, ...] | None = None
    # keys removed from the config (a detached NIC's ``netN`` and ``ipconfigN``)
    delete: tuple[str, ...] = ()

    def render(self) -> dict[str, Any]:
        """The change as the config endpoint's parameters."""
        params: dict[str, Any] = {}
        for key, value in (
            ("cores", self.cores),
            ("sockets", self.sockets),
            ("memory", self.memory_mib),
            ("cpu", self.cpu),
            ("ciuser", self.ciuser),
            ("cicustom", self.cicustom),
        ):
            if value is not None:
                params[key] = value
        if self.guest_agent is not None:
            params["agent"] = "1" if self.guest_agent else "0"
        for index, ipconfig in self.ipconfigs:
            params[f"ipconfig{index}"] = render_ipconfig(ipconfig)
        if self.ssh_keys:
            # Proxmox wants the keys URL-encoded (its 'urlencoded' format), spaces as %20.
            params["sshkeys"] = urllib.parse.quote("\n".join(self.ssh_keys) + "\n", safe="")
        for drive in self.drives:
            params[drive.key] = render_drive(drive)
        if self.tags is not None:
            params["tags"] = render_tags(self.tags)
        for index, net in self.nets:
            params[f"net{index}"] = render_net(net)
        if self.nameservers is not None:
            params["nameserver"] = " ".join(self.nameservers)
        if self.delete:
            params["delete"] = ",".join(self.delete)
        return params
