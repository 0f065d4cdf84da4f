"""The VM suites' kit: queries, helpers that read the fake Proxmox's own state, and scratch
names and VDCs that clean up after themselves. Shared by tests/orchestrator/graphql/test_vm_*.py
and test_tasks.py.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.apikit import Answer, Api, Zones

VM_FIELDS = "id name status zone host vdc cores memoryMb diskGb computeProfile storageProfile image lock"
TASK_FIELDS = "id status type host result"
CREATE = f"""mutation($input: CreateVirtualMachineInput!) {{ createVirtualMachine(input: $input) {{
  virtualMachine {{ {VM_FIELDS} }} task {{ {TASK_FIELDS} }}
  placement {{ zone host reasons rejected {{ host reason }} }}
  errors {{ field message code }} }} }}"""
GET = f"query($id: ID!) {{ virtualMachine(id: $id) {{ {VM_FIELDS} ipAddresses }} }}"
LIST = f"""query($filter: VirtualMachineFilter) {{ virtualMachines(first: 500, filter: $filter) {{
  edges {{ node {{ {VM_FIELDS} ipAddresses }} }} }} }}"""
RESIZE = f"""mutation($input: ResizeVirtualMachineInput!) {{ resizeVirtualMachine(input: $input) {{
  virtualMachine {{ {VM_FIELDS} }} task {{ {TASK_FIELDS} }} errors {{ field message code }} }} }}"""
# An Ed25519 public key (its private half was thrown away).
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"
# What the devstack's catalog offers VDC demo (devstack/seed.py).
SMALL, MEDIUM, LARGE = "small", "medium", "large"
STANDARD = "standard"
DEBIAN = "debian-12"


def action(name: str, extra: str = "") -> str:
    """The document of a VM action mutation (startVirtualMachine, ...), by id (and extra arguments)."""
    params = "$id: ID!" + (", $timeout: Int" if "timeout" in extra else "")
    return f"""mutation({params}) {{ {name}(id: $id{extra}) {{
      virtualMachine {{ {VM_FIELDS} }} task {{ {TASK_FIELDS} }} errors {{ field message code }} }} }}"""


def payload(answer: Answer, field: str) -> dict[str, Any]:
    assert answer.status == 200, answer.body
    assert answer.errors == [], answer.errors
    result: dict[str, Any] = answer.data[field]
    return result


# Creates that wait behind many others for their VDC's lock may take longer than support's 30 s.
CREATE_TIMEOUT = 120.0


def create(api: Api, user: str, vdc: str | None, **fields: Any) -> dict[str, Any]:
    """createVirtualMachine's payload (defaults: a small Debian VM in zone-a)."""
    values: dict[str, Any] = {
        "computeProfile": SMALL,
        "storageProfile": STANDARD,
        "image": DEBIAN,
        "zone": "zone-a",
    }
    values.update(fields)
    headers = {"Authorization": f"Bearer {api.token(user)}", **({"FlexPlane-VDC-ID": vdc} if vdc else {})}
    answer = api.raw(CREATE, headers=headers, variables={"input": values}, timeout=CREATE_TIMEOUT)
    return payload(answer, "createVirtualMachine")


def act(api: Api, user: str, name: str, ident: str, **variables: Any) -> dict[str, Any]:
    extra = ", timeout: $timeout" if "timeout" in variables else ""
    return payload(api(action(name, extra), user=user, variables={"id": ident, **variables}), name)


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["errors"] == [], result["errors"]
    return result


def vmid_of(ident: str) -> int:
    return int(ident.split("/")[1])


# --- the fake's own state -------------------------------------------------------------------------


def fake_vms(world: Zones, zone: str) -> dict[int, dict[str, Any]]:
    """Every guest of a zone's fake, as the fake holds it."""
    pve = world.fakes[zone].pve

    def read() -> dict[int, dict[str, Any]]:
        return {
            vm.vmid: {
                "name": vm.name,
                "node": vm.node,
                "status": vm.status,
                "pool": vm.pool,
                "template": vm.template,
                "lock": vm.lock,
                "config": dict(vm.config),
                "pending": dict(vm.pending),
            }
            for vm in pve.vms
        }

    result: dict[int, dict[str, Any]] = world.fakes.on_loop(read)
    return result


def fake_vm(world: Zones, ident: str) -> dict[str, Any] | None:
    zone, vmid = ident.split("/")
    return fake_vms(world, zone).get(int(vmid))


def put_tagged_vm(
    pve: Any, vmid: int, name: str, vdc: str, *, status: str, tags: str = "", disk: str
) -> None:
    """A VM of ``vdc`` put straight into a fake's Proxmox (on its loop), on pve1: 1 vCPU, 512 MiB, a disk of
    ``disk``, tagged and pooled as flex.plane tags and pools its VMs (``tags``: more tags after the VDC's)."""
    pve.add_vm(
        vmid,
        name,
        node="pve1",
        status=status,
        config={
            "cores": 1,
            "memory": 512,
            "tags": f"fp-vdc-{vdc}{tags}",
            "scsi0": f"local-lvm:vm-{vmid}-disk-0,size={disk}",
        },
        pool=f"fp-{vdc}",
    )


def present(world: Zones, ident: str) -> dict[str, Any]:
    """The fake's guest of that global id, which must exist."""
    vm = fake_vm(world, ident)
    assert vm is not None, f"{ident} is not in the fake"
    return vm


def named(world: Zones, name: str) -> list[tuple[str, int]]:
    """(zone, vmid) of every guest of that name, in every zone."""
    return [
        (zone, vmid)
        for zone in world.fakes.zones
        for vmid, vm in fake_vms(world, zone).items()
        if vm["name"] == name
    ]


def volumes_of(world: Zones, zone: str, vmid: int) -> list[str]:
    """The disks the fake's storages hold for a VMID."""
    pve = world.fakes[zone].pve

    def read() -> list[str]:
        return [
            f"{sid}:{name}"
            for sid, store in pve.storages.items()
            for name, volume in store.get("volumes", {}).items()
            if volume.get("vmid") == vmid
        ]

    result: list[str] = world.fakes.on_loop(read)
    return result


def pool_members(world: Zones, zone: str, pool: str) -> set[int]:
    pve = world.fakes[zone].pve
    result: set[int] = world.fakes.on_loop(lambda: set(pve.pools.get(pool, set())))
    return result


def zone_nodes(world: Zones, zones: set[str]) -> set[tuple[str, str]]:
    """Every node of these zones, as the fakes hold them."""

    def read(pve: Any) -> set[str]:
        return set(pve.nodes)

    return {(zone, node) for zone in zones for node in world.fakes.on_loop(read, world.fakes[zone].pve)}


def demo_nodes(world: Zones) -> set[tuple[str, str]]:
    """The nodes that host VDC demo's VMs, as the fakes hold them."""

    def read(pve: Any) -> set[str]:
        return {vm.node for vm in pve.vms if "fp-vdc-demo" in str(vm.config.get("tags"))}

    return {
        (zone, node)
        for zone, fake in world.fakes.zones.items()
        for node in world.fakes.on_loop(read, fake.pve)
    }


def requests_to(world: Zones, zone: str, method: str, suffix: str) -> list[dict[str, str]]:
    """The form bodies of the requests the fake received for paths ending with suffix."""
    pve = world.fakes[zone].pve
    seen = world.fakes.on_loop(lambda: [(m, p, b) for m, p, b in pve.requests if m == method])
    return [dict(urllib.parse.parse_qsl(body.decode())) for _, path, body in seen if path.endswith(suffix)]


def forget(world: Zones, zone: str, vmid: int) -> None:
    """Remove a guest from a fake directly (the last resort of cleanup), with its disks."""
    pve = world.fakes[zone].pve

    def drop() -> None:
        pve.vms[:] = [vm for vm in pve.vms if vm.vmid != vmid]
        for store in pve.storages.values():
            volumes = store.get("volumes", {})
            for name in [n for n, v in volumes.items() if v.get("vmid") == vmid]:
                del volumes[name]
        for members in pve.pools.values():
            members.discard(vmid)

    world.fakes.on_loop(drop)


def restore(world: Zones) -> None:
    """Undo the faults a test may have left: nodes back online, no injected failures, no latency, no locks."""
    for zone, fake in world.fakes.zones.items():
        for node in fake.node_addresses:
            world.fakes.set_node_offline(zone, node, False)
        pve = fake.pve

        def reset(pve: Any = pve) -> None:
            pve.failures.clear()
            pve.time_scale = 0
            pve.network.update(latency=0.0, jitter=0.0, node_latency={})
            for vm in pve.vms:
                vm.lock_holder = None
                if vm.lock in ("backup", "snapshot"):
                    vm.lock = None
                    vm.config.pop("lock", None)

        world.fakes.on_loop(reset)


@contextmanager
def vm_names(api: Api, world: Zones) -> Iterator[Callable[[str], str]]:
    """Names for a test's VMs; afterwards every VM so named is deleted (through the API as admin, else
    from the fake), and the faults the test injected are undone."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    try:
        yield lambda what: f"{prefix}-{what}"
    finally:
        restore(world)
        for zone in world.fakes.zones:
            for vmid, vm in fake_vms(world, zone).items():
                if vm["name"].startswith(prefix):
                    _delete(api, world, zone, vmid)


@contextmanager
def scratch_vdcs(api: Api, world: Zones) -> Iterator[Callable[..., str]]:
    """Makes VDCs (of zone-a unless told) as admin, with a quota; afterwards their VMs go, and the VDCs."""
    made: list[str] = []

    def make(
        storage_profiles: tuple[str, ...] = (STANDARD,), zones: tuple[str, ...] = ("zone-a",), **quota: int
    ) -> str:
        ident = f"t{uuid.uuid4().hex[:8]}"
        limits = {"vcpus": 64, "memoryMib": 65536, "diskGb": 2000, "vms": 50, **quota}
        answer = api(
            """mutation($input: VdcInput!) { createVdc(input: $input) { vdc { id } errors { message } } }""",
            user="admin",
            variables={
                "input": {
                    "id": ident,
                    "zones": list(zones),
                    "computeProfiles": [SMALL, MEDIUM],
                    "storageProfiles": list(storage_profiles),
                    "images": [DEBIAN],
                    "quota": limits,
                }
            },
        )
        assert payload(answer, "createVdc")["errors"] == []
        made.append(ident)
        return ident

    try:
        yield make
    finally:
        restore(world)
        for ident in made:
            for zone in world.fakes.zones:
                for vmid, vm in fake_vms(world, zone).items():
                    if f"fp-vdc-{ident}" in str(vm["config"].get("tags")) or vm["pool"] == f"fp-{ident}":
                        _delete(api, world, zone, vmid)
            api(
                "mutation($id: ID!) { deleteVdc(id: $id) { errors { message } } }",
                user="admin",
                variables={"id": ident},
            )


def _delete(api: Api, world: Zones, zone: str, vmid: int) -> None:
    answer = api(action("deleteVirtualMachine"), user="admin", variables={"id": f"{zone}/{vmid}"})
    if answer.errors or answer.data["deleteVirtualMachine"]["errors"]:
        forget(world, zone, vmid)
