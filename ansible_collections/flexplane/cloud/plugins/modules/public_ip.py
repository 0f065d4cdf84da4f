#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A public IP of the VDC: allocated from its zone's pool, 1:1 NATed to a VM's address, released.

The pool hands out the addresses, so a play cannot name one before it has it; the public IP meant is the
one the options single out: its address, or the one NATed to ``nat_to``, or else the VDC's first of the
zone. That makes a second run find what the first allocated rather than allocate another.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: public_ip
short_description: A public IP of a flex.plane VDC
version_added: 0.1.0
description:
  - Allocates a public IP from a zone's public pool (within the VDC's C(publicIps) quota), NATs it 1:1 to
    a VM's address, or releases it with its NAT and port forwards.
  - The public IP meant is the one with address O(address); else the one NATed to O(nat_to); else the
    VDC's first public IP of O(zone). Only when there is none is one allocated, so a second run changes
    nothing.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  zone:
    description:
      - The zone whose pool the address comes from (the VDC's gateway there is made when missing).
    type: str
  address:
    description:
      - A public IP the VDC holds already. The pool chooses addresses, so V(present) with an address the
        VDC does not hold fails.
    type: str
  nat_to:
    description:
      - A VM's address on one of the VDC's networks of the zone, to NAT the public IP to 1:1. Left out,
        the NAT stays as it is.
    type: str
  state:
    description:
      - V(present) allocates (and NATs) the public IP when there is none; V(absent) releases it, which
        needs O(address) or O(nat_to).
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: The public IP's address, zone and NAT before and after.
    support: full
"""

EXAMPLES = r"""
- name: A public IP of zone-a for port forwards
  flexplane.cloud.public_ip:
    zone: zone-a
  register: ip

- name: One NATed to a VM
  flexplane.cloud.public_ip:
    zone: zone-a
    nat_to: "{{ web.vm.nics[0].ip_address }}"

- name: Released with its forwards
  flexplane.cloud.public_ip:
    address: "{{ ip.public_ip.address }}"
    state: absent
"""

RETURN = r"""
public_ip:
  description: The public IP after the module; null when released (or to be allocated, in check mode).
  returned: always
  type: dict
  contains:
    address:
      description: The address.
      type: str
      sample: 203.0.113.10
    zone:
      description: Its zone.
      type: str
    nat_to:
      description: The VM address it is NATed to 1:1, or null.
      type: str
    port_forwards:
      description: Its port forwards.
      type: list
      elements: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    diff_of,
    module_of,
    payload,
    plain,
)

SHOWN = ("address", "zone", "nat_to")


def find(module: Any, api: Any) -> Any:
    """The public IP the options single out (see DOCUMENTATION), or None."""
    params = module.params
    ips = [ip for ip in api.public_ips().public_ips if params["zone"] in (None, ip.zone)]
    if params["address"]:
        return next((ip for ip in ips if ip.address == params["address"]), None)
    if params["nat_to"]:
        return next((ip for ip in ips if ip.nat_to == params["nat_to"]), None)
    if params["state"] == "absent":
        module.fail_json(msg="releasing a public IP needs its address or nat_to")
    return ips[0] if ips else None


def shown(ip: Any) -> dict[str, Any]:
    return {name: getattr(ip, name) for name in SHOWN} if ip is not None else {}


def planned(module: Any, current: Any) -> list[str]:
    """The steps from the public IP as it is: allocate, attach (NAT), release."""
    params = module.params
    if params["state"] == "absent":
        return ["release"] if current is not None else []
    if current is None and params["address"]:
        module.fail_json(
            msg=f"public IP {params['address']} is not the VDC's: the pool chooses addresses (leave it out)",
            code="NOT_FOUND",
            field="address",
        )
    steps = ["allocate"] if current is None else []
    if params["nat_to"] and (current is None or current.nat_to != params["nat_to"]):
        steps.append("attach")
    return steps


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False}
    with answered(module, **result) as api:
        current = find(module, api)
        steps = planned(module, current)
        result["changed"] = bool(steps)
        if module.check_mode or not steps:
            after = {} if "release" in steps else shown(current)
            if "allocate" in steps:
                after = {"address": None, "zone": params["zone"], "nat_to": None}
            if "attach" in steps:
                after["nat_to"] = params["nat_to"]
            if module._diff:
                result["diff"] = diff_of(shown(current), after)
            result["public_ip"] = plain(current) if "release" not in steps else None
            module.exit_json(**result)
        ip = current
        for step in steps:
            if step == "allocate":
                ip = payload(api.allocate_public_ip(params["zone"]).allocate_public_ip, step).public_ip
            elif step == "attach":
                attached = api.attach_public_ip(ip.address, params["nat_to"]).attach_public_ip
                ip = payload(attached, step).public_ip
            else:
                api.release_public_ip(ip.address)
                ip = None
        result["public_ip"] = plain(ip)
        if module._diff:
            result["diff"] = diff_of(shown(current), shown(ip))
        module.exit_json(**result)


def main() -> None:
    module = module_of(
        {
            "zone": {"type": "str"},
            "address": {"type": "str"},
            "nat_to": {"type": "str"},
            "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
        }
    )
    run(module)


if __name__ == "__main__":
    main()
