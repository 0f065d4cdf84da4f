"""The check: which route allows a request, and whether each of its parameters is declared and valid.

Pure and cheap (a few regular expressions per parameter): it runs before every forwarded call.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.proxy.params import Policy, Where
from agent.proxy.paths import METHODS, check_params, check_path
from agent.proxy.refusal import NotAllowed
from agent.proxy.routes import ALLOWED, Route

NO_POLICY = Policy()


def authorize(
    method: str,
    path: str,
    params: Mapping[str, str],
    table: tuple[Route, ...] = ALLOWED,
    policy: Policy = NO_POLICY,
) -> Route:
    """The route that allows this request, or NotAllowed with the reason (and the parameter)."""
    if method not in METHODS:
        raise NotAllowed(f"method {method[:16]!r} is not one of {', '.join(sorted(METHODS))}")
    check_path(path)
    check_params(params)
    for route in table:
        if route.method == method and (found := route.match(path)) is not None:
            break
    else:
        if any(route.matches(path) for route in table):
            raise NotAllowed(f"{method} {path} is not on the proxy's allowlist (another method is)")
        raise NotAllowed(f"{method} {path} is not on the proxy's allowlist")
    if params:
        where = Where(found.groupdict(), policy)
        for name, value in params.items():
            validator = route.params.get(name)
            if validator is None:
                raise NotAllowed(f"parameter {name} is not accepted by {method} {route.pattern}", name)
            try:
                validator(value, where)
            except ValueError as exc:
                raise NotAllowed(f"parameter {name}: {exc}", name) from None
    return route
