"""Security groups: a VDC's named sets of firewall rules, and which groups a VM is in.

Needs USER and membership of the VDC (or ADMIN): the VDC named by the FlexPlane-VDC-ID header, or for
``assignSecurityGroups`` the VM's own. Another VDC's group is NOT_FOUND, exactly like a missing one.
A change that could not reach some VMs' firewalls says so in ``errors``, one per VM, naming it; the
change itself is stored, and sending it again brings those VMs in line.
"""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.graphql.core import VDC_MEMBER, VM_MEMBER, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.vms import VirtualMachine
from orchestrator.models.security_groups import SecurityGroup as SecurityGroupModel
from orchestrator.services import security_groups
from orchestrator.services.security_groups import Assigned, Changed, NotUpdated

SecurityGroupErrorCode, SecurityGroupError = error_types("SecurityGroup")

_REMOTE = (
    "Exactly one of cidr, group and vdcNetworks is given: where the traffic comes from (in) or goes to (out)."
)


# ------------------------------------------------------------------------------------------ types


class SecurityGroupRule(graphene.ObjectType):
    __doc__ = "What one rule lets through. " + _REMOTE

    direction = graphene.String(required=True, description="in (to the VM) or out (from the VM).")
    protocol = graphene.String(required=True, description="tcp, udp, icmp or any.")
    ports = graphene.String(
        description="As Proxmox's firewall takes them: a port (22), a range (8000:8100) or a comma list of "
        "them (80,443,8000:8100); tcp and udp only; null: every port."
    )
    cidr = graphene.String(description="An IPv4 network (0.0.0.0/0: anywhere).")
    group = graphene.String(description="Another group of the same VDC: its member VMs' addresses.")
    vdc_networks = graphene.Boolean(required=True, description="The VDC's own networks.")
    description = graphene.String(required=True)


class SecurityGroup(graphene.ObjectType):
    """A named set of rules of a VDC, realised on the firewall of each VM in it. Traffic in is dropped
    unless a rule of one of the VM's groups allows it; traffic out is allowed, unless one of its groups
    has outbound rules: then only what they allow. Every VDC has a group default: all egress, inbound
    only from the VDC's own networks."""

    name = graphene.String(required=True)
    vdc = graphene.String(required=True)
    description = graphene.String(required=True)
    rules = graphene.List(graphene.NonNull(SecurityGroupRule), required=True)

    @staticmethod
    def resolve_rules(group: SecurityGroupModel, info: graphene.ResolveInfo) -> list[Any]:
        return list(group.rules)


class SecurityGroupRuleInput(graphene.InputObjectType):
    __doc__ = "A rule. " + _REMOTE

    direction = graphene.String(required=True, description="in or out.")
    protocol = graphene.String(required=True, description="tcp, udp, icmp or any.")
    ports = graphene.String(
        description="A port (22), a range (8000:8100; 8000-8100 is read the same) or a comma list of them "
        "(80,443): ports 1 to 65535, a range's first <= its last, at most 15 numbers (a range counts as "
        "two; Proxmox's limit); tcp and udp only; null or empty: every port. Stored and answered in "
        "Proxmox's syntax (80,443,8000:8100)."
    )
    cidr = graphene.String(description="An IPv4 network such as 10.0.0.0/24, or 0.0.0.0/0 for anywhere.")
    group = graphene.String(description="A group of the same VDC (this one included).")
    vdc_networks = graphene.Boolean(description="true: the VDC's own networks.")
    description = graphene.String(description="One line, at most 200 characters.")


class CreateSecurityGroupInput(graphene.InputObjectType):
    name = graphene.String(
        required=True,
        description="A DNS label of at most 32 characters, starting with a letter; it cannot change.",
    )
    description = graphene.String()
    rules = graphene.List(graphene.NonNull(SecurityGroupRuleInput), description="At most 50.")


class UpdateSecurityGroupInput(graphene.InputObjectType):
    """The fields to change; those left out keep their value. ``rules`` replaces them all."""

    description = graphene.String()
    rules = graphene.List(graphene.NonNull(SecurityGroupRuleInput), description="At most 50.")


# ------------------------------------------------------------------------------------------ queries


class Query(graphene.ObjectType):
    security_groups = graphene.List(
        graphene.NonNull(SecurityGroup),
        required=True,
        description="The security groups of the VDC named by the FlexPlane-VDC-ID header (its members and "
        "ADMIN); without it, of the caller's VDCs (ADMIN: every VDC), by VDC then name. Needs USER or "
        "ADMIN. No Proxmox call.",
    )

    @staticmethod
    @domain_errors
    def resolve_security_groups(root: None, info: graphene.ResolveInfo) -> list[SecurityGroupModel]:
        return security_groups.security_groups(flexplane(info))


# ------------------------------------------------------------------------------------------ mutations


def _not_updated(failure: NotUpdated, codes: frozenset[str]) -> dict[str, Any]:
    code = failure.error.code if failure.error.code in codes else "UPSTREAM_FAILURE"
    return {"field": None, "message": failure.message, "code": code}


class RealisingMutation(ServiceMutation):
    """A change that rewrites VMs' firewalls: those it could not reach are in ``errors``, one per VM."""

    class Meta:
        abstract = True

    shared = Shared(VDC_MEMBER, SecurityGroupError)

    @classmethod
    def not_updated(cls, result: Changed | Assigned) -> dict[str, Any]:
        return {"errors": [_not_updated(f, cls._meta.codes) for f in result.realised.failures]}


_ERRORS = "Errors: INVALID (naming the field, e.g. rules[2].ports), NOT_FOUND, CONFLICT, UNAVAILABLE."


class GroupChangeMutation(RealisingMutation):
    """A change of a group: the group as it is now, and the VMs whose firewall could not follow."""

    class Meta:
        abstract = True

    security_group = graphene.Field(SecurityGroup)

    @classmethod
    def answer(cls, result: Changed) -> dict[str, Any]:
        return {"security_group": result.group, **cls.not_updated(result)}


class CreateSecurityGroup(GroupChangeMutation):
    class Meta:
        service = security_groups.create_security_group
        description = f"Add a security group to the VDC; no VM is in it yet. {_ERRORS}"

    class Arguments:
        input = CreateSecurityGroupInput(required=True)


class UpdateSecurityGroup(GroupChangeMutation):
    class Meta:
        service = security_groups.update_security_group
        description = (
            "Change a security group's description or rules (default's too); the firewall of every VM in it "
            f"follows, at most 4 VMs at once per host. {_ERRORS} A VM whose firewall could not be updated "
            "is an error naming it: the change is stored, and sending it again updates that VM."
        )

    class Arguments:
        name = graphene.String(required=True)
        input = UpdateSecurityGroupInput(required=True)


class DeleteSecurityGroup(ServiceMutation):
    class Meta:
        role, service, error = VDC_MEMBER, security_groups.delete_security_group, SecurityGroupError
        result = "security_group"
        description = (
            "Remove a security group: CONFLICT for default, while VMs are in it (naming them), and while "
            "another group's rules name it. Errors: NOT_FOUND, CONFLICT, UNAVAILABLE."
        )

    class Arguments:
        name = graphene.String(required=True)

    security_group = graphene.Field(SecurityGroup, description="The group as it was.")


class AssignSecurityGroups(RealisingMutation):
    class Meta:
        role = VM_MEMBER
        service = security_groups.assign_security_groups
        description = (
            "Put a VM in exactly these security groups of its VDC (at least one; default is a group like "
            "the others) and update its firewall, and the IP sets of the VMs whose rules name its old or new "
            "groups. A group of another VDC is NOT_FOUND, as a missing one. Errors: INVALID, NOT_FOUND, "
            "CONFLICT, UNAVAILABLE, UPSTREAM_FAILURE; a VM whose firewall could not be updated is an error "
            "naming it (the same request again updates it)."
        )

    class Arguments:
        vm = graphene.ID(required=True, description="The VM's id (<zone>/<vmid>).")
        groups = graphene.List(graphene.NonNull(graphene.String), required=True)

    virtual_machine = graphene.Field(VirtualMachine)
    security_groups = graphene.List(graphene.NonNull(graphene.String), description="The VM's groups now.")

    @classmethod
    def answer(cls, result: Assigned) -> dict[str, Any]:
        return {"virtual_machine": result.vm, "security_groups": result.groups, **cls.not_updated(result)}


class Mutation(graphene.ObjectType):
    create_security_group = CreateSecurityGroup.Field()
    update_security_group = UpdateSecurityGroup.Field()
    delete_security_group = DeleteSecurityGroup.Field()
    assign_security_groups = AssignSecurityGroups.Field()
