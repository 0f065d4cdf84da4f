#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A snapshot of a VM, by the VM's name and its own: taken or deleted, each only when it is not so already."""

from __future__ import annotations

DOCUMENTATION = r"""
module: snapshot
short_description: A snapshot of a flex.plane VM
version_added: 0.1.0
description:
  - Takes or deletes a snapshot of one of the VDC's VMs, known by the VM's name and the snapshot's; a
    snapshot already there (or already gone) is left alone, so a second run changes nothing.
  - A snapshot is never taken again over an existing one of the same name; to roll back to one, use the
    API or the CLI (C(flexplane snapshots rollback)).
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  vm:
    description:
      - The VM's name.
    type: str
    required: true
  name:
    description:
      - The snapshot's name.
    type: str
    required: true
  description:
    description:
      - What the snapshot is of. Only used when it is taken.
    type: str
  include_memory:
    description:
      - Whether a running VM's memory is saved with it. Only used when it is taken.
    type: bool
    default: false
  state:
    description:
      - V(present) takes the snapshot if the VM has none of that name (a missing VM fails the module);
        V(absent) deletes it (a missing VM has none).
    type: str
    choices: [present, absent]
    default: present
  wait:
    description:
      - Whether to wait for the snapshot's task to end, failing if it failed.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for the task.
    type: int
    default: 900
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: The snapshot before and after.
    support: full
"""

EXAMPLES = r"""
- name: web-1 as it is before the upgrade
  flexplane.cloud.snapshot:
    vm: web-1
    name: before-upgrade
    description: before the upgrade to Debian 13
"""

RETURN = r"""
snapshot:
  description: The snapshot after the module; null when it is absent (or would be taken, in check mode).
  returned: always
  type: dict
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
    includes_memory:
      description: Whether the VM's memory is in it.
      type: bool
task:
  description: The snapshot's task (taken or deleted), as it ended when waited for.
  returned: when a task was started
  type: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    diff_of,
    fail,
    module_of,
    payload,
    plain,
    vm_named,
)

SHOWN = ("name", "description")


def shown(snapshot: Any) -> dict[str, Any]:
    return {name: getattr(snapshot, name) for name in SHOWN} if snapshot is not None else {}


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False}
    with answered(module, **result) as api:
        vm = vm_named(api, params["vm"])
        if vm is None and params["state"] == "absent":
            module.exit_json(snapshot=None, **result)  # a VM gone took its snapshots with it
        if vm is None:
            fail(module, f"VM {params['vm']} is not the VDC's", code="NOT_FOUND", field="vm")
        snapshots = api.snapshots(vm.id).snapshots
        current = next((snapshot for snapshot in snapshots if snapshot.name == params["name"]), None)
        present = params["state"] == "present"
        result["changed"] = (current is None) == present
        after = shown(current) if present else {}
        if present and current is None:
            after = {"name": params["name"], "description": params["description"]}
        if module._diff:
            result["diff"] = diff_of(shown(current), after)
        result["snapshot"] = plain(current) if present else None
        if module.check_mode or not result["changed"]:
            module.exit_json(**result)
        task: Any
        if present:
            memory = params["include_memory"]
            taken = api.create_snapshot(vm.id, params["name"], params["description"], include_memory=memory)
            task = payload(taken.create_snapshot, "createSnapshot").task
        else:
            task = payload(api.delete_snapshot(vm.id, params["name"]).delete_snapshot, "deleteSnapshot").task
        if task is not None and params["wait"]:
            task = api.follow(task, timeout=params["wait_timeout"])
        result["task"] = plain(task)
        if present:
            made = api.snapshots(vm.id).snapshots
            result["snapshot"] = plain(next((s for s in made if s.name == params["name"]), None))
        module.exit_json(**result)


def main() -> None:
    module = module_of(
        {
            "vm": {"type": "str", "required": True},
            "name": {"type": "str", "required": True},
            "description": {"type": "str"},
            "include_memory": {"type": "bool", "default": False},
            "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "int", "default": 900},
        }
    )
    run(module)


if __name__ == "__main__":
    main()
