"""Records the management cluster already holds read as they always did, and are written byte for byte as
before: mesh peers (``services.mesh``) and hosts' drains (``services.hosts.records``), both pydantic
dataclasses stored in camelCase (``models.specs.Stored``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from orchestrator.services.hosts.records import LONG_AGO, DrainVm, HostDrain
from orchestrator.services.mesh import MeshPeer
from orchestrator.sources.kube_objects import CatalogEntry

AT = datetime(2026, 12, 6, 9, 1, 2, 345678, tzinfo=UTC)
# As records were written before they were pydantic dataclasses (``json.dumps(..., sort_keys=True)``).
DRAIN = (
    '{"endedAt":null,"heartbeat":"2026-12-06T09:01:02.345678+00:00","message":"","node":"pve1",'
    '"requestedBy":"bob","runner":"r1","startedAt":"2026-12-06T09:01:02.345678+00:00","state":"RUNNING",'
    '"updatedAt":"2026-12-06T09:01:02.345678+00:00","vms":[{"endedAt":"2026-12-06T09:01:02.345678+00:00",'
    '"name":"web","reason":"","startedAt":null,"state":"MOVED","target":"pve2","upid":"UPID:pve1:1",'
    '"vdc":"demo","vmid":101},{"endedAt":null,"name":"db","reason":"","startedAt":null,"state":"PENDING",'
    '"target":null,"upid":null,"vdc":null,"vmid":102}],"zone":"zone-a"}'
)
PEER = '{"address":"10.99.0.2","node":"pve1","publicKey":"KEY=","zone":"zone-a"}'
SEEN_PEER = (
    '{"address":"10.99.0.2","endpoint":"192.0.2.7:51820","lastHandshake":1765011662,"node":"pve1",'
    '"publicKey":"KEY=","zone":"zone-a"}'
)


def stored(spec: dict[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def entry(ident: str, spec: str | dict[str, Any]) -> CatalogEntry:
    return CatalogEntry("x", ident, json.loads(spec) if isinstance(spec, str) else spec, "42", {})


def test_a_drain_is_written_as_it_always_was() -> None:
    vms = [
        DrainVm(101, "web", "demo", "MOVED", "pve2", "", "UPID:pve1:1", None, AT),
        DrainVm(102, "db", None),
    ]
    drain = HostDrain("zone-a", "pve1", "RUNNING", vms, "bob", AT, AT, "r1", AT)
    assert stored(drain.to_spec()) == DRAIN


def test_a_stored_drain_reads_back_and_is_written_unchanged() -> None:
    drain = HostDrain.from_entry(entry("zone-a.pve1", DRAIN))
    assert (drain.host, drain.resource_version, drain.vms[0].ended_at, drain.vms[1].vdc) == (
        "pve1",
        "42",
        AT,
        None,
    )
    assert stored(drain.to_spec()) == DRAIN


def test_what_does_not_parse_reads_as_a_drain_that_stopped_long_ago() -> None:
    spec = {
        "state": "",
        "startedAt": "yesterday",
        "vms": [{"name": "no vmid"}, "junk", {"vmid": "7", "vdc": ""}],
    }
    drain = HostDrain.from_entry(entry("zone-b.pve9", spec))
    assert (drain.zone, drain.host, drain.state, drain.started_at, drain.heartbeat) == (
        "zone-b",
        "pve9",
        "FAILED",
        LONG_AGO,
        LONG_AGO,
    )
    assert drain.vms == [DrainVm(7, "", None)]


def test_a_mesh_peer_is_written_as_it_always_was_its_handshake_once_seen() -> None:
    peer = MeshPeer("zone-a", "pve1", "10.99.0.2", "KEY=")
    assert stored(peer.to_spec()) == PEER
    seen = MeshPeer.from_entry(entry("10-99-0-2", SEEN_PEER))
    assert (seen.last_handshake, seen.endpoint, seen.resource_version) == (
        1765011662,
        "192.0.2.7:51820",
        "42",
    )
    assert stored(seen.to_spec()) == SEEN_PEER
    assert MeshPeer.from_entry(entry("10-99-0-2", PEER)) == MeshPeer(
        "zone-a", "pve1", "10.99.0.2", "KEY=", resource_version="42"
    )
