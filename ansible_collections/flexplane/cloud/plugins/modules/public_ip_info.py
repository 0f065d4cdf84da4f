#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VDC's public IPs with their NAT and port forwards."""

from __future__ import annotations

DOCUMENTATION = r"""
module: public_ip_info
short_description: The public IPs of a flex.plane VDC
version_added: 0.1.0
description:
  - Lists the VDC's public IPs with their 1:1 NAT and port forwards, or those of an address or zone.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
  - flexplane.cloud.flexplane.info_module
options:
  address:
    description:
      - Only this public IP.
    type: str
  zone:
    description:
      - Only public IPs of this zone.
    type: str
"""

EXAMPLES = r"""
- name: The public IPs of zone-a
  flexplane.cloud.public_ip_info:
    zone: zone-a
  register: ips
"""

RETURN = r"""
public_ips:
  description: The public IPs.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: The address.
      type: str
    zone:
      description: Its zone.
      type: str
    nat_to:
      description: The VM address it is NATed to 1:1, or null.
      type: str
    port_forwards:
      description: Its forwards (public_ip, protocol, port, to_address, to_port).
      type: list
      elements: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    module_of,
    plain,
)


def run(module: Any) -> None:
    address, zone = module.params["address"], module.params["zone"]
    with answered(module) as api:
        ips = [
            ip
            for ip in api.public_ips().public_ips
            if address in (None, ip.address) and zone in (None, ip.zone)
        ]
        module.exit_json(changed=False, public_ips=plain(ips))


def main() -> None:
    run(module_of({"address": {"type": "str"}, "zone": {"type": "str"}}))


if __name__ == "__main__":
    main()
