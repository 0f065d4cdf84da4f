"""The management-cluster stand-in: kmock's Kubernetes emulator with its gaps closed.

flex.plane keeps its catalog in ConfigMaps, locks quotas with Leases, and will keep Secrets and
Cluster API objects on the management cluster. In tests and the devstack that cluster is a
:class:`ClusterEmulator` served on loopback by a :class:`KubeServer`; product code reaches it with
the official ``kubernetes`` client and the kubeconfig from :meth:`KubeServer.write_kubeconfig`,
exactly as it reaches a real cluster. Whatever kmock lacks is closed here, never in product code.

What the emulator does as a real API server does:

- ``metadata.uid``, ``creationTimestamp``, ``generation`` on create; one cluster-wide
  ``resourceVersion`` counter, bumped by every write. A write that changes nothing is not a write:
  it keeps the resourceVersion and sends no watch event (so a lock must change what it writes).
- Optimistic concurrency: a replace or patch whose result carries a ``resourceVersion`` other
  than the stored one answers 409 Conflict; so does a delete with stale preconditions.
- Create answers 201, ``generateName`` works, a duplicate answers 409 AlreadyExists, a missing
  object answers 404 NotFound: failures always carry a ``Status`` body.
- Label selectors (``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``, ``a notin (x)``,
  ``a>1``, ``a<1``; commas are AND) and field selectors (``metadata.name``,
  ``metadata.namespace``, plus ``type`` for Secrets and ``status.phase`` for Namespaces) on
  list, watch and delete-collection; ``limit``/``continue`` paging; ``dryRun``.
- Watch: every event carries the object's namespace; ``timeoutSeconds`` ends the stream;
  ``resourceVersion`` resumes after that version (410 Expired once it left the event log); an
  object that stops matching a selector is reported DELETED, one that starts matching ADDED.
- ``/version``, discovery, and Namespaces: ``default`` and ``kube-system`` exist from the start,
  and a namespace springs into existence when the first object is created in it. Deleting a
  namespace deletes everything in it at once.
- Secrets: ``stringData`` is folded into base64 ``data``.
- Finalizers: a delete only marks an object that has some; it goes once they are removed.

What it does not do: authentication, admission, schemas or CRD validation, conversion between
API versions, server-side apply (415), bookmarks, protobuf. Strategic merge patches are applied
as JSON merge patches (lists are replaced, not merged by key); custom resources refuse them with
415, as a real cluster does. ``/status`` writes change only ``status``; writes to the object
itself change everything, status included, as for a CRD without a status subresource.

Tests may still use kmock's DSL on the emulator, e.g. ``kube.emulator["list v1/configmaps"] << 503``
to inject a fault: such reactions are consulted first; the stored objects answer the rest.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import copy
import dataclasses
import datetime
import functools
import gzip
import importlib.resources
import ipaddress
import itertools
import json
import re
import secrets
import threading
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import aiohttp.web
import attrs
import jsonpatch
import kmock
import yaml
from kmock._internal import parsing as kmock_parsing
from kmock._internal import rendering as kmock_rendering

__all__ = ["ClusterEmulator", "KubeServer"]

Body = dict[str, Any]
ObjectKey = tuple[kmock.resource, str | None, str]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]

NAMESPACES = kmock.resource("", "v1", "namespaces")
SECRETS = kmock.resource("", "v1", "secrets")
SYSTEM_NAMESPACES = ("default", "kube-system")

# Metadata that the server owns: ignored in a create, kept from the stored object on an update.
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
    "managedFields",
)
IDENTITY_METADATA = ("name", "namespace")

COMMON_FIELD_LABELS = frozenset({"metadata.name", "metadata.namespace"})
EXTRA_FIELD_LABELS = {SECRETS: frozenset({"type"}), NAMESPACES: frozenset({"status.phase"})}

# The alphabet and length of the suffix that the API server appends to a generateName.
GENERATED_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_NAME_LENGTH = 5
GENERATED_NAME_ATTEMPTS = 8

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# The /version document: the Kubernetes release that the kubernetes client in use (37.x) speaks.
SERVER_VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0+flexplane-devstack",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-08-01T00:00:00Z",
    "goVersion": "go1.26.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

# A namespace path, which kmock's path parser cannot read: it takes "namespaces" for a scope.
NAMESPACE_PATH = re.compile(
    r"/api/v1/namespaces(?:/(?P<name>[^/]+)(?:/(?P<subresource>status|finalize))?)?/?"
)


# ---------------------------------------------------------------------------------------- errors


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
        return cls(
            404, "NotFound", f'{_resource_name(resource)} "{name}" not found', _details(resource, name)
        )

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
            f'{_resource_name(resource)} "{name}" already exists',
            _details(resource, name),
        )

    @classmethod
    def conflict(cls, resource: kmock.resource, name: str, why: str) -> Self:
        message = f'Operation cannot be fulfilled on {_resource_name(resource)} "{name}": {why}'
        return cls(409, "Conflict", message, _details(resource, name))

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
        return cls(422, "Invalid", message, _details(resource, name))


def _resource_name(resource: kmock.resource) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else f"{resource.plural}"


def _details(resource: kmock.resource, name: str) -> Body:
    details: Body = {"name": name, "kind": resource.plural}
    if resource.group:
        details["group"] = resource.group
    return details


STALE_WRITE = "the object has been modified; please apply your changes to the latest version and try again"


# ------------------------------------------------------------------------------------- selectors


@dataclasses.dataclass(frozen=True)
class LabelRequirement:
    """One requirement of a label selector, e.g. ``tier in (web, api)``."""

    key: str
    operator: Literal["=", "!=", "in", "notin", "exists", "!", ">", "<"]
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        match self.operator:
            case "exists":
                return value is not None
            case "!":
                return value is None
            case "=" | "in":
                return value is not None and value in self.values
            case "!=" | "notin":
                return value is None or value not in self.values
            case ">" | "<":
                (bound,) = self.values
                if value is None or not re.fullmatch(r"-?\d+", value):
                    return False
                return int(value) > int(bound) if self.operator == ">" else int(value) < int(bound)


@dataclasses.dataclass(frozen=True)
class FieldRequirement:
    """One requirement of a field selector, e.g. ``metadata.name!=catalog``."""

    path: str
    equal: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        found: Any = obj
        for part in self.path.split("."):
            found = found.get(part) if isinstance(found, Mapping) else None
        value = "" if found is None else str(found)
        return (value == self.value) == self.equal


@dataclasses.dataclass(frozen=True)
class Selector:
    """The label and field selectors of a request: an object must satisfy every requirement."""

    labels: tuple[LabelRequirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.labels) and all(r.matches(obj) for r in self.fields)


_LABEL_KEY = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_REQUIREMENT = re.compile(rf"(?P<key>{_LABEL_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)")
_ORDER_REQUIREMENT = re.compile(rf"(?P<key>{_LABEL_KEY})\s*(?P<op>[<>])\s*(?P<value>-?\d+)")
_EQUALITY_REQUIREMENT = re.compile(rf"(?P<key>{_LABEL_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_LABEL_VALUE})")
_EXISTENCE_REQUIREMENT = re.compile(rf"(?P<not>!?)\s*(?P<key>{_LABEL_KEY})")
_FIELD_REQUIREMENT = re.compile(r"(?P<path>[A-Za-z0-9_.\-]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^,]*)")


def parse_label_selector(text: str) -> tuple[LabelRequirement, ...]:
    """Parse a label selector as ``kubectl -l`` takes it; raise :class:`ApiError` (400) if malformed."""
    if not text.strip():
        return ()
    return tuple(_parse_label_requirement(part.strip()) for part in _split_outside_parentheses(text))


def _split_outside_parentheses(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _parse_label_requirement(text: str) -> LabelRequirement:
    if found := _SET_REQUIREMENT.fullmatch(text):
        values = [value.strip() for value in found["values"].split(",")]
        if values == [""] or not all(re.fullmatch(_LABEL_VALUE, value) for value in values):
            raise ApiError.bad_request(f"unable to parse requirement: invalid set of values in {text!r}")
        return LabelRequirement(found["key"], "in" if found["op"] == "in" else "notin", frozenset(values))
    if found := _ORDER_REQUIREMENT.fullmatch(text):
        return LabelRequirement(found["key"], ">" if found["op"] == ">" else "<", frozenset({found["value"]}))
    if found := _EQUALITY_REQUIREMENT.fullmatch(text):
        return LabelRequirement(
            found["key"], "!=" if found["op"] == "!=" else "=", frozenset({found["value"]})
        )
    if found := _EXISTENCE_REQUIREMENT.fullmatch(text):
        return LabelRequirement(found["key"], "!" if found["not"] else "exists")
    raise ApiError.bad_request(
        f"unable to parse requirement: {text!r} is not a valid label selector requirement"
    )


def parse_field_selector(text: str, supported: frozenset[str]) -> tuple[FieldRequirement, ...]:
    """Parse a field selector over the ``supported`` fields; raise :class:`ApiError` (400) otherwise."""
    if not text.strip():
        return ()
    requirements = []
    for part in text.split(","):
        found = _FIELD_REQUIREMENT.fullmatch(part.strip())
        if found is None:
            raise ApiError.bad_request(f"invalid selector: {text!r}; can't understand {part.strip()!r}")
        if found["path"] not in supported:
            raise ApiError.bad_request(f"field label not supported: {found['path']}")
        requirements.append(FieldRequirement(found["path"], found["op"] != "!=", found["value"].strip()))
    return tuple(requirements)


# --------------------------------------------------------------------------------------- patches


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


# ---------------------------------------------------------------------------------------- events


@dataclasses.dataclass(frozen=True)
class Event:
    """One write, as the event log keeps it: the object before and after (the last state on delete)."""

    revision: int
    key: ObjectKey
    type: EventType
    before: Body | None
    after: Body


@dataclasses.dataclass(eq=False)
class Watcher:
    """One open watch stream: what it watches, and the queue that its events arrive on."""

    resource: kmock.resource
    namespace: str | None
    selector: Selector
    since: int
    queue: asyncio.Queue[Event | None] = dataclasses.field(default_factory=asyncio.Queue)

    def translate(self, event: Event) -> Body | None:
        """The event as this watch reports it, or None when the watch does not see it.

        As a real API server does for a filtered watch: an object that starts to match is ADDED,
        one that stops matching is DELETED.
        """
        resource, namespace, _ = event.key
        if event.revision <= self.since or resource != self.resource:
            return None
        if self.namespace is not None and namespace != self.namespace:
            return None
        matched_before = event.before is not None and self.selector.matches(event.before)
        matches_now = event.type != "DELETED" and self.selector.matches(event.after)
        if matched_before and matches_now:
            kind = "MODIFIED"
        elif matches_now:
            kind = "ADDED"
        elif matched_before:
            kind = "DELETED"
        else:
            return None
        return {"type": kind, "object": event.after}


# -------------------------------------------------------------------------------------- emulator


@attrs.define(kw_only=True)
class ClusterEmulator(kmock.KubernetesEmulator):
    """kmock's Kubernetes emulator, made to behave as the real API server (see the module's docs).

    Objects live in kmock's store (``emulator.objects[resource, namespace, name]``, with their
    history), so tests can read them; writes go through the API. Handlers run on the server's
    event loop without awaiting between reading and writing, so every write is atomic.

    Neither parent's request routing is used: ``KubernetesEmulator`` changes the state before
    dispatching and serves objects through shared kmock reactions, and ``KubernetesScaffold`` ends
    its routes with a catch-all 404. This class keeps kmock's discovery routes, consults any
    reaction a test adds, and serves objects itself.
    """

    # How many writes a watch can resume after, with resourceVersion, before it is told 410 Gone.
    event_log_limit: int = 10_000
    # How many requests kmock keeps for assertions (``list(emulator)``, ``emulator["get"]``…).
    request_log_limit: int = 10_000
    # How many past versions of each object the store keeps.
    history_limit: int = 100

    _revision: int = attrs.field(default=0, init=False)
    _events: collections.deque[Event] = attrs.field(init=False)
    _compacted_revision: int = attrs.field(default=0, init=False)
    _watchers: set[Watcher] = attrs.field(factory=set, init=False)
    _request_ids: Iterator[int] = attrs.field(factory=itertools.count, init=False)
    _builtins: frozenset[kmock.resource] = attrs.field(factory=frozenset, init=False)

    def __attrs_post_init__(self) -> None:
        # The parents' hooks only register routes; see the class docstring for why they do not run.
        self._events = collections.deque(maxlen=self.event_log_limit)
        self.resources.load_data(_bundled_resources())
        self._builtins = frozenset(kmock.resource(resource) for resource in self.resources)

        discovery = self.fallback
        discovery["get", re.compile(r"/version/?")] << SERVER_VERSION
        discovery["get", re.compile(r"/apis/?")] << self._serve_apis
        discovery["get", re.compile(r"/apis/[^/]+/?")] << self._serve_group
        discovery["get", re.compile(r"/apis/[^/]+/[^/]+/?")] << self._serve_version
        discovery["get", re.compile(r"/api/?")] << self._serve_api
        discovery["get", re.compile(r"/api/[^/]+/?")] << self._serve_version
        discovery["get", re.compile(r"/?")] << self._serve_root

        for namespace in SYSTEM_NAMESPACES:
            self._ensure_namespace(namespace)

    @property
    def revision(self) -> int:
        """The cluster's current resourceVersion: the number of the latest write."""
        return self._revision

    def close_watches(self) -> None:
        """End every open watch stream (call on the server's event loop, e.g. before it stops)."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(None)

    # ------------------------------------------------------------------------------ dispatch

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """Serve one HTTP request: the aiohttp handler.

        It replaces kmock's, which cannot parse namespace paths and keeps every request forever.
        """
        raw_response: aiohttp.web.StreamResponse | None = None
        try:
            request = await _parse_request(raw_request, next(self._request_ids))
            self._requests.append(request)
            if len(self._requests) > self.request_log_limit:
                del self._requests[: len(self._requests) - self.request_log_limit]
            try:
                return await self._handle(request)
            except kmock_rendering.StreamingError as error:  # a reaction's stream failed mid-way
                raw_response = error.args[0]
                raise error.__cause__ or error from None
        except Exception as error:
            if not self._errors:  # not entered as a context manager: let the web server report it
                raise
            self._errors[-1].append(error)
            if raw_response is None or not raw_response.prepared:
                return await self._render_error(error)
            await self._stream_error(error, raw_response)
            await raw_response.write_eof()
            return raw_response

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        with contextlib.suppress(NotImplementedError):  # raised when no reaction matches
            # kmock's dispatch over the reactions: those a test added, then the discovery routes.
            return await super(kmock.KubernetesEmulator, self)._handle(request)
        try:
            resource = request.resource
            if resource is None or resource.plural is None:
                raise ApiError.no_such_path()
            return await self._serve_objects(request, resource)
        except ApiError as error:
            return error.response()

    async def _serve_objects(
        self, request: kmock.Request, resource: kmock.resource
    ) -> aiohttp.web.StreamResponse:
        if request.subresource not in (None, "status"):
            raise ApiError.no_such_path()
        if request.action == kmock.action.WATCH:
            return await self._watch(request, resource)
        whole = request.subresource is None
        if request.name is None:
            match request.method:
                case kmock.method.GET:
                    return self._list(request, resource)
                case kmock.method.POST if whole:
                    return self._create(request, resource)
                case kmock.method.DELETE if whole:
                    return self._delete_collection(request, resource)
            raise ApiError.method_not_allowed()
        key = (resource, request.namespace, request.name)
        match request.method:
            case kmock.method.GET:
                return aiohttp.web.json_response(self._existing(key))
            case kmock.method.PUT:
                return self._replace(request, key)
            case kmock.method.PATCH:
                return self._patch(request, key)
            case kmock.method.DELETE if whole:
                return self._delete(request, key)
        raise ApiError.method_not_allowed()

    # --------------------------------------------------------------------------------- reads

    def _list(self, request: kmock.Request, resource: kmock.resource) -> aiohttp.web.Response:
        objects = [obj for _, obj in self._select(request, resource)]
        limit = _int_param(request, "limit")
        token = request.params.get("continue")
        if token:
            start_after = _decode_continue(token)
            objects = [obj for obj in objects if _sort_key(obj) > start_after]
        metadata: Body = {"resourceVersion": str(self._revision)}
        if limit and len(objects) > limit:
            metadata["continue"] = _encode_continue(_sort_key(objects[limit - 1]))
            metadata["remainingItemCount"] = len(objects) - limit
            objects = objects[:limit]
        return aiohttp.web.json_response(self._list_body(resource, objects, metadata))

    def _list_body(self, resource: kmock.resource, objects: list[Body], metadata: Body) -> Body:
        kind = self._kind(resource)
        return {
            "apiVersion": _api_version(resource),
            "kind": f"{kind}List" if kind else "List",
            "metadata": metadata,
            "items": objects,
        }

    async def _watch(self, request: kmock.Request, resource: kmock.resource) -> aiohttp.web.StreamResponse:
        assert request._raw_request is not None  # always set for requests that came over HTTP
        timeout = _int_param(request, "timeoutSeconds")
        since = _resource_version_param(request)
        selector = self._selector(request, resource)
        watcher = Watcher(resource, request.namespace, selector, self._revision if since is None else since)

        # Take the starting events and subscribe in one step, so that no write falls in between.
        expired = since is not None and since < self._compacted_revision
        starting: list[Body]
        if since is None:
            starting = [{"type": "ADDED", "object": obj} for _, obj in self._select(request, resource)]
        elif expired:
            too_old = f"too old resource version: {since} ({self._compacted_revision})"
            starting = [{"type": "ERROR", "object": ApiError.expired(too_old).status()}]
        else:
            starting = [event for event in map(watcher.translate, self._events) if event is not None]
        self._watchers.add(watcher)

        response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        try:
            await response.prepare(request._raw_request)
            for event in starting:
                await response.write(_encode_event(event))
            if not expired:
                await _stream_events(watcher, response, timeout)
            await response.write_eof()
        except ConnectionError:
            pass  # the client went away
        finally:
            self._watchers.discard(watcher)
        return response

    # -------------------------------------------------------------------------------- writes

    def _create(self, request: kmock.Request, resource: kmock.resource) -> aiohttp.web.Response:
        body = _object_body(request)
        metadata = body.get("metadata") or {}
        namespace = self._write_namespace(request, resource, metadata)
        if metadata.get("resourceVersion"):
            raise ApiError.bad_request("resourceVersion should not be set on objects to be created")
        name = metadata.get("name") or self._generate_name(resource, namespace, metadata.get("generateName"))
        key = (resource, namespace, name)
        if self._stored(key) is not None:
            raise ApiError.already_exists(resource, name)

        obj = self._new_object(resource, namespace, name, body)
        dry_run = _is_dry_run(request)
        if namespace is not None:
            self._ensure_namespace(namespace, dry_run=dry_run)
        if not dry_run and resource not in self._builtins:
            self._register(resource, obj["kind"], namespaced=namespace is not None)
        return aiohttp.web.json_response(self._insert(key, obj, dry_run=dry_run), status=201)

    def _replace(self, request: kmock.Request, key: ObjectKey) -> aiohttp.web.Response:
        resource, namespace, name = key
        current = self._existing(key)
        body = _object_body(request)
        metadata = body.get("metadata") or {}
        if metadata.get("name") not in (None, name):
            raise ApiError.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})"
            )
        if metadata.get("namespace") not in (None, namespace):
            raise ApiError.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        _check_resource_version(key, current, metadata.get("resourceVersion"))
        if request.subresource == "status":
            candidate = _with_status_of(current, body)
        else:
            api_version, kind = self._type_of(resource, body)
            candidate = _with_server_metadata({**body, "apiVersion": api_version, "kind": kind}, current)
        return self._write(request, key, current, candidate)

    def _patch(self, request: kmock.Request, key: ObjectKey) -> aiohttp.web.Response:
        resource, _, name = key
        current = self._existing(key)
        content_type = _content_type(request)
        if content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            if content_type == STRATEGIC_MERGE_PATCH and resource not in self._builtins:
                raise ApiError.unsupported_media_type(
                    content_type
                )  # as for custom resources in a real cluster
            if not isinstance(request.data, Mapping):
                raise ApiError.bad_request("a merge patch must be a JSON object")
            patched = merge_patch(copy.deepcopy(current), request.data)
        elif content_type == JSON_PATCH:
            if not isinstance(request.data, list):
                raise ApiError.bad_request("a JSON patch must be a JSON array of operations")
            try:
                patched = jsonpatch.apply_patch(copy.deepcopy(current), request.data)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
                raise ApiError.invalid(resource, name, f"the JSON patch failed: {error}") from None
        else:
            raise ApiError.unsupported_media_type(content_type)
        if not isinstance(patched, dict):
            raise ApiError.invalid(resource, name, "the patch did not produce an object")

        # As the API server does: the patched object's resourceVersion, if any, must be the stored one.
        _check_resource_version(key, current, (patched.get("metadata") or {}).get("resourceVersion"))
        if request.subresource == "status":
            candidate = _with_status_of(current, patched)
        else:
            candidate = _with_server_metadata(patched, current)
            candidate["apiVersion"], candidate["kind"] = current["apiVersion"], current["kind"]
        return self._write(request, key, current, candidate)

    def _write(
        self, request: kmock.Request, key: ObjectKey, current: Body, candidate: Body
    ) -> aiohttp.web.Response:
        """Store a replaced or patched object unless nothing changed; drop it once its finalizers are gone."""
        if request.subresource is None:
            self._apply_type_rules(key[0], candidate)
            if _spec_of(candidate) != _spec_of(current):
                candidate["metadata"]["generation"] = current["metadata"].get("generation", 0) + 1
        if candidate == current:
            return aiohttp.web.json_response(current)
        dry_run = _is_dry_run(request)
        metadata = candidate["metadata"]
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            return aiohttp.web.json_response(self._remove(key, current, candidate, dry_run=dry_run))
        return aiohttp.web.json_response(self._update(key, current, candidate, dry_run=dry_run))

    def _delete(self, request: kmock.Request, key: ObjectKey) -> aiohttp.web.Response:
        resource, _, name = key
        current = self._existing(key)
        options = request.data if isinstance(request.data, Mapping) else {}
        preconditions = options.get("preconditions") or {}
        for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            expected = preconditions.get(field)
            if expected not in (None, current["metadata"][field]):
                why = f"Precondition failed: {label} in precondition: {expected}, "
                why += f"{label} in object meta: {current['metadata'][field]}"
                raise ApiError.conflict(resource, name, why)

        final = self._delete_object(key, current, dry_run=_is_dry_run(request))
        if final["metadata"].get("finalizers") or resource not in self._builtins:
            return aiohttp.web.json_response(final)  # what is left of it; custom objects answer so anyway
        details = {**_details(resource, name), "uid": current["metadata"]["uid"]}
        success = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }
        return aiohttp.web.json_response(success)

    def _delete_collection(self, request: kmock.Request, resource: kmock.resource) -> aiohttp.web.Response:
        dry_run = _is_dry_run(request)
        selected = self._select(request, resource)
        deleted = [self._delete_object(key, obj, dry_run=dry_run) for key, obj in selected]
        metadata = {"resourceVersion": str(self._revision)}
        return aiohttp.web.json_response(self._list_body(resource, deleted, metadata))

    def _delete_object(self, key: ObjectKey, current: Body, *, dry_run: bool) -> Body:
        """Delete an object now, or mark it for deletion while it has finalizers; return its last state."""
        resource, _, name = key
        if resource == NAMESPACES:
            for inner_key, inner in self._objects_in(name):
                self._remove(inner_key, inner, inner, dry_run=dry_run)
        if current["metadata"].get("finalizers"):
            if current["metadata"].get("deletionTimestamp"):
                return current
            marked = copy.deepcopy(current)
            marked["metadata"]["deletionTimestamp"] = _now()
            marked["metadata"]["generation"] = current["metadata"].get("generation", 0) + 1
            return self._update(key, current, marked, dry_run=dry_run)
        return self._remove(key, current, current, dry_run=dry_run)

    # ------------------------------------------------------------------------- the store

    def _stored(self, key: ObjectKey) -> Body | None:
        if key not in self._objects:
            return None
        obj = self._objects[key]
        return None if obj.deleted else obj.raw

    def _existing(self, key: ObjectKey) -> Body:
        current = self._stored(key)
        if current is None:
            raise ApiError.not_found(key[0], key[2])
        return current

    def _select(self, request: kmock.Request, resource: kmock.resource) -> list[tuple[ObjectKey, Body]]:
        """The objects that a list, watch or delete-collection request addresses, in the server's order."""
        selector = self._selector(request, resource)
        found = [
            (key, obj.raw)
            for key, obj in self._objects.items()
            if key[0] == resource
            and (request.namespace is None or key[1] == request.namespace)
            and not obj.deleted
            and selector.matches(obj.raw)
        ]
        return sorted(found, key=lambda item: _sort_key(item[1]))

    def _objects_in(self, namespace: str) -> list[tuple[ObjectKey, Body]]:
        return [
            (key, obj.raw) for key, obj in self._objects.items() if key[1] == namespace and not obj.deleted
        ]

    def _insert(self, key: ObjectKey, obj: Body, *, dry_run: bool) -> Body:
        if dry_run:
            return obj
        obj["metadata"]["resourceVersion"] = self._next_revision()
        self._record(key, obj)
        self._publish(key, "ADDED", None, obj)
        return obj

    def _update(self, key: ObjectKey, current: Body, obj: Body, *, dry_run: bool) -> Body:
        if dry_run:
            return obj
        obj["metadata"]["resourceVersion"] = self._next_revision()
        self._record(key, obj)
        self._publish(key, "MODIFIED", current, obj)
        return obj

    def _remove(self, key: ObjectKey, current: Body, last: Body, *, dry_run: bool) -> Body:
        final = copy.deepcopy(last)
        if dry_run:
            return final
        final["metadata"]["resourceVersion"] = self._next_revision()
        self._record(key, None)
        self._publish(key, "DELETED", current, final)
        return final

    def _record(self, key: ObjectKey, version: Body | None) -> None:
        """Add a version (None: deleted) to the object's history in kmock's store, keeping the latest ones."""
        if key not in self._objects:
            self._objects[key] = [version]
            return
        history = self._objects[key].history
        history.append(version)
        del history[: max(0, len(history) - self.history_limit)]

    def _next_revision(self) -> str:
        self._revision += 1
        return str(self._revision)

    def _publish(self, key: ObjectKey, kind: EventType, before: Body | None, after: Body) -> None:
        event = Event(self._revision, key, kind, before, after)
        if len(self._events) == self._events.maxlen:
            self._compacted_revision = self._events[0].revision
        self._events.append(event)
        for watcher in self._watchers:
            watcher.queue.put_nowait(event)

    # ------------------------------------------------------------------------------- rules

    def _new_object(self, resource: kmock.resource, namespace: str | None, name: str, body: Body) -> Body:
        api_version, kind = self._type_of(resource, body)
        metadata: Body = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
        metadata.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=_now())
        for key, value in (body.get("metadata") or {}).items():
            if key not in SERVER_METADATA and key not in IDENTITY_METADATA:
                metadata[key] = copy.deepcopy(value)
        rest = {
            key: copy.deepcopy(value)
            for key, value in body.items()
            if key not in ("apiVersion", "kind", "metadata")
        }
        obj: Body = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **rest}
        self._apply_type_rules(resource, obj)
        return obj

    def _apply_type_rules(self, resource: kmock.resource, obj: Body) -> None:
        """What the real API server does to these types on every write."""
        if resource == SECRETS:
            string_data = obj.pop("stringData", None) or {}
            encoded = {
                key: base64.b64encode(str(value).encode()).decode() for key, value in string_data.items()
            }
            if encoded:
                obj["data"] = {**(obj.get("data") or {}), **encoded}
            obj.setdefault("type", "Opaque")
        elif resource == NAMESPACES:
            metadata = obj["metadata"]
            metadata["labels"] = {
                **(metadata.get("labels") or {}),
                "kubernetes.io/metadata.name": metadata["name"],
            }
            obj.setdefault("spec", {})
            obj.setdefault("status", {"phase": "Active"})

    def _ensure_namespace(self, name: str, *, dry_run: bool = False) -> None:
        key = (NAMESPACES, None, name)
        if self._stored(key) is None:
            self._insert(key, self._new_object(NAMESPACES, None, name, {}), dry_run=dry_run)

    def _type_of(self, resource: kmock.resource, body: Mapping[str, Any]) -> tuple[str, str]:
        """The apiVersion and kind that an object of this resource has; 400 if the body says otherwise."""
        api_version = _api_version(resource)
        if body.get("apiVersion") not in (None, api_version):
            raise ApiError.bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version "
                f"({api_version})"
            )
        known = self._kind(resource)
        kind = body.get("kind") or known
        if not kind:
            raise ApiError.bad_request(
                f"Object 'Kind' is missing in the body of a {_resource_name(resource)} object"
            )
        if known and kind != known:
            raise ApiError.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({known})"
            )
        return api_version, str(kind)

    def _kind(self, resource: kmock.resource) -> str | None:
        return self.resources[resource].kind if resource in self.resources else None

    def _register(self, resource: kmock.resource, kind: str, *, namespaced: bool) -> None:
        """Make a custom resource known (to discovery and list kinds) when its first object is created."""
        info = self.resources[resource]
        if info.kind is None:
            info.kind = kind
            info.singular = kind.lower()
            info.namespaced = namespaced
            info.verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
            info.subresources = {"status"}

    def _write_namespace(
        self, request: kmock.Request, resource: kmock.resource, metadata: Mapping[str, Any]
    ) -> str | None:
        """The namespace of an object to create: the URL's; 400 if the body names another one."""
        if request.namespace is None:
            if resource in self.resources and self.resources[resource].namespaced:
                raise ApiError.method_not_allowed()  # a namespaced object, posted without a namespace
            return None
        if metadata.get("namespace") not in (None, request.namespace):
            raise ApiError.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        return request.namespace

    def _generate_name(self, resource: kmock.resource, namespace: str | None, prefix: str | None) -> str:
        if not prefix:
            raise ApiError.invalid(
                resource, "", "metadata.name: Required value: name or generateName is required"
            )
        name = prefix
        for _ in range(GENERATED_NAME_ATTEMPTS):
            name = prefix + "".join(
                secrets.choice(GENERATED_NAME_ALPHABET) for _ in range(GENERATED_NAME_LENGTH)
            )
            if self._stored((resource, namespace, name)) is None:
                return name
        raise ApiError.already_exists(resource, name)

    def _selector(self, request: kmock.Request, resource: kmock.resource) -> Selector:
        fields = COMMON_FIELD_LABELS | EXTRA_FIELD_LABELS.get(resource, frozenset())
        field_requirements = parse_field_selector(request.params.get("fieldSelector", ""), fields)
        if request.name is not None:  # a watch on one object
            field_requirements += (FieldRequirement("metadata.name", True, request.name),)
        return Selector(parse_label_selector(request.params.get("labelSelector", "")), field_requirements)


# ------------------------------------------------------------------------------ request helpers


@functools.cache
def _bundled_resources() -> bytes:
    """The built-in resources of a real cluster, as kmock ships them (its own loader is deprecated)."""
    return gzip.decompress(
        importlib.resources.files("kmock._internal").joinpath("resources.json.gz").read_bytes()
    )


async def _parse_request(raw_request: aiohttp.web.BaseRequest, request_id: int) -> kmock.Request:
    """kmock's request parsing, plus the namespace paths that it cannot parse."""
    found = NAMESPACE_PATH.fullmatch(raw_request.path)
    if found is None:
        return await kmock.Request._parse(raw_request, id=request_id)
    body = await raw_request.read()
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    name, subresource = found["name"], found["subresource"]
    method = kmock.method(raw_request.method)
    params = dict(raw_request.query)
    path = kmock_parsing.ParsedPath("", "v1", "namespaces", None, name, subresource)
    return kmock.Request(
        id=request_id,
        raw_request=raw_request,
        method=method,
        url=raw_request.url,
        params=params,
        headers=dict(raw_request.headers),
        cookies=dict(raw_request.cookies),
        body=body,
        text=body.decode("utf-8", "replace"),
        data=data,
        action=kmock_parsing.guess_k8s(path, method, params),
        resource=NAMESPACES,
        namespace=None,
        name=name,
        subresource=subresource,
    )


def _check_resource_version(key: ObjectKey, current: Body, version: Any) -> None:
    """409 Conflict unless the write names no resourceVersion or the stored one."""
    if version not in (None, "", current["metadata"]["resourceVersion"]):
        raise ApiError.conflict(key[0], key[2], STALE_WRITE)


async def _stream_events(watcher: Watcher, response: aiohttp.web.StreamResponse, timeout: int) -> None:
    """Write the watcher's events until the emulator closes it or ``timeout`` seconds (0: none) pass."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout or None):
            while (item := await watcher.queue.get()) is not None:
                if (event := watcher.translate(item)) is not None:
                    await response.write(_encode_event(event))


def _object_body(request: kmock.Request) -> Body:
    if not isinstance(request.data, dict):
        raise ApiError.bad_request("the body of the request must be a JSON object")
    return request.data


def _content_type(request: kmock.Request) -> str:
    for header, value in request.headers.items():
        if header.lower() == "content-type":
            return value.split(";")[0].strip().lower()
    return ""


def _int_param(request: kmock.Request, name: str) -> int:
    text = request.params.get(name, "")
    if not text:
        return 0
    if not text.isdigit():
        raise ApiError.bad_request(f"{name}: invalid value {text!r}: must be a non-negative integer")
    return int(text)


def _resource_version_param(request: kmock.Request) -> int | None:
    """The revision that a watch resumes after, or None to start with the current objects."""
    text = request.params.get("resourceVersion", "")
    if text in ("", "0"):
        return None
    if not text.isdigit():
        raise ApiError.bad_request(f"resourceVersion: invalid value {text!r}")
    return int(text)


def _is_dry_run(request: kmock.Request) -> bool:
    return bool(request.params.get("dryRun"))


def _sort_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj["metadata"]
    return metadata.get("namespace") or "", metadata["name"]


def _encode_continue(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(namespace), str(name)
    except (ValueError, TypeError):
        raise ApiError.bad_request(f"continue key is not valid: {token!r}") from None


def _encode_event(event: Mapping[str, Any]) -> bytes:
    return json.dumps(event).encode() + b"\n"


def _api_version(resource: kmock.resource) -> str:
    return f"{resource.group}/{resource.version}" if resource.group else str(resource.version)


def _spec_of(obj: Mapping[str, Any]) -> Body:
    """What a change of bumps the generation: everything but metadata and status."""
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


def _with_status_of(current: Body, source: Mapping[str, Any]) -> Body:
    """The stored object with the status of ``source``: what a write to /status may change."""
    candidate = copy.deepcopy(current)
    if "status" in source:
        candidate["status"] = copy.deepcopy(source["status"])
    else:
        candidate.pop("status", None)
    return candidate


def _with_server_metadata(candidate: Body, current: Body) -> Body:
    """``candidate`` with the server-owned and identifying metadata of the stored object."""
    metadata = {
        key: value
        for key, value in (candidate.get("metadata") or {}).items()
        if key not in SERVER_METADATA and key not in IDENTITY_METADATA
    }
    for key in (*IDENTITY_METADATA, *SERVER_METADATA):
        if key in current["metadata"]:
            metadata[key] = current["metadata"][key]
    return {**copy.deepcopy(candidate), "metadata": metadata}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------- server


class KubeServer:
    """A :class:`ClusterEmulator` served over plain HTTP on loopback, from its own thread and event loop.

    Synchronous code (tests, the devstack launcher) starts it, points the official client at
    :meth:`write_kubeconfig`, and stops it; ``with KubeServer.start() as kube: ...`` does both.

    It serves with aiohttp's low-level server rather than ``kmock.Server``: that one also swaps
    aiohttp's resolver process-wide and must be stopped in reverse order of starting, which
    several servers in one process (one per test, one for the world) cannot promise.
    """

    STARTUP_TIMEOUT = 10.0
    SHUTDOWN_TIMEOUT = 10.0

    def __init__(
        self, emulator: ClusterEmulator | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        if not _is_loopback(host):
            raise ValueError(
                f"the Kubernetes emulator has no authentication: serve it on loopback, not {host!r}"
            )
        self._emulator = emulator if emulator is not None else ClusterEmulator()
        self._host = host
        self._port = port
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @classmethod
    def start(
        cls, host: str = "127.0.0.1", port: int = 0, *, emulator: ClusterEmulator | None = None
    ) -> Self:
        """Serve ``emulator`` (a new one by default) on ``host:port``; port 0 picks a free port."""
        server = cls(emulator, host=host, port=port)
        server._start()
        return server

    @property
    def url(self) -> str:
        """The API server's URL, e.g. ``http://127.0.0.1:40123``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def emulator(self) -> ClusterEmulator:
        """The served emulator: read its objects in tests (``emulator.objects[resource, ns, name]``)."""
        return self._emulator

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig for this server (plain HTTP, no credentials) and return its path."""
        path = Path(path)
        name = "flexplane-devstack"
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
            "current-context": name,
            "preferences": {},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(kubeconfig, sort_keys=False))
        path.chmod(0o600)
        return path

    def stop(self) -> None:
        """End the open watches, stop serving, and join the thread. Stopping twice does nothing."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                self._loop.call_soon_threadsafe(self._stopping.set)
        thread.join(self.SHUTDOWN_TIMEOUT)
        if thread.is_alive():
            raise RuntimeError(
                f"the Kubernetes emulator at {self.url} did not stop in {self.SHUTDOWN_TIMEOUT}s"
            )
        if self._failure is not None:
            raise RuntimeError(f"the Kubernetes emulator at {self.url} failed") from self._failure

    def __enter__(self) -> Self:
        if self._thread is None:
            self._start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<KubeServer {self.url}>"

    def _start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the Kubernetes emulator is already running")
        self._ready.clear()
        self._failure = None
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve(),), name="kube-emulator", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(self.STARTUP_TIMEOUT):
            self.stop()
            raise RuntimeError(f"the Kubernetes emulator did not start in {self.STARTUP_TIMEOUT}s")
        if self._failure is not None:
            failure, self._failure = self._failure, None
            self.stop()
            raise RuntimeError(
                f"the Kubernetes emulator could not serve on {self._host}:{self._port}"
            ) from failure

    async def _serve(self) -> None:
        """The thread's whole life: serve until stop() sets the event, then shut down cleanly."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            async with self._emulator:
                # handler_cancellation: a watch whose client went away ends at once. No access log:
                # the emulator keeps the requests, for tests to assert on.
                server = aiohttp.web.Server(self._emulator, handler_cancellation=True, access_log=None)
                runner = aiohttp.web.ServerRunner(server, shutdown_timeout=1.0)
                await runner.setup()
                try:
                    site = aiohttp.web.TCPSite(runner, self._host, self._port)
                    await site.start()
                    self._port = runner.addresses[0][1]
                    self._ready.set()
                    await self._stopping.wait()
                    self._emulator.close_watches()
                finally:
                    await runner.cleanup()
        except Exception as error:  # reported by start() or stop(), in the caller's thread
            self._failure = error
        finally:
            self._ready.set()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
