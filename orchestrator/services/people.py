"""People and organizations by name: the users a page names (an audit record's caller, a join token's
creator) as their name and user name, and organizations as their name, not their Zitadel ids.

A name comes from what is recorded first (an audit record keeps its caller's name; the signed-in user's
is in their token), then from Zitadel: the ids left, in one ``ListUsers`` per page (``people``), never a
call per row. Nothing is kept between requests. When Zitadel does not answer (or none is configured), a
person is shown by their id and the page is served all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orchestrator.errors import FlexPlaneError
from orchestrator.services.context import Context
from orchestrator.sources.zitadel import User

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Person:
    """A user as a page shows them: ``shown`` (their name, else their user name, else their id); the id is
    kept for whoever needs it (an admin's filter, a title)."""

    id: str
    name: str = ""
    username: str = ""

    @property
    def shown(self) -> str:
        return self.name or self.username or self.id

    @property
    def hint(self) -> str:
        """The user name beside the name, when it says something more."""
        return self.username if self.username and self.username != self.shown else ""


def people(ctx: Context, ids: Iterable[str], named: Mapping[str, str] | None = None) -> dict[str, Person]:
    """Each of ``ids`` (blanks left out) as a Person: by the name ``named`` records for it, the signed-in
    user by their token's, the others by Zitadel's answer to one call; by their id when none answers."""
    me = ctx.principal
    wanted = list(dict.fromkeys(i for i in ids if i))
    found: dict[str, Person] = {}
    for ident in wanted:
        if named and named.get(ident) not in (None, "", ident):  # a name that is the id is none
            found[ident] = Person(ident, named[ident])
        elif ident == me.subject and (me.name or me.email):
            found[ident] = Person(ident, me.name or me.email)
    rest = [i for i in wanted if i not in found]
    known = {user.id: user for user in _users(ctx, rest)}
    for ident in rest:
        user = known.get(ident)
        found[ident] = Person(ident, user.name, user.username) if user else Person(ident)
    return found


def _users(ctx: Context, ids: list[str]) -> list[User]:
    if not ids:
        return []
    source = ctx.zitadel
    if source is None:
        return []
    try:
        return source.users(ids)
    except FlexPlaneError as exc:  # Zitadel away: the ids are shown, the page served
        logger.warning("people not named (Zitadel did not answer): %s", exc.message)
        return []


def organization_name(ctx: Context, org: str, known: str = "") -> str:
    """An organization's name: ``known`` (its allowance's), else Zitadel's answer (one call), else its id."""
    if known and known != org:
        return known
    source = ctx.zitadel
    if source is None:
        return org
    try:
        found = source.organization(org)
    except FlexPlaneError as exc:  # Zitadel away: the id is shown, the page served
        logger.warning("organization %s not named (Zitadel did not answer): %s", org, exc.message)
        return org
    return found.name if found is not None and found.name else org
