"""Access management: who belongs to which VDC, and who holds the platform's roles, kept in Zitadel.

flex.plane stays stateless: users, roles and memberships live in Zitadel. Every check of a request
uses its token's claims (``services.access``); only the writes here, and the listings of users and
members, go to Zitadel (``sources.zitadel``). A change takes effect with the user's next token.

- ``roles``: the project role ``vdc:<id>`` that each VDC has while it exists;
- ``users``: users(search), each with their roles and VDCs;
- ``memberships``: grantVdcMembership, revokeVdcMembership, setPlatformRoles, a VDC's members.

Submodules are imported by name (``from orchestrator.services.access_admin import roles``): ``vdcs``
uses ``roles`` while ``memberships`` uses ``vdcs``.
"""
