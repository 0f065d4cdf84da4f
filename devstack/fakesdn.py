"""Stateful Proxmox SDN for the fake zones: zones, VNets and subnets, pending until applied.

fakepve answers the SDN endpoints from the schema alone and stores nothing. :class:`SdnApi` (a mixin of
``devstack.fakezones.HarnessPve``, so one state per fake zone, shared by all its node listeners) keeps
them as Proxmox does (pve-network's PVE/API2/Network/SDN/*.pm and PVE/Network/SDN*.pm):

- A write changes the *config* (``/etc/pve/sdn/{zones,vnets,subnets}.cfg``); ``PUT /cluster/sdn``
  commits it to the *running* config (``sdn/.running-config``) and starts a ``reloadnetworkall`` task.
  ``pending=1`` reads the difference as Proxmox's ``pending_config`` shows it (``state`` new, changed
  or deleted; ``pending`` the values not yet applied), ``running=1`` the running config.
- The checks are Proxmox's, in its words: ids (the schema's pattern and length), VXLAN zones need
  ``peers``, VLAN zones a ``bridge``; a VNet's zone must exist, its tag is required, VXLAN ids are unique
  across VXLAN zones, VLAN tags within their zone (at most 4096); a subnet's gateway lies inside it; a
  zone with VNets or a VNet with subnets is not deleted. An error found inside Proxmox's SDN lock comes
  back as it does there: a 500 whose message is "<what> failed: <the error>".
- Only ``vxlan`` and ``vlan`` zones are modelled (what flex.plane creates); other types are refused.
- A VM's NIC must name a bridge that exists: the node's ``vmbr0`` or an applied VNet. Proxmox itself
  says ``bridge '<b>' does not exist`` when it plugs the NIC (at start, or at once for a running VM);
  the fake refuses the config write already, so that a NIC on a VNet not yet applied is caught where it
  is written, and fails the start task of a VM whose NIC's bridge has gone since. A new NIC without a
  MAC gets one, as Proxmox's ``parse_net`` gives it.

Tests read the state itself: ``pve.sdn.zones``, ``.vnets``, ``.subnets`` (the config, pending changes
included), ``.running`` (what was applied) and ``.bridges()``.
"""

from __future__ import annotations

import copy
import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass, field
from typing import Any

from fakepve import PveError, TaskError
from fakepve.qemu import with_mac

NODE_BRIDGE = "vmbr0"
ZONE_TYPES = ("vxlan", "vlan")
KINDS = ("zones", "vnets", "subnets")
# The options each section type takes (pve-network's plugins' options()); anything else is "unexpected".
OPTIONS: dict[str, dict[str, bool]] = {  # option -> optional
    "vxlan": {
        "nodes": True,
        "peers": True,
        "vxlan-port": True,
        "mtu": True,
        "dns": True,
        "reversedns": True,
        "dnszone": True,
        "ipam": True,
        "fabric": True,
    },
    "vlan": {
        "nodes": True,
        "bridge": False,
        "bridge-disable-mac-learning": True,
        "mtu": True,
        "dns": True,
        "reversedns": True,
        "dnszone": True,
        "ipam": True,
    },
    "vnet": {"zone": False, "tag": True, "alias": True, "vlanaware": True, "isolate-ports": True},
    "subnet": {
        "vnet": False,
        "gateway": True,
        "snat": True,
        "dnszoneprefix": True,
        "dhcp-range": True,
        "dhcp-dns-server": True,
    },
}
# IPAMs a fresh Proxmox 8 cluster has.
IPAMS = ("pve",)
# Parameters of a request that are not options of the object.
_NOT_OPTIONS = ("lock-token", "digest", "delete", "release-lock")
_MAX_VXLAN = 16777216
_MAX_VLAN = 4096
DIGEST_CHANGED = "detected modified configuration - file changed by other user? Try again."


def _param_error(**fields: str) -> PveError:
    return PveError(400, "Parameter verification failed.", fields)


def _locked_failure(what: str, error: PveError) -> PveError:
    """An error raised inside pve-network's lock_sdn_config: ``die "$errmsg: $err"`` turns it into a plain
    500 whose message is PVE::Exception's text (status, message, then each field's error on a line)."""
    text = error.message
    if error.errors:
        text = f"{error.status} {text}\n" + "".join(f"{k}: {v}\n" for k, v in error.errors.items())
    return PveError(500, f"{what} failed: {text}".rstrip("\n"))


def _is_on(value: Any) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


def _subnet_network(subnet_id: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network of a subnet id ``<zone>-<address>-<prefixlen>`` or a CIDR (parse_sdn_subnet_id)."""
    if "/" in subnet_id:
        cidr = subnet_id
    else:
        parts = subnet_id.split("-")
        if len(parts) != 3:
            return None
        cidr = f"{parts[1]}/{parts[2]}"
    address, _, prefix = cidr.partition("/")
    try:
        ip = ipaddress.ip_address(address)
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None
    # pve_verify_cidrv4 takes /8 to /32; the v6 one /8 to /128.
    if not prefix.isdigit() or int(prefix) < 8 or str(ip) != address:
        return None
    return network


@dataclass
class FakeSdn:
    """One cluster's SDN: the config as written (pending changes included) and the running config."""

    zones: dict[str, dict[str, Any]] = field(default_factory=dict)
    vnets: dict[str, dict[str, Any]] = field(default_factory=dict)
    subnets: dict[str, dict[str, Any]] = field(default_factory=dict)
    # kind -> id -> options, as last applied; and how many times it was.
    running: dict[str, dict[str, dict[str, Any]]] = field(default_factory=lambda: {k: {} for k in KINDS})
    version: int = 0

    def config(self, kind: str) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = getattr(self, kind)
        return found

    def bridges(self) -> set[str]:
        """The bridges a NIC may be plugged into: the node's own and every applied VNet."""
        return {NODE_BRIDGE, *self.running["vnets"]}

    def pending(self) -> bool:
        """Whether anything written is not applied yet."""
        return any(self.config(kind) != self.running[kind] for kind in KINDS)

    def apply(self) -> None:
        """PVE::Network::SDN::commit_config: the config becomes the running config."""
        self.running = {kind: copy.deepcopy(self.config(kind)) for kind in KINDS}
        self.version += 1

    def digest(self, kind: str) -> str:
        """A digest of the kind's config file, changing with every write (PVE's is the file's SHA1)."""
        return hashlib.sha1(json.dumps(self.config(kind), sort_keys=True).encode()).hexdigest()  # noqa: S324 - Proxmox's digest

    def view(self, kind: str, *, pending: bool = False, running: bool = False) -> dict[str, dict[str, Any]]:
        """Every object of a kind as the API shows it: the config, the running config, or the pending view
        (PVE::Network::SDN::pending_config)."""
        if running:
            return copy.deepcopy(self.running[kind])
        if not pending:
            return copy.deepcopy(self.config(kind))
        return _pending_view(self.running[kind], self.config(kind))


def _pending_view(
    running: dict[str, dict[str, Any]], config: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for oid, old in running.items():
        new = config.get(oid)
        entry = out.setdefault(oid, {})
        for key, value in old.items():
            entry[key] = value
            if not new:
                entry["state"] = "deleted"
            elif key not in new:
                entry.setdefault("pending", {})[key] = "deleted"
                entry["state"] = "changed"
            elif _encoded(new[key]) != _encoded(value):
                entry["state"] = "changed"
        if entry.get("state"):
            entry.setdefault("pending", {})
    for oid, new in config.items():
        old = running.get(oid, {})
        entry = out.setdefault(oid, {})
        for key, value in new.items():
            if key in ("type", "vnet"):
                entry[key] = value
            elif key not in old or _encoded(value) != _encoded(old[key]):
                entry.setdefault("pending", {})[key] = value
            if not old:
                entry["state"] = "new"
            elif key not in old:
                entry["state"] = "changed"
        if entry.get("state"):
            entry.setdefault("pending", {})
    return out


def _encoded(value: Any) -> str:
    return ",".join(sorted(value)) if isinstance(value, list) else str(value)


class SdnApi:
    """Mixin of fakepve's FakePve (routes as its ``_routes_<area>`` tables): the SDN, kept in ``self.sdn``."""

    # From FakePve.
    nodes: dict[str, dict[str, Any]]

    @property
    def sdn(self) -> FakeSdn:
        state: FakeSdn | None = self.__dict__.get("_sdn_state")
        if state is None:
            state = self.__dict__["_sdn_state"] = FakeSdn()
        return state

    def _routes_sdn(self) -> list[tuple[str, str, Any]]:
        zones, vnets = "/cluster/sdn/zones", "/cluster/sdn/vnets"
        subnets = vnets + "/{vnet}/subnets"
        return [
            ("PUT", "/cluster/sdn", self._sdn_apply),
            ("GET", zones, self._sdn_zones),
            ("POST", zones, self._sdn_zone_create),
            ("GET", zones + "/{zone}", self._sdn_zone_read),
            ("DELETE", zones + "/{zone}", self._sdn_zone_delete),
            ("GET", vnets, self._sdn_vnets),
            ("POST", vnets, self._sdn_vnet_create),
            ("GET", vnets + "/{vnet}", self._sdn_vnet_read),
            ("PUT", vnets + "/{vnet}", self._sdn_vnet_update),
            ("DELETE", vnets + "/{vnet}", self._sdn_vnet_delete),
            ("GET", subnets, self._sdn_subnets),
            ("POST", subnets, self._sdn_subnet_create),
            ("GET", subnets + "/{subnet}", self._sdn_subnet_read),
            ("DELETE", subnets + "/{subnet}", self._sdn_subnet_delete),
        ]

    # ------------------------------------------------------------------ permissions (user => 'all' rules)

    def _sdn_may(self, user: str, path: str, privileges: tuple[str, ...]) -> bool:
        allowed = self.allowed  # type: ignore[attr-defined]  # FakePve's
        return any(allowed(user, path, privilege) for privilege in privileges)

    def _sdn_require(self, user: str, path: str, *privileges: str) -> None:
        """RPCEnvironment::check_any: a 403 naming the path and the privileges."""
        if not self._sdn_may(user, path, privileges):
            raise PveError(403, f"Permission check failed ({path}, {'|'.join(privileges)})")

    def _vnet_path(self, vnet: str) -> str:
        """/sdn/zones/<zone>/<vnet>, after Proxmox's lookup of the VNet (which fails for a missing one)."""
        found = self.sdn.vnets.get(vnet)
        if found is None:
            raise PveError(500, f"sdn vnet '{vnet}' does not exist")
        return f"/sdn/zones/{found['zone']}/{vnet}"

    def _shown(self, kind: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The objects of a kind as a read asks them: the config, or with pending=1 or running=1."""
        return self.sdn.view(
            kind, pending=_is_on(values.get("pending")), running=_is_on(values.get("running"))
        )

    # ------------------------------------------------------------------ apply

    async def _sdn_apply(self, values: dict[str, Any], user: str) -> Any:
        self.need_quorum()  # type: ignore[attr-defined]  # FakePve's
        self.sdn.apply()  # committed before the reload task starts, as Proxmox does
        online = [n for n in sorted(self.nodes) if self.nodes[n].get("online", True)]
        node = (online or sorted(self.nodes))[0]

        async def body() -> str:
            return f"{node}: reloading network config"

        return await self.task(node, "reloadnetworkall", "", user, body)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ zones

    def _zone_answer(self, zone: str, options: dict[str, Any]) -> dict[str, Any]:
        return {**options, "zone": zone, "digest": self.sdn.digest("zones")}

    async def _sdn_zones(self, values: dict[str, Any], user: str) -> Any:
        shown = self._shown("zones", values)
        return [
            self._zone_answer(zone, options)
            for zone, options in sorted(shown.items())
            if self._sdn_may(user, f"/sdn/zones/{zone}", ("SDN.Audit", "SDN.Allocate"))
            and values.get("type") in (None, options.get("type"))
        ]

    async def _sdn_zone_read(self, values: dict[str, Any], user: str) -> Any:
        zone = str(values["zone"])
        shown = self._shown("zones", values)
        if zone not in shown:
            raise PveError(500, f"sdn zone '{zone}' does not exist")
        return self._zone_answer(zone, shown[zone])

    async def _sdn_zone_create(self, values: dict[str, Any], user: str) -> Any:
        zone, kind = str(values["zone"]), str(values["type"])
        if kind not in ZONE_TYPES:
            raise PveError(500, f"fakezones: SDN zones of type '{kind}' are not modelled (vxlan, vlan)")
        options = _check_options(kind, values, exclude=("zone", "type"))
        if "nodes" in options:
            options["nodes"] = ",".join(sorted(set(re.split(r"[\s,;]+", str(options["nodes"]))) - {""}))
        self.need_quorum()  # type: ignore[attr-defined]
        try:
            if zone in self.sdn.zones:
                raise PveError(500, f"sdn zone object ID '{zone}' already defined")
            if options.get("ipam") and options["ipam"] not in IPAMS:
                raise _param_error(ipam=f"{options['ipam']} not existing")
            if kind == "vxlan" and bool(options.get("peers")) == bool(options.get("fabric")):
                message = "must have exactly one of peers / fabric defined"
                raise _param_error(peers=message, fabric=message)
        except PveError as exc:
            raise _locked_failure("create sdn zone object", exc) from None
        self.sdn.zones[zone] = {"type": kind, **options}
        return None

    async def _sdn_zone_delete(self, values: dict[str, Any], user: str) -> Any:
        zone = str(values["zone"])
        try:
            if zone not in self.sdn.zones:
                raise PveError(500, f"sdn zone '{zone}' does not exist")
            for vnet, options in sorted(self.sdn.vnets.items()):
                if options.get("zone") == zone:
                    raise PveError(500, f"zone {zone} is used by vnet {vnet}")
        except PveError as exc:
            raise _locked_failure("delete sdn zone object", exc) from None
        del self.sdn.zones[zone]
        return None

    # ------------------------------------------------------------------ vnets

    def _vnet_answer(self, vnet: str, options: dict[str, Any]) -> dict[str, Any]:
        return {"type": "vnet", **options, "vnet": vnet, "digest": self.sdn.digest("vnets")}

    async def _sdn_vnets(self, values: dict[str, Any], user: str) -> Any:
        shown = self._shown("vnets", values)
        answer = []
        for vnet, options in sorted(shown.items()):
            zone = options.get("zone") or options.get("pending", {}).get("zone")
            if self._sdn_may(user, f"/sdn/zones/{zone}/{vnet}", ("SDN.Audit", "SDN.Allocate")):
                answer.append(self._vnet_answer(vnet, options))
        return answer

    async def _sdn_vnet_read(self, values: dict[str, Any], user: str) -> Any:
        vnet = str(values["vnet"])
        self._sdn_require(user, self._vnet_path(vnet), "SDN.Audit", "SDN.Allocate")
        shown = self._shown("vnets", values)
        if vnet not in shown:
            raise PveError(500, f"sdn vnet '{vnet}' does not exist")
        return self._vnet_answer(vnet, shown[vnet])

    async def _sdn_vnet_create(self, values: dict[str, Any], user: str) -> Any:
        vnet = str(values["vnet"])
        self.need_quorum()  # type: ignore[attr-defined]
        try:
            options = _check_options("vnet", values, exclude=("vnet", "type"))
            if vnet in self.sdn.vnets:
                raise PveError(500, f"sdn vnet object ID '{vnet}' already defined")
            candidate = {**self.sdn.vnets, vnet: options}
            self._vnet_update_hook(candidate, vnet)
        except PveError as exc:
            raise _locked_failure("create sdn vnet object", exc) from None
        self.sdn.vnets[vnet] = options
        return None

    async def _sdn_vnet_update(self, values: dict[str, Any], user: str) -> Any:
        vnet = str(values["vnet"])
        self._sdn_require(user, self._vnet_path(vnet), "SDN.Allocate")
        try:
            given = _check_options("vnet", values, exclude=("vnet",), create=False)
            data = dict(self.sdn.vnets[vnet])
            if values.get("digest") and values["digest"] != self.sdn.digest("vnets"):
                raise PveError(500, DIGEST_CHANGED)
            for key in re.split(r"[\s,;]+", str(values.get("delete") or "")):
                if key:
                    if not OPTIONS["vnet"].get(key, True):
                        raise PveError(500, f"cannot delete required option '{key}'")
                    data.pop(key, None)
            old_zone = data.get("zone")
            data.update(given)
            if not data.get("zone"):
                raise _param_error(zone="cannot delete zone")
            if self._subnets_of(vnet) and old_zone != data["zone"]:
                raise _param_error(zone="can't change zone if subnets exist")
            candidate = {**self.sdn.vnets, vnet: data}
            self._vnet_update_hook(candidate, vnet)
        except PveError as exc:
            raise _locked_failure("update sdn vnet object", exc) from None
        self.sdn.vnets[vnet] = data
        return None

    async def _sdn_vnet_delete(self, values: dict[str, Any], user: str) -> Any:
        vnet = str(values["vnet"])
        self._sdn_require(user, self._vnet_path(vnet), "SDN.Allocate")
        try:
            if self._subnets_of(vnet):
                raise _param_error(vnet="Can't delete vnet if subnets exists")
        except PveError as exc:
            raise _locked_failure("delete sdn vnet object", exc) from None
        del self.sdn.vnets[vnet]
        return None

    def _vnet_update_hook(self, vnets: dict[str, dict[str, Any]], vnet: str) -> None:
        """The zone plugin's vnet_update_hook and VnetPlugin's on_update_hook, on the VNets to be."""
        options = vnets[vnet]
        zone = self.sdn.zones.get(str(options.get("zone")))
        if zone is None:  # Proxmox looks the zone's plugin up by its type, which a missing zone lacks
            raise PveError(500, "unknown section type ''")
        tag = options.get("tag")
        if zone["type"] == "vxlan":
            if tag is None:
                raise _param_error(tag="missing vxlan tag")
            if int(tag) > _MAX_VXLAN:
                raise _param_error(tag=f"vxlan tag max value is {_MAX_VXLAN}")
            for other, theirs in sorted(vnets.items()):
                other_zone = self.sdn.zones.get(str(theirs.get("zone")), {})
                if other != vnet and other_zone.get("type") == "vxlan" and theirs.get("tag") == tag:
                    message = f"vxlan tag {tag} already exist in vnet {other} in zone {theirs['zone']} "
                    raise _param_error(tag=message)
        else:
            if tag is None:
                raise _param_error(tag="missing vlan tag")
            if int(tag) > _MAX_VLAN:
                raise _param_error(tag=f"vlan tag max value is {_MAX_VLAN}")
            for other, theirs in sorted(vnets.items()):
                if other != vnet and theirs.get("zone") == options["zone"] and theirs.get("tag") == tag:
                    raise _param_error(tag=f"tag {tag} already exist in vnet {other}")
        if _is_on(options.get("vlanaware", 0)) and self._subnets_of(vnet):
            raise _param_error(vlanaware="vlanaware vnet is not compatible with subnets")

    # ------------------------------------------------------------------ subnets

    def _subnets_of(self, vnet: str) -> list[str]:
        return sorted(sid for sid, options in self.sdn.subnets.items() if options.get("vnet") == vnet)

    def _subnet_answer(self, subnet: str, options: dict[str, Any]) -> dict[str, Any]:
        """PVE::Network::SDN::Subnets::sdn_subnets_config's fields, from the id."""
        zone, network, mask = subnet.split("-")
        answer = {"type": "subnet", **options, "subnet": subnet, "id": subnet}
        answer.update(cidr=f"{network}/{mask}", zone=zone, network=network, mask=mask)
        answer.update({"digest": self.sdn.digest("subnets"), "dhcp-range": options.get("dhcp-range", [])})
        return answer

    async def _sdn_subnets(self, values: dict[str, Any], user: str) -> Any:
        vnet = str(values["vnet"])
        self._sdn_require(user, self._vnet_path(vnet), "SDN.Audit", "SDN.Allocate")
        shown = self._shown("subnets", values)
        return [
            self._subnet_answer(sid, options)
            for sid, options in sorted(shown.items())
            if (options.get("vnet") or options.get("pending", {}).get("vnet")) == vnet
        ]

    async def _sdn_subnet_read(self, values: dict[str, Any], user: str) -> Any:
        vnet, subnet = str(values["vnet"]), str(values["subnet"])
        self._check_subnet_id(subnet)
        self._sdn_require(user, self._vnet_path(vnet), "SDN.Audit", "SDN.Allocate")
        shown = self._shown("subnets", values)
        if subnet not in shown:
            raise PveError(500, f"sdn subnet '{subnet}' does not exist")
        answer = self._subnet_answer(subnet, shown[subnet])
        if (answer.get("vnet") or answer.get("pending", {}).get("vnet")) != vnet:
            raise _param_error(vnet="wrong vnet")
        return answer

    @staticmethod
    def _check_subnet_id(subnet: str) -> None:
        if _subnet_network(subnet) is None:
            raise _param_error(subnet="value does not look like a valid CIDR network")

    async def _sdn_subnet_create(self, values: dict[str, Any], user: str) -> Any:
        vnet, cidr = str(values["vnet"]), str(values["subnet"])
        self._check_subnet_id(cidr)
        self._sdn_require(user, self._vnet_path(vnet), "SDN.Allocate")
        self.need_quorum()  # type: ignore[attr-defined]
        zone = self.sdn.vnets[vnet]["zone"]
        subnet = f"{zone}-{cidr.replace('/', '-')}"
        try:
            options = _check_options("subnet", values, exclude=("subnet", "type"))
            if subnet in self.sdn.subnets:
                raise PveError(500, f"sdn subnet object ID '{subnet}' already defined")
            if _is_on(self.sdn.vnets[vnet].get("vlanaware", 0)):
                raise _param_error(vnet="you can't add a subnet on a vlanaware vnet")
            network = _subnet_network(cidr)
            gateway = options.get("gateway")
            assert network is not None
            if gateway is not None:
                point_to_point = network.version == 4 and network.prefixlen == 32
                address = ipaddress.ip_address(str(gateway))
                if address.version != network.version or (address not in network and not point_to_point):
                    raise _param_error(gateway=f"{gateway} is not in subnet {cidr}")
        except PveError as exc:
            raise _locked_failure("create sdn subnet object", exc) from None
        self.sdn.subnets[subnet] = options
        return None

    async def _sdn_subnet_delete(self, values: dict[str, Any], user: str) -> Any:
        vnet, subnet = str(values["vnet"]), str(values["subnet"])
        self._check_subnet_id(subnet)
        self._sdn_require(user, self._vnet_path(vnet), "SDN.Allocate")
        # Proxmox deletes whatever subnet the id names (the VNet in the path only decides the permission).
        self.sdn.subnets.pop(subnet, None)
        return None

    # ------------------------------------------------------------------ NICs of VMs

    def _missing_bridge(self, config: dict[str, Any]) -> str | None:
        """The first bridge a NIC of ``config`` names that does not exist, if any."""
        bridges = self.sdn.bridges()
        for key, value in sorted(config.items()):
            if re.fullmatch(r"net\d+", key) and value is not None:
                for part in str(value).split(","):
                    if part.startswith("bridge=") and part[len("bridge=") :] not in bridges:
                        return part[len("bridge=") :]
        return None

    async def _apply_config(self, vm: Any, user: str, p: dict[str, Any]) -> Any:
        """A NIC must be on an existing bridge; a NIC without a MAC gets one (then fakepve applies it)."""
        missing = self._missing_bridge(p)
        if missing is not None:
            raise PveError(500, f"bridge '{missing}' does not exist")
        updates = {k: with_mac(v) if re.fullmatch(r"net\d+", k) else v for k, v in p.items()}
        return await super()._apply_config(vm, user, updates)  # type: ignore[misc]  # FakePve's

    async def _do_start(self, vm: Any, user: str, p: dict[str, Any]) -> Any:
        """Proxmox plugs each NIC when it starts the VM: a bridge gone since (a VNet deleted and applied)
        fails the start task with ``bridge '<b>' does not exist``."""
        config = {**vm.config, **{k: v for k, v in vm.pending.items() if v is not None}}
        missing = self._missing_bridge(config)
        if missing is None or vm.status == "running" or vm.template:
            return await super()._do_start(vm, user, p)  # type: ignore[misc]  # FakePve's

        async def body() -> None:
            raise TaskError(f"bridge '{missing}' does not exist")

        return await self.task(vm.node, "qmstart", vm.vmid, user, body, vm=vm)  # type: ignore[attr-defined]


def _check_options(
    section: str, values: dict[str, Any], *, exclude: tuple[str, ...], create: bool = True
) -> dict[str, Any]:
    """PVE::SectionConfig::check_config: only the section type's options; every required one when creating."""
    known = OPTIONS[section]
    options: dict[str, Any] = {}
    for key, value in values.items():
        if key in exclude or key in _NOT_OPTIONS or value is None:
            continue
        if key not in known:
            raise PveError(500, f"unexpected property '{key}'")
        options[key] = value
    if create:
        for key, optional in known.items():
            if not optional and key not in options:
                raise PveError(500, f"missing value for required option '{key}'")
    return options
