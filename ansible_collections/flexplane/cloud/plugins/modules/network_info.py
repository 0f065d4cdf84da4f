#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VDC's networks, or those of a name or zone."""

from __future__ import annotations

DOCUMENTATION = r"""
module: network_info
short_description: The networks of a flex.plane VDC
version_added: 0.1.0
description:
  - Lists the VDC's networks (one SDN read per zone), or those of a name or zone.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
  - flexplane.cloud.flexplane.info_module
options:
  name:
    description:
      - Only networks of this name.
    type: str
  zone:
    description:
      - Only networks of this zone.
    type: str
"""

EXAMPLES = r"""
- name: The networks of zone-a
  flexplane.cloud.network_info:
    zone: zone-a
  register: zone_a
"""

RETURN = r"""
networks:
  description: The networks.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Its id, C(<zone>/<vnet>).
      type: str
    name:
      description: Its name.
      type: str
    zone:
      description: Its zone.
      type: str
    cidr:
      description: Its subnet.
      type: str
    is_default:
      description: Whether it is the VDC's default network of its zone.
      type: bool
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    module_of,
    plain,
)


def run(module: Any) -> None:
    name, zone = module.params["name"], module.params["zone"]
    with answered(module) as api:
        networks = [n for n in api.networks().networks if name in (None, n.name) and zone in (None, n.zone)]
        module.exit_json(changed=False, networks=plain(networks))


def main() -> None:
    run(module_of({"name": {"type": "str"}, "zone": {"type": "str"}}))


if __name__ == "__main__":
    main()
