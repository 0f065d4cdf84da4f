"""A VM's whole life through the API in this process, on the light world's fake Proxmox (the orchestrator's
own source, the agents' allowlist). Every step is checked in the fake's own state, not in the API's answer.
What only the agents do (cloud-init snippets on the node) is tested against the devstack:
tests/orchestrator/graphql/test_vm_lifecycle.py.

The helpers come from tests/vmkit.py, shared with the other VM suites.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import (
    CREATE,
    DEBIAN,
    GET,
    LARGE,
    LIST,
    MEDIUM,
    RESIZE,
    SMALL,
    SSH_KEY,
    STANDARD,
    act,
    create,
    fake_vm,
    fake_vms,
    ok,
    payload,
    pool_members,
    present,
    requests_to,
    scratch_vdcs,
    vm_names,
    vmid_of,
    volumes_of,
)

# ------------------------------------------------------------------------------------------ the life


def test_alice_runs_a_vm_through_its_whole_life(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
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
    fake = fake_vm(light, vm["id"])
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
    # A NIC on the VDC's default network, with a static address cloud-init sets (and its tag).
    address = config["ipconfig0"].removeprefix("ip=").split("/")[0]
    assert config["ipconfig0"] == f"ip={address}/24,gw=10.0.0.1"
    vnet = config["net0"].split("bridge=")[1].split(",")[0]
    assert f"fp-ip-{vnet}-{address}" in config["tags"].split(";")
    assert urllib.parse.unquote(config["sshkeys"]).strip() == SSH_KEY
    assert config["description"].startswith("Managed by flex.plane: a VM of VDC demo.")
    assert "size=16G" in config["scsi0"].split(",")

    # Stop.
    stopped = ok(act(api, "alice", "stopVirtualMachine", vm["id"]))
    assert stopped["task"]["type"] == "qmstop"
    assert present(light, vm["id"])["status"] == "stopped"

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
    config = present(light, vm["id"])["config"]
    assert (str(config["cores"]), str(config["memory"])) == ("2", "4096")
    assert "fp-cp-medium" in config["tags"].split(";")
    assert "fp-cp-small" not in config["tags"].split(";")
    assert "size=24G" in config["scsi0"].split(",")

    # Start again.
    started = ok(act(api, "alice", "startVirtualMachine", vm["id"]))
    assert started["virtualMachine"]["status"] == "running"
    assert present(light, vm["id"])["status"] == "running"

    # Delete: nothing remains, not the VM, not its disk, not its pool membership.
    deleted = ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))
    assert deleted["task"]["type"] == "qmdestroy"
    assert deleted["virtualMachine"]["status"] == "deleted"
    assert fake_vm(light, vm["id"]) is None
    assert volumes_of(light, zone, int(vmid)) == []
    assert int(vmid) not in pool_members(light, zone, "fp-demo")
    answer = api(GET, user="alice", vdc="demo", variables={"id": vm["id"]})
    assert answer.codes == ["NOT_FOUND"]


def test_the_vm_lists_what_it_was_made_from(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
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
    # A VDC's listing reads its pools, whose members carry no tags: what the VM was made from is on
    # its own page (and in the fleet-wide listing, which reads /cluster/resources).
    assert (listed[0]["computeProfile"], listed[0]["storageProfile"], listed[0]["image"]) == (None,) * 3
    query = "query($id: ID!) { virtualMachine(id: $id) { computeProfile storageProfile image } }"
    own = api(query, user="alice", vdc="demo", variables={"id": listed[0]["id"]}).data["virtualMachine"]
    assert (own["computeProfile"], own["storageProfile"], own["image"]) == (MEDIUM, STANDARD, DEBIAN)
    fleet = api(LIST, user="admin", variables={"filter": {"nameContains": name}}).data["virtualMachines"]
    assert fleet["edges"][0]["node"]["computeProfile"] == MEDIUM
    assert (listed[0]["cores"], listed[0]["memoryMb"]) == (2, 4096)
    assert listed[0]["host"] == created["placement"]["host"]
    assert listed[0]["ipAddresses"] is None  # listings never ask the guest agent


def test_one_vm_shows_the_addresses_its_guest_agent_reports(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("app")))["virtualMachine"]
    one = api(GET, user="alice", vdc="demo", variables={"id": vm["id"]}).data["virtualMachine"]
    assert one["ipAddresses"] is None  # no guest agent answers yet

    zone, vmid = vm["id"].split("/")
    pve = light.fakes[zone].pve
    light.fakes.on_loop(lambda: setattr(next(v for v in pve.vms if v.vmid == int(vmid)), "agent", {}))
    one = api(GET, user="alice", vdc="demo", variables={"id": vm["id"]}).data["virtualMachine"]
    assert one["ipAddresses"] == ["192.0.2.10"]  # the fake agent's eth0; loopback left out
    assert one["status"] == "running"


def test_the_listing_filters_by_status_zone_and_name(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
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
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("gentle")))["virtualMachine"]
    rebooted = ok(act(api, "alice", "rebootVirtualMachine", vm["id"]))
    assert rebooted["task"]["type"] == "qmreboot"
    assert rebooted["task"]["status"] == "SUCCEEDED"

    down = ok(act(api, "alice", "shutdownVirtualMachine", vm["id"], timeout=30))
    assert down["task"]["type"] == "qmshutdown"
    assert down["virtualMachine"]["status"] == "stopped"
    assert present(light, vm["id"])["status"] == "stopped"
    assert (
        requests_to(light, "zone-a", "POST", f"/{vmid_of(vm['id'])}/status/shutdown")[-1]["timeout"] == "30"
    )

    again = ok(act(api, "alice", "stopVirtualMachine", vm["id"]))
    assert again["task"] is None  # already stopped: nothing to do
    refused = act(api, "alice", "rebootVirtualMachine", vm["id"])
    assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]


def test_disks_grow_but_never_shrink(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
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
    assert "size=20G" in present(light, vm["id"])["config"]["scsi0"].split(",")
    assert requests_to(light, zone, "PUT", f"/{vmid}/resize")[-1]["size"] == "20G"  # no other resize was sent


def test_the_profile_of_a_running_vm_cannot_change(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("busy")))["virtualMachine"]
    result = payload(
        api(RESIZE, user="alice", variables={"input": {"id": vm["id"], "computeProfile": MEDIUM}}),
        "resizeVirtualMachine",
    )
    assert [e["code"] for e in result["errors"]] == ["CONFLICT"]
    assert "stop it" in result["errors"][0]["message"]
    assert str(present(light, vm["id"])["config"]["cores"]) == "1"


def test_the_storage_profiles_io_limits_are_set_on_the_disk(api: InProcessApi, light: LightWorld) -> None:
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
        with vm_names(api, light) as name, scratch_vdcs(api, light) as vdcs:
            vdc = vdcs(storage_profiles=(profile,))
            vm = ok(create(api, "admin", vdc, name=name("capped"), storageProfile=profile))["virtualMachine"]
            assert vm["storageProfile"] == profile
            disk = present(light, vm["id"])["config"]["scsi0"]
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
def alices_vm(api: InProcessApi, vm_name: Callable[[str], str]) -> dict[str, Any]:
    created = ok(create(api, "alice", "demo", name=vm_name("private")))
    return {**created["virtualMachine"], "task": created["task"]["id"]}


def _missing_id(ident: str) -> str:
    zone, _ = ident.split("/")
    return f"{zone}/999999"


def test_bob_cannot_see_alices_vm_by_id_exactly_as_if_it_did_not_exist(
    api: InProcessApi, alices_vm: dict[str, Any]
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


def test_bob_does_not_list_alices_vm(api: InProcessApi, alices_vm: dict[str, Any]) -> None:
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
    api: InProcessApi, light: LightWorld, alices_vm: dict[str, Any], mutation: str
) -> None:
    hers = act(api, "bob", mutation, alices_vm["id"])
    missing = act(api, "bob", mutation, _missing_id(alices_vm["id"]))
    assert [e["code"] for e in hers["errors"]] == [e["code"] for e in missing["errors"]] == ["NOT_FOUND"]
    assert hers["virtualMachine"] is None
    assert hers["task"] is None
    fake = fake_vm(light, alices_vm["id"])
    assert fake is not None
    assert fake["status"] == "running"


def test_bob_cannot_resize_alices_vm(api: InProcessApi, light: LightWorld, alices_vm: dict[str, Any]) -> None:
    result = payload(
        api(RESIZE, user="bob", variables={"input": {"id": alices_vm["id"], "diskGb": 100}}),
        "resizeVirtualMachine",
    )
    assert [e["code"] for e in result["errors"]] == ["NOT_FOUND"]


def test_bob_cannot_name_alices_vdc(api: InProcessApi, alices_vm: dict[str, Any]) -> None:
    answer = api(GET, user="bob", vdc="demo", variables={"id": alices_vm["id"]})
    assert answer.codes == ["FORBIDDEN"]


def test_an_admin_sees_and_acts_on_any_vm(
    api: InProcessApi, light: LightWorld, alices_vm: dict[str, Any]
) -> None:
    answer = api(GET, user="admin", variables={"id": alices_vm["id"]})
    assert answer.data["virtualMachine"]["vdc"] == "demo"
    ok(act(api, "admin", "stopVirtualMachine", alices_vm["id"]))
    assert present(light, alices_vm["id"])["status"] == "stopped"


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
    api: InProcessApi,
    light: LightWorld,
    vm_name: Callable[[str], str],
    fields: dict[str, Any],
    field: str,
    says: str,
) -> None:
    before = {zone: set(fake_vms(light, zone)) for zone in light.fakes.zones}
    result = create(api, "alice", "demo", **{"name": vm_name("bad"), **fields})
    assert result["virtualMachine"] is None
    assert [(e["code"], e["field"]) for e in result["errors"]] == [("INVALID", field)]
    assert says in result["errors"][0]["message"]
    assert {zone: set(fake_vms(light, zone)) for zone in light.fakes.zones} == before


def test_a_short_rsa_key_is_refused(api: InProcessApi, vm_name: Callable[[str], str]) -> None:
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
    api: InProcessApi, vm_name: Callable[[str], str], fields: dict[str, Any], field: str, says: str
) -> None:
    result = create(api, "bob", "other", **{"name": vm_name("bob"), **fields})
    assert [(e["code"], e["field"]) for e in result["errors"]] == [("INVALID", field)]
    assert result["errors"][0]["message"] == says


def test_a_create_needs_the_vdc_header(api: InProcessApi, vm_name: Callable[[str], str]) -> None:
    result = create(api, "alice", None, name=vm_name("nowhere"))
    assert [(e["code"], e["field"]) for e in result["errors"]] == [("INVALID", "vdc")]
    assert "FlexPlane-VDC-ID" in result["errors"][0]["message"]


def test_a_create_in_a_vdc_one_is_not_a_member_of_is_forbidden(
    api: InProcessApi, vm_name: Callable[[str], str]
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
