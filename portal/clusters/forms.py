"""The Kubernetes pages' forms: plain Django forms over the services' inputs, which check everything again
(the version against the catalog, the profiles and the network against what the VDC allows, the node
counts, the quota); a service's ``ValidationFailed`` lands next to the field it names, as the API's
``errors { field }`` does.

The create form holds one or more node pools, each a small form of its own (prefix ``pools-<n>``). The
form starts with one; "Add a node pool" sends what was typed and gets it back with one more, empty
(nothing is created). A pool other than the first whose name is left empty is left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms

from orchestrator.errors import FlexPlaneError, QuotaExceeded, ValidationFailed
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
)
from portal.forms import choices, show_error, styled

# The service's names of a create's fields (the API's, in snake case) -> the form's.
FIELDS = {"control_plane.replicas": "control_plane_replicas", "control_plane": "control_plane_replicas"}
# A service's field of one node pool: ``node_pools[1].compute_profile``.
_POOL_FIELD = re.compile(r"node_pools\[(\d+)\](?:\.(\w+))?")
# The new pool's name a create starts with.
FIRST_POOL = "workers"
DEFAULT_COUNT = 3
# The pools a form holds at most (the "Add a node pool" button goes once there).
MAX_POOLS = MAX_NODE_POOLS
SAME_NETWORK = ""


def network_choices(networks: Sequence[Network]) -> list[tuple[str, str]]:
    """The VDC's networks a cluster's nodes may join, named ``<zone>/<name>`` as the API lets a request
    name them."""
    return [(f"{n.zone}/{n.name}", f"{n.name} ({n.cidr}, zone {n.zone})") for n in networks if not n.pending]


@dataclass(frozen=True)
class Offer:
    """What a cluster of the VDC may be made of: the catalog's versions (newest first), the profiles the
    VDC allows and its networks, as (value, label) choices."""

    versions: list[tuple[str, str]]
    compute_profiles: list[tuple[str, str]]
    storage_profiles: list[tuple[str, str]]
    networks: list[tuple[str, str]]


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
        choices(self.fields["compute_profile"], offer.compute_profiles)
        choices(self.fields["storage_profile"], offer.storage_profiles)
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
    network = forms.ChoiceField(label="Network", help_text="The VDC network the nodes join.")

    def __init__(self, offer: Offer, data: Any = None, *, initial: Any = None, pools: int = 1) -> None:
        super().__init__(data, initial=initial)
        self.offer = offer
        choices(self.fields["version"], offer.versions)
        choices(self.fields["network"], offer.networks)
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false")
        replicas = self.fields["control_plane_replicas"]
        replicas.widget.attrs.update(min=MIN_CONTROL_PLANE, max=MAX_CONTROL_PLANE, inputmode="numeric")
        styled(self)
        if data is None:
            first = {"name": FIRST_POOL, "count": DEFAULT_COUNT} if initial is None else None
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
            kept.append(NodePoolForm(offer, index=len(kept), initial={"count": DEFAULT_COUNT}))
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
