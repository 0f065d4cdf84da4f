#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VDC's Kubernetes clusters with their control plane, node pools and conditions."""

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_info
short_description: The Kubernetes clusters of a flex.plane VDC
version_added: 0.1.0
description:
  - Lists the VDC's Kubernetes clusters with their phase, endpoint, control plane, node pools and
    conditions, or the one named.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
  - flexplane.cloud.flexplane.info_module
options:
  name:
    description:
      - Only the cluster of this name (an empty list when there is none).
    type: str
"""

EXAMPLES = r"""
- name: Wait until the cluster is ready
  flexplane.cloud.cluster_info:
    name: apps
  register: apps
  until: apps.clusters[0].phase == "Ready"
  retries: 60
  delay: 30
"""

RETURN = r"""
clusters:
  description: The clusters.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Its name.
      type: str
    version:
      description: Its Kubernetes version.
      type: str
    phase:
      description: Provisioning, Ready, Upgrading, Scaling, Deleting or Failed.
      type: str
    endpoint:
      description: Its API server's URL, once it has one.
      type: str
    node_pools:
      description: Its node pools with their counts.
      type: list
      elements: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import answered, module_of, plain  # noqa: E402


def run(module: Any) -> None:
    name = module.params["name"]
    with answered(module) as api:
        clusters = api.kubernetes_clusters().kubernetes_clusters
        module.exit_json(changed=False, clusters=plain([c for c in clusters if name in (None, c.name)]))


def main() -> None:
    run(module_of({"name": {"type": "str"}}))


if __name__ == "__main__":
    main()
