#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The port forwards of the VDC's public IPs."""

from __future__ import annotations

DOCUMENTATION = r"""
module: port_forward_info
short_description: The port forwards of a flex.plane VDC
version_added: 0.1.0
description:
  - Lists the port forwards of the VDC's public IPs, or of one public IP.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
  - flexplane.cloud.flexplane.info_module
options:
  public_ip:
    description:
      - Only the forwards of this public IP.
    type: str
  to_address:
    description:
      - Only the forwards to this VM address.
    type: str
"""

EXAMPLES = r"""
- name: What reaches web-1 from outside
  flexplane.cloud.port_forward_info:
    to_address: "{{ web.vm.nics[0].ip_address }}"
  register: forwards
"""

RETURN = r"""
port_forwards:
  description: The forwards.
  returned: always
  type: list
  elements: dict
  contains:
    public_ip:
      description: The public IP.
      type: str
    protocol:
      description: V(tcp) or V(udp).
      type: str
    port:
      description: The public IP's port.
      type: int
    to_address:
      description: The VM's address.
      type: str
    to_port:
      description: The VM's port.
      type: int
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    module_of,
    plain,
)


def run(module: Any) -> None:
    public_ip, to_address = module.params["public_ip"], module.params["to_address"]
    with answered(module) as api:
        forwards = [
            forward
            for ip in api.public_ips().public_ips
            if public_ip in (None, ip.address)
            for forward in ip.port_forwards
            if to_address in (None, forward.to_address)
        ]
        module.exit_json(changed=False, port_forwards=plain(forwards))


def main() -> None:
    run(module_of({"public_ip": {"type": "str"}, "to_address": {"type": "str"}}))


if __name__ == "__main__":
    main()
