"""What each forwarded parameter may be: every route declares its parameters, each with a validator;
an undeclared name, or a value its validator refuses, is refused with the parameter named. The
orchestrator's own calls (ZoneApi, as it renders them) pass; nothing outside the declarations passes
(hypothesis)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
from fakepve import schema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.proxy import ALLOWED, NotAllowed, Policy, authorize
from agent.proxy.params import DISK_OPTIONS, owned_volume_name
from agentclient import AgentTarget, host_identity
from agentclient.pool import encode_params
from orchestrator.sources.proxmox import snapshots
from orchestrator.sources.proxmox.firewall import FirewallOptions, FirewallRule, VmFirewall
from orchestrator.sources.proxmox.source import ZoneTargets
from orchestrator.sources.proxmox.zone import ZoneApi
from orchestrator.sources.qemu_config import DHCP, ConfigChange, cloud_init_drive, parse_drive

POLICY = Policy(snippets_storage="local")
CONFIG = "/nodes/pve1/qemu/4242/config"
UPID = "UPID:pve1:0000C0DE:0001F00D:6761A2B3:qmclone:100:root@pam!flexplane:"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"


def check(method: str, path: str, params: Mapping[str, str]) -> None:
    authorize(method, path, params, policy=POLICY)


def refused(method: str, path: str, params: Mapping[str, str]) -> NotAllowed:
    with pytest.raises(NotAllowed) as caught:
        check(method, path, params)
    return caught.value


# ------------------------------------------------------------------------ the declarations


def test_every_declared_parameter_is_one_proxmox_itself_knows_for_that_route() -> None:
    """Numbered keys (scsi0) are Proxmox's scsi[n]; the power actions' parameters those of any action."""
    paths = schema.load().paths
    for route in ALLOWED:
        properties: set[str] = set()
        for action in ("start", "stop", "shutdown", "reboot"):
            known = paths[route.pattern.replace("{action}", action)][route.method]
            properties |= set(known.get("parameters", {}).get("properties", {}))
        declared = {re.sub(r"[0-9]+$", "[n]", name) if name[-1].isdigit() else name for name in route.params}
        assert declared <= properties, f"{route.method} {route.pattern}"


def test_no_route_declares_a_parameter_that_reaches_beyond_the_vm_or_pool_it_names() -> None:
    dangerous = {"hookscript", "args", "skiplock", "storage", "vms", "import-from", "archive"}
    for route in ALLOWED:
        assert not dangerous & set(route.params), f"{route.method} {route.pattern}"


def test_only_a_config_write_declares_delete_and_it_detaches_only_nics_and_data_disks() -> None:
    with_delete = {(r.method, r.pattern) for r in ALLOWED if "delete" in r.params}
    assert with_delete == {
        ("PUT", "/nodes/{node}/qemu/{vmid}/config"),
        ("POST", "/nodes/{node}/qemu/{vmid}/config"),
    }
    check("PUT", CONFIG, {"delete": "net1,ipconfig1"})
    check("POST", CONFIG, {"delete": "net31"})
    check("PUT", CONFIG, {"delete": "scsi1"})
    check("PUT", CONFIG, {"delete": "scsi30,net2"})
    for destroying in ("scsi0", "unused0", "scsi31", "virtio1", "scsi1,scsi1"):
        assert refused("PUT", CONFIG, {"delete": destroying}).parameter == "delete"


def test_a_volumes_holder_is_made_with_one_new_disk_and_nothing_else() -> None:
    check(
        "POST",
        "/nodes/pve1/qemu",
        {
            "vmid": "4243",
            "name": "data-1.volume",
            "pool": "fp-demo",
            "tags": "fp-vdc-demo;fp-volume-data-1",
            "description": "A volume of VDC demo.",
            "scsihw": "virtio-scsi-single",
            "scsi0": "local-lvm:20,serial=fpvol4243,discard=on",
        },
    )


def test_a_disk_moves_to_another_vm_by_key_naming_it_and_nothing_else() -> None:
    path = "/nodes/pve1/qemu/4242/move_disk"
    check("POST", path, {"disk": "scsi0", "target-vmid": "4243", "target-disk": "scsi7"})
    check("POST", path, {"disk": "unused3", "target-vmid": "4243", "target-disk": "scsi0"})
    [route] = [r for r in ALLOWED if r.pattern.endswith("/move_disk")]
    assert route.same_pool == "target-vmid"


def test_a_clone_is_named_as_a_vm_or_a_holder_and_checked_against_its_pool() -> None:
    path = "/nodes/pve1/qemu/4242/clone"
    base = {"newid": "4250", "pool": "fp-demo", "full": "1"}
    for name in ("web-1", "data.volume", "before-upgrade.snapshot", f"{'a' * 63}.snapshot"):
        check("POST", path, {**base, "name": name})
    for name in (f"{'a' * 64}.snapshot", "-x.volume", "under_score", "x" * 64):
        assert refused("POST", path, {**base, "name": name}).parameter == "name"
    assert refused("POST", path, {**base, "storage": "local-lvm"}).parameter == "storage"
    [route] = [r for r in ALLOWED if r.pattern.endswith("/clone")]
    assert (route.clone_into, route.reads_pools) == ("pool", True)


# ------------------------------------------------------------------------ the orchestrator's calls


class Recorder:
    """Stands in for the agent transport (ProxmoxSource): records each call as the agent receives it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    def _record(self, method: str, path: str, params: Mapping[str, object] | None) -> Any:
        self.calls.append((method, path, encode_params(params)))
        return UPID if method != "GET" else []

    def zone_call(self, targets: ZoneTargets, method: str, path: str, params: Any = None, **_: Any) -> Any:
        return self._record(method, path, params)

    def zone_write(self, targets: ZoneTargets, method: str, path: str, params: Any = None, **_: Any) -> Any:
        return self._record(method, path, params)

    def host_call(self, zone: str, target: Any, method: str, path: str, params: Any = None, **_: Any) -> Any:
        return self._record(method, path, params)


def orchestrator_calls() -> list[tuple[str, str, dict[str, str]]]:
    """Every Proxmox call ZoneApi makes, rendered as the create, resize, power, drain and delete paths
    render them."""
    recorder = Recorder()
    target = AgentTarget(identity=host_identity("zone1", "pve1"), address="127.0.0.1:1")
    api = ZoneApi(recorder, ZoneTargets("zone1", (target,)))  # type: ignore[arg-type]  # the transport
    linked = parse_drive("scsi0", "local:100/base-100-disk-0.qcow2/4242/vm-4242-disk-0.qcow2,size=4G")
    tags = (
        "fp-vdc-demo",
        "fp-idem-3f2a",
        "fp-cp-small",
        "fp-sp-fast",
        "fp-img-ubuntu-24.04",
        "fp-req-2-2048-20",
    )
    api.clone(
        "pve1",
        100,
        4242,
        name="web-1",
        pool="fp-demo",
        description="Managed by flex.plane: a VM of VDC demo.",
    )
    api.clone("pve1", 100, 4243, name="web-2", pool="fp-demo", description="x", target="pve2")
    api.set_config("pve1", 4242, ConfigChange(tags=tags))
    vendor = ",".join(
        f"{part}=local:snippets/fp-demo-4242-{part}.yaml" for part in ("user", "meta", "vendor")
    )
    api.set_config(
        "pve1",
        4242,
        ConfigChange(
            cores=2,
            sockets=1,
            memory_mib=2048,
            cpu="x86-64-v2-AES",
            guest_agent=True,
            ciuser="ubuntu",
            ipconfigs=((0, DHCP),),
            ssh_keys=(KEY,),
            cicustom=vendor,
            drives=(
                cloud_init_drive("ide2", "local-lvm"),
                linked.with_options({"iops_rd": "500", "mbps_wr": "80"}),
            ),
        ),
    )
    api.change_config("pve1", 4242, ConfigChange(cores=4, sockets=1, memory_mib=4096, cpu="host", tags=tags))
    api.resize_disk("pve1", 4242, "scsi0", 20 * 1024**3)
    for action in ("start", "stop", "reboot"):
        api.power("pve1", 4242, action)
    api.power("pve1", 4242, "shutdown", timeout=60)
    api.migrate("pve1", 4242, "pve2", online=True, with_local_disks=True)
    api.migrate("pve1", 4242, "pve2", online=False, with_local_disks=False)
    api.destroy("pve1", 4242)
    snapshots.list_snapshots(api, "pve1", 4242)
    snapshots.take(api, "pve1", 4242, "before-upgrade", "Before the upgrade.\nKeep it.", vmstate=True)
    snapshots.rollback(api, "pve1", 4242, "before-upgrade", start=True)
    snapshots.delete(api, "pve1", 4242, "before-upgrade")
    api.create_pool("fp-demo", "VDC demo")
    api.delete_pool("fp-demo")
    api.resources("vm")
    api.resources()
    api.tasks("pve1", limit=50, since=1700000000, vmid=4242)
    firewall = VmFirewall(api)
    firewall.options("pve1", 4242)
    firewall.set_options("pve1", 4242, FirewallOptions(enable=True, policy_in="DROP", dhcp=True))
    firewall.rules("pve1", 4242)
    for rule in (
        FirewallRule("in", "ACCEPT", "tcp", "22", "+fp-sg-web", None, True, "fp-sg web: ssh"),
        FirewallRule("out", "ACCEPT", None, None, None, "0.0.0.0/0", True, "fp-sg default: egress"),
        FirewallRule("in", "REJECT", "udp", "8000:8080", "10.0.0.0/16", None, False, "fp-sg x"),
        FirewallRule("in", "ACCEPT", "tcp", "80,443,8000:8100", None, None, True, "fp-sg web: http"),
        FirewallRule("in", "ACCEPT", "tcp", ",".join(["1:2"] * 7 + ["3"]), None, None, True, "fp-sg x"),
        FirewallRule("in", "ACCEPT", "icmp", None, "10.0.0.7", None, True, "fp-sg x"),
    ):
        firewall.add_rule("pve1", 4242, rule)
    firewall.delete_rule("pve1", 4242, 3)
    firewall.ipsets("pve1", 4242)
    firewall.ipset("pve1", 4242, "fp-sg-web")
    firewall.create_ipset("pve1", 4242, "fp-sg-web", "members of security group web")
    firewall.add_entry("pve1", 4242, "fp-sg-web", "10.0.0.0/24")
    firewall.add_entry("pve1", 4242, "fp-sg-web", "10.0.1.5")
    firewall.remove_entry("pve1", 4242, "fp-sg-web", "10.0.0.0/24")
    firewall.remove_entry("pve1", 4242, "fp-sg-web", "10.0.1.5")
    firewall.delete_ipset("pve1", 4242, "fp-sg-web")
    api.task_log("pve1", UPID, 500)
    return recorder.calls


# The networks' calls as the issue fixes them (orchestrator/sources/proxmox/sdn.py and the NICs of
# ConfigChange): each SDN call, and a NIC attached and detached.
NETWORK_CALLS: list[tuple[str, str, dict[str, str]]] = [
    ("GET", "/cluster/sdn/zones", {}),
    ("GET", "/cluster/sdn/zones/fpnet", {}),
    ("DELETE", "/cluster/sdn/zones/fpnet", {}),
    (
        "POST",
        "/cluster/sdn/zones",
        {
            "zone": "fpnet",
            "type": "vxlan",
            "mtu": "1450",
            "ipam": "pve",
            "peers": "10.0.0.11,10.0.0.12",
            "nodes": "pve1,pve2",
        },
    ),
    (
        "POST",
        "/cluster/sdn/zones",
        {"zone": "fpnet", "type": "vlan", "mtu": "1500", "ipam": "pve", "bridge": "vmbr1"},
    ),
    ("GET", "/cluster/sdn/vnets", {"pending": "1"}),
    ("GET", "/cluster/sdn/vnets", {"running": "1"}),
    ("GET", "/cluster/sdn/vnets/fpab12cd", {}),
    (
        "POST",
        "/cluster/sdn/vnets",
        {"vnet": "fpab12cd", "zone": "fpnet", "tag": "16777215", "alias": "fp vdc demo: net-a (default)"},
    ),
    ("DELETE", "/cluster/sdn/vnets/fpab12cd", {}),
    ("GET", "/cluster/sdn/vnets/fpab12cd/subnets", {}),
    (
        "POST",
        "/cluster/sdn/vnets/fpab12cd/subnets",
        {"subnet": "10.0.0.0/24", "type": "subnet", "gateway": "10.0.0.1"},
    ),
    ("DELETE", "/cluster/sdn/vnets/fpab12cd/subnets/fpnet-10.0.0.0-24", {}),
    ("PUT", "/cluster/sdn", {}),
    (
        "PUT",
        CONFIG,
        {
            "net0": "virtio,bridge=fpab12cd,firewall=1",
            "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1",
            "nameserver": "10.0.0.1 1.1.1.1 9.9.9.9",
            "searchdomain": "demo.internal",
        },
    ),
    ("POST", CONFIG, {"net1": "virtio=BC:24:11:2A:3B:4C,bridge=fpzz9,firewall=1", "ipconfig1": "ip=dhcp"}),
    (
        "PUT",
        CONFIG,
        {"net2": "virtio,bridge=fpab12cd,firewall=1,macaddr=bc:24:11:2a:3b:4d", "nameserver": ""},
    ),
    ("PUT", CONFIG, {"delete": "net1,ipconfig1"}),
]


@pytest.mark.parametrize(("method", "path", "params"), NETWORK_CALLS)
def test_every_call_of_the_networks_is_allowed(method: str, path: str, params: dict[str, str]) -> None:
    check(method, path, params)


def test_every_call_the_orchestrator_renders_is_allowed() -> None:
    calls = orchestrator_calls()
    assert len(calls) > 15
    for method, path, params in calls:
        check(method, path, params)


# ------------------------------------------------------------------------ hostile values


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"scsi1": "local-lvm:vm-4243-disk-0"}, "scsi1"),
        ({"virtio0": "local:4243/vm-4243-disk-0.qcow2"}, "virtio0"),
        ({"scsi0": "local-lvm:base-100-disk-0"}, "scsi0"),
        ({"scsi0": "local-lvm:vm-4242-disk-0,import-from=local-lvm:vm-4243-disk-0"}, "scsi0"),
        ({"scsi0": "local-lvm:vm-4242-disk-0,file=local-lvm:vm-4243-disk-0"}, "scsi0"),
        ({"scsi0": "local-lvm:vm-42420-disk-0"}, "scsi0"),
        ({"ide2": "local:iso/other.iso,media=cdrom"}, "ide2"),
        ({"scsi0": "/dev/sda"}, "scsi0"),
        ({"hookscript": "local:snippets/evil.sh"}, "hookscript"),
        ({"args": "-fw_cfg name=opt/x,file=/etc/shadow"}, "args"),
        ({"cicustom": "vendor=local:snippets/fp-other-4243-vendor.yaml"}, "cicustom"),
        ({"cicustom": "user=local:snippets/fp-demo-4242-vendor.yaml"}, "cicustom"),
        ({"cicustom": "vendor=nfs:snippets/fp-demo-4242-vendor.yaml"}, "cicustom"),
        ({"cicustom": "vendor=local:snippets/admin.yaml"}, "cicustom"),
        ({"cicustom": "network=local:snippets/fp-demo-4242-network.yaml"}, "cicustom"),
        ({"cicustom": ",".join(["meta=local:snippets/fp-demo-4242-meta.yaml"] * 2)}, "cicustom"),
        ({"cicustom": "user=local:snippets/fp-demo-4243-user.yaml"}, "cicustom"),
        ({"net0": "virtio,bridge=vmbr0"}, "net0"),
        ({"net0": "virtio,bridge=vmbr0,firewall=1"}, "net0"),
        ({"net1": "virtio=BC:24:11:00:00:01,bridge=vmbr1,firewall=0"}, "net1"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,tag=5"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,trunks=1-4094"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,rate=1000"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,queues=8"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,link_down=1"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,mtu=9000"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=0"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,firewall=1"}, "net0"),
        ({"net0": "e1000,bridge=fpab12cd,firewall=1"}, "net0"),
        ({"net0": "model=virtio,bridge=fpab12cd,firewall=1"}, "net0"),
        ({"net0": "virtio=BC:24:11:00:00:01,bridge=fpab12cd,firewall=1,macaddr=BC:24:11:00:00:02"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd,firewall=1,macaddr=not-a-mac"}, "net0"),
        ({"net0": "virtio,bridge=fp-ab,firewall=1"}, "net0"),
        ({"net0": "virtio,bridge=fpab12cd9,firewall=1"}, "net0"),
        ({"net32": "virtio,bridge=fpab12cd,firewall=1"}, "net32"),
        ({"ipconfig0": "ip=10.0.0.5,gw=10.0.0.1"}, "ipconfig0"),
        ({"nameserver": "10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.4"}, "nameserver"),
        ({"nameserver": "10.0.0.1,10.0.0.2"}, "nameserver"),
        ({"nameserver": "fd00::53"}, "nameserver"),
        ({"nameserver": "10.0.0.1  10.0.0.2"}, "nameserver"),
        ({"searchdomain": "corp example"}, "searchdomain"),
        ({"delete": "hookscript"}, "delete"),
        ({"delete": "net0,scsi0"}, "delete"),
        ({"delete": "net0,net0"}, "delete"),
        ({"delete": "net32"}, "delete"),
        ({"delete": ""}, "delete"),
        ({"tags": "fp-vdc-demo;fp-vdc-other"}, "tags"),
        ({"tags": "fp-"}, "tags"),
        ({"tags": "a b"}, "tags"),
        ({"cpu": "host,flags=+pcid"}, "cpu"),
        ({"cores": "0"}, "cores"),
        ({"cores": "2; rm -rf /"}, "cores"),
        ({"memory": "1e6"}, "memory"),
        ({"sshkeys": "not%20a%20key"}, "sshkeys"),
        ({"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1,dns=1.1.1.1"}, "ipconfig0"),
        ({"agent": "yes"}, "agent"),
        ({"skiplock": "1"}, "skiplock"),
        ({"delete": "scsi0"}, "delete"),
        ({"description": "a\x07b"}, "description"),
    ],
)
def test_a_config_write_naming_what_is_not_the_vms_own_is_refused_naming_the_parameter(
    params: dict[str, str], parameter: str
) -> None:
    for method in ("PUT", "POST"):
        error = refused(method, CONFIG, params)
        assert error.parameter == parameter
        assert parameter in str(error)


@pytest.mark.parametrize(
    ("method", "path", "params", "parameter"),
    [
        ("POST", "/nodes/pve1/qemu/100/clone", {"newid": "4242", "pool": "admins"}, "pool"),
        ("POST", "/nodes/pve1/qemu/100/clone", {"newid": "4242", "storage": "local"}, "storage"),
        ("POST", "/nodes/pve1/qemu/100/clone", {"newid": "100"}, "newid"),
        ("PUT", "/nodes/pve1/qemu/4242/resize", {"disk": "local-lvm:vm-4243-disk-0", "size": "1T"}, "disk"),
        ("PUT", "/nodes/pve1/qemu/4242/resize", {"disk": "scsi0", "size": "-1G"}, "size"),
        ("DELETE", "/nodes/pve1/qemu/4242", {"skiplock": "1"}, "skiplock"),
        ("POST", "/nodes/pve1/qemu/4242/status/stop", {"skiplock": "1"}, "skiplock"),
        (
            "POST",
            "/nodes/pve1/qemu/4242/migrate",
            {"target": "pve2", "targetstorage": "nfs"},
            "targetstorage",
        ),
        ("PUT", "/pools/fp-demo", {"vms": "4243"}, "vms"),
        ("POST", "/pools", {"poolid": "admins"}, "poolid"),
        ("GET", "/cluster/resources", {"type": "everything"}, "type"),
        ("GET", "/version", {"x": "1"}, "x"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "evpn"}, "type"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "simple"}, "type"),
        (
            "POST",
            "/cluster/sdn/zones",
            {"zone": "fpnet", "type": "vxlan", "controller": "evpn1"},
            "controller",
        ),
        ("POST", "/cluster/sdn/zones", {"zone": "fp-net", "type": "vxlan"}, "zone"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "vxlan", "peers": "pve1.example"}, "peers"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "vxlan", "mtu": "70000"}, "mtu"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "vlan", "bridge": "vmbr0 up"}, "bridge"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "vxlan", "ipam": "netbox"}, "ipam"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "vxlan", "dns": "pdns"}, "dns"),
        ("POST", "/cluster/sdn/zones", {"zone": "fpnet", "type": "vxlan", "nodes": "pve1,,pve2"}, "nodes"),
        ("POST", "/cluster/sdn/vnets", {"vnet": "fpab12cd", "zone": "fpnet", "vlanaware": "1"}, "vlanaware"),
        (
            "POST",
            "/cluster/sdn/vnets",
            {"vnet": "fpab12cd", "zone": "fpnet", "isolate-ports": "1"},
            "isolate-ports",
        ),
        ("POST", "/cluster/sdn/vnets", {"vnet": "fpab12cd9", "zone": "fpnet"}, "vnet"),
        ("POST", "/cluster/sdn/vnets", {"vnet": "fpab12cd", "zone": "fpnet", "tag": "0"}, "tag"),
        ("POST", "/cluster/sdn/vnets", {"vnet": "fpab12cd", "zone": "fpnet", "tag": "16777216"}, "tag"),
        ("POST", "/cluster/sdn/vnets", {"vnet": "fpab12cd", "alias": "net\nauto eth0"}, "alias"),
        ("POST", "/cluster/sdn/vnets", {"vnet": "fpab12cd", "alias": "a" * 257}, "alias"),
        ("POST", "/cluster/sdn/vnets", {"vnet": "fpab12cd", "alias": "net #1"}, "alias"),
        ("GET", "/cluster/sdn/vnets", {"pending": "yes"}, "pending"),
        ("GET", "/cluster/sdn/vnets/fpab12cd", {"pending": "1"}, "pending"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/subnets", {"subnet": "10.0.0.5/24"}, "subnet"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/subnets", {"subnet": "fd00::/64"}, "subnet"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/subnets", {"subnet": "10.0.0.0/24", "snat": "1"}, "snat"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/subnets", {"subnet": "10.0.0.0/24", "type": "vnet"}, "type"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/subnets", {"gateway": "10.0.0.1/24"}, "gateway"),
        (
            "POST",
            "/cluster/sdn/vnets/fpab12cd/subnets",
            {"dhcp-range": "start-address=10.0.0.10,end-address=10.0.0.20"},
            "dhcp-range",
        ),
        ("PUT", "/cluster/sdn", {"lock-token": "x"}, "lock-token"),
        ("PUT", "/nodes/pve1/qemu/4242/firewall/options", {"policy_in": "ALLOW"}, "policy_in"),
        ("PUT", "/nodes/pve1/qemu/4242/firewall/options", {"log_level_in": "info"}, "log_level_in"),
        ("PUT", "/nodes/pve1/qemu/4242/firewall/options", {"macfilter": "0"}, "macfilter"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"type": "group", "action": "fp-web"}, "type"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"type": "in", "action": "fp-web"}, "action"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"proto": "gre"}, "proto"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": "0"}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": "70000"}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": "8080:80"}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": "22,,80"}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": "22, 80"}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": "22,ssh"}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": "80,70000"}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dport": ",".join(["1:2"] * 7 + ["3,4"])}, "dport"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"source": "10.0.0.0/33"}, "source"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"source": "+dc/admins"}, "source"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"dest": "garbage"}, "dest"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"source": "10.0.0.1-10.0.0.9"}, "source"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"iface": "net0"}, "iface"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"macro": "SSH"}, "macro"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"log": "info"}, "log"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"comment": "a\nb"}, "comment"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"comment": "c" * 257}, "comment"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/rules", {"enable": "2"}, "enable"),
        ("DELETE", "/nodes/pve1/qemu/4242/firewall/rules/0", {"digest": "x"}, "digest"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/ipset", {"name": "w"}, "name"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/ipset", {"name": "1web"}, "name"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/ipset", {"name": "fp-web", "rename": "x"}, "rename"),
        ("POST", "/nodes/pve1/qemu/4242/firewall/ipset/fp-web", {"cidr": "fd00::/64"}, "cidr"),
        (
            "POST",
            "/nodes/pve1/qemu/4242/firewall/ipset/fp-web",
            {"cidr": "10.0.0.0/24", "nomatch": "1"},
            "nomatch",
        ),
        ("POST", "/nodes/pve1/qemu/4242/firewall/ipset/fp-web", {"cidr": "dc/admins"}, "cidr"),
        ("POST", "/nodes/pve1/qemu/4242/snapshot", {"snapname": "../x"}, "snapname"),
        ("POST", "/nodes/pve1/qemu/4242/snapshot", {"snapname": "a" * 41}, "snapname"),
        ("POST", "/nodes/pve1/qemu/4242/snapshot", {"snapname": "s1", "vmstate": "yes"}, "vmstate"),
        ("POST", "/nodes/pve1/qemu/4242/snapshot/s1/rollback", {"start": "1; reboot"}, "start"),
        ("POST", "/nodes/pve1/qemu/4242/snapshot/s1/rollback", {"skiplock": "1"}, "skiplock"),
        ("DELETE", "/nodes/pve1/qemu/4242/snapshot/s1", {"force": "1"}, "force"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "name": "web"}, "name"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "scsi0": "local-lvm:vm-4243-disk-0"}, "scsi0"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "scsi0": "local-lvm:0"}, "scsi0"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "scsi0": "local-lvm:8,import-from=local:1"}, "scsi0"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "scsi1": "local-lvm:8"}, "scsi1"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "net0": "virtio,bridge=vnet1,firewall=1"}, "net0"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "archive": "local:backup/x.vma"}, "archive"),
        ("POST", "/nodes/pve1/qemu", {"vmid": "4242", "pool": "admins"}, "pool"),
        ("POST", "/nodes/pve1/qemu/4242/move_disk", {"disk": "scsi0", "target-vmid": "4242"}, "target-vmid"),
        ("POST", "/nodes/pve1/qemu/4242/move_disk", {"disk": "scsi0", "storage": "local"}, "storage"),
        ("POST", "/nodes/pve1/qemu/4242/move_disk", {"disk": "efidisk0", "target-vmid": "4243"}, "disk"),
        ("POST", "/nodes/pve1/qemu/4242/move_disk", {"disk": "scsi0", "delete": "1"}, "delete"),
    ],
)
def test_another_route_refuses_what_it_does_not_declare(
    method: str, path: str, params: dict[str, str], parameter: str
) -> None:
    assert refused(method, path, params).parameter == parameter


@pytest.mark.parametrize(
    "name",
    [
        "vm-4242-disk-0",
        "vm-4242-disk-12.raw",
        "4242/vm-4242-disk-0.qcow2",
        "100/base-100-disk-0.qcow2/4242/vm-4242-disk-0.qcow2",
        "base-100-disk-0/vm-4242-disk-1",
        "vm-4242-cloudinit",
        "4242/vm-4242-cloudinit.qcow2",
    ],
)
def test_a_volume_of_the_vm_itself_is_its_own_in_every_form_proxmox_writes(name: str) -> None:
    assert owned_volume_name(name, "4242")
    check("PUT", CONFIG, {"scsi0": f"local:{name},size=4G"})


@pytest.mark.parametrize(
    "nic",
    [
        "virtio,bridge=fpab12cd,firewall=1",
        "virtio=BC:24:11:2A:3B:4C,bridge=fpab12cd,firewall=1",
        "virtio,firewall=1,bridge=fp1,macaddr=bc:24:11:2a:3b:4c",
    ],
)
def test_a_firewalled_virtio_nic_on_a_vnet_is_accepted_with_or_without_its_mac(nic: str) -> None:
    check("PUT", CONFIG, {"net0": nic})


def test_a_bridge_the_nodes_policy_allows_is_accepted_but_never_the_nodes_own() -> None:
    policy = Policy(bridges=frozenset({"tenant_br", "vmbr1"}))
    authorize("PUT", CONFIG, {"net0": "virtio,bridge=tenant_br,firewall=1"}, policy=policy)
    with pytest.raises(NotAllowed, match="is not an SDN VNet"):
        authorize("PUT", CONFIG, {"net0": "virtio,bridge=vmbr1,firewall=1"}, policy=policy)


# ------------------------------------------------------------------------ properties

_NAMES = st.one_of(
    st.sampled_from(sorted({name for route in ALLOWED for name in route.params})),
    st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,20}", fullmatch=True),
)
_VALUES = st.one_of(
    st.text(max_size=40),
    st.from_regex(
        r"[a-z-]{1,8}:(vm|base)-[0-9]{3,5}-disk-[0-9](,[a-z_]{1,8}=[a-z0-9]{1,4})?", fullmatch=True
    ),
    st.sampled_from(["0", "1", "vm", "fp-demo", "pve2", "4243", "vmbr0", "local:snippets/x.yaml"]),
)
_REQUESTS = st.sampled_from(
    [
        ("GET", "/cluster/resources"),
        ("GET", "/nodes/pve1/tasks"),
        ("POST", "/nodes/pve1/qemu/100/clone"),
        ("PUT", CONFIG),
        ("POST", CONFIG),
        ("PUT", "/nodes/pve1/qemu/4242/resize"),
        ("POST", "/nodes/pve1/qemu/4242/status/shutdown"),
        ("DELETE", "/nodes/pve1/qemu/4242"),
        ("POST", "/nodes/pve1/qemu/4242/migrate"),
        ("POST", "/pools"),
        ("PUT", "/pools/fp-demo"),
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=_REQUESTS, params=st.dictionaries(_NAMES, _VALUES, max_size=6))
def test_nothing_outside_the_declarations_is_ever_forwarded(
    request: tuple[str, str], params: dict[str, str]
) -> None:
    method, path = request
    try:
        route = authorize(method, path, params, policy=POLICY)
    except NotAllowed as exc:
        refusal: NotAllowed | None = exc
    else:
        refusal = None
    if refusal is not None:
        # A refusal names one of the request's parameters, or none when the whole request is refused.
        assert refusal.parameter is None or refusal.parameter in params
        return
    for name, value in params.items():
        assert name in route.params
        if name in ("scsi0", "scsi1", "virtio0", "ide2"):
            volume = value.split(",")[0]
            assert volume.endswith(":cloudinit") or owned_volume_name(volume.split(":", 1)[1], "4242")


@settings(max_examples=300, deadline=None)
@given(
    other=st.integers(100, 999_999_999).filter(lambda v: v != 4242),
    form=st.sampled_from(["vm-{v}-disk-0", "{v}/vm-{v}-disk-0.qcow2", "base-{v}-disk-0", "vm-{v}-cloudinit"]),
    key=st.sampled_from(["scsi0", "scsi5", "virtio3", "sata1", "ide0"]),
    options=st.lists(st.sampled_from(sorted(DISK_OPTIONS)), max_size=3, unique=True),
)
def test_no_volume_of_another_vm_is_ever_attached(
    other: int, form: str, key: str, options: list[str]
) -> None:
    value = ",".join([f"local-lvm:{form.format(v=other)}", *(f"{o}=1" for o in options)])
    assert refused("PUT", CONFIG, {key: value}).parameter == key


ORCHESTRATOR_CALLS = orchestrator_calls()


@settings(max_examples=300, deadline=None)
@given(
    call=st.sampled_from(ORCHESTRATOR_CALLS),
    name=st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,30}", fullmatch=True),
    value=st.text(max_size=20),
)
def test_an_undeclared_parameter_added_to_any_call_of_the_orchestrator_is_refused_naming_it(
    call: tuple[str, str, dict[str, str]], name: str, value: str
) -> None:
    method, path, params = call
    route = authorize(method, path, params, policy=POLICY)
    if name in route.params or name.lower() in (
        "x-http-method-override",
        "x-http-method",
        "x-method-override",
    ):
        return
    assert refused(method, path, {**params, name: value.replace("\x00", "")}).parameter == name
