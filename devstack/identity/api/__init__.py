"""The Zitadel-shaped management API of the development identity provider.

The subset of Zitadel's v2 APIs that flex.plane's ``orchestrator.sources.zitadel`` uses, at the same
paths (``POST /<package>.<Service>/<Method>``, Connect's JSON with ``Connect-Protocol-Version: 1``),
with the same request and response shapes and Connect error codes, authenticated as Zitadel does:
a service user's JWT profile assertion exchanged at ``/oauth/v2/token`` for a bearer token. What it
changes persists in the provider's own SQLite file, and the tokens it issues afterwards carry the
roles its authorizations grant.
"""
