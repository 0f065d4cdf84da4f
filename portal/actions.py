"""What every area's action registry (``portal.<area>.actions``) shares.

An area registers each action with the GraphQL mutation that does the same (``MUTATIONS``: action ->
mutation name; ``tests/portal/test_portal_action_parity.py`` reads it). An :class:`Action` is the
action's name, as a form's ``data-action`` says it, carrying its mutation; :func:`checked` makes an
area's ``action(name)``, which fails as the module naming an unregistered action loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping


class Action(str):
    """An action's name (``"network.create"``), with the mutation that does the same (``.mutation``)."""

    mutation: str

    def __new__(cls, name: str, mutation: str) -> Action:
        made = super().__new__(cls, name)
        made.mutation = mutation
        return made


def registry(*actions: Action) -> dict[str, str]:
    """The ``MUTATIONS`` of an area's actions: action -> mutation name."""
    return {str(action): action.mutation for action in actions}


def checked(mutations: Mapping[str, str], module: str) -> Callable[[str], str]:
    """An area's ``action(name)``: a registered action's name; an unregistered one fails at once."""

    def action(name: str) -> str:
        """A registered action's name: an unregistered one fails when the module naming it loads."""
        if name not in mutations:
            raise LookupError(f"portal action {name!r} is not in {module}.MUTATIONS")
        return name

    return action
