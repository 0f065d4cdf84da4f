"""What the devstack's world contains: zones, nodes, users, the catalog, two VDCs and a few VMs in them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fakepve import FakePve

from devstack.images import ImageServer

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
    # A tenant organization: its owner creates its VDCs within the allowance an admin gives it.
    {
        "username": "olivia",
        "password": "olivia",
        "name": "Olivia Owner",
        "email": "olivia@acme.example",
        "roles": ["USER", "ORG_OWNER"],
        "organization": "acme",
    },
    {
        "username": "oscar",
        "password": "oscar",
        "name": "Oscar Acme",
        "email": "oscar@acme.example",
        "roles": ["USER"],
        "organization": "acme",
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

# --- the catalog: ConfigMaps of the platform namespace, specs in the API's camelCase -------------------

COMPUTE_PROFILES: list[dict[str, Any]] = [
    {
        "name": "small",
        "vcpus": 1,
        "memoryMib": 1024,
        "cpuType": "x86-64-v2-AES",
        "description": "1 vCPU, 1 GiB",
    },
    {
        "name": "medium",
        "vcpus": 2,
        "memoryMib": 4096,
        "cpuType": "x86-64-v2-AES",
        "description": "2 vCPUs, 4 GiB",
    },
    {
        "name": "large",
        "vcpus": 4,
        "memoryMib": 8192,
        "cpuType": "x86-64-v2-AES",
        "description": "4 vCPUs, 8 GiB",
    },
]

# The storage each zone offers to the "standard" profile.
STANDARD_STORAGE = "local-lvm"
STORAGE_PROFILES: list[dict[str, Any]] = [
    {
        "name": "standard",
        "storages": {},  # filled with every zone of the world: {zone: STANDARD_STORAGE}
        "defaultGb": 20,
        "minGb": 10,
        "maxGb": 200,
        "bus": "scsi",
        "format": "raw",
        "readMbps": None,
        "writeMbps": None,
        "readIops": None,
        "writeIops": None,
        "description": "Thin LVM on the node's local disks",
    },
]


IMAGES: list[dict[str, Any]] = [
    {
        "name": "debian-12",
        "osFamily": "debian",
        "file": "debian-12.qcow2",
        "defaultUser": "debian",
        "minDiskGb": 3,
        "description": "Debian 12 (bookworm) generic cloud image",
    },
    {
        "name": "ubuntu-24.04",
        "osFamily": "ubuntu",
        "file": "ubuntu-24.04.qcow2",
        "defaultUser": "ubuntu",
        "minDiskGb": 4,
        "description": "Ubuntu 24.04 LTS (noble) server cloud image",
    },
]

# The Kubernetes versions tenants' clusters are offered, each with its nodes' image (a world that runs the
# Cluster API providers has them: make dev's).
KUBERNETES_VERSIONS: list[dict[str, Any]] = [
    {"version": "v1.33.4", "image": "ubuntu-24.04"},
    {"version": "v1.34.2", "image": "ubuntu-24.04"},
]

ALL_COMPUTE = [p["name"] for p in COMPUTE_PROFILES]
ALL_IMAGES = [i["name"] for i in IMAGES]
VDCS: list[dict[str, Any]] = [
    {
        "id": "demo",
        "name": "Demo",
        "description": "Alice's team",
        "zones": ["zone-a", "zone-b"],
        "computeProfiles": ALL_COMPUTE,
        "storageProfiles": ["standard"],
        "images": ALL_IMAGES,
        "quota": {"vcpus": 16, "memoryMib": 32768, "diskGb": 500, "vms": 10},
    },
    {
        "id": "other",
        "name": "Other",
        "description": "Bob's team",
        "zones": ["zone-a", "zone-b"],
        "computeProfiles": ["small", "medium"],
        "storageProfiles": ["standard"],
        "images": ["debian-12"],
        "quota": {"vcpus": 8, "memoryMib": 16384, "diskGb": 200, "vms": 5},
    },
]

# (kind, id, spec, extra labels): what ``orchestrator.sources.kube`` reads as the catalog.
CatalogObject = tuple[str, str, dict[str, Any], dict[str, str]]


def catalog(zones: Sequence[str], images: ImageServer, *, kubernetes: bool = False) -> list[CatalogObject]:
    """The catalog of a world with these zones, its images served by ``images`` (and, with
    ``kubernetes``, the Kubernetes versions offered).

    It has no hosts: each node joins through enrollment (``flexplane-agent bootstrap``), as on a
    real platform, and that adds it. Zone lists are cut to the world's zones, so that a world of
    one zone has a consistent catalog.
    """
    objects: list[CatalogObject] = []
    for zone in zones:
        # Routed: the tenant clusters' workers (processes of this machine) reach the management cluster.
        spec = {
            "id": zone,
            "name": zone.replace("-", " ").title(),
            "description": "",
            "network": {"routed": True},
        }
        objects.append(("zone", zone, spec, {}))
    for profile in COMPUTE_PROFILES:
        objects.append(("compute-profile", profile["name"], dict(profile), {}))
    for profile in STORAGE_PROFILES:
        objects.append(
            (
                "storage-profile",
                profile["name"],
                {**profile, "storages": dict.fromkeys(zones, STANDARD_STORAGE)},
                {},
            )
        )
    for image in IMAGES:
        spec = {k: v for k, v in image.items() if k != "file"}
        spec.update(sourceUrl=images.url(image["file"]), checksum=images.checksum(image["file"]))
        objects.append(("image", image["name"], spec, {}))
    for vdc in VDCS:
        objects.append(("vdc", vdc["id"], {**vdc, "zones": [z for z in vdc["zones"] if z in zones]}, {}))
    if kubernetes:
        objects.extend(("kubernetesversion", v["version"], dict(v), {}) for v in KUBERNETES_VERSIONS)
    return objects


def seed_pools(pve: FakePve, zone: str) -> None:
    """The pool ``fp-<vdc>`` of each seeded VDC in this zone, as creating the VDC made it."""
    for vdc in VDCS:
        if zone in vdc["zones"]:
            pool = f"fp-{vdc['id']}"
            pve.pools.setdefault(pool, set())
            pve.pool_info.setdefault(pool, {"comment": f"flex.plane VDC {vdc['id']}", "storage": set()})


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
