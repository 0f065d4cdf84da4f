"""The harness's SDN (devstack.fakesdn): zones, VNets and subnets kept per cluster, pending until applied,
with Proxmox's checks and answers; NICs only on bridges that exist; and fakepve's VM firewall kept too.
Checked over HTTPS as clients meet it, and in the fake's own state."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from devstack.fakezones import FakeZones
from tests import addresses
from tests.devstack.conftest import pve_api

# Two nodes of one cluster: what one writes, the other answers.
NODES = {"pve1": addresses.address(addresses.FAKE_ZONE, 2), "pve2": addresses.address(addresses.FAKE_ZONE, 3)}
VXLAN = {"zone": "fpvx", "type": "vxlan", "peers": "10.0.0.1,10.0.0.2", "mtu": "1450", "ipam": "pve"}


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeZones]:
    zones = FakeZones({"zone-s": NODES}, {"zone-s": "s3cret"}, Path(tmp_path_factory.mktemp("pki")))
    zones["zone-s"].pve.add_vm(100, "vm", node="pve1", status="stopped", config={"memory": "1024"})
    zones.start()
    yield zones
    zones.stop()


@pytest.fixture(autouse=True)
def clean(fakes: FakeZones) -> Iterator[None]:
    """Every test starts from an empty SDN, applied, and VM 100 without NICs or firewall."""
    yield
    pve = fakes["zone-s"].pve

    def reset() -> None:
        sdn = fakes["zone-s"].sdn
        sdn.zones.clear()
        sdn.vnets.clear()
        sdn.subnets.clear()
        sdn.apply()
        vm = pve.vm(100)
        vm.config = {k: v for k, v in vm.config.items() if not k.startswith("net")}
        pve.__dict__.pop("_fw_state", None)

    fakes.on_loop(reset)


def call(fakes: FakeZones, method: str, path: str, node: str = "pve1", **data: Any) -> requests.Response:
    return pve_api(fakes, "zone-s", method, path, node, **data)


def ok(answer: requests.Response) -> Any:
    assert answer.status_code == 200, (answer.status_code, answer.text)
    return answer.json()["data"]


def refused(answer: requests.Response) -> str:
    """Proxmox's refusal of a call whose parameters it accepted (a 500): its message."""
    assert answer.status_code == 500, (answer.status_code, answer.text)
    return str(answer.json()["message"])


def state(fakes: FakeZones, kind: str) -> dict[str, dict[str, Any]]:
    return dict(fakes.on_loop(lambda: {k: dict(v) for k, v in fakes["zone-s"].sdn.config(kind).items()}))


def network(fakes: FakeZones, vnet: str = "fpnet", tag: str = "100", cidr: str = "10.0.0.0/24") -> None:
    """A VXLAN zone (once), a VNet in it and its subnet, written (not applied)."""
    if "fpvx" not in state(fakes, "zones"):
        ok(call(fakes, "POST", "/cluster/sdn/zones", **VXLAN))
    ok(call(fakes, "POST", "/cluster/sdn/vnets", vnet=vnet, zone="fpvx", tag=tag, alias="vdc demo (net-a)"))
    gateway = cidr.rsplit(".", 1)[0] + ".1"
    ok(call(fakes, "POST", f"/cluster/sdn/vnets/{vnet}/subnets", subnet=cidr, type="subnet", gateway=gateway))


def apply(fakes: FakeZones) -> str:
    upid = ok(call(fakes, "PUT", "/cluster/sdn"))
    assert isinstance(upid, str)
    return upid


def test_a_zone_vnet_and_subnet_are_kept_for_the_whole_cluster(fakes: FakeZones) -> None:
    network(fakes)

    assert state(fakes, "zones") == {
        "fpvx": {"type": "vxlan", "peers": "10.0.0.1,10.0.0.2", "mtu": 1450, "ipam": "pve"}
    }
    assert state(fakes, "vnets") == {"fpnet": {"zone": "fpvx", "tag": 100, "alias": "vdc demo (net-a)"}}
    assert state(fakes, "subnets") == {"fpvx-10.0.0.0-24": {"vnet": "fpnet", "gateway": "10.0.0.1"}}
    (vnet,) = ok(call(fakes, "GET", "/cluster/sdn/vnets", node="pve2"))
    assert {k: vnet[k] for k in ("vnet", "zone", "tag", "alias", "type")} == {
        "vnet": "fpnet",
        "zone": "fpvx",
        "tag": 100,
        "alias": "vdc demo (net-a)",
        "type": "vnet",
    }
    (subnet,) = ok(call(fakes, "GET", "/cluster/sdn/vnets/fpnet/subnets", node="pve2"))
    assert subnet["subnet"] == "fpvx-10.0.0.0-24"
    assert (subnet["cidr"], subnet["gateway"], subnet["vnet"], subnet["zone"]) == (
        "10.0.0.0/24",
        "10.0.0.1",
        "fpnet",
        "fpvx",
    )
    zone = ok(call(fakes, "GET", "/cluster/sdn/zones/fpvx"))
    assert (zone["zone"], zone["type"], zone["peers"]) == ("fpvx", "vxlan", "10.0.0.1,10.0.0.2")


def test_written_objects_are_pending_until_applied_then_running(fakes: FakeZones) -> None:
    network(fakes)
    (pending,) = ok(call(fakes, "GET", "/cluster/sdn/vnets", pending="1"))
    assert pending["state"] == "new"
    assert pending["pending"] == {"zone": "fpvx", "tag": 100, "alias": "vdc demo (net-a)"}
    assert ok(call(fakes, "GET", "/cluster/sdn/vnets", running="1")) == []

    upid = apply(fakes)

    assert upid.startswith("UPID:pve1:")
    assert ":reloadnetworkall:" in upid
    status = ok(call(fakes, "GET", f"/nodes/pve1/tasks/{upid}/status"))
    assert (status["status"], status["exitstatus"]) == ("stopped", "OK")
    (applied,) = ok(call(fakes, "GET", "/cluster/sdn/vnets", pending="1"))
    assert "state" not in applied
    assert "pending" not in applied
    assert applied["tag"] == 100
    assert [v["vnet"] for v in ok(call(fakes, "GET", "/cluster/sdn/vnets", running="1"))] == ["fpnet"]
    assert fakes.on_loop(lambda: fakes["zone-s"].sdn.bridges()) == {"vmbr0", "fpnet"}


def test_a_changed_vnet_shows_the_value_not_yet_applied(fakes: FakeZones) -> None:
    network(fakes)
    apply(fakes)
    ok(call(fakes, "PUT", "/cluster/sdn/vnets/fpnet", alias="renamed"))
    vnet = ok(call(fakes, "GET", "/cluster/sdn/vnets/fpnet", pending="1"))
    assert (vnet["state"], vnet["alias"], vnet["pending"]) == (
        "changed",
        "vdc demo (net-a)",
        {"alias": "renamed"},
    )


def test_a_deleted_vnet_stays_running_until_applied(fakes: FakeZones) -> None:
    network(fakes)
    apply(fakes)
    ok(call(fakes, "DELETE", "/cluster/sdn/vnets/fpnet/subnets/fpvx-10.0.0.0-24"))
    ok(call(fakes, "DELETE", "/cluster/sdn/vnets/fpnet"))
    (vnet,) = ok(call(fakes, "GET", "/cluster/sdn/vnets", pending="1"))
    assert (vnet["vnet"], vnet["state"]) == ("fpnet", "deleted")
    assert "fpnet" in fakes.on_loop(lambda: fakes["zone-s"].sdn.bridges())
    apply(fakes)
    assert ok(call(fakes, "GET", "/cluster/sdn/vnets", pending="1")) == []
    assert fakes.on_loop(lambda: fakes["zone-s"].sdn.bridges()) == {"vmbr0"}


def test_a_vnet_id_longer_than_eight_characters_is_refused(fakes: FakeZones) -> None:
    network(fakes)
    answer = call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpnet12345", zone="fpvx", tag="7")
    assert answer.status_code == 400
    assert "vnet" in answer.json()["errors"]
    assert "fpnet12345" not in state(fakes, "vnets")


def test_a_zone_id_with_illegal_characters_is_refused(fakes: FakeZones) -> None:
    answer = call(fakes, "POST", "/cluster/sdn/zones", **{**VXLAN, "zone": "fp-vx"})
    assert answer.status_code == 400
    assert "zone" in answer.json()["errors"]
    assert state(fakes, "zones") == {}


def test_a_vxlan_tag_out_of_range_is_refused(fakes: FakeZones) -> None:
    network(fakes)
    answer = call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpbig", zone="fpvx", tag="16777216")
    assert answer.status_code == 400
    assert "maximum" in answer.json()["errors"]["tag"]
    answer = call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpzero", zone="fpvx", tag="0")
    assert answer.status_code == 400
    assert set(state(fakes, "vnets")) == {"fpnet"}


def test_a_vlan_tag_above_4096_is_refused_in_proxmox_words(fakes: FakeZones) -> None:
    ok(call(fakes, "POST", "/cluster/sdn/zones", zone="fpvl", type="vlan", bridge="vmbr0"))
    message = refused(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpvlan", zone="fpvl", tag="5000"))
    assert message == (
        "create sdn vnet object failed: 400 Parameter verification failed.\ntag: vlan tag max value is 4096\n"
    )


def test_a_vnet_without_a_tag_in_a_vxlan_zone_is_refused(fakes: FakeZones) -> None:
    network(fakes)
    message = refused(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpnotag", zone="fpvx"))
    assert "tag: missing vxlan tag" in message


def test_a_duplicate_vxlan_tag_is_refused(fakes: FakeZones) -> None:
    network(fakes)
    message = refused(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fptwin", zone="fpvx", tag="100"))
    assert "tag: vxlan tag 100 already exist in vnet fpnet in zone fpvx" in message
    assert set(state(fakes, "vnets")) == {"fpnet"}


def test_a_duplicate_vlan_tag_is_refused_in_its_zone_only(fakes: FakeZones) -> None:
    ok(call(fakes, "POST", "/cluster/sdn/zones", zone="fpvla", type="vlan", bridge="vmbr0"))
    ok(call(fakes, "POST", "/cluster/sdn/zones", zone="fpvlb", type="vlan", bridge="vmbr0"))
    ok(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpa", zone="fpvla", tag="10"))
    ok(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpb", zone="fpvlb", tag="10"))
    message = refused(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpc", zone="fpvla", tag="10"))
    assert "tag: tag 10 already exist in vnet fpa" in message


def test_a_duplicate_vnet_id_is_refused(fakes: FakeZones) -> None:
    network(fakes)
    message = refused(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fpnet", zone="fpvx", tag="101"))
    assert message == "create sdn vnet object failed: sdn vnet object ID 'fpnet' already defined\n"


def test_a_vnet_in_a_zone_that_does_not_exist_is_refused(fakes: FakeZones) -> None:
    refused(call(fakes, "POST", "/cluster/sdn/vnets", vnet="fporph", zone="nozone", tag="5"))
    assert state(fakes, "vnets") == {}


def test_a_vxlan_zone_needs_peers_and_a_vlan_zone_a_bridge(fakes: FakeZones) -> None:
    message = refused(call(fakes, "POST", "/cluster/sdn/zones", zone="fpvx", type="vxlan"))
    assert "peers: must have exactly one of peers / fabric defined" in message
    message = refused(call(fakes, "POST", "/cluster/sdn/zones", zone="fpvl", type="vlan"))
    assert message == "missing value for required option 'bridge'\n"
    message = refused(
        call(fakes, "POST", "/cluster/sdn/zones", zone="fpvl", type="vxlan", peers="10.0.0.1", bridge="vmbr0")
    )
    assert message == "unexpected property 'bridge'\n"
    assert state(fakes, "zones") == {}


def test_an_unknown_ipam_is_refused(fakes: FakeZones) -> None:
    message = refused(call(fakes, "POST", "/cluster/sdn/zones", **{**VXLAN, "ipam": "netbox"}))
    assert "ipam: netbox not existing" in message


def test_a_gateway_outside_its_subnet_is_refused(fakes: FakeZones) -> None:
    network(fakes)
    message = refused(
        call(
            fakes,
            "POST",
            "/cluster/sdn/vnets/fpnet/subnets",
            subnet="10.1.0.0/24",
            type="subnet",
            gateway="10.2.0.1",
        )
    )
    assert message == (
        "create sdn subnet object failed: 400 Parameter verification failed.\n"
        "gateway: 10.2.0.1 is not in subnet 10.1.0.0/24\n"
    )
    assert set(state(fakes, "subnets")) == {"fpvx-10.0.0.0-24"}


def test_a_subnet_that_is_no_cidr_is_refused(fakes: FakeZones) -> None:
    network(fakes)
    answer = call(fakes, "POST", "/cluster/sdn/vnets/fpnet/subnets", subnet="10.1.0.0/99", type="subnet")
    assert answer.status_code == 400
    assert answer.json()["errors"] == {"subnet": "value does not look like a valid CIDR network"}


def test_a_subnet_on_a_vnet_that_does_not_exist_is_refused(fakes: FakeZones) -> None:
    message = refused(
        call(fakes, "POST", "/cluster/sdn/vnets/fpnone/subnets", subnet="10.1.0.0/24", type="subnet")
    )
    assert message == "sdn vnet 'fpnone' does not exist\n"


def test_a_vnet_with_subnets_is_not_deleted(fakes: FakeZones) -> None:
    network(fakes)
    message = refused(call(fakes, "DELETE", "/cluster/sdn/vnets/fpnet"))
    assert "vnet: Can't delete vnet if subnets exists" in message
    assert "fpnet" in state(fakes, "vnets")
    ok(call(fakes, "DELETE", "/cluster/sdn/vnets/fpnet/subnets/fpvx-10.0.0.0-24"))
    ok(call(fakes, "DELETE", "/cluster/sdn/vnets/fpnet"))
    assert state(fakes, "vnets") == {}


def test_a_zone_with_vnets_is_not_deleted(fakes: FakeZones) -> None:
    network(fakes)
    message = refused(call(fakes, "DELETE", "/cluster/sdn/zones/fpvx"))
    assert message == "delete sdn zone object failed: zone fpvx is used by vnet fpnet\n"
    assert "fpvx" in state(fakes, "zones")


def test_a_nic_on_a_bridge_that_does_not_exist_is_refused(fakes: FakeZones) -> None:
    network(fakes)  # written, not applied: not a bridge yet
    message = refused(
        call(fakes, "PUT", "/nodes/pve1/qemu/100/config", net0="virtio,bridge=fpnet,firewall=1")
    )
    assert message == "bridge 'fpnet' does not exist\n"
    refused(call(fakes, "PUT", "/nodes/pve1/qemu/100/config", net0="virtio,bridge=vmbr9,firewall=1"))
    assert "net0" not in fakes.on_loop(lambda: dict(fakes["zone-s"].pve.vm(100).config))


def test_a_nic_on_an_applied_vnet_is_kept_with_a_mac_given_or_made(fakes: FakeZones) -> None:
    network(fakes)
    apply(fakes)
    ok(call(fakes, "PUT", "/nodes/pve1/qemu/100/config", net0="virtio,bridge=fpnet,firewall=1"))
    ok(
        call(
            fakes,
            "PUT",
            "/nodes/pve1/qemu/100/config",
            net1="virtio,bridge=vmbr0,firewall=1,macaddr=BC:24:11:00:00:01",
        )
    )
    config = fakes.on_loop(lambda: dict(fakes["zone-s"].pve.vm(100).config))
    model, _, rest = config["net0"].partition(",")
    assert re.fullmatch(r"virtio=[0-9A-F]{2}(:[0-9A-F]{2}){5}", model)
    assert rest == "bridge=fpnet,firewall=1"
    assert config["net1"] == "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1"


def test_a_vms_firewall_written_through_the_api_is_in_the_fakes_state(fakes: FakeZones) -> None:
    base = "/nodes/pve1/qemu/100/firewall"
    ok(call(fakes, "PUT", f"{base}/options", enable="1", policy_in="DROP", policy_out="ACCEPT", ipfilter="1"))
    ok(call(fakes, "POST", f"{base}/ipset", name="fp-web", comment="group web"))
    ok(
        call(
            fakes,
            "POST",
            f"{base}/rules",
            type="in",
            action="ACCEPT",
            proto="tcp",
            dport="22",
            source="+fp-web",
        )
    )
    ok(call(fakes, "POST", f"{base}/ipset/fp-web", cidr="10.0.0.0/24"))
    ok(call(fakes, "POST", f"{base}/ipset/fp-web", cidr="10.0.1.5"))
    ok(call(fakes, "DELETE", f"{base}/ipset/fp-web/10.0.1.5"))

    stored = fakes.on_loop(lambda: fakes["zone-s"].pve.firewall_config("vm", vmid=100))
    assert stored["options"] == {"enable": 1, "policy_in": "DROP", "policy_out": "ACCEPT", "ipfilter": 1}
    (rule,) = stored["rules"]
    assert {k: rule[k] for k in ("type", "action", "proto", "dport", "source")} == {
        "type": "in",
        "action": "ACCEPT",
        "proto": "tcp",
        "dport": "22",
        "source": "+fp-web",
    }
    assert [entry["cidr"] for entry in stored["ipset"]["fp-web"]] == ["10.0.0.0/24"]
    assert stored["ipset_comments"]["fp-web"] == "group web"
    assert ok(call(fakes, "GET", f"{base}/options", node="pve2"))["policy_in"] == "DROP"


def test_a_vm_whose_vnet_was_deleted_since_does_not_start(fakes: FakeZones) -> None:
    network(fakes)
    apply(fakes)
    ok(call(fakes, "PUT", "/nodes/pve1/qemu/100/config", net0="virtio,bridge=fpnet,firewall=1"))
    ok(call(fakes, "DELETE", "/cluster/sdn/vnets/fpnet/subnets/fpvx-10.0.0.0-24"))
    ok(call(fakes, "DELETE", "/cluster/sdn/vnets/fpnet"))
    apply(fakes)

    upid = ok(call(fakes, "POST", "/nodes/pve1/qemu/100/status/start"))

    status = ok(call(fakes, "GET", f"/nodes/pve1/tasks/{upid}/status"))
    assert status["exitstatus"] == "bridge 'fpnet' does not exist"
    assert fakes.on_loop(lambda: fakes["zone-s"].pve.vm(100).status) == "stopped"
