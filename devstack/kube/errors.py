"""Failures as the real API server words them: a ``Status`` body with its code, reason and details."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

import aiohttp.web
import kmock

from devstack.kube.objects import Body, resource_name

STALE_WRITE = "the object has been modified; please apply your changes to the latest version and try again"


class ApiError(Exception):
    """A failure answered as a Kubernetes ``Status`` body, as the real API server words it."""

    def __init__(
        self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})

    def status(self) -> Body:
        body: Body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body

    def response(self) -> aiohttp.web.Response:
        return aiohttp.web.json_response(self.status(), status=self.code)

    @classmethod
    def bad_request(cls, message: str) -> Self:
        return cls(400, "BadRequest", message)

    @classmethod
    def not_found(cls, resource: kmock.resource, name: str) -> Self:
        return cls(404, "NotFound", f'{resource_name(resource)} "{name}" not found', details(resource, name))

    @classmethod
    def no_such_path(cls) -> Self:
        return cls(404, "NotFound", "the server could not find the requested resource")

    @classmethod
    def method_not_allowed(cls) -> Self:
        return cls(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    @classmethod
    def already_exists(cls, resource: kmock.resource, name: str) -> Self:
        return cls(
            409,
            "AlreadyExists",
            f'{resource_name(resource)} "{name}" already exists',
            details(resource, name),
        )

    @classmethod
    def conflict(cls, resource: kmock.resource, name: str, why: str) -> Self:
        message = f'Operation cannot be fulfilled on {resource_name(resource)} "{name}": {why}'
        return cls(409, "Conflict", message, details(resource, name))

    @classmethod
    def expired(cls, message: str) -> Self:
        return cls(410, "Expired", message)

    @classmethod
    def unsupported_media_type(cls, content_type: str) -> Self:
        return cls(
            415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {content_type}"
        )

    @classmethod
    def invalid(cls, resource: kmock.resource, name: str, message: str) -> Self:
        return cls(422, "Invalid", message, details(resource, name))


def details(resource: kmock.resource, name: str) -> Body:
    """The ``details`` of a Status about one object."""
    found: Body = {"name": name, "kind": resource.plural}
    if resource.group:
        found["group"] = resource.group
    return found
