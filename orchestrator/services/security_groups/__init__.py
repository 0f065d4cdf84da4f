"""Security groups: a VDC's named sets of firewall rules, realised on each member VM's own firewall.

A VDC's groups are stored in its catalog entry (``store``); a VM's groups are its ``fp-sg-<group>``
tags (``orchestrator.models.security_groups``); a group is realised on the firewall of each VM in it
(``realise``: what the firewall should hold; ``apply``: reading and writing it, at most
``apply.PER_NODE`` VMs at once per node). Changing a group updates every member's firewall, and the
IP sets of the VMs whose rules name it; a VM that could not be updated is reported, and the same
change again converges.

Who may do what: USER members of the VDC, and ADMIN. The VDC is the one the request names
(``FlexPlane-VDC-ID``), or, for a VM, the VM's own. Another VDC's group is reported exactly like one
that does not exist. Changes hold the VDC's security-group lock (not the lock of its creates), so that
two changes never write one VM's firewall at once.

- ``groups``: the groups themselves, read, created, changed, deleted;
- ``members``: the VMs in them: a VM's groups set, a new VM's firewall, a VM gone, a VDC's VMs in line;
- ``rules``: a group's input checked; ``store``: the groups in the VDC's catalog entry;
- ``realise``, ``apply``: the firewalls, as they should be and as they are brought to it.
"""

from orchestrator.models.security_groups import group_tag
from orchestrator.services.security_groups.apply import (
    LOCK_WAIT,
    PER_NODE,
    Member,
    NotUpdated,
    Realised,
    complete,
    realise,
    referencing,
    vdc_members,
)
from orchestrator.services.security_groups.groups import (
    GROUP,
    Changed,
    create_security_group,
    delete_security_group,
    security_groups,
    update_security_group,
)
from orchestrator.services.security_groups.members import (
    Assigned,
    assign_security_groups,
    check_membership,
    forget_vm,
    realise_new_vm,
    realise_vdc,
)
from orchestrator.services.security_groups.rules import GROUP_FIELDS, parse_group, parse_membership
from orchestrator.services.security_groups.store import Groups, change_groups, stored_groups

__all__ = [
    "GROUP",
    "GROUP_FIELDS",
    "LOCK_WAIT",
    "PER_NODE",
    "Assigned",
    "Changed",
    "Groups",
    "Member",
    "NotUpdated",
    "Realised",
    "assign_security_groups",
    "change_groups",
    "check_membership",
    "complete",
    "create_security_group",
    "delete_security_group",
    "forget_vm",
    "group_tag",
    "parse_group",
    "parse_membership",
    "realise",
    "realise_new_vm",
    "realise_vdc",
    "referencing",
    "security_groups",
    "stored_groups",
    "update_security_group",
    "vdc_members",
]
