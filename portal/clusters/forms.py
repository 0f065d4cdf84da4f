"""The Kubernetes pages' forms: plain Django forms over the services' inputs, which check everything again
(the version against the catalog, the profiles and the network against what the VDC allows, the node
counts, the quota); a service's ``ValidationFailed`` lands next to the field it names, as the API's
``errors { field }`` does.

The create form holds one or more node pools, each a small form of its own (prefix ``pools-<n>``). The
form starts with one; "Add a node pool" sends what was typed and gets it back with one more, empty
(nothing is created). A pool other than the first whose name is left empty is left out.

A new pool starts inside the VDC's quota, as a new VM does (``portal.vms.offer``): the smallest compute
profile that fits, and as many nodes of it as fit up to three. What the cluster would take of the quota
(its workers as the VMs they become, its control plane's replicas) is :meth:`ClusterForm.asked`, counted
from what was typed so far, valid or not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms

from orchestrator.errors import FlexPlaneError, QuotaExceeded, ValidationFailed
from orchestrator.models import Usage, Vdc
from orchestrator.models.clusters import DEFAULT_NETWORK_PLUGIN, LOAD_BALANCER, SHARED, KubernetesVersion
from orchestrator.models.networks import Network
from orchestrator.services.clusters.inputs import (
    DEFAULT_CONTROL_PLANE,
    MAX_CLUSTER_NAME,
    MAX_CONTROL_PLANE,
    MAX_NODE_POOLS,
    MAX_NODES,
    MAX_POOL_NAME,
    MIN_CONTROL_PLANE,
    MIN_NODES,
    CreateCluster,
    NodePoolSpec,
    exposures,
)
from orchestrator.services.clusters.quota import control_plane, worker
from portal.forms import choices, show_error, styled
from portal.templatetags.sizes import size
from portal.vms.offer import Offer as CatalogOffer
from portal.vms.offer import QuotaLine, compute_profile_label, quota_lines

# The service's names of a create's fields (the API's, in snake case) -> the form's.
FIELDS = {
    "control_plane.replicas": "control_plane_replicas",
    "control_plane": "control_plane_replicas",
    "control_plane.exposure": "control_plane_exposure",
}
# How a control plane may be reached, as the form offers it.
EXPOSURE_LABELS = {
    SHARED: "The shared address (routed by the cluster's host name)",
    LOAD_BALANCER: "A load balancer of its own",
}
# A service's field of one node pool: ``node_pools[1].compute_profile``.
_POOL_FIELD = re.compile(r"node_pools\[(\d+)\](?:\.(\w+))?")
# The new pool's name a create starts with.
FIRST_POOL = "workers"
DEFAULT_COUNT = 3
# The pools a form holds at most (the "Add a node pool" button goes once there).
MAX_POOLS = MAX_NODE_POOLS
SAME_NETWORK = ""
# The network plugins offered (the service's NETWORK_PLUGINS), as the form names them.
NETWORK_PLUGIN_CHOICES = [("cilium", "Cilium"), ("calico", "Calico"), ("none", "None (I apply my own)")]


def network_choices(networks: Sequence[Network]) -> list[tuple[str, str]]:
    """The VDC's networks a cluster's nodes may join, named ``<zone>/<name>`` as the API lets a request
    name them."""
    return [(f"{n.zone}/{n.name}", f"{n.name} ({n.cidr}, zone {n.zone})") for n in networks if not n.pending]


# A pool's choices, as far as the quota goes: (compute profile, storage profile, nodes).
PoolChoice = tuple[str, str, int]


@dataclass(frozen=True)
class Offer:
    """What a cluster of the VDC may be made of, and what the VDC uses now: the catalog's versions (newest
    first), the profiles the VDC allows (``catalog``, as the VM form offers them), its networks as (value,
    label) choices, and its usage, which new pools start inside and the quota figures count from."""

    catalog: CatalogOffer
    versions: list[KubernetesVersion]
    networks: list[tuple[str, str]]
    used: Usage

    @property
    def vdc(self) -> Vdc:
        return self.catalog.vdc

    def version_choices(self) -> list[tuple[str, str]]:
        return [(v.version, v.version) for v in self.versions]

    def compute_profile_choices(self) -> list[tuple[str, str]]:
        """Each profile with its size, as the VM form shows it."""
        return [(p.name, compute_profile_label(p)) for p in self.catalog.compute_profiles.values()]

    def storage_profile_choices(self) -> list[tuple[str, str]]:
        """Each profile with the disk a node gets of it (with the newest version's node image)."""
        newest = self.versions[0].version if self.versions else ""
        labels = []
        for name in self.catalog.storage_profiles:
            disk = self.worker_disk_gb(name, newest)
            labels.append((name, f"{name}: {size(disk, 'GiB')} disk per node" if disk else name))
        return labels

    def worker_disk_gb(self, storage_profile: str, version: str) -> int | None:
        """The disk of a node (the service's rule: the profile's default, at least what the version's node
        image needs), if both are offered."""
        image = next((v.image for v in self.versions if v.version == version), None)
        return self.catalog.default_disk_gb(storage_profile, image) if image else None

    def asked(self, version: str, replicas: int, pools: Iterable[PoolChoice]) -> Usage:
        """What a cluster of these choices takes of the quota: each pool's nodes at their size, and its
        control plane's replicas; what is not (yet) chosen counts as nothing."""
        total = control_plane(max(0, replicas))
        for compute_profile, storage_profile, count in pools:
            profile = self.catalog.compute_profiles.get(compute_profile)
            disk = self.worker_disk_gb(storage_profile, version) or 0
            vcpus, memory_mib = (profile.vcpus, profile.memory_mib) if profile else (0, 0)
            total = total + worker(vcpus, memory_mib, disk, max(0, count))
        return total

    def quota(self, asked: Usage) -> list[QuotaLine]:
        """The VDC's quota: what is left now, what ``asked`` takes, what would be left after."""
        return quota_lines(self.vdc, self.used, asked)

    def new_pool(self, version: str, replicas: int, beside: Sequence[PoolChoice] = ()) -> dict[str, Any]:
        """A new pool's first values, inside the quota beside the pools ``beside`` (and a control plane of
        ``replicas``): the smallest compute profile of which a node fits, with as many nodes as fit up to
        :data:`DEFAULT_COUNT`; the smallest profile and one node when none fits (the figures say so)."""
        storage = next(iter(self.catalog.storage_profiles), "")
        by_size = sorted(
            self.catalog.compute_profiles.values(), key=lambda p: (p.vcpus, p.memory_mib, p.name)
        )
        for profile in by_size:
            for count in range(DEFAULT_COUNT, MIN_NODES - 1, -1):
                asked = self.asked(version, replicas, [*beside, (profile.name, storage, count)])
                if not any(line.over for line in self.quota(asked)):
                    return {"compute_profile": profile.name, "storage_profile": storage, "count": count}
        smallest = by_size[0].name if by_size else ""
        return {"compute_profile": smallest, "storage_profile": storage, "count": MIN_NODES}


class NodePoolForm(forms.Form):
    """One node pool of ``createKubernetesCluster``'s input."""

    name = forms.CharField(
        label="Pool name",
        max_length=MAX_POOL_NAME,
        help_text=f"A DNS label of at most {MAX_POOL_NAME} characters, unique in the cluster.",
    )
    compute_profile = forms.ChoiceField(label="Compute profile")
    storage_profile = forms.ChoiceField(label="Storage profile")
    count = forms.IntegerField(
        label="Nodes", help_text=f"{MIN_NODES} to {MAX_NODES} worker VMs: they count against the VDC's quota."
    )
    network = forms.ChoiceField(label="Pool network", required=False)

    def __init__(self, offer: Offer, data: Any = None, *, index: int, initial: Any = None) -> None:
        super().__init__(data, prefix=f"pools-{index}", initial=initial)
        self.index = index
        choices(self.fields["compute_profile"], offer.compute_profile_choices())
        choices(self.fields["storage_profile"], offer.storage_profile_choices())
        choices(self.fields["network"], [(SAME_NETWORK, "the cluster's network"), *offer.networks])
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false")
        self.fields["count"].widget.attrs.update(min=MIN_NODES, max=MAX_NODES, inputmode="numeric")
        styled(self)

    def left_empty(self) -> bool:
        """Whether the user left this pool's name empty (a pool other than the first is then left out)."""
        return not str(self.data.get(self.add_prefix("name"), "")).strip()

    def typed(self) -> dict[str, Any]:
        """What was typed (an unbound form: what it shows), as the initial values of an unbound copy."""
        if not self.is_bound:
            return dict(self.initial)
        return {name: str(self.data.get(self.add_prefix(name), "")) for name in self.fields}

    def value(self, name: str) -> str:
        """A field's value as sent (or as first shown), valid or not: for the quota figures."""
        raw = self[name].value()
        return "" if raw is None else str(raw).strip()

    def choice(self) -> PoolChoice:
        """The pool's profiles and nodes as typed so far (nodes that are not a number: none)."""
        return self.value("compute_profile"), self.value("storage_profile"), _number(self.value("count"))

    def spec(self) -> NodePoolSpec:
        data = self.cleaned_data
        return NodePoolSpec(
            name=data["name"].strip(),
            compute_profile=data["compute_profile"],
            storage_profile=data["storage_profile"],
            count=data["count"],
            network=data["network"] or None,
        )


class ClusterForm(forms.Form):
    """``createKubernetesCluster``'s input: the cluster, and its node pools (:attr:`pools`)."""

    name = forms.CharField(
        label="Name",
        max_length=MAX_CLUSTER_NAME,
        help_text=f"A DNS label of at most {MAX_CLUSTER_NAME} characters, unique in the VDC.",
    )
    version = forms.ChoiceField(label="Kubernetes version")
    control_plane_replicas = forms.IntegerField(
        label="Control-plane replicas",
        initial=DEFAULT_CONTROL_PLANE,
        help_text=f"{MIN_CONTROL_PLANE} to {MAX_CONTROL_PLANE} API servers, run by the platform (not in your "
        "VDC); two or more keep it answering during upgrades.",
    )
    control_plane_exposure = forms.ChoiceField(
        label="Control-plane address",
        help_text="Where kubectl and the nodes reach the API server: the platform's one address for "
        "every cluster, or an address of this cluster's own. Kept for the cluster's life.",
    )
    network = forms.ChoiceField(label="Network", help_text="The VDC network the nodes join.")
    network_plugin = forms.ChoiceField(
        label="Network plugin",
        choices=NETWORK_PLUGIN_CHOICES,
        initial=DEFAULT_NETWORK_PLUGIN,
        help_text="The pods' network, installed with the cluster at the release pinned to its version: "
        "Cilium or Calico (VXLAN between the nodes either way), or none: the nodes stay Not Ready until you "
        "apply your own.",
    )

    def __init__(self, offer: Offer, data: Any = None, *, initial: Any = None, pools: int = 1) -> None:
        newest = offer.versions[0].version if offer.versions else ""
        fresh = {"version": newest, "network_plugin": DEFAULT_NETWORK_PLUGIN}
        super().__init__(data, initial=fresh if initial is None else initial)
        self.offer = offer
        choices(self.fields["version"], offer.version_choices())
        choices(self.fields["network"], offer.networks)
        offered = exposures()
        if len(offered) > 1:
            exposure = self.fields["control_plane_exposure"]
            assert isinstance(exposure, forms.ChoiceField)
            exposure.choices = [(value, EXPOSURE_LABELS[value]) for value in offered]
            exposure.initial = offered[0]
        else:  # nothing to choose: each control plane gets a load balancer
            del self.fields["control_plane_exposure"]
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false")
        replicas = self.fields["control_plane_replicas"]
        replicas.widget.attrs.update(min=MIN_CONTROL_PLANE, max=MAX_CONTROL_PLANE, inputmode="numeric")
        styled(self)
        if data is None:
            first = None
            if initial is None:
                first = {"name": FIRST_POOL, **offer.new_pool(newest, DEFAULT_CONTROL_PLANE)}
            self.pools = [NodePoolForm(offer, index=i, initial=first) for i in range(pools)]
        else:
            sent = [NodePoolForm(offer, data, index=i) for i in range(_posted_rows(data))]
            # A pool left out is shown as typed, unchecked: it says nothing about fields it does not ask.
            self.pools = [
                p
                if p.index == 0 or not p.left_empty()
                else NodePoolForm(offer, index=p.index, initial=p.typed())
                for p in sent
            ]

    @classmethod
    def with_another_pool(cls, offer: Offer, data: Mapping[str, Any]) -> ClusterForm:
        """The form as typed, unchecked, with one more (empty) pool: what "Add a node pool" answers."""
        typed = cls(offer, data)
        again = cls(offer, initial={name: data.get(name, "") for name in typed.fields}, pools=0)
        kept = [NodePoolForm(offer, index=i, initial=p.typed()) for i, p in enumerate(typed.pools)]
        if len(kept) < MAX_POOLS:
            beside = [p.choice() for p in typed.counted_pools()]
            fresh = offer.new_pool(typed.value("version"), typed.replicas(), beside)
            kept.append(NodePoolForm(offer, index=len(kept), initial=fresh))
        again.pools = kept
        return again

    @property
    def rows(self) -> int:
        return len(self.pools)

    @property
    def can_add_pool(self) -> bool:
        return len(self.pools) < MAX_POOLS

    def chosen_pools(self) -> list[NodePoolForm]:
        """The pools the create asks for: the first, and every other whose name was typed (bound)."""
        return [p for p in self.pools if p.is_bound]

    def counted_pools(self) -> list[NodePoolForm]:
        """The pools the quota figures count, sent or only shown: the first, and every other with a name."""
        return [p for p in self.pools if p.index == 0 or p.value("name")]

    def value(self, name: str) -> str:
        """A field's value as sent (or as first shown), valid or not: for the quota figures."""
        raw = self[name].value()
        return "" if raw is None else str(raw).strip()

    def replicas(self) -> int:
        """The control plane's replicas as typed (not a number: none)."""
        return _number(self.value("control_plane_replicas"))

    def asked(self) -> Usage:
        """What the cluster as typed so far would take of the VDC's quota."""
        pools = [p.choice() for p in self.counted_pools()]
        return self.offer.asked(self.value("version"), self.replicas(), pools)

    def is_valid(self) -> bool:
        valid = super().is_valid()
        return all([p.is_valid() for p in self.chosen_pools()]) and valid

    def spec(self) -> CreateCluster:
        """The create's input, as the service takes it."""
        data = self.cleaned_data
        return CreateCluster(
            name=data["name"].strip(),
            version=data["version"],
            network=data["network"],
            node_pools=tuple(p.spec() for p in self.chosen_pools()),
            control_plane_replicas=data["control_plane_replicas"],
            network_plugin=data["network_plugin"],
            control_plane_exposure=data.get("control_plane_exposure"),
        )

    def show_error(self, exc: FlexPlaneError) -> None:
        """A service's error on the form it is about (:func:`portal.forms.show_error`): a pool's field on
        that pool's (counted among the pools sent), a quota on the only pool's count (the one thing to ask
        less of), anything else on the cluster's."""
        sent = self.chosen_pools()
        found = _POOL_FIELD.fullmatch(exc.field) if isinstance(exc, ValidationFailed) else None
        if found is not None and int(found.group(1)) < len(sent):
            field = found.group(2)  # None: the pool as a whole, above its row
            show_error(sent[int(found.group(1))], exc, lambda _: field)
        elif isinstance(exc, QuotaExceeded) and len(sent) == 1:
            show_error(sent[0], exc, quota=["count"])
        else:
            show_error(self, exc, FIELDS)


def _number(value: str) -> int:
    """A count as typed, for the quota figures: what is not a whole number counts as none."""
    try:
        return max(0, int(value))
    except ValueError:
        return 0


def _posted_rows(data: Mapping[str, Any]) -> int:
    """How many pool rows a posted form holds (at least one, at most :data:`MAX_POOLS`)."""
    try:
        rows = int(data.get("pools", 1))
    except (TypeError, ValueError):
        rows = 1
    return min(max(rows, 1), MAX_POOLS)


class ScaleForm(forms.Form):
    """``scaleNodePool``'s input: a pool of the cluster and its new count of nodes."""

    pool = forms.ChoiceField(label="Node pool")
    count = forms.IntegerField(label="Nodes")

    def __init__(self, pools: Sequence[tuple[str, int]], data: Any = None) -> None:
        first = pools[0] if pools else ("", DEFAULT_COUNT)
        super().__init__(data, initial={"pool": first[0], "count": first[1]})
        choices(self.fields["pool"], [(name, f"{name} ({count} nodes)") for name, count in pools])
        self.fields["count"].widget.attrs.update(min=MIN_NODES, max=MAX_NODES, inputmode="numeric")
        styled(self)


class UpgradeForm(forms.Form):
    """``upgradeKubernetesCluster``'s input: a newer version of the catalog."""

    version = forms.ChoiceField(label="Upgrade to")

    def __init__(self, versions: Sequence[str], data: Any = None) -> None:
        super().__init__(data)
        choices(self.fields["version"], [(v, v) for v in versions])
        styled(self)
