"""Partial answers: data from the zones that answered, an error for each zone that did not."""

from __future__ import annotations

from typing import TypeVar

import graphene

from orchestrator.services.context import Context

T = TypeVar("T")


def report_partial(info: graphene.ResolveInfo, value: T) -> T:
    """Note that this field's data lacks the zones on ``ctx.unavailable``: the view answers an error each."""
    ctx: Context = info.context.flexplane
    if ctx.unavailable:
        info.context.partial.append((info.path.as_list(), list(ctx.unavailable)))
    return value
