"""The node's gateways: apply, report and remove them; keep each last applied spec; restore them on start.

An apply is all or nothing. The spec was checked when it was read (a refused one never gets here);
then the node's bridges are looked for and the ruleset is checked by ``nft -c`` before anything
changes; the namespace and links are made to match; the ruleset is replaced in one transaction;
and only then the spec is written down (atomically) as the gateway's. When a step after the first
change fails, the previous spec is applied again (or, for a new gateway, the namespace removed),
so the node is left as it was. One call at a time per gateway.

The kept specs live in ``directory`` (``<id>.json``, the spec's plain-JSON form). On start the agent
goes through them (:meth:`GatewayManager.restore`). After an agent restart it finds each gateway as the
last one left it, and adopts it as it is: nothing is run that changes anything (the same namespace,
links, rules and counters), and connections carry on whichever side speaks first. A gateway that is
not as its spec says (gone after a reboot, changed by hand, or a new agent version renders it
otherwise) is applied again, which rebuilds or repairs it in place.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

from agent.certs import write_atomically
from agent.gateways.net import NetError, Node, hidden_mounts
from agent.gateways.rules import ruleset
from agentclient.gateways import GatewaySpec, GatewaySpecError, GatewayState, check_gateway_id

log = logging.getLogger(__name__)


class ApplyFailed(Exception):
    """The node could not apply the gateway; the message says why; its previous state runs."""


class GatewayManager:
    """The gateways of one node: ``node`` its name (in the states), ``directory`` the kept specs."""

    def __init__(self, node: str, directory: Path, *, host: str | None = None) -> None:
        self.node = node
        self.directory = Path(directory)
        self.net = Node(host)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, gateway_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(gateway_id, threading.Lock())

    def _path(self, gateway_id: str) -> Path:
        return self.directory / f"{check_gateway_id(gateway_id)}.json"

    # --------------------------------------------------------------------------- kept specs

    def kept(self, gateway_id: str) -> GatewaySpec | None:
        """The spec last applied for gateway_id, or None."""
        path = self._path(gateway_id)
        try:
            return GatewaySpec.from_dict(json.loads(path.read_bytes()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.error("the kept spec %s cannot be read: %s", path, exc)
            return None

    def kept_ids(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(path.stem for path in self.directory.glob("*.json") if not path.name.startswith("."))

    def _keep(self, spec: GatewaySpec) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        content = json.dumps(spec.to_dict(), indent=1, sort_keys=True).encode()
        write_atomically(self._path(spec.id), content, 0o600)

    # --------------------------------------------------------------------------- the calls

    def apply(self, spec: GatewaySpec) -> GatewayState:
        """Run the gateway as spec says; ApplyFailed leaves the previous state running."""
        with self._lock(spec.id):
            return self._apply_and_keep(spec)

    def _apply_and_keep(self, spec: GatewaySpec) -> GatewayState:
        started = time.monotonic()
        previous = self.kept(spec.id)
        self._apply(spec, previous)
        self._keep(spec)
        log.info(
            "gateway %s generation %d applied in %.0f ms (%d legs, %d public IPs, %d forwards, %d rules)",
            spec.id,
            spec.generation,
            (time.monotonic() - started) * 1000,
            len(spec.legs),
            len(spec.public_ips),
            len(spec.forwards),
            len(spec.rules),
        )
        return self._state(spec)

    def _apply(self, spec: GatewaySpec, previous: GatewaySpec | None) -> None:
        text = ruleset(spec)
        try:
            if missing := self.net.missing_bridges(spec):
                raise ApplyFailed(f"the node has no bridge {', '.join(missing)}")
            self.net.check_rules(text)
        except NetError as exc:
            raise ApplyFailed(str(exc)) from None
        try:
            self.net.build(spec)
            self.net.apply_rules(spec.id, text)
        except NetError as exc:
            log.error("gateway %s: %s; restoring its previous state", spec.id, exc)
            self._undo(spec, previous)
            raise ApplyFailed(str(exc)) from None

    def _undo(self, spec: GatewaySpec, previous: GatewaySpec | None) -> None:
        try:
            if previous is None:
                self.net.remove(spec.id, spec)
            else:
                self.net.build(previous)
                self.net.apply_rules(previous.id, ruleset(previous))
        except NetError as exc:
            log.error("gateway %s: its previous state could not be restored: %s", spec.id, exc)

    def state(self, gateway_id: str) -> GatewayState | None:
        """The gateway's state on this node, or None when the node has none."""
        with self._lock(gateway_id):
            spec = self.kept(gateway_id)
            return None if spec is None else self._state(spec)

    def _state(self, spec: GatewaySpec) -> GatewayState:
        try:
            problems = self.net.problems(spec)
            counters = {} if problems else self.net.counters(spec.id)
        except NetError as exc:
            problems, counters = [str(exc)], {}
        return GatewayState(
            id=spec.id,
            generation=spec.generation,
            node=self.node,
            healthy=not problems,
            detail="; ".join(problems),
            counters=counters,
        )

    def remove(self, gateway_id: str) -> bool:
        """Remove the gateway and its kept spec; False when the node had neither."""
        with self._lock(gateway_id):
            spec = self.kept(gateway_id)
            try:
                existed = self.net.remove(gateway_id, spec)
            except NetError as exc:
                raise ApplyFailed(str(exc)) from None
            self._path(gateway_id).unlink(missing_ok=True)
            log.info("gateway %s removed%s", gateway_id, "" if existed or spec else " (there was none)")
            return existed or spec is not None

    def restore(self) -> int:
        """Run every kept spec again, adopting the gateways found as they say; returns how many run.

        A failure is logged, the spec kept. First, it says so when the gateways will not outlive this
        agent (it runs in a mount namespace of its own, where their namespaces are pinned).
        """
        if hidden := hidden_mounts():
            log.error(
                "edge gateways will go when this agent stops: %s. Run it in the host's mount namespace: a "
                "unit without PrivateTmp=, ProtectSystem= or any file system namespacing (as "
                "flexplane-agent bootstrap writes it)",
                hidden,
            )
        running = adopted = 0
        for gateway_id in self.kept_ids():
            try:
                spec = self.kept(gateway_id)
                if spec is None:
                    continue
                adopted += self._restore(spec)
                running += 1
            except (ApplyFailed, GatewaySpecError, OSError) as exc:
                log.error("gateway %s could not be restored: %s", gateway_id, exc)
        log.info("gateways restored: %d running, %d of them adopted as found", running, adopted)
        return running

    def _restore(self, spec: GatewaySpec) -> bool:
        """Adopt the gateway when it runs as spec says, changing nothing (True); else apply spec again."""
        with self._lock(spec.id):
            try:
                differences = self.net.differences(spec, ruleset(spec))
            except NetError as exc:
                differences = [str(exc)]
            if not differences:
                log.info("gateway %s generation %d runs as kept: adopted", spec.id, spec.generation)
                return True
            log.info(
                "gateway %s generation %d is not as kept (%s): applying it again",
                spec.id,
                spec.generation,
                "; ".join(differences[:5]),
            )
            self._apply_and_keep(spec)
            return False
