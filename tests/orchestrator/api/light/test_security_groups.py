"""Security groups over the API, checked against the fake Proxmox's own VM firewalls (fakepve keeps each
VM's firewall options, rules and IP sets)."""

from __future__ import annotations

import copy
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.apikit import Zones
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import create, ok, payload, present, scratch_vdcs

GROUP = "{ name vdc description rules { direction protocol ports cidr group vdcNetworks description } }"
CREATE = f"""mutation($input: CreateSecurityGroupInput!) {{ createSecurityGroup(input: $input) {{
  securityGroup {GROUP} errors {{ field message code }} }} }}"""
UPDATE = f"""mutation($name: String!, $input: UpdateSecurityGroupInput!) {{
  updateSecurityGroup(name: $name, input: $input) {{
    securityGroup {GROUP} errors {{ field message code }} }} }}"""
DELETE = """mutation($name: String!) { deleteSecurityGroup(name: $name) {
  securityGroup { name } errors { field message code } } }"""
ASSIGN = """mutation($vm: ID!, $groups: [String!]!) { assignSecurityGroups(vm: $vm, groups: $groups) {
  virtualMachine { id securityGroups } securityGroups errors { field message code } } }"""
LIST = f"{{ securityGroups {GROUP} }}"
VM = "query($id: ID!) { virtualMachine(id: $id) { id securityGroups } }"

SSH = {"direction": "in", "protocol": "tcp", "ports": "22", "cidr": "10.0.0.0/8"}


def call(api: InProcessApi, user: str, vdc: str | None, document: str, **variables: Any) -> Any:
    headers = {"Authorization": f"Bearer {api.token(user)}", **({"FlexPlane-VDC-ID": vdc} if vdc else {})}
    return api.raw(document, headers=headers, variables=variables, timeout=120)


def mutation(
    api: InProcessApi, user: str, vdc: str | None, document: str, field: str, **variables: Any
) -> Any:
    return payload(call(api, user, vdc, document, **variables), field)


def firewall(light: Zones, ident: str) -> dict[str, Any]:
    """The fake's firewall of a VM: options, rules (in order) and IP sets (name -> entries)."""
    zone, vmid = ident.split("/")
    pve = light.fakes[zone].pve

    def read() -> dict[str, Any]:
        conf = pve.firewall_config("vm", None, int(vmid))
        return {
            "options": dict(conf["options"]),
            "rules": copy.deepcopy(conf["rules"]),
            "ipset": {name: sorted(e["cidr"] for e in entries) for name, entries in conf["ipset"].items()},
        }

    result: dict[str, Any] = light.fakes.on_loop(read)
    return result


def firewall_requests(light: Zones, ident: str) -> list[str]:
    """The methods of the requests the fake received for the VM's firewall, in order."""
    zone, vmid = ident.split("/")
    pve = light.fakes[zone].pve
    marker = f"/qemu/{vmid}/firewall"
    found: list[str] = light.fakes.on_loop(lambda: [m for m, path, _ in pve.requests if marker in path])
    return found


def address(light: Zones, ident: str) -> str:
    """The VM's address, from the fake's config (ipconfig0 ip=<address>/<prefix>)."""
    ipconfig = str(present(light, ident)["config"].get("ipconfig0", ""))
    ip = dict(part.split("=", 1) for part in ipconfig.split(",") if "=" in part).get("ip", "")
    assert "/" in ip, f"{ident} has no static address: {ipconfig!r}"
    return ip.split("/")[0]


def ours(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("type", "action", "proto", "dport", "source", "dest", "enable", "comment")
    return [{k: r.get(k) for k in keys} for r in rules if str(r.get("comment", "")).startswith("fp-sg:")]


@pytest.fixture
def groups(api: InProcessApi) -> Iterator[Callable[[str], str]]:
    """Names for a test's groups of VDC demo; afterwards each is deleted (its VMs are gone by then: ask
    for this fixture before vm_name)."""
    prefix = f"g{uuid.uuid4().hex[:6]}"
    made: list[str] = []

    def name(what: str) -> str:
        made.append(f"{prefix}-{what}")
        return made[-1]

    yield name
    for group in reversed(made):
        call(api, "admin", "demo", DELETE, name=group)


def make_vm(api: InProcessApi, vm_name: Callable[[str], str], what: str) -> dict[str, Any]:
    made = ok(create(api, "alice", "demo", name=vm_name(what)))
    vm: dict[str, Any] = made["virtualMachine"]
    return vm


def group_on_new_vms(
    api: InProcessApi, groups: Callable[[str], str], vm_name: Callable[[str], str], what: str, count: int
) -> tuple[str, list[dict[str, Any]]]:
    """A group ``what`` of VDC demo letting SSH in, assigned to ``count`` new VMs of its own."""
    group = groups(what)
    ok(mutation(api, "alice", "demo", CREATE, "createSecurityGroup", input={"name": group, "rules": [SSH]}))
    vms = [make_vm(api, vm_name, f"{what[0]}{i}") for i in range(count)]
    for vm in vms:
        ok(mutation(api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=[group]))
    return group, vms


def test_a_group_assigned_to_a_vm_is_on_the_vms_own_firewall(
    api: InProcessApi, light: LightWorld, groups: Callable[[str], str], vm_name: Callable[[str], str]
) -> None:
    web = groups("web")
    made = mutation(
        api,
        "alice",
        "demo",
        CREATE,
        "createSecurityGroup",
        input={
            "name": web,
            "description": "front ends",
            "rules": [
                SSH,
                {"direction": "in", "protocol": "tcp", "ports": "8000-8080", "group": web},
            ],
        },
    )
    assert ok(made)["securityGroup"]["rules"][1] == {
        "direction": "in",
        "protocol": "tcp",
        "ports": "8000:8080",  # as Proxmox writes a range
        "cidr": None,
        "group": web,
        "vdcNetworks": False,
        "description": "",
    }
    vm = make_vm(api, vm_name, "fw")
    assigned = ok(
        mutation(api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=[web, "default"])
    )
    assert sorted(assigned["securityGroups"]) == sorted([web, "default"])
    assert sorted(assigned["virtualMachine"]["securityGroups"]) == sorted([web, "default"])

    fw = firewall(light, vm["id"])
    assert fw["options"]["enable"] == 1
    assert fw["options"]["policy_in"] == "DROP"
    assert fw["options"]["policy_out"] == "DROP"  # default's rule allows all egress
    assert ours(fw["rules"]) == [
        {"type": "in", "action": "ACCEPT", "proto": None, "dport": None, "source": "+fp-vdc-nets",
         "dest": None, "enable": 1, "comment": "fp-sg:default"},
        {"type": "out", "action": "ACCEPT", "proto": None, "dport": None, "source": None,
         "dest": None, "enable": 1, "comment": "fp-sg:default"},
        {"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22", "source": "10.0.0.0/8",
         "dest": None, "enable": 1, "comment": f"fp-sg:{web}"},
        {"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "8000:8080", "source": f"+fp-sg-{web}",
         "dest": None, "enable": 1, "comment": f"fp-sg:{web}"},
    ]  # fmt: skip
    assert fw["ipset"][f"fp-sg-{web}"] == [address(light, vm["id"])]
    assert "fp-vdc-nets" in fw["ipset"]
    tags = str(present(light, vm["id"])["config"]["tags"])
    assert f"fp-sg-{web}" in tags
    assert "fp-sg-default" in tags


def test_changing_a_rule_updates_every_members_firewall_and_again_changes_nothing(
    api: InProcessApi, light: LightWorld, groups: Callable[[str], str], vm_name: Callable[[str], str]
) -> None:
    app, vms = group_on_new_vms(api, groups, vm_name, "app", 2)
    for vm in vms:
        assert firewall(light, vm["id"])["options"]["policy_out"] == "ACCEPT"  # app lists no egress

    rules = [
        {"direction": "in", "protocol": "udp", "ports": "53", "group": app},
        {"direction": "out", "protocol": "tcp", "ports": "443", "cidr": "0.0.0.0/0"},
    ]
    updated = ok(
        mutation(api, "alice", "demo", UPDATE, "updateSecurityGroup", name=app, input={"rules": rules})
    )
    assert [r["ports"] for r in updated["securityGroup"]["rules"]] == ["53", "443"]
    members = sorted(address(light, vm["id"]) for vm in vms)
    for vm in vms:
        fw = firewall(light, vm["id"])
        assert [(r["type"], r["proto"], r["dport"]) for r in ours(fw["rules"])] == [
            ("in", "udp", "53"),
            ("out", "tcp", "443"),
        ]
        assert fw["options"]["policy_out"] == "DROP"
        assert fw["ipset"] == {f"fp-sg-{app}": members}

    before = [firewall(light, vm["id"]) for vm in vms]
    seen = {vm["id"]: firewall_requests(light, vm["id"]) for vm in vms}
    ok(mutation(api, "alice", "demo", UPDATE, "updateSecurityGroup", name=app, input={"rules": rules}))
    assert [firewall(light, vm["id"]) for vm in vms] == before
    for vm in vms:
        new = Counter(firewall_requests(light, vm["id"])) - Counter(seen[vm["id"]])
        # Read: its options, its rules, its IP sets and the one of them it holds; written: nothing.
        assert sorted(new.elements()) == ["GET"] * 4


def test_another_vdcs_groups_are_missing_to_bob(
    api: InProcessApi, light: LightWorld, groups: Callable[[str], str], vm_name: Callable[[str], str]
) -> None:
    mine = groups("mine")
    ok(mutation(api, "alice", "demo", CREATE, "createSecurityGroup", input={"name": mine, "rules": [SSH]}))
    listed = call(api, "bob", "other", LIST).data["securityGroups"]
    assert mine not in [g["name"] for g in listed]
    assert {g["vdc"] for g in listed} == {"other"}
    for document, field, variables in (
        (UPDATE, "updateSecurityGroup", {"input": {"description": "mine now"}}),
        (DELETE, "deleteSecurityGroup", {}),
    ):
        theirs = mutation(api, "bob", "other", document, field, name=mine, **variables)
        missing = mutation(api, "bob", "other", document, field, name="no-such-group", **variables)
        assert [e["code"] for e in theirs["errors"]] == ["NOT_FOUND"]
        assert theirs["errors"][0]["message"].replace(mine, "X") == missing["errors"][0]["message"].replace(
            "no-such-group", "X"
        )
    # Naming alice's VDC is forbidden outright; her VM is missing to him.
    assert call(api, "bob", "demo", LIST).codes == ["FORBIDDEN"]
    vm = make_vm(api, vm_name, "iso")
    assigned = mutation(api, "bob", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=[mine])
    assert [e["code"] for e in assigned["errors"]] == ["NOT_FOUND"]
    # alice cannot put her VM in a group of bob's VDC: NOT_FOUND, as for a missing group.
    theirs = mutation(
        api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=["default", mine + "x"]
    )
    assert [e["code"] for e in theirs["errors"]] == ["NOT_FOUND"]
    assert "securityGroups" in call(api, "alice", None, VM, id=vm["id"]).data["virtualMachine"]


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({**SSH, "ports": "0"}, "rules[1].ports"),
        ({**SSH, "ports": "70000"}, "rules[1].ports"),
        ({**SSH, "ports": "90-80"}, "rules[1].ports"),
        ({**SSH, "cidr": "10.0.0.300/8"}, "rules[1].cidr"),
        ({**SSH, "cidr": "garbage"}, "rules[1].cidr"),
        ({"direction": "in", "protocol": "any", "group": "default-of-other"}, "rules[1].group"),
    ],
)
def test_bad_rules_are_invalid_naming_the_field(
    api: InProcessApi, groups: Callable[[str], str], rule: dict[str, Any], field: str
) -> None:
    answer = mutation(
        api,
        "alice",
        "demo",
        CREATE,
        "createSecurityGroup",
        input={"name": groups("bad"), "rules": [SSH, rule]},
    )
    assert [(e["code"], e["field"]) for e in answer["errors"]] == [("INVALID", field)]
    assert answer["securityGroup"] is None


@pytest.mark.parametrize(
    ("ports", "named"),
    [
        ("80,,443", "'80,,443' has an empty entry"),
        ("80,443,", "has an empty entry"),
        ("80,8100:8000", "the range 8100:8000 runs backwards: write 8000:8100"),
        ("443,70000", "a port is between 1 and 65535, not 70000"),
        ("0:80", "a port is between 1 and 65535, not 0"),
        ("80,https", "'https' is not a port (22), a range (8000:8100) or a list of them (80,443)"),
        ("80;443", "'80;443' is not a port"),
        (",".join(["1000:2000"] * 8), "at most 15 numbers (a range counts as two; Proxmox's limit), not 16"),
    ],
)
def test_bad_ports_are_invalid_naming_the_field_and_the_entry(
    api: InProcessApi, groups: Callable[[str], str], ports: str, named: str
) -> None:
    name = groups("ports")
    rules = [SSH, {**SSH, "ports": ports}]
    answer = mutation(
        api, "alice", "demo", CREATE, "createSecurityGroup", input={"name": name, "rules": rules}
    )
    assert [(e["code"], e["field"]) for e in answer["errors"]] == [("INVALID", "rules[1].ports")]
    assert named in answer["errors"][0]["message"]
    assert answer["securityGroup"] is None
    assert name not in [g["name"] for g in call(api, "alice", "demo", LIST).data["securityGroups"]]


def test_port_lists_and_ranges_reach_the_vms_firewall_as_proxmox_takes_them(
    api: InProcessApi, light: LightWorld, groups: Callable[[str], str], vm_name: Callable[[str], str]
) -> None:
    web = groups("lists")
    most = ",".join(["1000:1001"] * 7 + ["9000"])  # 15 numbers: the most Proxmox takes
    rules = [
        {**SSH, "ports": "80, 443"},
        {**SSH, "ports": "8000-8100,9443"},
        {**SSH, "protocol": "udp", "ports": "8000:8100"},
        {**SSH, "ports": most},
    ]
    made = ok(
        mutation(api, "alice", "demo", CREATE, "createSecurityGroup", input={"name": web, "rules": rules})
    )
    stored = ["80,443", "8000:8100,9443", "8000:8100", most]
    assert [r["ports"] for r in made["securityGroup"]["rules"]] == stored
    vm = make_vm(api, vm_name, "lists")
    ok(mutation(api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=[web]))
    # The fake checks dport as Proxmox does (pve-fw-dport-spec), the agents in between their allowlist.
    fw = firewall(light, vm["id"])
    assert [(r["proto"], r["dport"]) for r in ours(fw["rules"])] == [
        ("tcp", "80,443"),
        ("tcp", "8000:8100,9443"),
        ("udp", "8000:8100"),
        ("tcp", most),
    ]
    # What Proxmox answers is what was sent: saving the same rules again writes nothing.
    seen = Counter(firewall_requests(light, vm["id"]))
    ok(mutation(api, "alice", "demo", UPDATE, "updateSecurityGroup", name=web, input={"rules": rules}))
    assert set((Counter(firewall_requests(light, vm["id"])) - seen).elements()) == {"GET"}
    assert firewall(light, vm["id"]) == fw


def test_a_group_of_another_vdc_is_invalid_in_a_rule(api: InProcessApi, groups: Callable[[str], str]) -> None:
    bobs = f"b{uuid.uuid4().hex[:6]}"
    ok(mutation(api, "bob", "other", CREATE, "createSecurityGroup", input={"name": bobs, "rules": [SSH]}))
    try:
        rule = {"direction": "in", "protocol": "any", "group": bobs}
        answer = mutation(
            api, "alice", "demo", CREATE, "createSecurityGroup", input={"name": groups("x"), "rules": [rule]}
        )
        assert [(e["code"], e["field"]) for e in answer["errors"]] == [("INVALID", "rules[0].group")]
    finally:
        call(api, "bob", "other", DELETE, name=bobs)


def test_a_group_with_vms_and_the_default_group_are_not_deleted(
    api: InProcessApi, light: LightWorld, groups: Callable[[str], str], vm_name: Callable[[str], str]
) -> None:
    held = groups("held")
    ok(mutation(api, "alice", "demo", CREATE, "createSecurityGroup", input={"name": held, "rules": [SSH]}))
    vm = make_vm(api, vm_name, "held")
    ok(mutation(api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=[held]))
    refused = mutation(api, "alice", "demo", DELETE, "deleteSecurityGroup", name=held)
    assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
    assert vm_name("held") in refused["errors"][0]["message"]
    default = mutation(api, "alice", "demo", DELETE, "deleteSecurityGroup", name="default")
    assert [e["code"] for e in default["errors"]] == ["CONFLICT"]
    # Back to default: the group's rules and IP set leave the VM's firewall, default's stay.
    ok(mutation(api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=["default"]))
    fw = firewall(light, vm["id"])
    assert {r["comment"] for r in ours(fw["rules"])} == {"fp-sg:default"}
    assert set(fw["ipset"]) == {"fp-vdc-nets"}
    gone = mutation(api, "alice", "demo", DELETE, "deleteSecurityGroup", name=held)
    assert gone["errors"] == []


def test_vms_on_a_host_that_is_down_are_named_and_the_same_update_later_reaches_them(
    api: InProcessApi, light: LightWorld, groups: Callable[[str], str], vm_name: Callable[[str], str]
) -> None:
    part, vms = group_on_new_vms(api, groups, vm_name, "part", 3)
    zone, host = vms[0]["zone"], vms[0]["host"]
    down = sorted(vm["id"] for vm in vms if vm["host"] == host)
    rules = [{**SSH, "ports": "2222"}]
    light.fakes.set_node_offline(zone, host, True)
    try:
        answer = mutation(
            api, "alice", "demo", UPDATE, "updateSecurityGroup", name=part, input={"rules": rules}
        )
    finally:
        light.fakes.set_node_offline(zone, host, False)
    assert answer["securityGroup"]["rules"][0]["ports"] == "2222"  # stored all the same
    assert sorted(e["message"].split("(")[1].split(")")[0] for e in answer["errors"]) == down
    assert {e["code"] for e in answer["errors"]} == {"UNAVAILABLE"}
    for vm in vms:
        dports = [r["dport"] for r in ours(firewall(light, vm["id"])["rules"])]
        assert dports == (["22"] if vm["id"] in down else ["2222"])

    again = mutation(api, "alice", "demo", UPDATE, "updateSecurityGroup", name=part, input={"rules": rules})
    assert again["errors"] == []
    for vm in vms:
        assert [r["dport"] for r in ours(firewall(light, vm["id"])["rules"])] == ["2222"]


def test_a_vdcs_groups_outlive_an_update_of_the_vdc(api: InProcessApi, light: LightWorld) -> None:
    with scratch_vdcs(api, light) as make:
        vdc = make()
        rules = [SSH, {"direction": "in", "protocol": "icmp", "vdcNetworks": True}]
        ok(mutation(api, "admin", vdc, CREATE, "createSecurityGroup", input={"name": "kept", "rules": rules}))
        updated = call(
            api,
            "admin",
            None,
            'mutation($id: ID!) { updateVdc(id: $id, input: {description: "renamed"}) { errors { code } } }',
            id=vdc,
        )
        assert updated.data["updateVdc"]["errors"] == []
        listed = {g["name"]: g for g in call(api, "admin", vdc, LIST).data["securityGroups"]}
        assert sorted(listed) == ["default", "kept"]
        assert listed["kept"]["rules"][1]["vdcNetworks"] is True
        ok(mutation(api, "admin", vdc, DELETE, "deleteSecurityGroup", name="kept"))


def test_an_entry_no_network_of_the_vdc_has_leaves_the_vms_ip_set(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = make_vm(api, vm_name, "nets")
    ok(mutation(api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=["default"]))
    networks = firewall(light, vm["id"])["ipset"]["fp-vdc-nets"]
    zone, vmid = vm["id"].split("/")
    pve = light.fakes[zone].pve
    # A network deleted since (its CIDR, with its /, is removed by a path Proxmox reads as one entry).
    light.fakes.on_loop(
        lambda: pve.firewall_config("vm", None, int(vmid))["ipset"]["fp-vdc-nets"].insert(
            0, {"cidr": "192.168.77.0/24"}
        )
    )
    ok(mutation(api, "alice", None, ASSIGN, "assignSecurityGroups", vm=vm["id"], groups=["default"]))
    assert firewall(light, vm["id"])["ipset"]["fp-vdc-nets"] == networks


def test_a_vm_created_without_groups_starts_behind_the_default_groups_firewall(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = make_vm(api, vm_name, "fresh")
    assert call(api, "alice", None, VM, id=vm["id"]).data["virtualMachine"]["securityGroups"] == ["default"]
    fw = firewall(light, vm["id"])
    assert fw["options"] == {"enable": 1, "policy_in": "DROP", "policy_out": "DROP", "dhcp": 1}
    assert [(r["type"], r.get("source"), r.get("dest")) for r in ours(fw["rules"])] == [
        ("in", "+fp-vdc-nets", None),
        ("out", None, None),
    ]
    assert fw["ipset"]["fp-vdc-nets"]  # the VDC's networks, its own among them
