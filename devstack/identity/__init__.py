"""The development identity provider: an OIDC issuer with Zitadel-shaped tokens.

It stands in for Zitadel in the devstack and the tests: its own process
(``python -m devstack.identity serve``), its own Django settings and its own SQLite file, on
django-oauth-toolkit. Nothing of ``flexplane`` or ``orchestrator`` is imported here, and this
package's top level imports nothing of Django, so that :mod:`devstack.identity.process` and
:mod:`devstack.identity.client` can be used from any process.
"""
