#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A network of the VDC by its name (and zone): made or deleted, each only when it is not so already."""

from __future__ import annotations

DOCUMENTATION = r"""
module: network
short_description: A network of a flex.plane VDC, by its name and zone
version_added: 0.1.0
description:
  - Makes or deletes a network of the VDC (a Proxmox SDN VNet with one IPv4 subnet, in one zone), known by
    its name in its zone; a network already as asked is left alone, so a second run changes nothing.
  - A network's subnet, gateway and resolvers cannot change; a network that exists with others fails the
    module, naming the option (delete it first).
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  name:
    description:
      - The network's name, a DNS label unique in the VDC and zone.
    type: str
    required: true
  zone:
    description:
      - Its zone; may be left out when the VDC allows one zone, or has one network of that name.
    type: str
  state:
    description:
      - V(present) makes the network if it is missing, V(absent) deletes it (refused while VMs use it, and
        for default networks).
    type: str
    choices: [present, absent]
    default: present
  cidr:
    description:
      - Its IPv4 subnet, V(/16) to V(/29), of RFC 1918 or a range the zone allows. Needed to make it.
    type: str
  gateway:
    description:
      - The subnet's gateway; by default its first usable address.
    type: str
  dns:
    description:
      - Up to 3 resolvers; by default the zone's.
    type: list
    elements: str
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: The network before and after.
    support: full
"""

EXAMPLES = r"""
- name: A network for the web servers
  flexplane.cloud.network:
    name: front
    zone: zone-a
    cidr: 10.20.0.0/24

- name: Gone (refused while VMs use it)
  flexplane.cloud.network:
    name: front
    zone: zone-a
    state: absent
"""

RETURN = r"""
network:
  description: The network after the module; null when it is absent (or would be made, in check mode).
  returned: always
  type: dict
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
      sample: 10.20.0.0/24
    gateway:
      description: The subnet's gateway.
      type: str
    dns:
      description: Its resolvers.
      type: list
      elements: str
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    diff_of,
    inputs,
    module_of,
    payload,
    plain,
)

# What the diff shows of a network, and what the options are checked against.
SHOWN = ("name", "zone", "cidr", "gateway", "dns")


def find(module: Any, api: Any) -> Any:
    """The VDC's network of that name (in that zone), or None; fails when the name is in two zones."""
    name, zone = module.params["name"], module.params["zone"]
    found = [n for n in api.networks().networks if n.name == name and zone in (None, n.zone)]
    if len(found) > 1:
        zones = ", ".join(sorted(n.zone for n in found))
        module.fail_json(msg=f"network {name} is in zones {zones}: say which with zone", field="zone")
    return found[0] if found else None


def unchangeable(module: Any, network: Any) -> None:
    """Fails when the options ask for a subnet, gateway or resolvers the network does not have."""
    for option in ("cidr", "gateway", "dns"):
        wanted = module.params[option]
        if wanted is not None and getattr(network, option) != wanted:
            module.fail_json(
                msg=(
                    f"network {network.id} has {option} {getattr(network, option)}, not {wanted}, and a "
                    "network's cannot change: delete it first"
                ),
                code="INVALID",
                field=option,
                network=plain(network),
            )


def shown(network: Any) -> dict[str, Any]:
    return {name: getattr(network, name) for name in SHOWN} if network is not None else {}


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False}
    with answered(module, **result) as api:
        current = find(module, api)
        present = params["state"] == "present"
        if current is not None and present:
            unchangeable(module, current)
        result["changed"] = (current is None) == present
        if module.check_mode or not result["changed"]:
            after = shown(current) if present else {}
            if present and current is None:
                after = {name: params[name] for name in SHOWN}
            if module._diff:
                result["diff"] = diff_of(shown(current), after)
            result["network"] = plain(current) if present else None
            module.exit_json(**result)
        if present:
            if not params["cidr"]:
                module.fail_json(msg=f"network {params['name']} does not exist: making it needs cidr")
            spec = inputs.CreateNetworkInput(
                name=params["name"],
                zone=params["zone"],
                cidr=params["cidr"],
                gateway=params["gateway"],
                dns=params["dns"],
            )
            made = payload(api.create_network(spec).create_network, "create").network
            result["network"] = plain(made)
        else:
            api.delete_network(current.id)
            made, result["network"] = None, None
        if module._diff:
            result["diff"] = diff_of(shown(current), shown(made))
        module.exit_json(**result)


def main() -> None:
    module = module_of(
        {
            "name": {"type": "str", "required": True},
            "zone": {"type": "str"},
            "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
            "cidr": {"type": "str"},
            "gateway": {"type": "str"},
            "dns": {"type": "list", "elements": "str"},
        }
    )
    run(module)


if __name__ == "__main__":
    main()
