"""Pure parts of organizations and access: allowances as stored, what goes past one, owners from claims."""

from __future__ import annotations

from orchestrator.auth import Principal
from orchestrator.models import Usage
from orchestrator.services.organizations import Allowance, _over

ROLES = "urn:zitadel:iam:org:project:flexplane:roles"


def test_an_allowance_reads_back_as_stored_with_only_the_quotas_it_bounds() -> None:
    allowance = Allowance(
        organization="2001",
        name="acme",
        zones=("zone-a",),
        images=("debian-12",),
        quota=Usage(vcpus=8, memory_mib=16384, disk_gb=200, vms=4, networks=3),
        bounded=("vcpus", "memory_mib", "disk_gb", "vms", "networks"),
    )
    spec = allowance.to_spec()
    assert "publicIps" not in spec["quota"]
    assert Allowance.from_spec(spec) == allowance


def test_only_the_bounded_resources_go_past_an_allowance_each_named_with_both_figures() -> None:
    allowance = Allowance("2001", "acme", quota=Usage(vcpus=4, memory_mib=4096, disk_gb=50, vms=2))
    asked = Usage(vcpus=6, memory_mib=4096, disk_gb=50, vms=2, networks=40, public_ips=9)
    assert _over(asked, allowance) == {"vcpus": "vCPUs (6 > 4 allowed)"}


def test_an_org_owner_owns_the_organizations_that_granted_the_role() -> None:
    claims = {
        "sub": "1",
        ROLES: {"USER": {"2001": "acme.localhost"}, "ORG_OWNER": {"2001": "acme.localhost"}},
        "urn:zitadel:iam:user:resourceowner:id": "2001",
    }
    principal = Principal.from_claims(claims, "flexplane")
    assert principal.is_org_owner
    assert principal.owned_organizations == frozenset({"2001"})
    assert principal.organization == "2001"


def test_without_the_resource_owner_claim_the_organization_is_the_one_that_granted_the_roles() -> None:
    claims = {"sub": "1", ROLES: {"USER": {"2001": "acme.localhost"}, "vdc:web": {"2001": "acme.localhost"}}}
    principal = Principal.from_claims(claims, "flexplane")
    assert (principal.organization, principal.is_org_owner, principal.vdcs) == ("2001", False, {"web"})


def test_an_org_owner_role_without_an_organization_owns_nothing() -> None:
    principal = Principal.from_claims({"sub": "1", ROLES: {"ORG_OWNER": "not a map"}}, "flexplane")
    assert principal.owned_organizations == frozenset()
    assert not principal.is_org_owner
