"""The portal suites' sessions: alice (VDC demo), bob (VDC other) and admin, each signed in once a module."""

from tests.portal.sessionkit import signed_in

alice = signed_in("alice")
bob = signed_in("bob")
admin = signed_in("admin")
