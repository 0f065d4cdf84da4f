"""The routes the proxy forwards, each with the parameters it accepts and a validator for each value.

This table is the whole of what the orchestrator may ask a node's Proxmox through the agent: a request
whose method and path match no row, or that carries a parameter its row does not declare, or a value
its validator refuses, is refused before Proxmox is called. Declared here are what the orchestrator
sends (``orchestrator/sources/proxmox/zone.py``) and little more; Proxmox options that reach beyond
the VM being changed (``hookscript``, ``args``, another VM's volume, ``import-from``, ``skiplock``,
``storage`` of a clone, a pool's ``vms``) are declared nowhere. The two calls that reach another VM's
disks are checked against the cluster's VMs before they go (``agent.proxy.pools``): a disk moved to
another VM (a volume attached or detached) only between VMs of one flex.plane pool (``SAME_POOL``), and a
clone only of a template or of a VM of the pool it is cloned into (``CLONE_INTO``: a volume snapshot, or
a volume made from one).

To forward another endpoint or parameter, add a row or a key; path placeholders are the keys of
:data:`agent.proxy.paths.PLACEHOLDERS`, validators live in :mod:`agent.proxy.params`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from agent.proxy import params as p
from agent.proxy.paths import compile_pattern

# Proxmox caps a guest's description (and a pool's comment) at 8 KiB.
DESCRIPTION = p.text(8192)
UNBOUNDED = 2**31 - 1


@dataclass(frozen=True)
class Route:
    """One row: a method, a path pattern with {placeholders}, and the parameters it accepts."""

    method: str
    pattern: str
    regex: re.Pattern[str]
    params: Mapping[str, p.Validator] = field(default_factory=dict)
    # A parameter naming a VM that must be in the same flex.plane pool as the path's ``{vmid}``, checked
    # against the cluster's VMs before the call is forwarded (``agent.proxy.pools``).
    same_pool: str | None = None
    # A parameter naming the pool a clone goes into: the path's VM must be a template or a VM of that pool.
    clone_into: str | None = None

    @classmethod
    def compile(cls, method: str, pattern: str, params: Mapping[str, p.Validator] | None = None) -> Route:
        regex = compile_pattern(method, pattern)
        return cls(
            method, pattern, regex, dict(params or {}), SAME_POOL.get(pattern), CLONE_INTO.get(pattern)
        )

    @property
    def reads_pools(self) -> bool:
        """Whether it is forwarded only after the cluster's VMs are read and checked."""
        return self.same_pool is not None or self.clone_into is not None

    def match(self, path: str) -> re.Match[str] | None:
        return self.regex.fullmatch(path)

    def matches(self, path: str) -> bool:
        return self.regex.fullmatch(path) is not None


Row = tuple[str, str] | tuple[str, str, Mapping[str, p.Validator]]

# A volume moves from VM to VM (its holder and the VMs it is attached to) by Proxmox's disk reassignment.
MOVE_DISK = "/nodes/{node}/qemu/{vmid}/move_disk"
SAME_POOL: Mapping[str, str] = {MOVE_DISK: "target-vmid"}
# A clone copies every disk of the path's VM into the pool it names.
CLONE = "/nodes/{node}/qemu/{vmid}/clone"
CLONE_INTO: Mapping[str, str] = {CLONE: "pool"}


def compile_table(rows: Iterable[Row]) -> tuple[Route, ...]:
    return tuple(Route.compile(*row) for row in rows)


_TASK_LISTING: Mapping[str, p.Validator] = {
    "limit": p.integer(0, 10_000),
    "start": p.integer(0, UNBOUNDED),
    "source": p.one_of("all", "active", "archive"),
    "since": p.integer(0, 2**40),
    "until": p.integer(0, 2**40),
    "vmid": p.vmid,
    "errors": p.boolean,
    "typefilter": p.matching(r"[a-z]{1,32}", "a task type"),
}

# A config write: what the orchestrator sets on a VM it clones, configures, resizes or tags, and the
# NICs it attaches (virtio, on a VNet, firewalled) with their cloud-init addresses and DNS. No
# hookscript, args, hostpci, usb, serial, parallel, audio, machine, bios, efidisk, tpmstate, startup,
# protection, lock or revert: none is ever sent; ``delete`` only detaches NICs (net<n>, ipconfig<n>).
_CONFIG: Mapping[str, p.Validator] = {
    "cores": p.integer(1, 1024),
    "sockets": p.integer(1, 16),
    "memory": p.integer(16, 4 * 1024 * 1024),
    "cpu": p.cpu_model,
    "agent": p.boolean,
    "name": p.dns_name,
    "description": DESCRIPTION,
    "tags": p.tags,
    "ciuser": p.user_name,
    "sshkeys": p.ssh_keys,
    "cicustom": p.cicustom,
    **p.indexed("ipconfig", range(32), p.ipconfig),
    **p.indexed("net", range(32), p.nic),
    "nameserver": p.nameservers,
    "searchdomain": p.dns_name,
    "delete": p.detachable_keys,
    **p.DRIVES,
}

# A VM's own firewall (``/nodes/{node}/qemu/{vmid}/firewall``; needs VM.Config.Network on the VM):
# options, rules, IP sets. Never the cluster's or a node's firewall, security groups or aliases.
_FIREWALL = "/nodes/{node}/qemu/{vmid}/firewall"
_FIREWALL_OPTIONS: Mapping[str, p.Validator] = {
    "enable": p.boolean,
    "policy_in": p.firewall_policy,
    "policy_out": p.firewall_policy,
    "dhcp": p.boolean,
    "ipfilter": p.boolean,
}
_FIREWALL_RULE: Mapping[str, p.Validator] = {
    "type": p.one_of("in", "out"),
    "action": p.firewall_policy,
    "proto": p.one_of("tcp", "udp", "icmp"),
    "dport": p.port_list,
    "source": p.firewall_address,
    "dest": p.firewall_address,
    "enable": p.boolean,
    "comment": p.comment,
    "pos": p.integer(0, 999_999),
}
FIREWALL_DECLARATIONS: tuple[Row, ...] = (
    ("GET", f"{_FIREWALL}/options"),
    ("PUT", f"{_FIREWALL}/options", _FIREWALL_OPTIONS),
    ("GET", f"{_FIREWALL}/rules"),
    ("POST", f"{_FIREWALL}/rules", _FIREWALL_RULE),
    ("DELETE", f"{_FIREWALL}/rules/{{pos}}"),
    ("GET", f"{_FIREWALL}/ipset"),
    ("POST", f"{_FIREWALL}/ipset", {"name": p.ipset_name, "comment": p.comment}),
    ("GET", f"{_FIREWALL}/ipset/{{name}}"),
    ("POST", f"{_FIREWALL}/ipset/{{name}}", {"cidr": p.ipv4_or_cidr, "comment": p.comment}),
    ("DELETE", f"{_FIREWALL}/ipset/{{name}}"),
    ("DELETE", f"{_FIREWALL}/ipset/{{name}}/{{cidr}}"),
)

# The cluster's SDN (any node answers for the cluster): tenant networks are VNets with one subnet, in
# a VXLAN or VLAN zone; writes stay pending until PUT /cluster/sdn applies them. Never controllers,
# IPAMs, DNS, DHCP, fabrics or a VNet's firewall; no VLAN-aware VNets, SNAT or DHCP ranges.
_SDN = "/cluster/sdn"
SDN_DECLARATIONS: tuple[Row, ...] = (
    ("GET", f"{_SDN}/zones"),
    ("GET", f"{_SDN}/zones/{{zone}}"),
    ("DELETE", f"{_SDN}/zones/{{zone}}"),
    (
        "POST",
        f"{_SDN}/zones",
        {
            "zone": p.sdn_id,
            "type": p.one_of("vxlan", "vlan"),
            "peers": p.ipv4_list,
            "bridge": p.bridge,
            "mtu": p.integer(576, 65520),
            "nodes": p.node_list,
            "ipam": p.one_of("pve"),
        },
    ),
    ("GET", f"{_SDN}/vnets", {"pending": p.boolean, "running": p.boolean}),
    ("GET", f"{_SDN}/vnets/{{vnet}}"),
    (
        "POST",
        f"{_SDN}/vnets",
        {"vnet": p.sdn_id, "zone": p.sdn_id, "tag": p.integer(1, 16_777_215), "alias": p.vnet_alias},
    ),
    ("DELETE", f"{_SDN}/vnets/{{vnet}}"),
    ("GET", f"{_SDN}/vnets/{{vnet}}/subnets"),
    (
        "POST",
        f"{_SDN}/vnets/{{vnet}}/subnets",
        {"subnet": p.ipv4_cidr, "type": p.one_of("subnet"), "gateway": p.ipv4},
    ),
    ("DELETE", f"{_SDN}/vnets/{{vnet}}/subnets/{{subnet}}"),
    ("PUT", _SDN),
)

ALLOWED_DECLARATIONS: tuple[Row, ...] = (
    ("GET", "/version"),
    ("GET", "/nodes"),
    ("GET", "/cluster/resources", {"type": p.one_of("vm", "storage", "node", "sdn")}),
    ("GET", "/cluster/status"),
    ("GET", "/cluster/nextid"),
    ("GET", "/nodes/{node}/status"),
    (
        "GET",
        "/nodes/{node}/storage",
        {
            "content": p.one_of("images", "rootdir", "iso", "vztmpl", "backup", "snippets", "import"),
            "enabled": p.boolean,
        },
    ),
    ("GET", "/nodes/{node}/tasks", _TASK_LISTING),
    ("GET", "/nodes/{node}/tasks/{upid}/status"),
    (
        "GET",
        "/nodes/{node}/tasks/{upid}/log",
        {"start": p.integer(0, UNBOUNDED), "limit": p.integer(0, 50_000)},
    ),
    # The VM lifecycle. VMs are cloned from templates; the only VM made from nothing is a volume's holder
    # (orchestrator/services/volumes): no NIC, no boot, one new disk. A restore (``archive``) is not here.
    (
        "POST",
        "/nodes/{node}/qemu",
        {
            "vmid": p.vmid,
            "name": p.volume_holder_name,
            "pool": p.pool,
            "tags": p.tags,
            "description": DESCRIPTION,
            "scsihw": p.one_of("virtio-scsi-single", "virtio-scsi-pci"),
            "scsi0": p.new_disk,
        },
    ),
    (
        "POST",
        CLONE,
        {
            "newid": p.new_vmid,
            "name": p.guest_name,
            "pool": p.pool,
            "description": DESCRIPTION,
            "full": p.boolean,
            "target": p.node,
        },
    ),
    ("GET", "/nodes/{node}/qemu/{vmid}/config", {"current": p.boolean}),
    ("POST", "/nodes/{node}/qemu/{vmid}/config", _CONFIG),
    ("PUT", "/nodes/{node}/qemu/{vmid}/config", _CONFIG),
    ("GET", "/nodes/{node}/qemu/{vmid}/pending"),
    ("PUT", "/nodes/{node}/qemu/{vmid}/resize", {"disk": p.drive_key, "size": p.disk_size}),
    # A volume attached and detached: its disk reassigned to a VM of the same pool (checked, SAME_POOL).
    (
        "POST",
        MOVE_DISK,
        {"disk": p.drive_or_unused_key, "target-vmid": p.new_vmid, "target-disk": p.drive_or_unused_key},
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/{action}",
        {"timeout": p.integer(0, 86_400), "forceStop": p.boolean},
    ),
    ("GET", "/nodes/{node}/qemu/{vmid}/status/current"),
    ("DELETE", "/nodes/{node}/qemu/{vmid}", {"purge": p.boolean, "destroy-unreferenced-disks": p.boolean}),
    # Snapshots of a VM (orchestrator/sources/proxmox/snapshots.py): list, take, roll back, delete.
    ("GET", "/nodes/{node}/qemu/{vmid}/snapshot"),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/snapshot",
        {
            "snapname": p.matching(r"[A-Za-z][A-Za-z0-9_-]{1,39}", "a snapshot name"),
            "description": DESCRIPTION,
            "vmstate": p.boolean,
        },
    ),
    ("DELETE", "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}"),
    ("POST", "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", {"start": p.boolean}),
    ("GET", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"),
    # A VM's usage graphs (the portal's VM page): Proxmox's RRD, one read per time range.
    (
        "GET",
        "/nodes/{node}/qemu/{vmid}/rrddata",
        {"timeframe": p.one_of("hour", "day", "week", "month", "year"), "cf": p.one_of("AVERAGE", "MAX")},
    ),
    # Draining a host: the precondition (which nodes, local disks and devices), then the migration.
    ("GET", "/nodes/{node}/qemu/{vmid}/migrate", {"target": p.node}),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/migrate",
        {"target": p.node, "online": p.boolean, "with-local-disks": p.boolean},
    ),
    # VDC pools: only fp-<slug>, and only their comment (never their members: vms, storage).
    ("GET", "/pools", {"type": p.one_of("qemu", "lxc", "storage")}),
    ("POST", "/pools", {"poolid": p.pool, "comment": DESCRIPTION}),
    ("GET", "/pools/{poolid}", {"type": p.one_of("qemu", "lxc", "storage")}),
    ("PUT", "/pools/{poolid}", {"comment": DESCRIPTION}),
    ("DELETE", "/pools/{poolid}"),
    *FIREWALL_DECLARATIONS,
    *SDN_DECLARATIONS,
)

ALLOWED: tuple[Route, ...] = compile_table(ALLOWED_DECLARATIONS)
# method, path pattern below /api2/json
ALLOWED_ROWS: tuple[tuple[str, str], ...] = tuple((route.method, route.pattern) for route in ALLOWED)
