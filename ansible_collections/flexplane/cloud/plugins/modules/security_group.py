#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A security group of the VDC by its name, with its whole list of rules: made, updated or deleted."""

from __future__ import annotations

DOCUMENTATION = r"""
module: security_group
short_description: A security group of a flex.plane VDC, with its rules
version_added: 0.1.0
description:
  - Makes, updates or deletes a security group of the VDC, known by its name. O(rules) is the group's whole
    list of rules, in order; a group whose rules and description are already as asked is left alone, so a
    second run changes nothing.
  - A change reaches the firewall of every member VM; members are the VMs made with the group in the
    C(security_groups) option of M(flexplane.cloud.vm).
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  name:
    description:
      - The group's name, a DNS label of at most 32 characters starting with a letter.
    type: str
    required: true
  description:
    description:
      - What the group is for. Left out, an existing group's stays as it is.
    type: str
  rules:
    description:
      - The group's rules, in order (at most 50). Left out, an existing group's stay as they are; V([]),
        none. Inbound traffic is dropped unless a rule lets it in.
    type: list
    elements: dict
    suboptions:
      direction:
        description:
          - V(in) or V(out).
        type: str
        choices: [in, out]
        default: in
      protocol:
        description:
          - The protocol.
        type: str
        choices: [tcp, udp, icmp, any]
        default: tcp
      ports:
        description:
          - A port (V(22)), a range (V(8000:8100)) or a comma list of them (V(80,443)); left out, every port.
        type: str
      cidr:
        description:
          - Where the traffic comes from (in) or goes to (out), as an IPv4 network (V(0.0.0.0/0), anywhere).
            Exactly one of O(rules[].cidr), O(rules[].group) and O(rules[].vdc_networks) is given.
        type: str
      group:
        description:
          - A group of the same VDC (this one included) as the other end.
        type: str
      vdc_networks:
        description:
          - V(true) for the VDC's own networks as the other end.
        type: bool
      description:
        description:
          - One line about the rule.
        type: str
  state:
    description:
      - V(present) makes or updates the group, V(absent) deletes it (refused while VMs are members, and for
        V(default)).
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: The group's description and rules before and after.
    support: full
"""

EXAMPLES = r"""
- name: Web servers take HTTP and HTTPS from anywhere, SSH from the VDC's networks
  flexplane.cloud.security_group:
    name: web
    description: the web servers
    rules:
      - ports: "80,443"
        cidr: 0.0.0.0/0
      - ports: "22"
        vdc_networks: true
"""

RETURN = r"""
security_group:
  description: The group after the module; null when it is absent (or would be made, in check mode).
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
    description:
      description: What it is for.
      type: str
    rules:
      description: Its rules as the API stores them (ports in Proxmox's syntax).
      type: list
      elements: dict
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

RULE_FIELDS = ("direction", "protocol", "ports", "cidr", "group", "vdc_networks", "description")


def rule_of(rule: dict[str, Any]) -> dict[str, Any]:
    """A rule as the API answers it, from the option or the answer: empty values as null, no
    ``vdcNetworks`` as false, ports in Proxmox's syntax (``8000:8100``, no spaces)."""
    ports = (rule.get("ports") or "").replace(" ", "").replace("-", ":") or None
    return {
        "direction": rule.get("direction") or "in",
        "protocol": rule.get("protocol") or "tcp",
        "ports": ports,
        "cidr": rule.get("cidr") or None,
        "group": rule.get("group") or None,
        "vdc_networks": bool(rule.get("vdc_networks")),
        "description": rule.get("description") or None,
    }


def shown(group: Any) -> dict[str, Any]:
    """What the diff compares: the description and the rules."""
    if group is None:
        return {}
    answered_ = plain(group)
    return {
        "name": answered_["name"],
        "description": answered_.get("description") or None,
        "rules": [rule_of(rule) for rule in answered_["rules"]],
    }


def wanted(module: Any, current: dict[str, Any]) -> dict[str, Any]:
    """The group as the options ask for it: what they leave out, as it is."""
    params = module.params
    description, rules = params["description"], params["rules"]
    return {
        "name": params["name"],
        "description": description if description is not None else current.get("description"),
        "rules": [rule_of(rule) for rule in rules] if rules is not None else current.get("rules", []),
    }


def rule_inputs(rules: list[dict[str, Any]]) -> list[Any]:
    return [
        inputs.SecurityGroupRuleInput(
            direction=rule["direction"],
            protocol=rule["protocol"],
            ports=rule["ports"],
            cidr=rule["cidr"],
            group=rule["group"],
            vdcNetworks=rule["vdc_networks"] or None,
            description=rule["description"],
        )
        for rule in rules
    ]


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False}
    with answered(module, **result) as api:
        groups = api.security_groups().security_groups
        current = next((group for group in groups if group.name == params["name"]), None)
        before = shown(current)
        after = wanted(module, before) if params["state"] == "present" else {}
        result["changed"] = before != after
        if module._diff:
            result["diff"] = diff_of(before, after)
        result["security_group"] = plain(current) if after and current is not None else None
        if module.check_mode or not result["changed"]:
            module.exit_json(**result)
        if not after:
            api.delete_security_group(params["name"])
            result["security_group"] = None
        elif current is None:
            spec = inputs.CreateSecurityGroupInput(
                name=params["name"], description=after["description"], rules=rule_inputs(after["rules"])
            )
            made = payload(api.create_security_group(spec).create_security_group, "create")
            result["security_group"] = plain(made.security_group)
        else:
            change = inputs.UpdateSecurityGroupInput(
                description=after["description"], rules=rule_inputs(after["rules"])
            )
            updated = api.update_security_group(params["name"], change).update_security_group
            result["security_group"] = plain(payload(updated, "update").security_group)
        module.exit_json(**result)


def main() -> None:
    rule = {
        "direction": {"type": "str", "default": "in", "choices": ["in", "out"]},
        "protocol": {"type": "str", "default": "tcp", "choices": ["tcp", "udp", "icmp", "any"]},
        "ports": {"type": "str"},
        "cidr": {"type": "str"},
        "group": {"type": "str"},
        "vdc_networks": {"type": "bool"},
        "description": {"type": "str"},
    }
    module = module_of(
        {
            "name": {"type": "str", "required": True},
            "description": {"type": "str"},
            "rules": {"type": "list", "elements": "dict", "options": rule},
            "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
        }
    )
    run(module)


if __name__ == "__main__":
    main()
