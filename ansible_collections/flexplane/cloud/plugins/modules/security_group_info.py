#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VDC's security groups with their rules."""

from __future__ import annotations

DOCUMENTATION = r"""
module: security_group_info
short_description: The security groups of a flex.plane VDC
version_added: 0.1.0
description:
  - Lists the VDC's security groups with their rules (no Proxmox call), or the one named.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
  - flexplane.cloud.flexplane.info_module
options:
  name:
    description:
      - Only the group of this name.
    type: str
"""

EXAMPLES = r"""
- name: The group web
  flexplane.cloud.security_group_info:
    name: web
  register: web
"""

RETURN = r"""
security_groups:
  description: The groups.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Its name.
      type: str
    rules:
      description: Its rules (direction, protocol, ports, cidr, group, vdc_networks, description).
      type: list
      elements: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import answered, module_of, plain  # noqa: E402


def run(module: Any) -> None:
    name = module.params["name"]
    with answered(module) as api:
        groups = [group for group in api.security_groups().security_groups if name in (None, group.name)]
        module.exit_json(changed=False, security_groups=plain(groups))


def main() -> None:
    run(module_of({"name": {"type": "str"}}))


if __name__ == "__main__":
    main()
