"""The proxy's allowlist: exact methods, plain normalized paths, bounded parameters (what each
parameter may be: test_agent_allowlist_params.py)."""

from __future__ import annotations

import pytest

from agent.proxy import ALLOWED, MAX_PARAM_VALUE_BYTES, NotAllowed, authorize, compile_table

UPID = "UPID:pve1:0000C0DE:0001F00D:6761A2B3:qmstart:100:root@pam!flexplane:"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/version"),
        ("GET", "/nodes"),
        ("GET", "/cluster/resources"),
        ("GET", "/cluster/status"),
        ("GET", "/nodes/pve1/status"),
        ("GET", "/nodes/node-2/status"),
        ("GET", f"/nodes/pve1/tasks/{UPID}/status"),
        ("GET", f"/nodes/pve1/tasks/{UPID}/log"),
        ("GET", "/nodes/pve1/tasks/UPID:pve1:00001234:00005678:6761A2B3:vzdump::root@pam:/status"),
        ("GET", "/cluster/nextid"),
        ("GET", "/nodes/pve1/storage"),
        ("GET", "/nodes/pve1/tasks"),
        ("POST", "/nodes/pve1/qemu/100/clone"),
        ("GET", "/nodes/pve1/qemu/100/config"),
        ("POST", "/nodes/pve1/qemu/100/config"),
        ("PUT", "/nodes/pve1/qemu/100/config"),
        ("GET", "/nodes/pve1/qemu/100/pending"),
        ("PUT", "/nodes/pve1/qemu/100/resize"),
        ("POST", "/nodes/pve1/qemu"),
        ("POST", "/nodes/pve1/qemu/100/move_disk"),
        ("POST", "/nodes/pve1/qemu/100/status/start"),
        ("POST", "/nodes/pve1/qemu/100/status/stop"),
        ("POST", "/nodes/pve1/qemu/100/status/shutdown"),
        ("POST", "/nodes/pve1/qemu/100/status/reboot"),
        ("GET", "/nodes/pve1/qemu/100/status/current"),
        ("DELETE", "/nodes/pve1/qemu/100"),
        ("GET", "/nodes/pve1/qemu/100/agent/network-get-interfaces"),
        ("POST", "/nodes/pve1/qemu/100/migrate"),
        ("GET", "/pools"),
        ("POST", "/pools"),
        ("GET", "/pools/fp-demo"),
        ("PUT", "/pools/fp-demo"),
        ("DELETE", "/pools/fp-demo"),
        ("GET", "/pools/fp-a"),
        ("GET", "/pools/fp-" + "a" * 63),
        ("GET", "/nodes/pve1/qemu/100/firewall/options"),
        ("PUT", "/nodes/pve1/qemu/100/firewall/options"),
        ("GET", "/nodes/pve1/qemu/100/firewall/rules"),
        ("POST", "/nodes/pve1/qemu/100/firewall/rules"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/rules/0"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/rules/12"),
        ("GET", "/nodes/pve1/qemu/100/firewall/ipset"),
        ("POST", "/nodes/pve1/qemu/100/firewall/ipset"),
        ("GET", "/nodes/pve1/qemu/100/firewall/ipset/fp-web"),
        ("POST", "/nodes/pve1/qemu/100/firewall/ipset/fp-web"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/fp-web"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.5"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.0/24"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.0%2F24"),
        ("GET", "/cluster/sdn/zones"),
        ("POST", "/cluster/sdn/zones"),
        ("GET", "/cluster/sdn/zones/fpnet"),
        ("DELETE", "/cluster/sdn/zones/fpnet"),
        ("GET", "/cluster/sdn/vnets"),
        ("POST", "/cluster/sdn/vnets"),
        ("GET", "/cluster/sdn/vnets/fpab12cd"),
        ("DELETE", "/cluster/sdn/vnets/fpab12cd"),
        ("GET", "/cluster/sdn/vnets/fpab12cd/subnets"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/subnets"),
        ("DELETE", "/cluster/sdn/vnets/fpab12cd/subnets/fpnet-10.0.0.0-24"),
        ("PUT", "/cluster/sdn"),
    ],
)
def test_it_allows_every_row_of_the_table(method: str, path: str) -> None:
    assert authorize(method, path, {}).method == method


@pytest.mark.parametrize(
    "path",
    [
        "/nodes/-pve1/status",
        "/nodes/pve1-/status",
        "/nodes/pve_1/status",
        "/nodes/" + "a" * 64 + "/status",
        "/nodes/pve1/tasks/UPID:pve1:nothex00:00005678:6761A2B3:qmstart:100:root@pam:/status",
        "/nodes/pve1/tasks/UPID:pve1:00001234:00005678:6761A2B3:qmstart:100:root@pam/status",
        "/nodes/pve1/tasks/not-a-upid/status",
        "/pools/demo",
        "/pools/fp-",
        "/pools/fp-Demo",
        "/pools/fp-demo-",
        "/pools/fp--demo",
        "/pools/fp_demo",
        "/pools/FP-demo",
        "/pools/xfp-demo",
        "/pools/fp-" + "a" * 64,
    ],
)
def test_it_refuses_placeholders_that_do_not_match(path: str) -> None:
    with pytest.raises(NotAllowed, match="not on the proxy's allowlist"):
        authorize("GET", path, {})


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/cluster/sdn/zones/fpnet1234"),
        ("GET", "/cluster/sdn/zones/FPnet"),
        ("GET", "/cluster/sdn/zones/1fp"),
        ("DELETE", "/cluster/sdn/vnets/fp-net"),
        ("DELETE", "/cluster/sdn/vnets/fpab12cd9"),
        ("DELETE", "/cluster/sdn/vnets/fpab12cd/subnets/fpnet-10.0.0.0-33"),
        ("DELETE", "/cluster/sdn/vnets/fpab12cd/subnets/fpnet-10.0.0.256-24"),
        ("DELETE", "/cluster/sdn/vnets/fpab12cd/subnets/10.0.0.0-24"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/rules/01"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/rules/x"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/1web"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/w"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.0/24/x"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.0/33"),
        ("DELETE", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/fd00::1"),
    ],
)
def test_sdn_and_firewall_placeholders_that_do_not_match_are_refused(method: str, path: str) -> None:
    with pytest.raises(NotAllowed, match="not on the proxy's allowlist"):
        authorize(method, path, {})


@pytest.mark.parametrize(
    "action",
    ["suspend", "resume", "reset", "Start", "START", "start2", "starts", "", "start;stop", "current"],
)
def test_only_the_four_power_actions_are_allowed(action: str) -> None:
    with pytest.raises(NotAllowed):
        authorize("POST", f"/nodes/pve1/qemu/100/status/{action}", {})


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/nodes/pve1/qemu/100"),
        ("GET", "/nodes/pve1/qemu"),
        ("POST", "/nodes/pve1/qemu/100/template"),
        ("POST", "/nodes/pve1/storage/local/upload"),
        ("POST", "/nodes/pve1/storage/local/download-url"),
        ("DELETE", "/nodes/pve1/storage/local/content/local:iso/x.img"),
        ("GET", "/nodes/pve1/qemu/100/agent/exec"),
        ("POST", "/nodes/pve1/qemu/100/agent/exec"),
        ("POST", "/nodes/pve1/qemu/100/agent/set-user-password"),
        ("GET", "/nodes/pve1/qemu/100/agent/file-read"),
        ("POST", "/nodes/pve1/qemu/100/vncproxy"),
        ("POST", "/nodes/pve1/qemu/100/monitor"),
        ("PUT", "/nodes/pve1/qemu/100/snapshot/before/config"),
        ("GET", "/nodes/pve1/qemu/100/snapshot/before/config"),
        ("DELETE", "/nodes/pve1/qemu/100/config"),
        ("GET", "/nodes/pve1/qemu/100/status"),
        ("POST", "/nodes/pve1/qemu/100/status/current"),
        ("GET", "/nodes/pve1/qemu/100/status/start"),
        ("PUT", "/nodes/pve1/qemu/100/status/start"),
        ("DELETE", "/pools"),
        ("PUT", "/pools"),
        ("POST", "/pools/fp-demo"),
        ("GET", "/access/users"),
        ("POST", "/access/users"),
        ("PUT", "/access/acl"),
        ("GET", "/nodes/pve1/storage/local/content"),
        ("POST", "/cluster/nextid"),
    ],
)
def test_nothing_else_of_the_vm_lifecycle_is_allowed(method: str, path: str) -> None:
    with pytest.raises(NotAllowed, match="not on the proxy's allowlist"):
        authorize(method, path, {})


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/cluster/sdn"),
        ("GET", "/cluster/sdn/controllers"),
        ("POST", "/cluster/sdn/controllers"),
        ("POST", "/cluster/sdn/ipams"),
        ("POST", "/cluster/sdn/dns"),
        ("PUT", "/cluster/sdn/zones/fpnet"),
        ("PUT", "/cluster/sdn/vnets/fpab12cd"),
        ("PUT", "/cluster/sdn/vnets/fpab12cd/subnets/fpnet-10.0.0.0-24"),
        ("GET", "/cluster/sdn/vnets/fpab12cd/subnets/fpnet-10.0.0.0-24"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/ips"),
        ("PUT", "/cluster/sdn/vnets/fpab12cd/firewall/options"),
        ("POST", "/cluster/sdn/vnets/fpab12cd/firewall/rules"),
        ("POST", "/cluster/sdn/lock"),
        ("PUT", "/nodes/pve1/network"),
        ("POST", "/cluster/firewall/rules"),
        ("PUT", "/cluster/firewall/options"),
        ("POST", "/cluster/firewall/groups"),
        ("POST", "/cluster/firewall/groups/fp-web"),
        ("POST", "/cluster/firewall/ipset"),
        ("POST", "/cluster/firewall/aliases"),
        ("POST", "/nodes/pve1/firewall/rules"),
        ("PUT", "/nodes/pve1/firewall/options"),
        ("POST", "/nodes/pve1/qemu/100/firewall/aliases"),
        ("GET", "/nodes/pve1/qemu/100/firewall/refs"),
        ("GET", "/nodes/pve1/qemu/100/firewall/log"),
        ("PUT", "/nodes/pve1/qemu/100/firewall/rules/0"),
        ("GET", "/nodes/pve1/qemu/100/firewall/rules/0"),
        ("PUT", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.5"),
        ("GET", "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.5"),
        ("POST", "/nodes/pve1/lxc/100/firewall/rules"),
    ],
)
def test_no_other_sdn_or_firewall_path_is_allowed(method: str, path: str) -> None:
    with pytest.raises(NotAllowed, match="not on the proxy's allowlist"):
        authorize(method, path, {})


@pytest.mark.parametrize(
    "path",
    [
        "/cluster%2Fsdn",
        "/nodes/pve1/qemu/100/firewall/ipset/fp-web%2F10.0.0.0",
        "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.0%2F24x",
        "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.0%2f24",
        "/nodes/pve1/qemu/100/firewall/ipset/fp-web/10.0.0.0%252F24",
    ],
)
def test_an_encoded_slash_is_forwarded_only_in_an_ip_set_entrys_network(path: str) -> None:
    with pytest.raises(NotAllowed, match="'%', which is never forwarded"):
        authorize("DELETE", path, {})


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "the path is empty"),
        ("cluster/resources", "must start with /"),
        ("/cluster/../access/ticket", r"a \. or \.\. segment"),
        ("/cluster/./resources", r"a \. or \.\. segment"),
        ("//cluster/resources", "an empty segment"),
        ("/cluster/resources/", "an empty segment"),
        ("/cluster%2Fresources", "'%', which is never forwarded"),
        ("/cluster/%252e%252e/access", "'%', which is never forwarded"),
        ("/cluster\\resources", "which is never forwarded"),
        ("/cluster/resources?type=vm", "'\\?', which is never forwarded"),
        ("/cluster/resources#top", "'#', which is never forwarded"),
        ("/cluster/resources;x", "';', which is never forwarded"),
        ("/cluster/resources x", "' ', which is never forwarded"),
        ("/cluster/resources\t", "control or non-ASCII"),
        ("/cluster/resources\r\n", "control or non-ASCII"),
        ("/cluster/resources\x00", "control or non-ASCII"),
        ("/cluster/r\u00e9sources", "control or non-ASCII"),
        ("/cluster/resources\u2215x", "control or non-ASCII"),
        ("/" + "a" * 600, "longer than 512"),
    ],
)
def test_it_refuses_a_path_that_is_not_plain_and_normalized(path: str, reason: str) -> None:
    with pytest.raises(NotAllowed, match=reason):
        authorize("GET", path, {})


@pytest.mark.parametrize("method", ["get", "Get", "HEAD", "PATCH", "OPTIONS", "GET ", " GET", "", "G\x00ET"])
def test_it_refuses_a_method_that_is_not_exactly_get_post_put_or_delete(method: str) -> None:
    with pytest.raises(NotAllowed, match="is not one of DELETE, GET, POST, PUT"):
        authorize(method, "/version", {})


def test_it_refuses_a_known_path_with_another_method() -> None:
    with pytest.raises(NotAllowed, match=r"PUT /cluster/resources is not on .* \(another method is\)"):
        authorize("PUT", "/cluster/resources", {})


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({f"p{i}": "" for i in range(65)}, "more than 64 parameters"),
        ({"x" * 65: "1"}, "parameter name"),
        ({"1abc": "1"}, "parameter name"),
        ({"a b": "1"}, "parameter name"),
        ({"a%20b": "1"}, "parameter name"),
        ({"": "1"}, "parameter name"),
        ({"description": "x" * (MAX_PARAM_VALUE_BYTES + 1)}, "larger than 65536 bytes"),
        ({f"d{i}": "x" * MAX_PARAM_VALUE_BYTES for i in range(5)}, "larger than 262144 bytes in all"),
        ({"name": "a\x00b"}, "NUL"),
    ],
)
def test_it_refuses_unreasonable_parameters(params: dict[str, str], reason: str) -> None:
    with pytest.raises(NotAllowed, match=reason):
        authorize("GET", "/cluster/resources", params)


def test_it_allows_ordinary_parameters() -> None:
    assert authorize("GET", "/cluster/resources", {"type": "vm"})


def test_a_new_row_is_one_line() -> None:
    table = compile_table(
        [*((r.method, r.pattern, r.params) for r in ALLOWED), ("POST", "/nodes/{node}/qemu/{vmid}/snapshot")]
    )

    assert (
        authorize("POST", "/nodes/pve1/qemu/100/snapshot", {}, table).pattern
        == "/nodes/{node}/qemu/{vmid}/snapshot"
    )


VM_CONFIG = compile_table([("GET", "/nodes/{node}/qemu/{vmid}/config")])


@pytest.mark.parametrize("vmid", ["100", "4242", "999999999"])
def test_it_allows_a_vmid_from_100_to_999999999(vmid: str) -> None:
    assert authorize("GET", f"/nodes/pve1/qemu/{vmid}/config", {}, VM_CONFIG)


@pytest.mark.parametrize("vmid", ["99", "1000000000", "0100", "-100", "1e3"])
def test_it_refuses_a_vmid_out_of_range_or_oddly_written(vmid: str) -> None:
    with pytest.raises(NotAllowed):
        authorize("GET", f"/nodes/pve1/qemu/{vmid}/config", {}, VM_CONFIG)


@pytest.mark.parametrize(
    ("method", "pattern"),
    [
        ("GET", "/nodes/{nod}/status"),
        ("FETCH", "/version"),
        ("GET", "version"),
        ("GET", "/a/../b"),
        ("GET", "/a//b"),
    ],
)
def test_a_malformed_row_fails_when_the_table_is_compiled(method: str, pattern: str) -> None:
    with pytest.raises(ValueError, match="allowlist row"):
        compile_table([(method, pattern)])
