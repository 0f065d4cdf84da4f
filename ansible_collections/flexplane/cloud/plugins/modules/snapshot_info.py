#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A VM's snapshots."""

from __future__ import annotations

DOCUMENTATION = r"""
module: snapshot_info
short_description: The snapshots of a flex.plane VM
version_added: 0.1.0
description:
  - Lists the snapshots of one of the VDC's VMs, known by its name.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
  - flexplane.cloud.flexplane.info_module
options:
  vm:
    description:
      - The VM's name.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: web-1's snapshots
  flexplane.cloud.snapshot_info:
    vm: web-1
  register: snapshots
"""

RETURN = r"""
snapshots:
  description: The snapshots.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Its name.
      type: str
    description:
      description: What it is of.
      type: str
    taken_at:
      description: When it was taken.
      type: str
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import answered, fail, module_of, plain, vm_named  # noqa: E402


def run(module: Any) -> None:
    with answered(module) as api:
        vm = vm_named(api, module.params["vm"])
        if vm is None:
            fail(module, f"VM {module.params['vm']} is not the VDC's", code="NOT_FOUND", field="vm")
        module.exit_json(changed=False, snapshots=plain(api.snapshots(vm.id).snapshots))


def main() -> None:
    run(module_of({"vm": {"type": "str", "required": True}}))


if __name__ == "__main__":
    main()
