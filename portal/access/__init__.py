"""The portal's Access section: users, their platform roles and VDC memberships (kept in Zitadel)."""
