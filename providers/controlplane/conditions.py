"""metav1 Conditions for the FlexControlPlane's status (the v1beta2 contract's shape).

K2's ``providers/common`` was to hold shared condition helpers; until it does, these few lines are
the control plane's own.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

Condition = dict[str, Any]


def condition(type_: str, status: bool, reason: str, message: str, *, generation: int) -> Condition:
    return {
        "type": type_,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def merged(previous: Iterable[Mapping[str, Any]], new: Condition) -> list[Condition]:
    """``previous`` with ``new`` in place of its type, keeping the transition time if the status held."""
    result = []
    for old in previous:
        if old.get("type") == new["type"]:
            if old.get("status") == new["status"]:
                new = {**new, "lastTransitionTime": old.get("lastTransitionTime", new["lastTransitionTime"])}
            continue
        result.append(dict(old))
    result.append(new)
    return sorted(result, key=lambda c: str(c.get("type")))
