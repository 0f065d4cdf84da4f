#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Kubernetes cluster of the VDC by its name: made, its pools scaled, or deleted, only where it differs."""

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster
short_description: A Kubernetes cluster of a flex.plane VDC
version_added: 0.1.0
description:
  - Makes a Kubernetes cluster of the VDC (its control plane hosted on the platform, its node pools VMs
    on the VDC's networks), scales its node pools to the counts asked for, or deletes it. A cluster
    already as asked is left alone, so a second run changes nothing.
  - An existing cluster's version, network and pools' profiles are not changed, nor pools added or
    removed; the module warns when they differ (upgrades go through the API, one minor version at a time).
  - The module does not wait for the cluster to be ready; M(flexplane.cloud.cluster_info) with C(until)
    does.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  name:
    description:
      - The cluster's name, a DNS label of at most 40 characters.
    type: str
    required: true
  state:
    description:
      - V(present) makes the cluster if it is missing and scales its pools; V(absent) deletes it with its
        nodes.
    type: str
    choices: [present, absent]
    default: present
  version:
    description:
      - A Kubernetes version the platform offers. Needed to make the cluster.
    type: str
  network:
    description:
      - A network of the VDC for its nodes (its id, or C(<zone>/<name>)). Needed to make the cluster.
    type: str
  control_plane_replicas:
    description:
      - API server replicas, 1 to 5; by default the platform's (2).
    type: int
  control_plane_exposure:
    description:
      - How its API server is reached, kept for the cluster's life; by default the installation's.
        V(shared) puts it behind the installation's one address for every cluster, told apart by the
        cluster's host name (the default where the installation has that address). V(loadBalancer) gives
        it an address of its own.
    type: str
    choices: [shared, loadBalancer]
  network_plugin:
    description:
      - The network plugin installed with the cluster, pinned to its Kubernetes version; by default
        V(cilium). V(calico) installs Calico (its Kubernetes datastore, VXLAN between the nodes).
        V(none) installs none (the nodes stay NotReady until you apply your own).
    type: str
    choices: [cilium, calico, none]
  node_pools:
    description:
      - Its node pools (1 to 10). Needed to make the cluster; of an existing one, each pool's
        O(node_pools[].count) is applied.
    type: list
    elements: dict
    suboptions:
      name:
        description:
          - The pool's name, a DNS label of at most 12 characters.
        type: str
        required: true
      compute_profile:
        description:
          - A compute profile the VDC allows.
        type: str
        required: true
      storage_profile:
        description:
          - A storage profile the VDC allows.
        type: str
        required: true
      count:
        description:
          - Its nodes, 1 to 100.
        type: int
        required: true
      network:
        description:
          - A network of the VDC; by default the cluster's.
        type: str
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: The cluster's version and pools' counts before and after.
    support: full
"""

EXAMPLES = r"""
- name: A cluster with three workers
  flexplane.cloud.cluster:
    name: apps
    version: v1.34.2
    network: zone-a/front
    node_pools:
      - name: workers
        compute_profile: small
        storage_profile: standard
        count: 3
"""

RETURN = r"""
cluster:
  description: The cluster after the module; null when it is absent (or would be made, in check mode).
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
    phase:
      description: Provisioning, Ready, Upgrading, Scaling, Deleting or Failed.
      type: str
    node_pools:
      description: Its pools with their counts.
      type: list
      elements: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    diff_of,
    fail,
    inputs,
    module_of,
    payload,
    plain,
)

# A cluster being deleted counts as gone: deleting it again changes nothing.
DELETING = "Deleting"


def shown(cluster: Any) -> dict[str, Any]:
    if cluster is None:
        return {}
    return {
        "name": cluster.name,
        "version": cluster.version,
        "node_pools": {pool.name: pool.count for pool in cluster.node_pools},
    }


def find(api: Any, name: str) -> Any:
    clusters = api.kubernetes_clusters().kubernetes_clusters
    return next((c for c in clusters if c.name == name and c.phase != DELETING), None)


def create_input(module: Any) -> Any:
    params = module.params
    missing = [name for name in ("version", "network", "node_pools") if not params[name]]
    if missing:
        fail(module, f"cluster {params['name']} does not exist: making it needs {', '.join(missing)}")
    replicas, exposure = params["control_plane_replicas"], params["control_plane_exposure"]
    plane = inputs.KubernetesControlPlaneInput(replicas=replicas, exposure=exposure)
    return inputs.CreateKubernetesClusterInput(
        name=params["name"],
        version=params["version"],
        network=params["network"],
        controlPlane=plane if replicas or exposure else None,
        networkPlugin=params["network_plugin"],
        nodePools=[
            inputs.KubernetesNodePoolInput(
                name=pool["name"],
                computeProfile=pool["compute_profile"],
                storageProfile=pool["storage_profile"],
                count=pool["count"],
                network=pool["network"],
            )
            for pool in params["node_pools"]
        ],
    )


def scales(module: Any, current: Any) -> dict[str, int]:
    """The existing pools whose count differs from the one asked, with the count asked; warns of what the
    module leaves as it is."""
    params = module.params
    if params["version"] and params["version"] != current.version:
        module.warn(f"cluster {current.name} runs {current.version}, not {params['version']}: left as it is")
    counts = {pool.name: pool.count for pool in current.node_pools}
    wanted = {pool["name"]: pool["count"] for pool in params["node_pools"] or []}
    for name in sorted(set(wanted) - set(counts)):
        module.warn(f"cluster {current.name} has no pool {name}: pools are not added by this module")
    return {name: count for name, count in wanted.items() if name in counts and counts[name] != count}


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False}
    with answered(module, **result) as api:
        current = find(api, params["name"])
        present = params["state"] == "present"
        before = shown(current)
        if not present:
            after: dict[str, Any] = {}
        elif current is None:
            pools = {pool["name"]: pool["count"] for pool in params["node_pools"] or []}
            after = {"name": params["name"], "version": params["version"], "node_pools": pools}
        else:
            to_scale = scales(module, current)
            after = {**before, "node_pools": {**before["node_pools"], **to_scale}}
        result["changed"] = before != after
        if module._diff:
            result["diff"] = diff_of(before, after)
        result["cluster"] = plain(current) if present else None
        if module.check_mode or not result["changed"]:
            module.exit_json(**result)
        if not present:
            api.delete_kubernetes_cluster(params["name"])
        elif current is None:
            made = api.create_kubernetes_cluster(create_input(module)).create_kubernetes_cluster
            result["cluster"] = plain(payload(made, "create").kubernetes_cluster)
        else:
            for pool, count in to_scale.items():
                api.scale_node_pool(params["name"], pool, count)
            result["cluster"] = plain(find(api, params["name"]))
        module.exit_json(**result)


def main() -> None:
    pool = {
        "name": {"type": "str", "required": True},
        "compute_profile": {"type": "str", "required": True},
        "storage_profile": {"type": "str", "required": True},
        "count": {"type": "int", "required": True},
        "network": {"type": "str"},
    }
    module = module_of(
        {
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
            "version": {"type": "str"},
            "network": {"type": "str"},
            "control_plane_replicas": {"type": "int"},
            "control_plane_exposure": {"type": "str", "choices": ["shared", "loadBalancer"]},
            "network_plugin": {"type": "str", "choices": ["cilium", "calico", "none"]},
            "node_pools": {"type": "list", "elements": "dict", "options": pool},
        }
    )
    run(module)


if __name__ == "__main__":
    main()
