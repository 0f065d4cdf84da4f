"""What the devstack's world contains: zones, nodes, users and a few VMs in two VDCs."""

from __future__ import annotations

from typing import Any

from fakepve import FakePve

PROJECT_ID = "flexplane"
NAMESPACE = "flexplane"

USERS: list[dict[str, Any]] = [
    {
        "username": "admin",
        "password": "admin",
        "name": "Platform Admin",
        "email": "admin@example.com",
        "roles": ["ADMIN"],
    },
    {
        "username": "alice",
        "password": "alice",
        "name": "Alice Example",
        "email": "alice@example.com",
        "roles": ["USER", "vdc:demo"],
    },
    {
        "username": "bob",
        "password": "bob",
        "name": "Bob Example",
        "email": "bob@example.com",
        "roles": ["USER", "vdc:other"],
    },
]

# (vmid, name, node, status, vdc or None for a VM flex.plane does not manage)
GUESTS: dict[str, list[tuple[int, str, str, str, str | None]]] = {
    "zone-a": [
        (100, "web-1", "pve1", "running", "demo"),
        (101, "db-1", "pve2", "stopped", "demo"),
        (102, "ci-runner", "pve3", "running", "other"),
        (103, "legacy-mail", "pve1", "running", None),
    ],
    "zone-b": [
        (100, "web-2", "pve1", "running", "demo"),
        (101, "analytics", "pve2", "running", "other"),
    ],
}
TEMPLATE_VMID = 9000


def seed_guests(pve: FakePve, zone: str) -> None:
    """Add the zone's VMs (in their VDC pools, with their tags) and a template to a fake."""
    for vmid, name, node, status, vdc in GUESTS.get(zone, []):
        config = {
            "cores": 2,
            "memory": 2048,
            "scsi0": f"local-lvm:vm-{vmid}-disk-0,size=20G",
            "net0": "virtio,bridge=vmbr0",
            "ostype": "l26",
        }
        if vdc:
            config["tags"] = f"fp-vdc-{vdc}"
        pve.add_vm(vmid, name, node=node, status=status, config=config, pool=f"fp-{vdc}" if vdc else None)
    pve.add_vm(
        TEMPLATE_VMID,
        "tpl-debian-12",
        node="pve1",
        template=True,
        config={"cores": 1, "memory": 1024, "scsi0": f"local-lvm:base-{TEMPLATE_VMID}-disk-0,size=4G"},
    )
