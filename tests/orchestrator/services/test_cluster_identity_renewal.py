"""Renewing tenant clusters' cloud controllers' keys (``services.clusters.identity.renew_keys``), in process:
the management cluster's tenant-cluster objects and Zitadel in memory, the clock moved by time-machine.

A key due (expiring within 30 days) is replaced in its Secret by a new key of the same account, the key it
replaced stays valid for the grace and is deleted by a later pass; a key not due costs no Zitadel call; a
Secret written before the expiry annotation is read by its key file's ``expirationDate``, and renewed at
once without one; one cluster's failure is its own.
"""

from __future__ import annotations

import datetime
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import time_machine
from time_machine import Traveller

from orchestrator.auth import ADMIN, USER, Principal
from orchestrator.errors import PermissionDenied
from orchestrator.management.commands.reconcile_gateways import Command
from orchestrator.models.clusters import CLUSTER, CLUSTER_NAME_LABEL, VDC_LABEL, namespace_of
from orchestrator.services import service_accounts
from orchestrator.services.clusters import identity
from orchestrator.services.context import Context, Sources
from orchestrator.services.vdcs.definitions import get_vdc
from orchestrator.sources.kube_objects import (
    CLOUD_CONTROLLER_EXPIRES_ANNOTATION,
    CLOUD_CONTROLLER_KEY,
    CLOUD_CONTROLLER_RENEWED_ANNOTATION,
    CLOUD_CONTROLLER_REPLACED_ANNOTATION,
    SecretEntry,
    cloud_controller_secret,
)
from orchestrator.sources.zitadel import MachineUser, ZitadelRefused
from tests.orchestrator.fakekube import FakeClusterApi, FakeKube, seeded
from tests.orchestrator.fakezitadel import FakeZitadel

VDC = "demo"
NAMESPACE = namespace_of(VDC)
YEAR = service_accounts.MAX_LIFETIME
DAY = datetime.timedelta(days=1)
BEGUN = datetime.datetime(2031, 3, 1, 12, 0, tzinfo=datetime.UTC)


@dataclass
class WatchedZitadel(FakeZitadel):
    """Zitadel in memory that records the calls about machine users' keys and accounts, and refuses to
    add a key to the users in ``refused`` (as Zitadel refusing: ``permission_denied``)."""

    calls: list[str] = field(default_factory=list)
    refused: set[str] = field(default_factory=set)

    def add_machine_key(self, user_id: str, expires: datetime.datetime) -> str:
        self.calls.append("AddKey")
        if user_id in self.refused:
            raise ZitadelRefused("AddKey", "permission_denied")
        return super().add_machine_key(user_id, expires)

    def remove_machine_key(self, user_id: str, key_id: str) -> None:
        self.calls.append("RemoveKey")
        super().remove_machine_key(user_id, key_id)

    def machine_users(self, username_prefix: str) -> list[MachineUser]:
        self.calls.append("ListUsers")
        return super().machine_users(username_prefix)

    def use_jwt_access_tokens(self, user_id: str, organization_id: str, name: str, description: str) -> None:
        self.calls.append("UpdateMachine")
        super().use_jwt_access_tokens(user_id, organization_id, name, description)


@dataclass
class World:
    kube: FakeKube
    clusters: FakeClusterApi
    zitadel: WatchedZitadel
    clock: Traveller

    def context(self, *roles: str) -> Context:
        principal = Principal("flexplane-gateways", "flex.plane gateways", "", frozenset(roles))
        sources = Sources(kube=self.kube, clusterapi=self.clusters, zitadel=self.zitadel)
        return Context(principal=principal, sources=sources)

    def add_cluster(self, name: str) -> None:
        """A cluster of VDC demo with its cloud controller's identity, as a create makes them."""
        ctx = self.context(ADMIN)
        assert identity.make(ctx, get_vdc(ctx, VDC), name) is not None
        labels = {VDC_LABEL: VDC, CLUSTER_NAME_LABEL: name}
        self.clusters.create(CLUSTER, NAMESPACE, {"metadata": {"name": name, "labels": labels}, "spec": {}})

    def secret(self, cluster: str) -> SecretEntry:
        entry = self.clusters.secret(NAMESPACE, cloud_controller_secret(cluster))
        assert entry is not None
        return entry

    def key(self, cluster: str) -> dict[str, str]:
        key: dict[str, str] = json.loads(self.secret(cluster).data[CLOUD_CONTROLLER_KEY])
        return key

    def keys_of(self, cluster: str) -> set[str]:
        """The ids of the keys Zitadel holds for the cluster's account."""
        return set(self.zitadel.machine_keys[self.key(cluster)["userId"]])

    def renew(self) -> dict[str, identity.KeyRenewal]:
        return {r.cluster: r for r in identity.renew_keys(self.context(ADMIN))}


@pytest.fixture
def world() -> Iterator[World]:
    with time_machine.travel(BEGUN, tick=False) as clock:
        yield World(seeded(), FakeClusterApi(), WatchedZitadel.seeded(), clock)  # type: ignore[arg-type]


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def test_a_key_due_is_renewed_and_the_key_it_replaced_deleted_after_the_grace(world: World) -> None:
    world.add_cluster("web")
    old = world.key("web")
    assert world.secret("web").annotations == {
        CLOUD_CONTROLLER_EXPIRES_ANNOTATION: (BEGUN + YEAR).isoformat()
    }

    world.clock.shift(YEAR - 29 * DAY)  # within 30 days of its expiry
    renewed = world.renew()["web"]
    assert (renewed.action, renewed.error, renewed.expires) == ("renewed", "", now() + YEAR)
    new = world.key("web")
    assert new["userId"] == old["userId"]
    assert new["keyId"] != old["keyId"]
    assert world.secret("web").annotations == {
        CLOUD_CONTROLLER_EXPIRES_ANNOTATION: (now() + YEAR).isoformat(),
        CLOUD_CONTROLLER_REPLACED_ANNOTATION: old["keyId"],
        CLOUD_CONTROLLER_RENEWED_ANNOTATION: now().isoformat(),
    }
    assert world.keys_of("web") == {old["keyId"], new["keyId"]}  # the controller still holds the old one
    [account] = [
        a for a in service_accounts.service_accounts(world.context(ADMIN), VDC) if a.id == new["userId"]
    ]
    assert account.expires == now() + YEAR  # as the VDC's service accounts are listed

    world.clock.shift(datetime.timedelta(minutes=59))
    assert world.renew()["web"].action == "kept"
    assert world.keys_of("web") == {old["keyId"], new["keyId"]}

    world.clock.shift(datetime.timedelta(minutes=1))
    retired = world.renew()["web"]
    assert (retired.action, retired.error) == ("retired", "")
    assert world.keys_of("web") == {new["keyId"]}
    assert world.key("web") == new  # the Secret's key is unchanged: the controller is not restarted again
    assert set(world.secret("web").annotations) == {CLOUD_CONTROLLER_EXPIRES_ANNOTATION}

    world.zitadel.calls.clear()
    assert world.renew()["web"].action == "kept"
    assert world.zitadel.calls == []


def test_a_key_not_due_is_left_alone_without_a_call_to_zitadel(world: World) -> None:
    world.add_cluster("web")
    before = world.secret("web")
    world.zitadel.calls.clear()

    world.clock.shift(YEAR - 31 * DAY)
    kept = world.renew()["web"]
    assert (kept.action, kept.expires, kept.error) == ("kept", BEGUN + YEAR, "")
    assert world.zitadel.calls == []
    assert world.secret("web") == before


def written_before_the_annotation(world: World, cluster: str, expiration: str | None) -> None:
    """The cluster's Secret as a create wrote it before the expiry annotation, its key file carrying
    ``expiration`` as its ``expirationDate`` (None: none)."""
    entry = world.secret(cluster)
    key = world.key(cluster)
    key.pop("expirationDate", None)
    if expiration is not None:
        key["expirationDate"] = expiration
    world.clusters.write_secret(
        NAMESPACE, entry.name, {CLOUD_CONTROLLER_KEY: json.dumps(key).encode()}, entry.labels
    )


def test_a_secret_without_the_annotation_is_read_by_its_keys_expiration_and_renewed_without_one(
    world: World,
) -> None:
    for name in ("later", "soon", "unknown"):
        world.add_cluster(name)
    written_before_the_annotation(world, "later", (BEGUN + YEAR).strftime("%Y-%m-%dT%H:%M:%SZ"))
    written_before_the_annotation(world, "soon", (BEGUN + 10 * DAY).isoformat())
    written_before_the_annotation(world, "unknown", None)
    world.zitadel.calls.clear()

    done = world.renew()
    assert {name: r.action for name, r in done.items()} == {
        "later": "kept",
        "soon": "renewed",
        "unknown": "renewed",
    }
    assert done["later"].expires == BEGUN + YEAR
    assert world.zitadel.calls.count("AddKey") == 2
    for name in ("soon", "unknown"):
        assert (
            world.secret(name).annotations[CLOUD_CONTROLLER_EXPIRES_ANNOTATION] == (BEGUN + YEAR).isoformat()
        )
    assert CLOUD_CONTROLLER_EXPIRES_ANNOTATION not in world.secret("later").annotations


def test_one_clusters_failure_leaves_the_others_renewed_and_is_reported(world: World) -> None:
    for name in ("a", "b", "c"):
        world.add_cluster(name)
    refused = world.key("b")
    world.zitadel.refused.add(refused["userId"])
    world.clock.shift(YEAR - DAY)

    command = Command(stdout=io.StringIO(), stderr=io.StringIO())
    assert command.renew_keys(world.context(ADMIN)) == 1
    assert world.key("a")["keyId"] != world.key("c")["keyId"]
    for name in ("a", "c"):
        assert CLOUD_CONTROLLER_REPLACED_ANNOTATION in world.secret(name).annotations
    assert world.key("b") == refused  # left as it was, and tried again on the next pass
    assert world.keys_of("b") == {refused["keyId"]}
    errors = command.stderr.getvalue()
    assert "cluster b of VDC demo: cloud controller's key renewed: a new key for cluster b's" in errors
    assert "Zitadel refused AddKey (permission_denied)" in errors
    assert command.stdout.getvalue().count("cloud controller's key renewed, valid until") == 2


def test_a_new_key_the_secret_did_not_take_is_deleted_again(world: World) -> None:
    world.add_cluster("web")
    old = world.key("web")
    world.clock.shift(YEAR - DAY)
    entry = world.secret("web")
    # The Secret changes between the pass's read and its write (a create of the same name, a hand's edit).
    world.clusters.write_secret(NAMESPACE, entry.name, entry.data, entry.labels, entry.annotations)
    original = world.clusters.secret

    def stale(namespace: str, name: str) -> SecretEntry | None:
        return entry if name == entry.name else original(namespace, name)

    world.clusters.secret = stale  # type: ignore[method-assign]
    failed = world.renew()["web"]
    assert failed.action == "renewed"
    assert "changed meanwhile" in failed.error
    assert world.keys_of("web") == {old["keyId"]}


def test_only_an_admin_renews_the_keys(world: World) -> None:
    with pytest.raises(PermissionDenied):
        identity.renew_keys(world.context(USER))


def test_the_reconciler_looks_at_the_keys_on_its_first_pass_and_then_every_ten_minutes() -> None:
    command = Command(stdout=io.StringIO(), stderr=io.StringIO())
    assert [command.keys_due(t) for t in (1000.0, 1015.0, 1599.0, 1600.0, 1615.0)] == [
        True,
        False,
        False,
        True,
        False,
    ]
