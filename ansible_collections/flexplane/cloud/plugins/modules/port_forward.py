#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A port forward of a public IP, known by its public IP, protocol and port: added, changed or removed."""

from __future__ import annotations

DOCUMENTATION = r"""
module: port_forward
short_description: A port forward of a flex.plane VDC's public IP
version_added: 0.1.0
description:
  - Forwards a port of one of the VDC's public IPs (and a protocol) to a VM's address and port, through the
    VDC's edge gateway of the public IP's zone, or removes the forward.
  - A forward is known by its public IP, protocol and port; one that exists to another address or port is
    replaced. A forward already as asked is left alone, so a second run changes nothing.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  public_ip:
    description:
      - A public IP of the VDC.
    type: str
    required: true
  protocol:
    description:
      - The protocol forwarded.
    type: str
    choices: [tcp, udp]
    default: tcp
  port:
    description:
      - The public IP's port, 1 to 65535.
    type: int
    required: true
  to_address:
    description:
      - A VM's address on one of the VDC's networks. Needed with V(present).
    type: str
  to_port:
    description:
      - The VM's port; by default O(port).
    type: int
  state:
    description:
      - V(present) adds (or replaces) the forward, V(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: The forward before and after.
    support: full
"""

EXAMPLES = r"""
- name: HTTP of the public IP to the web server
  flexplane.cloud.port_forward:
    public_ip: "{{ ip.public_ip.address }}"
    port: 80
    to_address: "{{ web.vm.nics[0].ip_address }}"
    to_port: 8080

- name: Removed
  flexplane.cloud.port_forward:
    public_ip: "{{ ip.public_ip.address }}"
    port: 80
    state: absent
"""

RETURN = r"""
port_forward:
  description: The forward after the module (as it would be in check mode); null when it is absent.
  returned: always
  type: dict
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
    diff_of,
    fail,
    inputs,
    module_of,
    plain,
)


def find(module: Any, api: Any) -> Any:
    """The forward of the public IP, protocol and port, or None; fails when the VDC has no such IP."""
    params = module.params
    ip = next((ip for ip in api.public_ips().public_ips if ip.address == params["public_ip"]), None)
    if ip is None:
        fail(module, f"public IP {params['public_ip']} is not the VDC's", code="NOT_FOUND", field="public_ip")
    return next(
        (f for f in ip.port_forwards if f.protocol == params["protocol"] and f.port == params["port"]),
        None,
    )


def wanted(module: Any) -> dict[str, Any]:
    params = module.params
    return {
        "public_ip": params["public_ip"],
        "protocol": params["protocol"],
        "port": params["port"],
        "to_address": params["to_address"],
        "to_port": params["to_port"] or params["port"],
    }


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False}
    with answered(module, **result) as api:
        current = find(module, api)
        before = plain(current) or {}
        present = params["state"] == "present"
        after = wanted(module) if present else {}
        result["changed"] = before != after
        if module._diff:
            result["diff"] = diff_of(before, after)
        result["port_forward"] = after or None
        if module.check_mode or not result["changed"]:
            module.exit_json(**result)
        if current is not None:
            api.remove_port_forward(current.public_ip, current.protocol, current.port)
        if present:
            spec = inputs.PortForwardInput(
                publicIp=after["public_ip"],
                protocol=after["protocol"],
                port=after["port"],
                toAddress=after["to_address"],
                toPort=after["to_port"],
            )
            api.add_port_forward(spec)
        module.exit_json(**result)


def main() -> None:
    module = module_of(
        {
            "public_ip": {"type": "str", "required": True},
            "protocol": {"type": "str", "default": "tcp", "choices": ["tcp", "udp"]},
            "port": {"type": "int", "required": True},
            "to_address": {"type": "str"},
            "to_port": {"type": "int"},
            "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
        },
        required_if=[("state", "present", ("to_address",))],
    )
    run(module)


if __name__ == "__main__":
    main()
