#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A VM of the VDC by its name: made, started, stopped or deleted, each only when it is not so already."""

from __future__ import annotations

DOCUMENTATION = r"""
module: vm
short_description: A VM of a flex.plane VDC, by its name
version_added: 0.1.0
description:
  - Makes, starts, stops or deletes a VM of the VDC, known by its name; a VM already as asked is left
    alone, so a second run changes nothing.
  - A VM is made and started in one go (C(createVirtualMachine)), from an image of the VDC's catalog.
  - An existing VM's profiles, image, disk and networks are not changed; when they differ from the
    options the module warns.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  name:
    description:
      - The VM's name, a DNS label unique in the VDC.
    type: str
    required: true
  state:
    description:
      - V(present) makes the VM if it is missing (made VMs run); V(started) and V(stopped) also start or
        stop it; V(absent) deletes it with its disks.
    type: str
    choices: [present, absent, started, stopped]
    default: present
  compute_profile:
    description:
      - A compute profile the VDC allows. Needed to make the VM.
    type: str
  storage_profile:
    description:
      - A storage profile the VDC allows. Needed to make the VM.
    type: str
  image:
    description:
      - An image the VDC allows. Needed to make the VM.
    type: str
  disk_gb:
    description:
      - The boot disk's size; by default the storage profile's, at least the image's.
    type: int
  zone:
    description:
      - A zone the VDC allows; left out, placement chooses.
    type: str
  ssh_keys:
    description:
      - OpenSSH public keys for the image's default user.
    type: list
    elements: str
  user_data:
    description:
      - Cloud-init data merged in as vendor data.
    type: str
  networks:
    description:
      - The VM's NICs in order. Left out, one NIC on the VDC's default network of its zone; V([]), none.
    type: list
    elements: dict
    suboptions:
      network:
        description:
          - A network of the VDC, by its id (C(<zone>/<name>)) or its name in the VM's zone.
        type: str
        required: true
      ip_address:
        description:
          - The NIC's address; by default the network's next free one.
        type: str
  security_groups:
    description:
      - The VDC's security groups the VM's firewall follows; left out, V(default).
    type: list
    elements: str
  wait:
    description:
      - Whether to wait for the VM's task (create, start, stop, delete) to end, failing if it failed.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for a task.
    type: int
    default: 900
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: The VM's name, status and profiles before and after.
    support: full
"""

EXAMPLES = r"""
- name: A web server on the VDC's network front
  flexplane.cloud.vm:
    url: https://flexplane.example.com
    vdc: demo
    service_account_key: ci-key.json
    issuer: https://zitadel.example.com
    project_id: "279574410347270147"
    name: web-1
    compute_profile: small
    storage_profile: standard
    image: debian-12
    zone: zone-a
    networks:
      - network: front
  register: web

- name: Stopped for the night (url, vdc and credentials from FLEXPLANE_* variables)
  flexplane.cloud.vm:
    name: web-1
    state: stopped

- name: Gone with its disks
  flexplane.cloud.vm:
    name: web-1
    state: absent
"""

RETURN = r"""
vm:
  description: The VM as it is after the module (as it would stay in check mode); null when it is absent.
  returned: always
  type: dict
  contains:
    id:
      description: The VM's id.
      type: str
      sample: zone-a/101
    name:
      description: Its name.
      type: str
    status:
      description: Proxmox's status, e.g. running or stopped.
      type: str
    zone:
      description: Its zone.
      type: str
    ip_addresses:
      description: Its addresses.
      type: list
      elements: str
    nics:
      description: Its NICs with their network and address.
      type: list
      elements: dict
task:
  description: The last task the module started (create, start, stop or delete), as it ended when waited for.
  returned: when a task was started
  type: dict
"""

from typing import Any  # noqa: E402

from ..module_utils.flexplane import (  # noqa: E402
    answered,
    diff_of,
    inputs,
    module_of,
    payload,
    plain,
    vm_named,
)

# The options a VM is made with, compared with an existing VM's (warned about, never changed).
COMPARED = ("compute_profile", "storage_profile", "image", "zone")
RUNNING = "running"


def summary(vm: Any) -> dict[str, Any]:
    """What the diff shows of a VM: its name, status and what it was made with."""
    if vm is None:
        return {}
    return {name: getattr(vm, name) for name in ("name", "status", "zone", *COMPARED[:3])}


def create_input(module: Any) -> Any:
    params = module.params
    missing = [name for name in ("compute_profile", "storage_profile", "image") if not params[name]]
    if missing:
        module.fail_json(msg=f"VM {params['name']} does not exist: making it needs {', '.join(missing)}")
    networks = None
    if params["networks"] is not None:
        networks = [
            inputs.NicInput(network=n["network"], ipAddress=n.get("ip_address")) for n in params["networks"]
        ]
    return inputs.CreateVirtualMachineInput(
        name=params["name"],
        computeProfile=params["compute_profile"],
        storageProfile=params["storage_profile"],
        image=params["image"],
        diskGb=params["disk_gb"],
        zone=params["zone"],
        sshKeys=params["ssh_keys"],
        userData=params["user_data"],
        securityGroups=params["security_groups"],
        networks=networks,
    )


def waited(module: Any, api: Any, task: Any) -> Any:
    """The task as it ended (TaskFailed raised if it failed), or as it started without ``wait``."""
    if task is None or not module.params["wait"]:
        return task
    return api.follow(task, timeout=module.params["wait_timeout"])


def planned(state: str, current: Any) -> list[str]:
    """The steps from the VM as it is to the state asked: create, start, stop, delete."""
    if state == "absent":
        return ["delete"] if current is not None else []
    steps = ["create"] if current is None else []
    status = RUNNING if current is None else current.status
    if state == "started" and status != RUNNING:
        steps.append("start")
    if state == "stopped" and status == RUNNING:
        steps.append("stop")
    return steps


def expected(module: Any, current: Any, steps: list[str]) -> dict[str, Any]:
    """The diff's ``after`` in check mode: the VM as the steps would leave it."""
    if "delete" in steps:
        return {}
    after = summary(current) or {
        "name": module.params["name"],
        "status": RUNNING,
        **{name: module.params[name] for name in COMPARED},
    }
    if "start" in steps:
        after["status"] = RUNNING
    if "stop" in steps:
        after["status"] = "stopped"
    return after


def warn_differences(module: Any, current: Any) -> None:
    for name in COMPARED:
        wanted = module.params[name]
        if wanted is not None and getattr(current, name) != wanted:
            module.warn(f"VM {current.name} has {name} {getattr(current, name)}, not {wanted}: left as it is")


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False}
    with answered(module, **result) as api:
        listed = vm_named(api, params["name"])
        # The VM as it is read alone: a listing has no profiles or image (they are the VM's tags).
        current = api.virtual_machine(listed.id).virtual_machine if listed is not None else None
        steps = planned(params["state"], current)
        if current is not None and params["state"] != "absent":
            warn_differences(module, current)
        result["changed"] = bool(steps)
        if module.check_mode or not steps:
            if module._diff:
                result["diff"] = diff_of(summary(current), expected(module, current, steps))
            result["vm"] = plain(current)
            module.exit_json(**result)
        vm_id: str = current.id if current is not None else ""
        task: Any
        for step in steps:
            if step == "create":
                made = payload(api.create_virtual_machine(create_input(module)).create_virtual_machine, step)
                vm_id, task = payload(made.virtual_machine, step).id, made.task
            elif step == "start":
                task = payload(api.start_virtual_machine(vm_id).start_virtual_machine, step).task
            elif step == "stop":
                task = payload(api.stop_virtual_machine(vm_id).stop_virtual_machine, step).task
            else:
                task = payload(api.delete_virtual_machine(vm_id).delete_virtual_machine, step).task
            result["task"] = plain(waited(module, api, task))
        after = None if params["state"] == "absent" else api.virtual_machine(vm_id).virtual_machine
        result["vm"] = plain(after)
        if module._diff:
            result["diff"] = diff_of(summary(current), summary(after))
        module.exit_json(**result)


def main() -> None:
    module = module_of(
        {
            "name": {"type": "str", "required": True},
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent", "started", "stopped"],
            },
            "compute_profile": {"type": "str"},
            "storage_profile": {"type": "str"},
            "image": {"type": "str"},
            "disk_gb": {"type": "int"},
            "zone": {"type": "str"},
            "ssh_keys": {"type": "list", "elements": "str", "no_log": False},
            "user_data": {"type": "str"},
            "networks": {
                "type": "list",
                "elements": "dict",
                "options": {
                    "network": {"type": "str", "required": True},
                    "ip_address": {"type": "str"},
                },
            },
            "security_groups": {"type": "list", "elements": "str"},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "int", "default": 900},
        }
    )
    run(module)


if __name__ == "__main__":
    main()
