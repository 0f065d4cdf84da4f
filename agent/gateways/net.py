"""A gateway's namespace and links, made to match its spec with the ``ip`` and ``nft`` tools (root).

The names are derived from the gateway's id, so that a node finds its gateways again after an
agent restart without keeping anything else: the namespace ``fpgw-<id>``; on the host, the veth
ends ``fgu<hash>`` (uplink) and ``fgl<hash>`` (one per VNet); inside, ``uplink`` and ``leg<hash>``.
The inside ends' MAC addresses are derived from the id too, so that the same gateway brought up
on another node answers with the same MAC: the VMs' and the router's ARP caches stay right, and a
move only waits for the bridges to learn the new port.

``host`` is the namespace of the node's bridges: None on a node (the agent's own namespace); the
tests give each simulated node a namespace of its own.

A namespace is pinned by a bind mount in /run/netns, made in the mount namespace of the process that
runs ``ip netns add``: the agent's. It must be the host's (the unit has no PrivateTmp= or the like,
agent/service.py's MOUNT_NAMESPACING), or the gateways go when the agent stops and no shell on the node
sees them; :func:`hidden_mounts` says when it is not. Then an agent that starts finds its gateways as
the last one left them, and :meth:`Node.differences` tells whether anything is to be done.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.gateways.rules import TABLE, UPLINK
from agentclient.gateways import GatewaySpec

COMMAND_TIMEOUT = 30.0
NS_PREFIX = "fpgw-"
# The inside veth end under a VLAN interface named "uplink".
UPLINK_RAW = "uplinkraw"


class NetError(Exception):
    """A command that builds or reads the gateway failed; the message says which and why."""


RUN_NETNS = Path("/run/netns")
# The gateway namespace's kernel settings: it routes, announces a moved leg at once (gratuitous ARP), and
# each interface answers ARP only for its own addresses (Linux's default answers for every address of
# the namespace on every link): the uplink never tells its neighbours that it holds a leg's address.
SYSCTLS = ("net.ipv4.ip_forward=1", "net.ipv4.conf.all.arp_notify=1", "net.ipv4.conf.all.arp_ignore=1")


def hidden_mounts(mountinfo: Path = Path("/proc/self/mountinfo"), init: Path = Path("/proc/1")) -> str | None:
    """Why the namespaces this process pins in /run/netns would not reach the host (None: they would).

    A mount namespace other than init's (when init's can be read), or a mount on the way from /run/netns
    up to / that is a slave (``master:`` in mountinfo: systemd's PrivateTmp= and the like, ``ip netns
    exec``, ``unshare --propagation slave``), whose mounts never propagate to the host.
    """
    try:
        if (mountinfo.parent / "ns" / "mnt").readlink() != (init / "ns" / "mnt").readlink():
            return (
                f"the agent runs in a mount namespace other than {init}'s: the namespaces it pins stay in it"
            )
    except OSError:
        pass  # init's namespaces cannot be read (another PID namespace, or no ptrace access): mountinfo says
    mounts: dict[str, tuple[str, str, list[str]]] = {}  # id: (parent id, mount point, optional fields)
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError as exc:
        return f"{mountinfo} cannot be read: {exc}"
    for line in lines:
        fields, _, _ = line.partition(" - ")
        parts = fields.split()
        if len(parts) >= 6:
            point = parts[4].replace("\\040", " ")
            mounts[parts[0]] = (parts[1], point, parts[6:])
    # The mount /run/netns is on: the last mounted of those with the longest mount point above it.
    above = [
        (len(point), index, mount_id)
        for index, (mount_id, (_, point, _)) in enumerate(mounts.items())
        if Path(point) == RUN_NETNS or Path(point) in RUN_NETNS.parents
    ]
    mount_id = max(above)[2] if above else None
    seen: set[str] = set()
    while mount_id in mounts and mount_id not in seen:
        seen.add(mount_id)
        parent, point, optional = mounts[mount_id]
        if any(field.startswith("master:") for field in optional):
            return (
                f"the agent runs in a mount namespace of its own ({point} is a slave of the host's): the "
                f"namespaces it pins in {RUN_NETNS} stay in it, and go when it stops"
            )
        mount_id = parent
    return None


def run(
    argv: Sequence[str], *, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run one tool; NetError with its own message when it fails."""
    try:
        done = subprocess.run(  # noqa: S603 - ip, nft and sysctl with checked arguments, no shell
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetError(f"{argv[0]} could not run: {exc}") from None
    if check and done.returncode != 0:
        message = (
            done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}"
        ).splitlines()
        raise NetError(f"{' '.join(argv[:6])}: {'; '.join(message[:5])}")
    return done


def _hash(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _mac(text: str) -> str:
    """A locally administered unicast MAC address derived from text."""
    digest = hashlib.sha256(text.encode()).digest()
    return ":".join(f"{b:02x}" for b in (0x02, *digest[:5]))


def namespace(gateway_id: str) -> str:
    return f"{NS_PREFIX}{gateway_id}"


@dataclass(frozen=True)
class Pair:
    """One veth pair: ``host_name`` on ``bridge`` in the host's namespace, ``inner`` in the gateway's."""

    host_name: str
    inner: str
    bridge: str
    mac: str
    vlan: int | None = None  # the uplink's tag: a VLAN interface "uplink" on the inner end


def pairs(spec: GatewaySpec) -> list[Pair]:
    """The veth pairs spec needs: the uplink's first, then one per leg."""
    up = spec.uplink
    wanted = [
        Pair(
            f"fgu{_hash(spec.id)}",
            UPLINK_RAW if up.vlan else UPLINK,
            up.bridge,
            _mac(f"{spec.id}/uplink"),
            up.vlan,
        )
    ]
    wanted += [
        Pair(
            f"fgl{_hash(f'{spec.id}/{leg.vnet}')}",
            f"leg{_hash(leg.vnet)}",
            leg.vnet,
            _mac(f"{spec.id}/{leg.vnet}"),
        )
        for leg in spec.legs
    ]
    return wanted


def addresses(spec: GatewaySpec) -> dict[str, set[str]]:
    """The addresses each inside interface must hold, with their prefixes."""
    wanted = {UPLINK: {spec.uplink.address, *(f"{ip.address}/32" for ip in spec.public_ips)}}
    for pair, leg in zip(pairs(spec)[1:], spec.legs, strict=True):
        wanted[pair.inner] = {leg.address}
    return wanted


class Node:
    """The ``ip`` commands of one node (``host``: the namespace of its bridges, None: this one)."""

    def __init__(self, host: str | None = None) -> None:
        self.host = host

    def _ip(self, ns: str | None = None) -> list[str]:
        ns = ns if ns is not None else self.host
        return ["ip", "-n", ns] if ns else ["ip"]

    def _links(self, ns: str | None) -> dict[str, dict[str, Any]]:
        done = run([*self._ip(ns), "-d", "-j", "link", "show"])
        return {link["ifname"]: link for link in json.loads(done.stdout or "[]")}

    # ------------------------------------------------------------------------------ reading

    def namespaces(self) -> set[str]:
        done = run(["ip", "-j", "netns", "list"])
        return {entry["name"] for entry in json.loads(done.stdout or "[]")}

    def has_namespace(self, ns: str) -> bool:
        """Whether namespace ns is there and usable (its name may outlive it: a file left in /run/netns)."""
        return (
            ns in self.namespaces()
            and run(["ip", "-n", ns, "link", "show", "lo"], check=False).returncode == 0
        )

    def missing_bridges(self, spec: GatewaySpec) -> list[str]:
        """The bridges spec names that the node does not have (as bridges)."""
        links = self._links(None)
        wanted = [spec.uplink.bridge, *(leg.vnet for leg in spec.legs)]
        return [
            name
            for name in wanted
            if name not in links or links[name].get("linkinfo", {}).get("info_kind") != "bridge"
        ]

    def problems(self, spec: GatewaySpec) -> list[str]:
        """What is not as spec says (empty: all in place), for a person to read."""
        ns = namespace(spec.id)
        if not self.has_namespace(ns):
            return [f"namespace {ns} is missing"]
        found: list[str] = []
        inside = self._links(ns)
        host = self._links(None)
        for pair in pairs(spec):
            link = inside.get(pair.inner)
            if link is None or "UP" not in link.get("flags", ()):
                found.append(f"leg {pair.inner} (on {pair.bridge}) is {'down' if link else 'missing'}")
            elif host.get(pair.host_name, {}).get("master") != pair.bridge:
                found.append(f"leg {pair.inner}'s host end {pair.host_name} is not on bridge {pair.bridge}")
        have = self._addresses(ns)
        for name, wanted in addresses(spec).items():
            if lost := wanted - have.get(name, set()):
                found.append(f"{name} lacks {', '.join(sorted(lost))}")
        if run(["ip", "netns", "exec", ns, "nft", "list", "table", "inet", TABLE], check=False).returncode:
            found.append(f"nftables table {TABLE} is missing")
        return found

    def _addresses(self, ns: str) -> dict[str, set[str]]:
        done = run([*self._ip(ns), "-j", "address", "show"])
        found: dict[str, set[str]] = {}
        for link in json.loads(done.stdout or "[]"):
            found[link["ifname"]] = {
                f"{info['local']}/{info['prefixlen']}"
                for info in link.get("addr_info", ())
                if info.get("family") == "inet"
            }
        return found

    def counters(self, gateway_id: str) -> dict[str, int]:
        """The gateway's nftables counters: <name>_packets and <name>_bytes."""
        done = run(
            [
                "ip",
                "netns",
                "exec",
                namespace(gateway_id),
                "nft",
                "-j",
                "list",
                "counters",
                "table",
                "inet",
                TABLE,
            ]
        )
        found: dict[str, int] = {}
        for item in json.loads(done.stdout or "{}").get("nftables", ()):
            counter = item.get("counter")
            if counter:
                found[f"{counter['name']}_packets"] = int(counter.get("packets", 0))
                found[f"{counter['name']}_bytes"] = int(counter.get("bytes", 0))
        return found

    def differences(self, spec: GatewaySpec, text: str) -> list[str]:
        """What :meth:`build` and :meth:`apply_rules` would change to run spec, text its ruleset (empty: it
        runs exactly so, and nothing is to be done). Stricter than :meth:`problems`: also links, addresses
        and settings the spec does not have, the MACs, the route, and the ruleset itself, as nft lists it
        (handles and counters' values aside) against text loaded where nothing else is."""
        found = self.problems(spec)
        if found:
            return found
        ns = namespace(spec.id)
        inside, host = self._links(ns), self._links(None)
        wanted = pairs(spec)
        keep = {pair.inner for pair in wanted} | {"lo"} | ({UPLINK} if spec.uplink.vlan else set())
        found += [f"link {name} is not the spec's" for name in sorted(set(inside) - keep)]
        found += [
            f"link {name} is to be made again"
            for name in sorted(keep & set(inside))
            if self._stale(inside[name], spec, name)
        ]
        for pair in wanted:
            for name in (pair.inner, UPLINK) if pair.vlan else (pair.inner,):
                link = inside.get(name, {})
                if link.get("address") != pair.mac or "UP" not in link.get("flags", ()):
                    found.append(f"{name} is not up with MAC {pair.mac}")
            if "UP" not in host.get(pair.host_name, {}).get("flags", ()):
                found.append(f"{pair.host_name} (on {pair.bridge}) is down")
            if (
                pair.vlan
                and self._vlan_filtering(host, pair.bridge)
                and pair.vlan not in self._vlans(pair.host_name)
            ):
                found.append(f"{pair.host_name} is not in VLAN {pair.vlan} on {pair.bridge}")
        have = self._addresses(ns)
        for name, addresses_wanted in addresses(spec).items():
            if extra := have.get(name, set()) - addresses_wanted:
                found.append(f"{name} holds {', '.join(sorted(extra))} too")
        routes = json.loads(run([*self._ip(ns), "-j", "route", "show", "default"]).stdout or "[]")
        if [(route.get("gateway"), route.get("dev")) for route in routes] != [(spec.uplink.gateway, UPLINK)]:
            found.append(f"the default route is not via {spec.uplink.gateway} alone")
        keys = [setting.partition("=")[0] for setting in SYSCTLS]
        values = run(["ip", "netns", "exec", ns, "sysctl", "-n", *keys]).stdout.split()
        if [f"{key}={value}" for key, value in zip(keys, values, strict=False)] != list(SYSCTLS):
            found.append(f"the settings are not {', '.join(SYSCTLS)}")
        if self.listed_rules(spec.id) != rendered_rules(text):
            found.append(f"the nftables table {TABLE} is not the spec's")
        return found

    def _vlan_filtering(self, links: dict[str, dict[str, Any]], bridge: str) -> bool:
        return bool(links.get(bridge, {}).get("linkinfo", {}).get("info_data", {}).get("vlan_filtering"))

    def _vlans(self, device: str) -> set[int]:
        bridge_cmd = [
            "bridge",
            *(["-n", self.host] if self.host else []),
            "-j",
            "vlan",
            "show",
            "dev",
            device,
        ]
        found: set[int] = set()
        for entry in json.loads(run(bridge_cmd).stdout or "[]"):
            found |= {int(vlan["vlan"]) for vlan in entry.get("vlans", ()) if "vlan" in vlan}
        return found

    def listed_rules(self, gateway_id: str) -> Comparable:
        """The gateway's ruleset as nft lists it, in a form to compare (:func:`comparable`)."""
        return comparable(
            run(
                ["ip", "netns", "exec", namespace(gateway_id), "nft", "-j", "list", "table", "inet", TABLE]
            ).stdout
        )

    # ------------------------------------------------------------------------------ changing

    def check_rules(self, text: str) -> None:
        """Let nft check the transaction (``nft -c``) without applying it anywhere."""
        run(["nft", "-c", "-f", "-"], stdin=text)

    def build(self, spec: GatewaySpec) -> None:
        """Make the namespace, links, addresses and routes exactly as spec says (not the rules).

        A new link gets its addresses before it comes up: with arp_notify the kernel then announces
        them (gratuitous ARP), so the bridges and neighbours learn at once where the gateway now is.
        Each interface answers ARP only for its own addresses (arp_ignore=1; Linux's default answers
        for every address of the namespace on every link): the uplink never tells its neighbours that
        the gateway holds a leg's address, as the ruleset never answers one from the uplink.
        """
        ns = namespace(spec.id)
        if not self.has_namespace(ns):
            run(["ip", "netns", "delete", ns], check=False)  # a name left behind by a namespace gone
            run(["ip", "netns", "add", ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(
            [
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                *SYSCTLS,
            ]
        )
        wanted = pairs(spec)
        inside = self._links(ns)
        keep = {pair.inner for pair in wanted} | {"lo"} | ({UPLINK} if spec.uplink.vlan else set())
        for name, link in inside.items():
            if name not in keep or self._stale(link, spec, name):
                run([*self._ip(ns), "link", "delete", name], check=False)
        inside = self._links(ns)
        host = self._links(None)
        for pair in wanted:
            if pair.inner not in inside:
                if pair.host_name in host:
                    run([*self._ip(), "link", "delete", pair.host_name], check=False)
                peer = ["peer", "name", pair.inner, "address", pair.mac, "netns", ns]
                host_mac = _mac(f"host/{pair.host_name}")
                run([*self._ip(), "link", "add", pair.host_name, "address", host_mac, "type", "veth", *peer])
            run([*self._ip(), "link", "set", pair.host_name, "master", pair.bridge, "up"])
            if pair.vlan:
                self._vlan(ns, pair, pair.vlan)
        self._set_addresses(ns, spec)
        for pair in wanted:
            run([*self._ip(ns), "link", "set", pair.inner, "up"])
        if spec.uplink.vlan:
            run([*self._ip(ns), "link", "set", UPLINK, "up"])
        run([*self._ip(ns), "route", "replace", "default", "via", spec.uplink.gateway, "dev", UPLINK])

    def _stale(self, link: dict[str, Any], spec: GatewaySpec, name: str) -> bool:
        """Whether an inside link must be made again: the VLAN interface with another tag."""
        if name != UPLINK or not spec.uplink.vlan:
            return False
        info = link.get("linkinfo", {})
        return info.get("info_kind") != "vlan" or info.get("info_data", {}).get("id") != spec.uplink.vlan

    def _vlan(self, ns: str, pair: Pair, vlan: int) -> None:
        bridge = self._links(None).get(pair.bridge, {})
        if bridge.get("linkinfo", {}).get("info_data", {}).get("vlan_filtering"):
            bridge_cmd = ["bridge", *(["-n", self.host] if self.host else []), "vlan", "add"]
            run([*bridge_cmd, "dev", pair.host_name, "vid", str(vlan)])
        if UPLINK not in self._links(ns):
            vlan_link = ["type", "vlan", "id", str(vlan)]
            run(
                [
                    *self._ip(ns),
                    "link",
                    "add",
                    "link",
                    pair.inner,
                    "name",
                    UPLINK,
                    "address",
                    pair.mac,
                    *vlan_link,
                ]
            )

    def _set_addresses(self, ns: str, spec: GatewaySpec) -> None:
        have = self._addresses(ns)
        commands: list[str] = []
        for name, wanted in addresses(spec).items():
            present = have.get(name, set())
            commands += [f"address delete {a} dev {name}" for a in sorted(present - wanted)]
            commands += [f"address add {a} dev {name}" for a in sorted(wanted - present, key=_primary_first)]
        if commands:
            run([*self._ip(ns), "-batch", "-"], stdin="\n".join(commands) + "\n")

    def apply_rules(self, gateway_id: str, text: str) -> None:
        """Replace the namespace's ruleset: one transaction."""
        run(["ip", "netns", "exec", namespace(gateway_id), "nft", "-f", "-"], stdin=text)

    def remove(self, gateway_id: str, spec: GatewaySpec | None) -> bool:
        """Remove the namespace (and so its veth pairs); False when there was none."""
        ns = namespace(gateway_id)
        existed = ns in self.namespaces()
        if existed:
            run(["ip", "netns", "delete", ns])
        if spec is not None:
            host = self._links(None)
            for pair in pairs(spec):
                if pair.host_name in host:
                    run([*self._ip(), "link", "delete", pair.host_name], check=False)
        return existed


def _primary_first(address: str) -> tuple[int, str]:
    """Prefixed addresses before the /32s, so that the subnet's address is the primary one."""
    return (ipaddress.IPv4Interface(address).network.prefixlen == 32, address)


# The objects of a ruleset (JSON, sorted) and each chain's rules (JSON, in their order).
Comparable = tuple[list[str], dict[str, list[str]]]


def rendered_rules(text: str) -> Comparable:
    """Ruleset text as nft lists it once loaded, in a form to compare (:func:`comparable`): loaded in a
    network namespace of its own (``unshare``, util-linux), which goes with the command."""
    script = f"nft -f - && nft -j list table inet {TABLE}"
    return comparable(run(["unshare", "--net", "--", "sh", "-c", script], stdin=text).stdout)


def comparable(listing: str) -> Comparable:
    """nft's JSON listing of a table, for comparing two rulesets: without handles and counters' values
    (which differ between equal rulesets), the objects in a fixed order with their elements sorted, and
    each chain's rules in their order (which matters)."""
    objects: list[str] = []
    rules: dict[str, list[str]] = {}
    for item in json.loads(listing or "{}").get("nftables", ()):
        for kind, body in item.items():
            if kind == "metainfo":
                continue
            body = _without_state(body, kind)
            if kind == "rule":
                rules.setdefault(str(body.get("chain")), []).append(json.dumps(body, sort_keys=True))
                continue
            if isinstance(body.get("elem"), list):
                body["elem"] = sorted(body["elem"], key=lambda element: json.dumps(element, sort_keys=True))
            objects.append(json.dumps({kind: body}, sort_keys=True))
    return sorted(objects), rules


_STATE = {"counter": {"packets", "bytes"}, "quota": {"used"}}


def _without_state(value: Any, kind: str = "") -> Any:
    """value without its handles, and a counter's or quota's values (what counting changes)."""
    if isinstance(value, dict):
        drop = {"handle", *_STATE.get(kind, ())}
        return {key: _without_state(item, key) for key, item in value.items() if key not in drop}
    if isinstance(value, list):
        return [_without_state(item, kind) for item in value]
    return value
