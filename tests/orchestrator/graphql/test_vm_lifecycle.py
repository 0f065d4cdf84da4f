"""A VM's whole life through the whole stack: the GraphQL API over HTTP, the orchestrator, the agents
over mTLS, fake Proxmox. Every step is checked in the fake's own state, not in the API's answer.

The helpers at the top are shared with the other VM suites (test_vm_faults, test_vm_concurrency,
test_tasks), which import them from here.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from devstack.world import World
from tests.support import Answer, GraphQL

# ------------------------------------------------------------------------------------------ the kit

VM_FIELDS = "id name status zone host node vdc cores memoryMb diskGb computeProfile storageProfile image lock"
TASK_FIELDS = "id status type node result"
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


def create(api: GraphQL, user: str, vdc: str | None, **fields: Any) -> dict[str, Any]:
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


def act(api: GraphQL, user: str, name: str, ident: str, **variables: Any) -> dict[str, Any]:
    extra = ", timeout: $timeout" if "timeout" in variables else ""
    return payload(api(action(name, extra), user=user, variables={"id": ident, **variables}), name)


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["errors"] == [], result["errors"]
    return result


def vmid_of(ident: str) -> int:
    return int(ident.split("/")[1])


# --- the fake's own state -------------------------------------------------------------------------


def fake_vms(world: World, zone: str) -> dict[int, dict[str, Any]]:
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


def fake_vm(world: World, ident: str) -> dict[str, Any] | None:
    zone, vmid = ident.split("/")
    return fake_vms(world, zone).get(int(vmid))


def present(world: World, ident: str) -> dict[str, Any]:
    """The fake's guest of that global id, which must exist."""
    vm = fake_vm(world, ident)
    assert vm is not None, f"{ident} is not in the fake"
    return vm


def named(world: World, name: str) -> list[tuple[str, int]]:
    """(zone, vmid) of every guest of that name, in every zone."""
    return [
        (zone, vmid)
        for zone in world.fakes.zones
        for vmid, vm in fake_vms(world, zone).items()
        if vm["name"] == name
    ]


def volumes_of(world: World, zone: str, vmid: int) -> list[str]:
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


def pool_members(world: World, zone: str, pool: str) -> set[int]:
    pve = world.fakes[zone].pve
    result: set[int] = world.fakes.on_loop(lambda: set(pve.pools.get(pool, set())))
    return result


def requests_to(world: World, zone: str, method: str, suffix: str) -> list[dict[str, str]]:
    """The form bodies of the requests the fake received for paths ending with suffix."""
    pve = world.fakes[zone].pve
    seen = world.fakes.on_loop(lambda: [(m, p, b) for m, p, b in pve.requests if m == method])
    return [dict(urllib.parse.parse_qsl(body.decode())) for _, path, body in seen if path.endswith(suffix)]


def forget(world: World, zone: str, vmid: int) -> None:
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


def restore(world: World) -> None:
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
def vm_names(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
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
def scratch_vdcs(api: GraphQL, world: World) -> Iterator[Callable[..., str]]:
    """Makes VDCs of zone-a (as admin) with a quota; afterwards their VMs go, and the VDCs."""
    made: list[str] = []

    def make(storage_profiles: tuple[str, ...] = (STANDARD,), **quota: int) -> str:
        ident = f"t{uuid.uuid4().hex[:8]}"
        limits = {"vcpus": 64, "memoryMib": 65536, "diskGb": 2000, "vms": 50, **quota}
        answer = api(
            """mutation($input: VdcInput!) { createVdc(input: $input) { vdc { id } errors { message } } }""",
            user="admin",
            variables={
                "input": {
                    "id": ident,
                    "zones": ["zone-a"],
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


def _delete(api: GraphQL, world: World, zone: str, vmid: int) -> None:
    answer = api(action("deleteVirtualMachine"), user="admin", variables={"id": f"{zone}/{vmid}"})
    if answer.errors or answer.data["deleteVirtualMachine"]["errors"]:
        forget(world, zone, vmid)


@pytest.fixture
def vm_name(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    with vm_names(api, world) as name:
        yield name


# ------------------------------------------------------------------------------------------ the life


def test_alice_runs_a_vm_through_its_whole_life(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    name = vm_name("web")

    # Create: placed, cloned, tagged, configured, grown and started, as the fake shows.
    created = ok(
        create(api, "alice", "demo", name=name, diskGb=16, sshKeys=[SSH_KEY], idempotencyKey=f"{name}-key")
    )
    vm, placement = created["virtualMachine"], created["placement"]
    assert vm["vdc"] == "demo"
    assert placement["zone"] == "zone-a"
    assert placement["host"] in {"pve1", "pve2", "pve3"}
    assert placement["reasons"]
    assert {r["host"] for r in placement["rejected"]} == {"pve1", "pve2", "pve3"} - {placement["host"]}
    assert created["task"]["type"] == "qmstart"
    assert created["task"]["status"] == "SUCCEEDED"
    zone, vmid = vm["id"].split("/")
    fake = fake_vm(world, vm["id"])
    assert fake is not None
    assert fake["name"] == name
    assert fake["node"] == placement["host"]  # it runs on the host placement chose
    assert fake["status"] == "running"
    assert fake["pool"] == "fp-demo"
    assert fake["template"] is False
    config = fake["config"]
    assert set(config["tags"].split(";")) >= {
        "fp-vdc-demo",
        "fp-cp-small",
        "fp-sp-standard",
        "fp-img-debian-12",
    }
    assert any(tag.startswith("fp-idem-") for tag in config["tags"].split(";"))
    assert (str(config["cores"]), str(config["memory"])) == ("1", "1024")
    assert config["cpu"] == "x86-64-v2-AES"
    assert config["ciuser"] == "debian"
    assert config["ipconfig0"] == "ip=dhcp"
    assert urllib.parse.unquote(config["sshkeys"]).strip() == SSH_KEY
    assert config["description"].startswith("Managed by flex.plane: a VM of VDC demo.")
    assert "size=16G" in config["scsi0"].split(",")

    # Stop.
    stopped = ok(act(api, "alice", "stopVirtualMachine", vm["id"]))
    assert stopped["task"]["type"] == "qmstop"
    assert present(world, vm["id"])["status"] == "stopped"

    # Resize: another profile, and a bigger disk.
    resized = ok(
        payload(
            api(
                RESIZE,
                user="alice",
                variables={"input": {"id": vm["id"], "computeProfile": MEDIUM, "diskGb": 24}},
            ),
            "resizeVirtualMachine",
        )
    )
    assert resized["virtualMachine"]["computeProfile"] == MEDIUM
    config = present(world, vm["id"])["config"]
    assert (str(config["cores"]), str(config["memory"])) == ("2", "4096")
    assert "fp-cp-medium" in config["tags"].split(";")
    assert "fp-cp-small" not in config["tags"].split(";")
    assert "size=24G" in config["scsi0"].split(",")

    # Start again.
    started = ok(act(api, "alice", "startVirtualMachine", vm["id"]))
    assert started["virtualMachine"]["status"] == "running"
    assert present(world, vm["id"])["status"] == "running"

    # Delete: nothing remains, not the VM, not its disk, not its pool membership.
    deleted = ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))
    assert deleted["task"]["type"] == "qmdestroy"
    assert deleted["virtualMachine"]["status"] == "deleted"
    assert fake_vm(world, vm["id"]) is None
    assert volumes_of(world, zone, int(vmid)) == []
    assert int(vmid) not in pool_members(world, zone, "fp-demo")
    answer = api(GET, user="alice", vdc="demo", variables={"id": vm["id"]})
    assert answer.codes == ["NOT_FOUND"]


USER_DATA = "#cloud-config\npackages: [nginx]\nruncmd:\n  - [touch, /etc/flexplane-was-here]\n"


def snippets_of(world: World, zone: str, node: str) -> dict[str, str]:
    """The snippet files in the snippets folder of a node's agent, by name."""
    folder = world.agents[(zone, node)].config_path.parent / "snippets"
    return {path.name: path.read_text() for path in folder.glob("*")} if folder.is_dir() else {}


def test_alices_user_data_reaches_the_vm_as_vendor_data_and_goes_with_it(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    created = ok(create(api, "alice", "demo", name=vm_name("init"), userData=USER_DATA, sshKeys=[SSH_KEY]))
    vm = created["virtualMachine"]
    zone, vmid = vm["id"].split("/")
    snippet = f"fp-demo-{vmid}-vendor.yaml"

    config = present(world, vm["id"])["config"]
    assert config["cicustom"] == f"vendor=local:snippets/{snippet}"
    assert config["ciuser"] == "debian"  # Proxmox still makes the user data: user, keys, network
    assert urllib.parse.unquote(config["sshkeys"]).strip() == SSH_KEY
    assert snippets_of(world, zone, vm["host"]).get(snippet) == USER_DATA
    assert present(world, vm["id"])["status"] == "running"

    ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))
    assert fake_vm(world, vm["id"]) is None
    assert snippet not in snippets_of(world, zone, vm["host"])


def test_a_vm_without_user_data_has_no_cicustom(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("plain")))["virtualMachine"]
    zone, vmid = vm["id"].split("/")
    assert "cicustom" not in present(world, vm["id"])["config"]
    assert f"fp-demo-{vmid}-vendor.yaml" not in snippets_of(world, zone, vm["host"])


def test_a_create_that_fails_after_writing_the_snippet_removes_it(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    fake = world.fakes["zone-a"].pve
    world.fakes.on_loop(lambda: fake.fail("POST", "/status/start", times=1, error="qemu_exited_code"))
    result = create(api, "alice", "demo", name=vm_name("boom"), userData=USER_DATA)
    assert result["virtualMachine"] is None
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "was removed" in result["errors"][0]["message"]
    vmid = int(requests_to(world, "zone-a", "POST", "/clone")[-1]["newid"])
    assert fake_vm(world, f"zone-a/{vmid}") is None
    for zone, node in world.agents:
        assert f"fp-demo-{vmid}-vendor.yaml" not in snippets_of(world, zone, node)


def test_the_vm_lists_what_it_was_made_from(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    name = vm_name("db")
    created = ok(create(api, "alice", "demo", name=name, computeProfile=MEDIUM, diskGb=12))
    listed = [
        e["node"]
        for e in payload(
            api(LIST, user="alice", vdc="demo", variables={"filter": {"nameContains": name}}),
            "virtualMachines",
        )["edges"]
    ]
    assert len(listed) == 1
    assert listed[0]["id"] == created["virtualMachine"]["id"]
    assert (listed[0]["computeProfile"], listed[0]["storageProfile"], listed[0]["image"]) == (
        MEDIUM,
        STANDARD,
        DEBIAN,
    )
    assert (listed[0]["cores"], listed[0]["memoryMb"]) == (2, 4096)
    assert listed[0]["node"] == listed[0]["host"] == created["placement"]["host"]
    assert listed[0]["ipAddresses"] is None  # listings never ask the guest agent


def test_one_vm_shows_the_addresses_its_guest_agent_reports(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("app")))["virtualMachine"]
    one = api(GET, user="alice", vdc="demo", variables={"id": vm["id"]}).data["virtualMachine"]
    assert one["ipAddresses"] is None  # no guest agent answers yet

    zone, vmid = vm["id"].split("/")
    pve = world.fakes[zone].pve
    world.fakes.on_loop(lambda: setattr(next(v for v in pve.vms if v.vmid == int(vmid)), "agent", {}))
    one = api(GET, user="alice", vdc="demo", variables={"id": vm["id"]}).data["virtualMachine"]
    assert one["ipAddresses"] == ["192.0.2.10"]  # the fake agent's eth0; loopback left out
    assert one["status"] == "running"


def test_the_listing_filters_by_status_zone_and_name(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    running = ok(create(api, "alice", "demo", name=vm_name("one")))["virtualMachine"]
    other = ok(create(api, "alice", "demo", name=vm_name("two"), zone="zone-b"))["virtualMachine"]
    ok(act(api, "alice", "stopVirtualMachine", other["id"]))

    def names(**where: Any) -> set[str]:
        answer = api(LIST, user="alice", vdc="demo", variables={"filter": where})
        return {e["node"]["name"] for e in payload(answer, "virtualMachines")["edges"]}

    prefix = running["name"].rsplit("-", 1)[0]
    assert names(nameContains=prefix.upper()) == {running["name"], other["name"]}
    assert names(nameContains=prefix, status="running") == {running["name"]}
    assert names(nameContains=prefix, status="stopped") == {other["name"]}
    assert names(nameContains=prefix, zone="zone-b") == {other["name"]}
    assert names(zone="zone-b", status="running") == {"web-2"}


def test_a_running_vm_is_shut_down_gracefully_and_rebooted(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("gentle")))["virtualMachine"]
    rebooted = ok(act(api, "alice", "rebootVirtualMachine", vm["id"]))
    assert rebooted["task"]["type"] == "qmreboot"
    assert rebooted["task"]["status"] == "SUCCEEDED"

    down = ok(act(api, "alice", "shutdownVirtualMachine", vm["id"], timeout=30))
    assert down["task"]["type"] == "qmshutdown"
    assert down["virtualMachine"]["status"] == "stopped"
    assert present(world, vm["id"])["status"] == "stopped"
    assert (
        requests_to(world, "zone-a", "POST", f"/{vmid_of(vm['id'])}/status/shutdown")[-1]["timeout"] == "30"
    )

    again = ok(act(api, "alice", "stopVirtualMachine", vm["id"]))
    assert again["task"] is None  # already stopped: nothing to do
    refused = act(api, "alice", "rebootVirtualMachine", vm["id"])
    assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]


def test_disks_grow_but_never_shrink(api: GraphQL, world: World, vm_name: Callable[[str], str]) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("disk"), diskGb=20))["virtualMachine"]
    zone, vmid = vm["id"].split("/")
    shrink = payload(
        api(RESIZE, user="alice", variables={"input": {"id": vm["id"], "diskGb": 10}}), "resizeVirtualMachine"
    )
    assert shrink["errors"] == [
        {
            "field": "diskGb",
            "code": "INVALID",
            "message": "disks only grow: this one has 20 GiB, it cannot shrink to 10",
        }
    ]
    assert "size=20G" in present(world, vm["id"])["config"]["scsi0"].split(",")
    assert requests_to(world, zone, "PUT", f"/{vmid}/resize")[-1]["size"] == "20G"  # no other resize was sent


def test_the_profile_of_a_running_vm_cannot_change(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("busy")))["virtualMachine"]
    result = payload(
        api(RESIZE, user="alice", variables={"input": {"id": vm["id"], "computeProfile": MEDIUM}}),
        "resizeVirtualMachine",
    )
    assert [e["code"] for e in result["errors"]] == ["CONFLICT"]
    assert "stop it" in result["errors"][0]["message"]
    assert str(present(world, vm["id"])["config"]["cores"]) == "1"


def test_the_storage_profiles_io_limits_are_set_on_the_disk(api: GraphQL, world: World) -> None:
    profile = f"t{uuid.uuid4().hex[:8]}-capped"
    made = api(
        """mutation($input: StorageProfileInput!) {
             createStorageProfile(input: $input) { errors { message } } }""",
        user="admin",
        variables={
            "input": {
                "name": profile,
                "storages": [{"zone": "zone-a", "storage": "local-lvm"}],
                "defaultGb": 10,
                "minGb": 4,
                "maxGb": 50,
                "readMbps": 200,
                "writeIops": 500,
            }
        },
    )
    assert payload(made, "createStorageProfile")["errors"] == []
    try:
        with vm_names(api, world) as name, scratch_vdcs(api, world) as vdcs:
            vdc = vdcs(storage_profiles=(profile,))
            vm = ok(create(api, "admin", vdc, name=name("capped"), storageProfile=profile))["virtualMachine"]
            assert vm["storageProfile"] == profile
            disk = present(world, vm["id"])["config"]["scsi0"]
            options = dict(part.split("=", 1) for part in disk.split(",")[1:])
            assert (options["mbps_rd"], options["iops_wr"]) == ("200", "500")
            assert "mbps_wr" not in options  # unlimited: not set
    finally:
        api(
            "mutation($name: String!) { deleteStorageProfile(name: $name) { errors { message } } }",
            user="admin",
            variables={"name": profile},
        )


# ------------------------------------------------------------------------------------------ isolation


@pytest.fixture
def alices_vm(api: GraphQL, vm_name: Callable[[str], str]) -> dict[str, Any]:
    created = ok(create(api, "alice", "demo", name=vm_name("private")))
    return {**created["virtualMachine"], "task": created["task"]["id"]}


def _missing_id(ident: str) -> str:
    zone, _ = ident.split("/")
    return f"{zone}/999999"


def test_bob_cannot_see_alices_vm_by_id_exactly_as_if_it_did_not_exist(
    api: GraphQL, alices_vm: dict[str, Any]
) -> None:
    hers = api(GET, user="bob", vdc="other", variables={"id": alices_vm["id"]})
    missing = api(GET, user="bob", vdc="other", variables={"id": _missing_id(alices_vm["id"])})
    assert hers.codes == missing.codes == ["NOT_FOUND"]
    assert hers.data == missing.data == {"virtualMachine": None}
    assert hers.errors[0]["message"].replace(alices_vm["id"], "ID") == missing.errors[0]["message"].replace(
        _missing_id(alices_vm["id"]), "ID"
    )
    no_header = api(GET, user="bob", variables={"id": alices_vm["id"]})
    assert no_header.codes == ["NOT_FOUND"]


def test_bob_does_not_list_alices_vm(api: GraphQL, alices_vm: dict[str, Any]) -> None:
    for vdc in ("other", None):
        answer = api(LIST, user="bob", vdc=vdc, variables={"filter": None})
        assert alices_vm["id"] not in {e["node"]["id"] for e in payload(answer, "virtualMachines")["edges"]}
    assert alices_vm["id"] in {
        e["node"]["id"]
        for e in payload(api(LIST, user="alice", vdc="demo", variables={"filter": None}), "virtualMachines")[
            "edges"
        ]
    }


@pytest.mark.parametrize(
    "mutation", ["stopVirtualMachine", "startVirtualMachine", "rebootVirtualMachine", "deleteVirtualMachine"]
)
def test_bob_cannot_act_on_alices_vm(
    api: GraphQL, world: World, alices_vm: dict[str, Any], mutation: str
) -> None:
    hers = act(api, "bob", mutation, alices_vm["id"])
    missing = act(api, "bob", mutation, _missing_id(alices_vm["id"]))
    assert [e["code"] for e in hers["errors"]] == [e["code"] for e in missing["errors"]] == ["NOT_FOUND"]
    assert hers["virtualMachine"] is None
    assert hers["task"] is None
    fake = fake_vm(world, alices_vm["id"])
    assert fake is not None
    assert fake["status"] == "running"


def test_bob_cannot_resize_alices_vm(api: GraphQL, world: World, alices_vm: dict[str, Any]) -> None:
    result = payload(
        api(RESIZE, user="bob", variables={"input": {"id": alices_vm["id"], "diskGb": 100}}),
        "resizeVirtualMachine",
    )
    assert [e["code"] for e in result["errors"]] == ["NOT_FOUND"]


def test_bob_cannot_name_alices_vdc(api: GraphQL, alices_vm: dict[str, Any]) -> None:
    answer = api(GET, user="bob", vdc="demo", variables={"id": alices_vm["id"]})
    assert answer.codes == ["FORBIDDEN"]


def test_an_admin_sees_and_acts_on_any_vm(api: GraphQL, world: World, alices_vm: dict[str, Any]) -> None:
    answer = api(GET, user="admin", variables={"id": alices_vm["id"]})
    assert answer.data["virtualMachine"]["vdc"] == "demo"
    ok(act(api, "admin", "stopVirtualMachine", alices_vm["id"]))
    assert present(world, alices_vm["id"])["status"] == "stopped"


# ------------------------------------------------------------------------------------------ bad input

ANOTHER_KEY_TYPE = "ssh-dss AAAAB3NzaC1kc3MAAACBAP"
# An RSA key of 1024 bits: too short.
SHORT_RSA = (
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDAGQLZ2xEn6TqQ1Q0K2E3mHn7y1m0m5eVqB8p5f3JYvF2mZ7nJm1w2j0aFf1rQ0"
    "xJq6m0K8v3C3oQfT0eC3w9l1yF3Z4Dq2D8jv6sG5nN9w6x4m9m5bV0Q2t4xYHn8Q2kQ5z0n4mO7uT0sX1yD3b5d2q8Q== short"
)


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"computeProfile": "huge"}, "computeProfile", "there is no compute profile 'huge'"),
        ({"storageProfile": "gold"}, "storageProfile", "there is no storage profile 'gold'"),
        ({"image": "windows-95"}, "image", "there is no image 'windows-95'"),
        ({"zone": "zone-z"}, "zone", "may not use zone 'zone-z'"),
        ({"diskGb": 2}, "diskGb", "image debian-12 needs a disk of at least 3 GiB"),
        ({"diskGb": 5}, "diskGb", "allows disks of 10 to 200 GiB, not 5"),
        ({"diskGb": 201}, "diskGb", "allows disks of 10 to 200 GiB, not 201"),
        ({"name": "Web_1"}, "name", "is not a valid VM name"),
        ({"name": "-web"}, "name", "is not a valid VM name"),
        ({"name": "x" * 64}, "name", "is not a valid VM name"),
        ({"sshKeys": ["not a key"]}, "sshKeys", "SSH key 1 is not a valid public key: unknown key type"),
        ({"sshKeys": [SSH_KEY, "ssh-ed25519"]}, "sshKeys", "SSH key 2 is not a valid public key: expected"),
        ({"sshKeys": ["ssh-ed25519 !!!notbase64"]}, "sshKeys", "not valid base64"),
        ({"sshKeys": [ANOTHER_KEY_TYPE]}, "sshKeys", "unknown key type 'ssh-dss'"),
        ({"sshKeys": [SSH_KEY.replace("ssh-ed25519", "ssh-rsa", 1)]}, "sshKeys", "of type 'ssh-ed25519'"),
        ({"sshKeys": [SSH_KEY + "\nssh-ed25519 AAAA"]}, "sshKeys", "one key per entry"),
        ({"userData": "#cloud-config\n" + "x" * 70000}, "userData", "at most 65536 bytes"),
        ({"userData": "packages: [nginx]\n"}, "userData", "cloud-init would ignore this user data"),
        ({"idempotencyKey": "k" * 300}, "idempotencyKey", "1 to 255 printable characters"),
    ],
)
def test_every_invalid_input_is_a_typed_error_naming_its_field(
    api: GraphQL, world: World, vm_name: Callable[[str], str], fields: dict[str, Any], field: str, says: str
) -> None:
    before = {zone: set(fake_vms(world, zone)) for zone in world.fakes.zones}
    result = create(api, "alice", "demo", **{"name": vm_name("bad"), **fields})
    assert result["virtualMachine"] is None
    assert [(e["code"], e["field"]) for e in result["errors"]] == [("INVALID", field)]
    assert says in result["errors"][0]["message"]
    assert {zone: set(fake_vms(world, zone)) for zone in world.fakes.zones} == before


def test_a_short_rsa_key_is_refused(api: GraphQL, vm_name: Callable[[str], str]) -> None:
    result = create(api, "alice", "demo", name=vm_name("rsa"), sshKeys=[SHORT_RSA])
    assert [(e["code"], e["field"]) for e in result["errors"]] == [("INVALID", "sshKeys")]


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"computeProfile": LARGE}, "computeProfile", "VDC other does not allow compute profile 'large'"),
        ({"image": "ubuntu-24.04"}, "image", "VDC other does not allow image 'ubuntu-24.04'"),
    ],
)
def test_what_the_vdc_does_not_allow_is_refused(
    api: GraphQL, vm_name: Callable[[str], str], fields: dict[str, Any], field: str, says: str
) -> None:
    result = create(api, "bob", "other", **{"name": vm_name("bob"), **fields})
    assert [(e["code"], e["field"]) for e in result["errors"]] == [("INVALID", field)]
    assert result["errors"][0]["message"] == says


def test_a_create_needs_the_vdc_header(api: GraphQL, vm_name: Callable[[str], str]) -> None:
    result = create(api, "alice", None, name=vm_name("nowhere"))
    assert [(e["code"], e["field"]) for e in result["errors"]] == [("INVALID", "vdc")]
    assert "FlexPlane-VDC-ID" in result["errors"][0]["message"]


def test_a_create_in_a_vdc_one_is_not_a_member_of_is_forbidden(
    api: GraphQL, vm_name: Callable[[str], str]
) -> None:
    answer = api(
        CREATE,
        user="bob",
        vdc="demo",
        variables={
            "input": {
                "name": vm_name("x"),
                "computeProfile": SMALL,
                "storageProfile": STANDARD,
                "image": DEBIAN,
            }
        },
    )
    assert answer.codes == ["FORBIDDEN"]
    assert answer.data == {"createVirtualMachine": None}
