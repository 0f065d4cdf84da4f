"""Patches: JSON merge patches, JSON patches, and strategic merge patches applied as merge patches.

Strategic merge patches are applied as JSON merge patches (lists are replaced, not merged by key);
custom resources refuse them with 415, as a real cluster does. Server-side apply answers 415.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonpatch
import kmock

from devstack.kube.errors import ApiError
from devstack.kube.objects import Body

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def apply_patch(
    current: Body, patch: Any, content_type: str, *, resource: kmock.resource, name: str, builtin: bool
) -> Body:
    """``current`` with ``patch`` (of ``content_type``) applied; 4xx if it cannot be."""
    if content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        if content_type == STRATEGIC_MERGE_PATCH and not builtin:
            raise ApiError.unsupported_media_type(content_type)  # as for custom resources in a real cluster
        if not isinstance(patch, Mapping):
            raise ApiError.bad_request("a merge patch must be a JSON object")
        patched = merge_patch(copy.deepcopy(current), patch)
    elif content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError.bad_request("a JSON patch must be a JSON array of operations")
        try:
            patched = jsonpatch.apply_patch(copy.deepcopy(current), patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
            raise ApiError.invalid(resource, name, f"the JSON patch failed: {error}") from None
    else:
        raise ApiError.unsupported_media_type(content_type)
    if not isinstance(patched, dict):
        raise ApiError.invalid(resource, name, "the patch did not produce an object")
    return patched


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch (RFC 7386): maps merge, ``null`` removes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
