"""What Proxmox and the agents answer, as typed values: what the source hands the layers above.

Built here from the payloads (``/cluster/resources``, a task's status, the task list, the migration
precondition, the guest agent's interfaces, an agent's GetInfo), so that nothing above ``sources``
reads a Proxmox dict. A guest's config is ``qemu_config.QemuConfig``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, NamedTuple

from agentclient import AgentInfo, AgentTarget
from agentclient.templates import (
    IMAGE_TAG_PREFIX,
    STORAGE_TAG_PREFIX,
    TEMPLATE_NAME_PREFIX,
    TEMPLATE_TAG,
    split_tags,
)
from orchestrator.sources.qemu_config import parse_tags

# Proxmox's own codes for "that node is not reachable from here" (pveproxy's 595/596).
NODE_UNREACHABLE = frozenset({595, 596})


@dataclass(frozen=True)
class ZoneTargets:
    """A zone and the agents that can answer for it, in the order to try them."""

    zone: str
    targets: tuple[AgentTarget, ...]


RUNNING = "running"
STOPPED = "stopped"
# The name of a volume's holder ends so, and a volume snapshot's holder's so; a VM's name is one DNS label,
# and never does.
VOLUME_HOLDER_SUFFIX = ".volume"
SNAPSHOT_HOLDER_SUFFIX = ".snapshot"
HOLDER_SUFFIXES = (VOLUME_HOLDER_SUFFIX, SNAPSHOT_HOLDER_SUFFIX)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _maybe_int(value: Any) -> int | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


# ------------------------------------------------------------------------------ /cluster/resources


class Guest(NamedTuple):
    """A guest of ``/cluster/resources`` (a QEMU VM, a template, or a container).

    An immutable typed value like the others here, but a ``NamedTuple``: a listing builds thousands of
    them per request, and a frozen dataclass's ``__init__`` costs several times more. ``tags`` is
    Proxmox's tag string as it is (``tag_list`` splits it): a listing only looks for one tag in it.
    """

    kind: str
    vmid: int
    name: str
    node: str
    status: str
    template: bool
    tags: str
    cpus: int
    memory: int  # bytes
    disk: int  # bytes, the boot disk
    pool: str
    lock: str

    @property
    def is_vm(self) -> bool:
        """A QEMU guest that is neither a template nor a holder (a volume's or a volume snapshot's): what
        flex.plane calls a VM."""
        return self.kind == "qemu" and not self.template and not self.name.endswith(HOLDER_SUFFIXES)

    @property
    def is_holder(self) -> bool:
        """A volume's or a volume snapshot's holder: a stopped VM whose one disk is what the VDC keeps."""
        return self.kind == "qemu" and not self.template and self.name.endswith(HOLDER_SUFFIXES)

    @property
    def tag_list(self) -> list[str]:
        return parse_tags(self.tags)

    @classmethod
    def from_resource(cls, item: Mapping[str, Any]) -> Guest:
        # Proxmox's JSON has these as strings and integers already: no conversions on the hot path.
        get = item.get
        return cls(
            get("type") or "",
            int(item["vmid"]),
            get("name") or "",
            get("node") or "",
            get("status") or "unknown",
            bool(get("template")),
            get("tags") or "",
            get("maxcpu") or 0,
            get("maxmem") or 0,
            get("maxdisk") or 0,
            get("pool") or "",
            get("lock") or "",
        )

    @classmethod
    def from_pool_member(cls, item: Mapping[str, Any], pool: str) -> Guest:
        """A guest of a pool's read (``GET /pools/{poolid}``). Proxmox builds it from the cluster's VM
        stats alone (pve-manager's ``PVE::API2Tools::extract_vm_stats``): its sizes, name, status and
        template flag, never its tags or lock, so ``tags`` and ``lock`` are empty; its pool is the one read.
        """
        get = item.get
        return cls(
            get("type") or "",
            int(item["vmid"]),
            get("name") or "",
            get("node") or "",
            get("status") or "unknown",
            bool(get("template")),
            "",
            get("maxcpu") or 0,
            get("maxmem") or 0,
            get("maxdisk") or 0,
            pool,
            "",
        )


def parse_pool_vms(answer: Any, pool: str) -> tuple[Guest, ...]:
    """The VMs (QEMU guests, not templates) of a pool's read; anything else in it is left out."""
    members = answer.get("members") if isinstance(answer, dict) else None
    guests = (
        Guest.from_pool_member(item, pool)
        for item in (members if isinstance(members, list) else ())
        if isinstance(item, dict) and item.get("type") in _GUEST_KINDS and item.get("vmid") is not None
    )
    return tuple(g for g in guests if g.is_vm)


@dataclass(frozen=True, slots=True)
class NodeResource:
    """A node of ``/cluster/resources``: its status and use (None: not reported, e.g. when offline)."""

    node: str
    status: str
    cpu: float | None = None  # the share of its CPU in use
    maxcpu: int | None = None
    mem: int | None = None
    maxmem: int | None = None
    disk: int | None = None
    maxdisk: int | None = None

    @property
    def online(self) -> bool:
        return self.status == "online"

    @classmethod
    def from_resource(cls, item: Mapping[str, Any]) -> NodeResource:
        cpu = item.get("cpu")
        return cls(
            node=str(item["node"]),
            status=str(item.get("status") or "unknown"),
            cpu=float(cpu) if isinstance(cpu, int | float) else None,
            maxcpu=_maybe_int(item.get("maxcpu")),
            mem=_maybe_int(item.get("mem")),
            maxmem=_maybe_int(item.get("maxmem")),
            disk=_maybe_int(item.get("disk")),
            maxdisk=_maybe_int(item.get("maxdisk")),
        )


@dataclass(frozen=True, slots=True)
class StorageResource:
    """A storage on a node, as ``/cluster/resources`` reports it."""

    node: str
    storage: str
    status: str
    used: int  # bytes
    total: int  # bytes

    @property
    def available(self) -> bool:
        return self.status == "available"

    @classmethod
    def from_resource(cls, item: Mapping[str, Any]) -> StorageResource:
        return cls(
            node=str(item["node"]),
            storage=str(item.get("storage") or ""),
            status=str(item.get("status") or ""),
            used=_int(item.get("disk")),
            total=_int(item.get("maxdisk")),
        )


_GUEST_KINDS = frozenset({"qemu", "lxc"})
_BY_NAME = attrgetter("name", "vmid")


@dataclass(frozen=True)
class ClusterResources:
    """One zone's ``/cluster/resources``: its guests (templates and containers too), nodes and storages."""

    guests: tuple[Guest, ...] = ()
    nodes: tuple[NodeResource, ...] = ()
    storages: tuple[StorageResource, ...] = ()
    # The VMs among the guests (QEMU, not templates), by name then VMID: a listing merges the zones' VMs
    # in that order and reads no further than its page, instead of sorting the fleet on every request.
    vms: tuple[Guest, ...] = field(init=False, repr=False, compare=False)
    # The volumes' holders among the guests, by name then VMID.
    volumes: tuple[Guest, ...] = field(init=False, repr=False, compare=False)
    # The volume snapshots' holders among the guests, by name then VMID.
    volume_snapshots: tuple[Guest, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # One pass over the guests (a listing's hot path: thousands of them), not one per property.
        vms: list[Guest] = []
        volumes: list[Guest] = []
        snapshots: list[Guest] = []
        for guest in self.guests:
            if guest.kind == "qemu" and not guest.template:
                if not guest.name.endswith(HOLDER_SUFFIXES):
                    vms.append(guest)
                else:
                    (volumes if guest.name.endswith(VOLUME_HOLDER_SUFFIX) else snapshots).append(guest)
        object.__setattr__(self, "vms", tuple(sorted(vms, key=_BY_NAME)))
        object.__setattr__(self, "volumes", tuple(sorted(volumes, key=_BY_NAME)))
        object.__setattr__(self, "volume_snapshots", tuple(sorted(snapshots, key=_BY_NAME)))

    @property
    def holders(self) -> tuple[Guest, ...]:
        """The volumes' and the volume snapshots' holders: what a VDC keeps on disk besides its VMs."""
        return self.volumes + self.volume_snapshots

    def vm(self, vmid: int) -> Guest | None:
        """The VM of that VMID (not a template of it)."""
        return next((g for g in self.vms if g.vmid == vmid), None)

    def image_templates(self) -> tuple[ImageTemplate, ...]:
        """The images' templates the agents made (ready, or being imported), by node, image and storage."""
        found = (ImageTemplate.of(g) for g in self.guests if g.name.startswith(TEMPLATE_NAME_PREFIX))
        return tuple(sorted((t for t in found if t is not None), key=_TEMPLATE_ORDER))

    def nodes_with_template(self, image: str, storage: str) -> frozenset[str]:
        """The nodes holding a ready template of ``image`` on ``storage``: a clone there needs no download."""
        return frozenset(
            t.node for t in self.image_templates() if t.ready and (t.image, t.storage) == (image, storage)
        )

    @classmethod
    def parse(cls, items: Any) -> ClusterResources:
        """From the answer's list; entries that are neither a guest, a node nor a storage are left out."""
        guests: list[Guest] = []
        nodes: list[NodeResource] = []
        storages: list[StorageResource] = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind in _GUEST_KINDS and item.get("vmid") is not None:
                guests.append(Guest.from_resource(item))
            elif kind == "node" and item.get("node"):
                nodes.append(NodeResource.from_resource(item))
            elif kind == "storage" and item.get("node"):
                storages.append(StorageResource.from_resource(item))
        return cls(tuple(guests), tuple(nodes), tuple(storages))


# ------------------------------------------------------------------------------------------ tasks


@dataclass(frozen=True)
class TaskStatus:
    """A task's state (``running`` or ``stopped``), once stopped its exit status; times in Unix seconds."""

    status: str
    exitstatus: str = ""
    kind: str | None = None
    started: int | None = None
    ended: int | None = None

    @classmethod
    def from_status(cls, data: Any) -> TaskStatus:
        """From ``/nodes/{node}/tasks/{upid}/status``."""
        data = data if isinstance(data, Mapping) else {}
        state = STOPPED if data.get("status") == STOPPED else RUNNING
        return cls(
            status=state,
            exitstatus=str(data.get("exitstatus") or "") if state == STOPPED else "",
            kind=str(data["type"]) if data.get("type") else None,
            started=_maybe_int(data.get("starttime")),
            ended=_maybe_int(data.get("endtime")),
        )

    @classmethod
    def from_listing(cls, entry: Mapping[str, Any]) -> TaskStatus:
        """From an entry of ``/nodes/{node}/tasks``: it puts the exit status in ``status`` once the task
        ended, and has no ``status`` while it runs."""
        ended = "endtime" in entry or "status" in entry
        return cls(
            status=STOPPED if ended else RUNNING,
            exitstatus=str(entry.get("status") or "") if ended else "",
            kind=str(entry["type"]) if entry.get("type") else None,
            started=_maybe_int(entry.get("starttime")),
            ended=_maybe_int(entry.get("endtime")),
        )


@dataclass(frozen=True)
class TaskEntry:
    """A task of a node's task list: its UPID and its status."""

    upid: str
    status: TaskStatus


# ------------------------------------------------------------------------------------------ migration


@dataclass(frozen=True)
class LocalDisk:
    volid: str
    size: int
    cdrom: bool

    @property
    def storage(self) -> str:
        return self.volid.split(":", 1)[0]


@dataclass(frozen=True)
class MigrationCheck:
    """Proxmox's precondition of migrating a guest. It judges the other nodes for a stopped guest only:
    ``allowed_nodes`` (None: it does not say) and ``refused`` (node -> Proxmox's reasons, in words)."""

    local_resources: tuple[str, ...] = ()
    local_disks: tuple[LocalDisk, ...] = ()
    allowed_nodes: frozenset[str] | None = None
    refused: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, answer: Any) -> MigrationCheck:
        data = answer if isinstance(answer, Mapping) else {}
        disks = tuple(
            LocalDisk(str(d.get("volid") or ""), _int(d.get("size")), bool(d.get("cdrom")))
            for d in data.get("local_disks") or []
            if isinstance(d, Mapping)
        )
        refused: dict[str, str] = {}
        not_allowed = data.get("not_allowed_nodes")
        for name, why in not_allowed.items() if isinstance(not_allowed, Mapping) else []:
            details = why if isinstance(why, Mapping) else {}
            parts = [
                f"{key.replace('_', ' ').replace('-', ' ')}: {', '.join(map(str, value))}"
                for key, value in sorted(details.items())
                if isinstance(value, list) and value
            ]
            refused[str(name)] = "; ".join(parts) or "not allowed"
        allowed = data.get("allowed_nodes")
        return cls(
            local_resources=tuple(str(d) for d in data.get("local_resources") or []),
            local_disks=disks,
            allowed_nodes=frozenset(str(n) for n in allowed) if isinstance(allowed, list) else None,
            refused=refused,
        )


# ------------------------------------------------------------------------------------------ guest agent


@dataclass(frozen=True)
class GuestInterface:
    """A network interface as a VM's guest agent reports it, with its addresses."""

    name: str
    addresses: tuple[str, ...]


def parse_interfaces(answer: Any) -> tuple[GuestInterface, ...]:
    """``agent/network-get-interfaces``'s answer (with or without its ``result`` wrapper)."""
    if isinstance(answer, Mapping):
        answer = answer.get("result")
    out: list[GuestInterface] = []
    for interface in answer if isinstance(answer, list) else []:
        if not isinstance(interface, Mapping):
            continue
        addresses = [
            str(entry.get("ip-address") or "") if isinstance(entry, Mapping) else ""
            for entry in interface.get("ip-addresses") or []
        ]
        out.append(GuestInterface(str(interface.get("name") or ""), tuple(a for a in addresses if a)))
    return tuple(out)


# ------------------------------------------------------------------------------------------ templates


@dataclass(frozen=True)
class Template:
    """An image's template on a node: the guest a VM is cloned from."""

    node: str
    vmid: int


@dataclass(frozen=True)
class ImageTemplate:
    """An image's template on a node as ``/cluster/resources`` lists it: a guest named ``fp-tpl-<image>``
    and tagged ``fp-template``, ``fp-image-<image>``, ``fp-storage-<storage>`` (``agentclient.templates``,
    as the node's agent makes it). ``ready`` once converted to a template; before that, its agent is
    importing it (or an import was interrupted: the agent's next call removes that one)."""

    node: str
    image: str
    storage: str
    vmid: int
    ready: bool

    @classmethod
    def of(cls, guest: Guest) -> ImageTemplate | None:
        """The template ``guest`` is, or None when its name and tags are not a template's."""
        if guest.kind != "qemu" or not guest.name.startswith(TEMPLATE_NAME_PREFIX):
            return None
        image = guest.name[len(TEMPLATE_NAME_PREFIX) :]
        tags = split_tags(guest.tags)
        storages = [t[len(STORAGE_TAG_PREFIX) :] for t in tags if t.startswith(STORAGE_TAG_PREFIX)]
        if TEMPLATE_TAG not in tags or IMAGE_TAG_PREFIX + image not in tags or len(storages) != 1:
            return None
        return cls(guest.node, image, storages[0], guest.vmid, guest.template)


_TEMPLATE_ORDER = attrgetter("node", "image", "storage", "vmid")


@dataclass(frozen=True)
class TemplatePreparing:
    """How far a node's agent is with an image's template that is not ready yet (EnsureTemplate's latest
    report): its phase (checking, downloading, verifying, importing), the bytes of the download or the
    copy to Proxmox done and in all (0: not known), and the rate it went at while the caller watched
    (bytes per second; None: too few reports to tell)."""

    phase: str
    bytes_done: int = 0
    bytes_total: int = 0
    rate: float | None = None

    @property
    def seconds_left(self) -> float | None:
        """How long the phase will likely take still (None: unknown): what is left at the rate seen."""
        if not self.rate or self.bytes_total <= 0 or self.bytes_done > self.bytes_total:
            return None
        return (self.bytes_total - self.bytes_done) / self.rate


# ------------------------------------------------------------------------------------------ agents


@dataclass(frozen=True)
class CertificateRenewal:
    """How the agent's certificate renewal went."""

    last_success_at: datetime | None
    last_error: str
    failures: int
    next_attempt_at: datetime | None


@dataclass(frozen=True)
class UpdateOutcome:
    """The agent's last self-update: ``result`` is none, updated, refused, rolled-back or failed."""

    result: str
    from_version: str
    to_version: str
    message: str
    at: datetime | None


@dataclass(frozen=True)
class AgentReport:
    """What a host's agent says about itself."""

    version: str
    proxmox_version: str
    # The flexplane-agent Debian package's version ("": the agent does not run from the package).
    package_version: str
    certificate_expires_at: datetime | None
    renewal: CertificateRenewal
    last_update: UpdateOutcome

    @classmethod
    def from_info(cls, info: AgentInfo) -> AgentReport:
        renewal, update = info.renewal, info.update
        return cls(
            version=info.version,
            proxmox_version=info.proxmox_version,
            package_version=info.package_version,
            certificate_expires_at=_unix(info.certificate_not_after),
            renewal=CertificateRenewal(
                last_success_at=_unix(renewal.last_success),
                last_error=renewal.last_error,
                failures=renewal.failures,
                next_attempt_at=_unix(renewal.next_attempt),
            ),
            last_update=UpdateOutcome(
                result=update.result,
                from_version=update.from_version,
                to_version=update.to_version,
                message=update.message,
                at=_unix(update.at),
            ),
        )


def _unix(seconds: int) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None
