#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VDC's VMs, or one by its name, with their NICs and addresses."""

from __future__ import annotations

DOCUMENTATION = r"""
module: vm_info
short_description: The VMs of a flex.plane VDC
version_added: 0.1.0
description:
  - Lists the VDC's VMs (every page of C(virtualMachines)), or the one named, each with its NICs and
    addresses.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
  - flexplane.cloud.flexplane.info_module
options:
  name:
    description:
      - Only the VM of this name (an empty list when there is none).
    type: str
  status:
    description:
      - Only VMs of this Proxmox status, e.g. V(running) or V(stopped).
    type: str
  zone:
    description:
      - Only VMs of this zone.
    type: str
"""

EXAMPLES = r"""
- name: The VDC's running VMs
  flexplane.cloud.vm_info:
    status: running
  register: running

- name: Their names
  ansible.builtin.debug:
    msg: "{{ running.vms | map(attribute='name') }}"
"""

RETURN = r"""
vms:
  description: The VMs, by name.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The VM's id.
      type: str
    name:
      description: Its name.
      type: str
    status:
      description: Proxmox's status.
      type: str
    ip_addresses:
      description: Its addresses.
      type: list
      elements: str
    nics:
      description: Its NICs, with their network and address.
      type: list
      elements: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    inputs,
    module_of,
    plain,
)


def run(module: Any) -> None:
    params = module.params
    with answered(module) as api:
        listed = api.all_virtual_machines(
            inputs.VirtualMachineFilter(
                status=params["status"], zone=params["zone"], nameContains=params["name"]
            )
        )
        named = [vm for vm in listed if params["name"] in (None, vm.name)]
        # The listing has no NICs (it never reads VMs' configs): each VM's own answer does.
        vms = [plain(api.virtual_machine(vm.id).virtual_machine) for vm in named]
        module.exit_json(changed=False, vms=vms)


def main() -> None:
    run(module_of({"name": {"type": "str"}, "status": {"type": "str"}, "zone": {"type": "str"}}))


if __name__ == "__main__":
    main()
