"""Fake Proxmox zones: one fakepve instance per zone, one HTTPS address per node.

A real Proxmox node serves the API on its own address, and any node answers for the whole
cluster. fakepve serves one address per instance, so the harness adds a listener per node
(each on its own loopback address) to the same fake: taking a node offline both marks it
offline in the fake and closes its listener, as a node that is down would.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import threading
from collections import Counter, deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from fakepve import FakePve, PveError, TaskError
from fakepve.certs import make_cert
from fakepve.qemu import drives_of, is_cdrom, volume_ref

from devstack.fakeaccess import AccessApi
from devstack.fakeconsole import ConsoleScreen
from devstack.fakedisks import DiskRules
from devstack.fakesdn import FakeSdn, SdnApi
from devstack.fakesnapshots import SnapshotRules
from devstack.fakeusage import UsageRrd

T = TypeVar("T")
PVE_PORT = 8006
TOKEN_ID = "root@pam!flexplane"


class EventLoopThread:
    """An asyncio loop in a daemon thread, for serving fakes to synchronous callers."""

    def __init__(self, name: str = "fake-zones") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run a plain function on the loop's thread (fakepve's state is not thread-safe)."""

        async def wrapped() -> Any:
            return fn(*args)

        return self.run(wrapped())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGT])?")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def _bytes(text: str) -> int | None:
    match = _SIZE.fullmatch(text.strip().upper())
    return int(float(match.group(1)) * _UNITS[match.group(2) or ""]) if match else None


def _spelled(size: int) -> str:
    """Proxmox's spelling of a size: the largest unit that divides it."""
    for unit in "TGMK":
        if size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


# How many arrivals Traffic remembers (fakepve keeps as many requests in ``pve.requests``).
TRAFFIC_MEMORY = 10_000


@dataclass
class Traffic:
    """What reached a fake's listeners, per local address (one address per node): every request as it
    arrives (before fakepve's network faults, so dropped ones count too), how many are in flight, and the
    most that ever were. Touched on the fakes' loop only.

    ``drop()`` aims fakepve's dropped connection (``flaky_network``'s reset, which is random) at
    chosen requests: the connection is closed before fakepve handles the request. ``delay()`` aims
    its latency (``slow_network``, which slows every request, or a node's) at chosen requests, in real
    seconds; a delayed request is handled even if its client has gone meanwhile, as Proxmox would.
    ``release()`` ends the delays under way at once: a test that holds a request until it has done what
    it needed meanwhile (killed the client, say) gives a bound rather than a guess of how long that takes.
    """

    in_flight: Counter[str] = field(default_factory=Counter)
    peak: Counter[str] = field(default_factory=Counter)
    # (address, method, path) of the latest arrivals; ``count`` is how many arrived in all.
    arrivals: deque[tuple[str, str, str]] = field(default_factory=lambda: deque(maxlen=TRAFFIC_MEMORY))
    count: int = 0
    # (method, path, bytes of the body) of the latest answers, as they leave (a streamed body counts 0);
    # ``answered`` is how many left in all, ``bytes_out`` their bytes.
    answers: deque[tuple[str, str, int]] = field(default_factory=lambda: deque(maxlen=TRAFFIC_MEMORY))
    answered: int = 0
    bytes_out: int = 0
    # (method, path suffix, address or None for any) -> [how many more (None: every one), seconds of
    # delay (None: drop), how many matching requests to let through first].
    rules: dict[tuple[str, str, str | None], list[Any]] = field(default_factory=dict)
    # Set by ``release()``: the delays under way end (a new event for later ones).
    _released: asyncio.Event | None = field(default=None, repr=False)

    def arrive(self, address: str, method: str, path: str) -> None:
        self.arrivals.append((address, method, path))
        self.count += 1
        self.in_flight[address] += 1
        self.peak[address] = max(self.peak[address], self.in_flight[address])

    def leave(self, address: str) -> None:
        self.in_flight[address] -= 1

    def answer(self, method: str, path: str, size: int) -> None:
        self.answers.append((method, path, size))
        self.answered += 1
        self.bytes_out += size

    def answers_since(self, mark: int) -> list[tuple[str, str, int]]:
        """The answers after ``mark`` (an earlier ``answered``) that are still remembered."""
        fresh = min(self.answered - mark, len(self.answers))
        return list(self.answers)[len(self.answers) - fresh :] if fresh > 0 else []

    def since(self, mark: int) -> list[tuple[str, str, str]]:
        """The arrivals after ``mark`` (an earlier ``count``) that are still remembered."""
        fresh = min(self.count - mark, len(self.arrivals))
        return list(self.arrivals)[len(self.arrivals) - fresh :] if fresh > 0 else []

    def reset_peak(self) -> None:
        self.peak = Counter({address: n for address, n in self.in_flight.items() if n})

    def drop(self, method: str, suffix: str, *, address: str | None = None, times: int | None = 1) -> None:
        self.rules[(method, suffix, address)] = [times, None, 0]

    def delay(
        self,
        method: str,
        suffix: str,
        seconds: float,
        *,
        address: str | None = None,
        times: int | None = 1,
        skip: int = 0,
    ) -> None:
        """Delay the matching requests after the first ``skip`` of them."""
        self.rules[(method, suffix, address)] = [times, seconds, skip]

    async def hold(self, seconds: float) -> None:
        """A delayed request's wait: ``seconds``, or until ``release()``, whichever comes first."""
        if self._released is None:
            self._released = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._released.wait(), seconds)

    def release(self) -> None:
        """End every delay under way now (on the loop's thread); later ones take their time."""
        if self._released is not None:
            self._released.set()
            self._released = None

    def rule_for(self, address: str, method: str, path: str) -> tuple[bool, float]:
        """(drop it, seconds to delay it) for this request, counted against the rule that matches."""
        for key, rule in list(self.rules.items()):
            rule_method, suffix, rule_address = key
            if rule_method != method or not path.endswith(suffix) or rule_address not in (None, address):
                continue
            left, seconds, skip = rule
            if skip:
                rule[2] = skip - 1
                return False, 0.0
            if left is not None:
                if left <= 1:
                    del self.rules[key]
                else:
                    rule[0] = left - 1
            return seconds is None, seconds or 0.0
        return False, 0.0


# What Proxmox's PVE::Tools::upid_decode accepts.
_UPID = re.compile(
    r"UPID:[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?:"  # node
    r"[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:[0-9A-Fa-f]{8}:"  # pid, pstart, starttime
    r"[^:\s]+:[^:\s]*:[^:\s]+:"  # type, id, user
)


# What Proxmox changes in a running VM's config at once rather than as pending.
_HOTPLUGGED = re.compile(r"(?:net|ipconfig)[0-9]+|nameserver|searchdomain")


class _NoTaskFile(Exception):
    """A well-formed UPID of no task this node ran."""


class HarnessPve(AccessApi, SdnApi, SnapshotRules, DiskRules, UsageRrd, ConsoleScreen, FakePve):
    """fakepve with the gaps this project meets closed: a QEMU disk resize that really resizes, a
    migration that really moves the guest (below), SDN zones, VNets and subnets that are kept
    (``devstack.fakesdn``, in ``pve.sdn``); roles, users, permissions and API tokens made through the API
    (``devstack.fakeaccess``, in ``pve.access``); disks detached, hot-plugged and moved to another VM
    (``devstack.fakedisks``); and the ``traffic`` each node's address receives.

    fakepve answers ``PUT /nodes/{node}/qemu/{vmid}/resize`` from the schema alone and stores
    nothing; this resizes the drive's ``size=`` and its volume on the storage in a task that holds the
    VM's config lock, and refuses to shrink with Proxmox's wording.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.traffic = Traffic()
        self._hurried: asyncio.Event | None = None

    async def pause(self, secs: float) -> None:
        """fakepve's pause (``secs`` PVE seconds, scaled by ``time_scale``), which ``hurry()`` ends early."""
        if not secs or not self.time_scale:
            return
        if self._hurried is None:
            self._hurried = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._hurried.wait(), secs * self.time_scale)

    def hurry(self) -> None:
        """End every pause under way now (on the loop's thread): a test that kept a task running as long as
        it needed lets it finish rather than wait out the time it gave. Later pauses take their time."""
        if self._hurried is not None:
            self._hurried.set()
            self._hurried = None

    def _build_app(self) -> web.Application:
        """fakepve's app, with the traffic count outermost: it sees every request as it arrives."""
        app: web.Application = super()._build_app()
        app.middlewares.insert(0, self._count_traffic)
        return app

    @web.middleware
    async def _count_traffic(self, request: web.Request, handler: Any) -> web.StreamResponse:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        address = str(sockname[0]) if sockname else ""
        self.traffic.arrive(address, request.method, request.path)
        try:
            dropped, delay = self.traffic.rule_for(address, request.method, request.path)
            if dropped:
                assert request.transport is not None
                request.transport.close()  # the client sees its connection broken, with no answer
                return web.Response(status=599, text="dropped by the harness")  # written to nobody
            if delay:
                await request.read()  # Proxmox has the whole request now: it handles it, come what may
                await self.traffic.hold(delay)
            response: web.StreamResponse = await handler(request)
            body = getattr(response, "body", None)
            size = len(body) if isinstance(body, bytes | bytearray) else 0
            self.traffic.answer(request.method, request.path, size)
            return response
        finally:
            self.traffic.leave(address)

    # fakepve answers the status or log of a task it never ran with 500 "unable to parse worker upid",
    # as a failing node would. Proxmox (pve-manager's PVE/API2/Tasks.pm) refuses a UPID it cannot
    # parse with a parameter error (400), and so the status of a well-formed one it has no task file
    # for ("no such task"); the log of the latter is the one line its dump_logfile gives for a file it
    # cannot open.

    def _get_task(self, request: web.Request) -> Any:
        upid = request.match_info["upid"]
        if not _UPID.fullmatch(upid):
            raise PveError(400, "Parameter verification failed.", {"upid": "unable to parse worker upid"})
        task = self.tasks.get(upid)
        if task is None or task["node"] != request.match_info["node"]:
            raise _NoTaskFile(upid)
        return super()._get_task(request)

    async def _task_status(self, request: web.Request) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await super()._task_status(request)
        except _NoTaskFile:
            raise PveError(400, "Parameter verification failed.", {"upid": "no such task"}) from None
        return response

    async def _task_log(self, request: web.Request) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await super()._task_log(request)
        except _NoTaskFile:
            unopened = {"n": 1, "t": "unable to open file - No such file or directory"}
            return web.json_response({"data": [unopened]})
        return response

    # Proxmox imports a new disk's import-from= as it creates it and does not keep the option in the
    # config (qemu-server's create_disks); fakepve keeps it in the drive string, where the agent's
    # proxy would rightly refuse it when the orchestrator writes the drive back.

    def _qm_new_drive(self, vmid: Any, key: str, value: str, default: Any) -> tuple[str, list[str]]:
        config, volumes = super()._qm_new_drive(vmid, key, value, default)
        return ",".join(p for p in str(config).split(",") if not p.startswith("import-from=")), volumes

    # Proxmox answers a guest's config with its pending changes applied unless ``current=1`` is asked,
    # hot-plugs a NIC into a running VM (its default ``hotplug`` includes network) and keeps cloud-init's
    # options in the config at once (the guest reads them at its next boot); fakepve answers the current
    # config only, and holds every change to a running VM as pending.

    async def _config_get(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("current") in ("1", "true"):
            response: web.StreamResponse = await super()._config_get(request)
            return response
        vm = self._vm(request, "VM.Audit")
        config = {**vm.config, **{k: v for k, v in vm.pending.items() if v is not None}}
        for key, value in vm.pending.items():
            if value is None:
                config.pop(key, None)
        if "memory" in config:
            config["memory"] = str(config["memory"])
        config["digest"] = vm.digest()
        return web.json_response({"data": config})

    async def _config_put(self, request: web.Request) -> web.StreamResponse:
        response: web.StreamResponse = await super()._config_put(request)
        vm = self.find(request.match_info["node"], int(request.match_info["vmid"]))
        for key in [k for k in vm.pending if _HOTPLUGGED.fullmatch(k)]:
            value = vm.pending.pop(key)
            if value is None:
                vm.config.pop(key, None)
            else:
                vm.config[key] = value
        return response

    def _routes_qemu_resize(self) -> list[tuple[str, str, Any]]:
        return [("PUT", "/nodes/{node}/qemu/{vmid}/resize", self._qemu_resize)]

    async def _qemu_resize(self, values: dict[str, Any], user: str) -> Any:
        vm = self.find(values["node"], int(values["vmid"]))
        disk, text = str(values["disk"]), str(values["size"])
        grow = text.startswith("+")
        requested = _bytes(text.lstrip("+"))
        if requested is None:
            raise PveError(400, "Parameter verification failed.", {"size": "invalid size string"})
        if vm.lock:
            raise PveError(500, f"VM is locked ({vm.lock})")
        drive = vm.config.get(disk)
        if drive is None:
            raise PveError(500, f"disk '{disk}' does not exist")

        def resized() -> str:
            parts = str(vm.config[disk]).split(",")
            current = next((_bytes(p[5:]) for p in parts if p.startswith("size=")), None) or 0
            new = current + requested if grow else requested
            if new < current:
                raise TaskError("shrinking disks is not supported")
            kept = [p for p in parts if not p.startswith("size=")]
            return ",".join([*kept, f"size={_spelled(new)}"])

        try:
            resized()  # refuse at once what the task would refuse, as Proxmox does
        except TaskError as exc:
            raise PveError(500, str(exc)) from exc

        async def body() -> None:
            vm.config[disk] = resized()
            # The storage's volume has that size now too (a later config write of it records it).
            sid, name = volume_ref(str(vm.config[disk]).split(",")[0])
            volume = self.storages.get(sid or "", {}).get("volumes", {}).get(name)
            if volume is not None:
                volume["size"] = _bytes(
                    next(p[5:] for p in vm.config[disk].split(",") if p.startswith("size="))
                )

        return await self.task(vm.node, "resize", vm.vmid, user, body, vm=vm)

    # fakepve's pool members carry only id, node, name and status (and template when set). Proxmox
    # (pve-manager's PVE/API2/Pool.pm, read_pool and the index's ``poolid``) builds each guest's entry
    # with PVE::API2Tools::extract_vm_stats: id, vmid, node, type and status, and from the node's RRD
    # stats uptime, name, status, template, maxcpu, cpu, maxmem, mem, maxdisk, disk, netin, netout,
    # diskread, diskwrite (and memhost from the 9.0 RRD format). Never tags, lock, pool or hastate:
    # /cluster/resources adds those from the guests' configs, the pool read does not.
    _POOL_GUEST_FIELDS = (
        "uptime",
        "maxcpu",
        "cpu",
        "maxmem",
        "mem",
        "maxdisk",
        "disk",
        "netin",
        "netout",
        "diskread",
        "diskwrite",
        "memhost",
    )

    def _members(self, name: str, kind: str | None) -> list[dict[str, Any]]:
        ids = self.pools.get(name, set())
        vms = {vm.vmid: vm for vm in self.vms if vm.vmid in ids}
        cts = {item["vmid"]: item for item in self.ct_resources(self.user, "vm") if item["vmid"] in ids}
        members: list[dict[str, Any]] = []
        for vmid in sorted(ids):
            vm = vms.get(vmid)
            if vm is not None and kind in (None, "qemu"):
                online = self.nodes.get(vm.node, {}).get("online", True)
                stats = {"status": vm.status if online else "unknown", **self._vm_usage(vm)}
                entry = {"id": vm.guest, "vmid": vmid, "node": vm.node, "type": "qemu", "name": vm.name}
                entry.update(status=stats["status"], template=1 if vm.template else 0)
            elif vmid in cts and kind in (None, "lxc"):
                stats = cts[vmid]
                entry = {key: stats[key] for key in ("id", "vmid", "node", "type", "name", "status")}
                entry["template"] = stats["template"]
            else:
                continue
            entry.update((key, stats[key]) for key in self._POOL_GUEST_FIELDS if key in stats)
            members.append(entry)
        if kind in (None, "storage"):
            members += super()._members(name, "storage")
        return members

    # fakepve answers ``GET``/``POST /nodes/{node}/qemu/{vmid}/migrate`` from the schema alone and
    # moves nothing. These answer the precondition as qemu-server's migrate_vm_precondition does, and
    # migrate in a ``qmigrate`` task that holds the VM's config lock and moves the guest (still running,
    # if it ran) to the target; they refuse what Proxmox refuses, in its words.

    # PVE seconds a migration takes (scaled by time_scale, as every task).
    migrate_secs = 5

    def _routes_qemu_migrate(self) -> list[tuple[str, str, Any]]:
        path = "/nodes/{node}/qemu/{vmid}/migrate"
        return [("GET", path, self._qemu_migrate_check), ("POST", path, self._qemu_migrate)]

    def _migration_facts(self, vm: Any) -> tuple[list[dict[str, Any]], list[str], set[str]]:
        """The VM's local disks (on storage that is not shared), local devices and every storage it uses."""
        local_disks: list[dict[str, Any]] = []
        storages: set[str] = set()
        for key, volume, props in drives_of(vm.config):
            storage = volume_ref(volume)[0]
            if storage is None or storage not in self.storages:
                continue
            storages.add(storage)
            cdrom = is_cdrom(volume, props)
            if self.storages[storage].get("shared") or (cdrom and "cloudinit" in volume):
                continue
            size = _bytes(str(props.get("size", "0"))) or 0
            local_disks.append(
                {"volid": volume, "size": size, "cdrom": cdrom, "is_unused": False, "drivename": key}
            )
        devices = sorted(k for k in vm.config if re.fullmatch(r"(hostpci|usb)\d+", k))
        return local_disks, devices, storages

    def _unavailable_storages(self, storages: set[str], node: str) -> list[str]:
        return sorted(s for s in storages if not self._storage_enabled(s, node))

    async def _qemu_migrate_check(self, values: dict[str, Any], user: str) -> Any:
        vm = self.find(values["node"], int(values["vmid"]))
        local_disks, devices, storages = self._migration_facts(vm)
        answer: dict[str, Any] = {
            "running": vm.status == "running",
            "local_disks": local_disks,
            "local_resources": devices,
            "mapped-resources": [],
            "mapped-resource-info": {},
            "has-dbus-vmstate": False,
        }
        if vm.status != "running":  # as Proxmox: the nodes are judged for an offline migration only
            others = [n for n in sorted(self.nodes) if n != vm.node]
            missing = {n: self._unavailable_storages(storages, n) for n in others}
            answer["allowed_nodes"] = [n for n in others if not missing[n]]
            answer["not_allowed_nodes"] = {n: {"unavailable_storages": m} for n, m in missing.items() if m}
        return answer

    async def _qemu_migrate(self, values: dict[str, Any], user: str) -> Any:
        node, vmid, target = str(values["node"]), int(values["vmid"]), str(values["target"])
        if target == node:
            raise PveError(400, "Parameter verification failed.", {"target": "target is local node."})
        self.need_quorum()
        if target not in self.nodes:
            raise PveError(500, f"no such cluster node '{target}'")
        vm = self.find(node, vmid)
        if vm.lock:
            raise PveError(500, f"VM is locked ({vm.lock})")
        running = vm.status == "running"
        if running and not _flag(values.get("online")):
            raise PveError(500, "can't migrate running VM without --online")
        local_disks, devices, storages = self._migration_facts(vm)

        async def body() -> str:
            if not self.nodes[target].get("online", True):
                raise TaskError("migration aborted: Can't connect to destination address using public key")
            if devices:
                raise TaskError(f"can't migrate VM which uses local devices: {', '.join(devices)}")
            missing = self._unavailable_storages(storages, target)
            if missing:
                raise TaskError(
                    f"migration aborted: storage '{missing[0]}' is not available on node '{target}'"
                )
            if running and local_disks and not _flag(values.get("with-local-disks")):
                raise TaskError("can't live migrate attached local disks without with-local-disks option")
            vm.lock = "migrate"
            vm.config["lock"] = "migrate"
            try:
                await self.pause(self.migrate_secs)
                vm.node = target
            finally:
                vm.lock = None
                vm.config.pop("lock", None)
            return "migration finished successfully"

        mode = "online" if running else "offline"
        log = [f"starting migration of VM {vmid} to node '{target}' ({mode})"]
        return await self.task(node, "qmigrate", vmid, user, body, vm=vm, log=log)


def _flag(value: Any) -> bool:
    """A Proxmox boolean parameter as sent: 1/0, true/false."""
    return str(value).lower() in ("1", "true", "yes", "on")


@dataclass
class FakeZone:
    """One Proxmox cluster: a FakePve with a listener per node."""

    name: str
    node_addresses: dict[str, str]  # node -> loopback address
    token_secret: str
    pve: FakePve = field(init=False)
    _sites: dict[str, web.TCPSite] = field(default_factory=dict, init=False)
    _ssl: ssl.SSLContext | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        first = next(iter(self.node_addresses.values()))
        self.pve = HarnessPve(host=first, port=PVE_PORT)
        self.pve.cluster_name = self.name
        self.pve.time_scale = 0
        self.pve.nodes.clear()
        for node in self.node_addresses:
            self.pve.add_node(node)
        self.pve.apitokens[TOKEN_ID] = self.token_secret

    def url(self, node: str) -> str:
        return f"https://{self.node_addresses[node]}:{PVE_PORT}"

    @property
    def sdn(self) -> FakeSdn:
        """The cluster's SDN (zones, VNets, subnets; pending and running): read it on the fakes' loop."""
        assert isinstance(self.pve, HarnessPve)
        return self.pve.sdn

    async def start(self, certfile: str, keyfile: str) -> None:
        self._ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ssl.load_cert_chain(certfile, keyfile)
        await self.pve.start(certfile, keyfile)
        first = next(iter(self.node_addresses))
        assert self.pve.runner is not None
        self._sites[first] = next(iter(self.pve.runner.sites))  # pve.start made it
        for node in list(self.node_addresses)[1:]:
            await self._listen(node)

    async def _listen(self, node: str) -> None:
        assert self.pve.runner is not None
        site = web.TCPSite(self.pve.runner, self.node_addresses[node], PVE_PORT, ssl_context=self._ssl)
        await site.start()
        self._sites[node] = site

    async def set_node_offline(self, node: str, offline: bool = True) -> None:
        """The node goes down (its API stops answering) or comes back."""
        self.pve.set_node_offline(node, offline)
        if offline and node in self._sites:
            await self._sites.pop(node).stop()
            self._drop_connections(self.node_addresses[node])
        elif not offline and node not in self._sites:
            await self._listen(node)

    def _drop_connections(self, address: str) -> None:
        """Close the keep-alive connections clients hold to an address (closing the listener keeps them)."""
        assert self.pve.runner is not None
        assert self.pve.runner.server is not None
        for handler in self.pve.runner.server.connections:
            transport = handler.transport
            if transport is not None and transport.get_extra_info("sockname", ("",))[0] == address:
                transport.close()

    async def stop(self) -> None:
        await self.pve.stop()
        self._sites.clear()


class FakeZones:
    """Every zone's fake, served from one event loop thread."""

    def __init__(self, zones: dict[str, dict[str, str]], secrets: dict[str, str], pki_dir: Path) -> None:
        self.loop = EventLoopThread()
        self.zones = {name: FakeZone(name, nodes, secrets[name]) for name, nodes in zones.items()}
        addresses = [a for nodes in zones.values() for a in nodes.values()]
        pki_dir.mkdir(parents=True, exist_ok=True)
        self.certfile, self.keyfile, _ = make_cert(str(pki_dir), name="fakepve", hosts=tuple(addresses))

    def start(self) -> None:
        for zone in self.zones.values():
            self.loop.run(zone.start(self.certfile, self.keyfile))

    def stop(self) -> None:
        try:
            for zone in self.zones.values():
                self.loop.run(zone.stop())
        finally:
            self.loop.stop()

    def __getitem__(self, zone: str) -> FakeZone:
        return self.zones[zone]

    def set_node_offline(self, zone: str, node: str, offline: bool = True) -> None:
        self.loop.run(self.zones[zone].set_node_offline(node, offline))

    def on_loop(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the fakes' loop: seed or inspect a fake safely from another thread."""
        return self.loop.call(fn, *args)
