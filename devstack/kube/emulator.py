"""The emulator: kmock's Kubernetes emulator, serving its objects as the real API server does.

This module routes requests and carries out each verb (list, create, replace, patch, delete,
delete-collection; watches are in :mod:`devstack.kube.watches`) with the rules of the other modules:
the store for resourceVersions and conflicts, the selectors, the patches, the objects' rules.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import aiohttp.web
import attrs
import kmock

# Private: kmock exports no name for the wrapper its reactions raise when a streamed response fails
# after its headers went out; a handler that replaces kmock's, as this one does, must unwrap it.
from kmock._internal.rendering import StreamingError

from devstack.kube import crds, discovery
from devstack.kube.crds import CRDS, Served
from devstack.kube.errors import ApiError, details
from devstack.kube.objects import (
    NAMESPACES,
    SYSTEM_NAMESPACES,
    Body,
    ObjectKey,
    api_version,
    apply_type_rules,
    generated_name,
    now,
    resource_name,
    sort_key,
    spec_of,
    user_metadata,
    with_server_metadata,
    with_status_of,
)
from devstack.kube.patches import apply_patch
from devstack.kube.request import (
    content_type,
    decode_continue,
    encode_continue,
    int_param,
    is_dry_run,
    object_body,
    parse_request,
)
from devstack.kube.selectors import Selector, selector_of
from devstack.kube.store import Event, ObjectStore, check_preconditions, check_resource_version
from devstack.kube.watches import serve_watch

GENERATED_NAME_ATTEMPTS = 8


@attrs.define(kw_only=True)
class ClusterEmulator(kmock.KubernetesEmulator):
    """kmock's Kubernetes emulator, made to behave as the real API server (see :mod:`devstack.kube`).

    Objects live in kmock's store (``emulator.objects[resource, namespace, name]``, with their
    history), so tests can read them; writes go through the API. Handlers run on the server's
    event loop without awaiting between reading and writing, so every write is atomic.

    Neither parent's request routing is used: ``KubernetesEmulator`` changes the state before
    dispatching and serves objects through shared kmock reactions, and ``KubernetesScaffold`` ends
    its routes with a catch-all 404. This class keeps kmock's discovery documents, consults any
    reaction a test adds, and serves objects itself.
    """

    # How many writes a watch can resume after, with resourceVersion, before it is told 410 Gone.
    event_log_limit: int = 10_000
    # How many requests kmock keeps for assertions (``list(emulator)``, ``emulator["get"]``…).
    request_log_limit: int = 10_000
    # How many past versions of each object the store keeps.
    history_limit: int = 100

    _store: ObjectStore = attrs.field(init=False)
    _request_ids: Iterator[int] = attrs.field(factory=itertools.count, init=False)
    _builtins: frozenset[kmock.resource] = attrs.field(factory=frozenset, init=False)
    # The custom resources that the stored CRDs declare, as served.
    _custom: dict[kmock.resource, Served] = attrs.field(factory=dict, init=False)
    # How many reactions kmock holds once discovery's are in: more means a test added its own.
    _own_reactions: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        # The parents' hooks only register routes; see the class docstring for why they do not run.
        self._store = ObjectStore(
            self.objects, event_log_limit=self.event_log_limit, history_limit=self.history_limit
        )
        self._builtins = discovery.load_builtin_resources(self.resources)
        discovery.add_discovery_routes(self)
        self._own_reactions = len(self._payloads)
        for namespace in SYSTEM_NAMESPACES:
            self._ensure_namespace(namespace)

    @property
    def revision(self) -> int:
        """The cluster's current resourceVersion: the number of the latest write."""
        return self._store.revision

    def snapshot(self) -> bytes:
        """Every object stored, as JSON: what an etcd snapshot of this API server would hold (the
        hosted control plane's stand-in takes and restores its tenants' etcd snapshots so)."""
        items = [
            {
                "resource": [key[0].group, key[0].version, key[0].plural],
                "key": [key[1], key[2]],
                "object": obj.raw,
            }
            for key, obj in self.objects.items()
            if not obj.deleted
        ]
        return json.dumps({"objects": items}, sort_keys=True).encode()

    def load(self, snapshot: bytes) -> None:
        """Store the objects of a :meth:`snapshot` as they were, over any of the same name: an etcd restored
        from it. Call before serving, or on the server's event loop."""
        for item in json.loads(snapshot)["objects"]:
            key = (kmock.resource(*item["resource"]), item["key"][0], item["key"][1])
            current = self._store.get(key)
            body = copy.deepcopy(item["object"])
            if current is None:
                self._store.insert(key, body, dry_run=False)
            elif current != body:
                self._store.update(key, current, body, dry_run=False)

    def events(self) -> list[Event]:
        """The writes still in the event log, oldest first (what a watch from an old version would get):
        for a test that asserts the order and content of writes, not only their end."""
        return list(self._store.events())

    def close_watches(self) -> None:
        """End every open watch stream (call on the server's event loop, e.g. before it stops)."""
        self._store.close_watches()

    def install_crds(self, definitions: Iterable[Mapping[str, Any]]) -> None:
        """Create each CustomResourceDefinition, or replace its spec if it exists: ``kubectl apply``'s effect.

        Call on the server's event loop (:meth:`KubeServer.install_crds` does), or before serving.
        """
        for definition in definitions:
            name = definition["metadata"]["name"]
            key = (CRDS, None, name)
            current = self._store.get(key)
            if current is None:
                self._create_object(CRDS, None, dict(definition), dry_run=False)
                continue
            candidate = with_server_metadata(
                {**copy.deepcopy(current), "spec": copy.deepcopy(definition["spec"])}, current
            )
            self._store_write(None, key, current, candidate, dry_run=False)

    # ------------------------------------------------------------------------------ dispatch

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """Serve one HTTP request: the aiohttp handler.

        It replaces kmock's, which cannot parse namespace paths, keeps every request forever, and
        numbers requests by their count (which a bounded log would repeat). It keeps the same
        protected state of kmock's handler (the request log, the errors of the entered contexts)
        and reports errors with its protected renderers: kmock has no public hooks for them.
        """
        raw_response: aiohttp.web.StreamResponse | None = None
        try:
            request = await parse_request(raw_request, next(self._request_ids))
            self._requests.append(request)
            if len(self._requests) > self.request_log_limit:
                del self._requests[: len(self._requests) - self.request_log_limit]
            try:
                return await self._handle(request)
            except StreamingError as error:  # a reaction's stream failed mid-way
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
        resource = request.resource
        # kmock's dispatch applies every reaction's filters to every request (about 15 ms a request here,
        # as much as the rest of a listing's way through the stack), where a real API server answers a
        # small list in a few. Unless a test added reactions of its own, objects and discovery are served
        # straight. `_payloads` is kmock's protected list of reactions: it has no public count of them.
        if len(self._payloads) > self._own_reactions:
            with contextlib.suppress(NotImplementedError):  # raised when no reaction matches
                # kmock's dispatch over the reactions (those a test added, then discovery), skipping
                # KubernetesEmulator's, which would change the objects as kmock does.
                return await super(kmock.KubernetesEmulator, self)._handle(request)
        try:
            if resource is None or resource.plural is None:
                return await self._serve_discovery(request)
            return await self._serve_objects(request, resource)
        except ApiError as error:
            return error.response()

    async def _serve_discovery(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        if discovery.is_health_check(request):
            return aiohttp.web.Response(text="ok")  # as a healthy API server answers its probes
        try:
            document = await discovery.answer(self, request)
        except kmock.KubernetesError as error:  # e.g. a group/version no resource is served in
            return await self._render_error(error)
        if document is None:
            raise ApiError.no_such_path()
        return aiohttp.web.json_response(document)

    async def _serve_objects(
        self, request: kmock.Request, resource: kmock.resource
    ) -> aiohttp.web.StreamResponse:
        served = self._served(resource)
        if request.namespace is not None and not served.namespaced:
            raise ApiError.no_such_path()  # a cluster-wide resource has no namespaced path
        if request.subresource is not None and request.subresource not in served.subresources:
            raise ApiError.no_such_path()
        if request.subresource == "scale":
            return self._serve_scale(request, served)
        if request.action == kmock.action.WATCH:
            return await serve_watch(self._store, request, resource)
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
                return aiohttp.web.json_response(self._store.existing(key))
            case kmock.method.PUT:
                return self._replace(request, key)
            case kmock.method.PATCH:
                return self._patch(request, key)
            case kmock.method.DELETE if whole:
                return self._delete(request, key)
        raise ApiError.method_not_allowed()

    # --------------------------------------------------------------------------------- reads

    def _list(self, request: kmock.Request, resource: kmock.resource) -> aiohttp.web.Response:
        selected = self._store.select(resource, request.namespace, selector_of(request, resource))
        objects = [obj for _, obj in selected]
        limit = int_param(request, "limit")
        token = request.params.get("continue")
        if token:
            start_after = decode_continue(token)
            objects = [obj for obj in objects if sort_key(obj) > start_after]
        metadata: Body = {"resourceVersion": str(self._store.revision)}
        if limit and len(objects) > limit:
            metadata["continue"] = encode_continue(sort_key(objects[limit - 1]))
            metadata["remainingItemCount"] = len(objects) - limit
            objects = objects[:limit]
        return aiohttp.web.json_response(self._list_body(resource, objects, metadata))

    def _list_body(self, resource: kmock.resource, objects: list[Body], metadata: Body) -> Body:
        kind = self._served(resource).kind
        return {
            "apiVersion": api_version(resource),
            "kind": f"{kind}List" if kind else "List",
            "metadata": metadata,
            "items": objects,
        }

    # -------------------------------------------------------------------------------- writes

    def _create(self, request: kmock.Request, resource: kmock.resource) -> aiohttp.web.Response:
        body = object_body(request)
        namespace = self._write_namespace(request, resource, body.get("metadata") or {})
        created = self._create_object(resource, namespace, body, dry_run=is_dry_run(request))
        return aiohttp.web.json_response(created, status=201)

    def _create_object(
        self, resource: kmock.resource, namespace: str | None, body: Body, *, dry_run: bool
    ) -> Body:
        metadata = body.get("metadata") or {}
        if metadata.get("resourceVersion"):
            raise ApiError.bad_request("resourceVersion should not be set on objects to be created")
        name = metadata.get("name") or self._generate_name(resource, namespace, metadata.get("generateName"))
        key = (resource, namespace, name)
        if self._store.get(key) is not None:
            raise ApiError.already_exists(resource, name)

        obj = self._new_object(resource, namespace, name, body)
        if namespace is not None and self._store.get((NAMESPACES, None, namespace)) is None:
            # As a real API server: nothing is made in a namespace that does not exist.
            raise ApiError.not_found(NAMESPACES, namespace)
        created = self._store.insert(key, obj, dry_run=dry_run)
        if resource == CRDS and not dry_run:
            self._sync_definitions()
        return created

    def _replace(self, request: kmock.Request, key: ObjectKey) -> aiohttp.web.Response:
        resource, namespace, name = key
        current = self._store.existing(key)
        body = object_body(request)
        metadata = body.get("metadata") or {}
        if metadata.get("name") not in (None, name):
            raise ApiError.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})"
            )
        if metadata.get("namespace") not in (None, namespace):
            raise ApiError.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        check_resource_version(key, current, metadata.get("resourceVersion"))
        if request.subresource == "status":
            candidate = with_status_of(current, body)
        else:
            version, kind = self._type_of(resource, body)
            candidate = self._keep_status(
                resource,
                current,
                with_server_metadata({**body, "apiVersion": version, "kind": kind}, current),
            )
        return self._write(request, key, current, candidate)

    def _patch(self, request: kmock.Request, key: ObjectKey) -> aiohttp.web.Response:
        resource, _, name = key
        current = self._store.existing(key)
        patched = apply_patch(
            current,
            request.data,
            content_type(request),
            resource=resource,
            name=name,
            builtin=resource in self._builtins,
        )
        # As the API server does: the patched object's resourceVersion, if any, must be the stored one.
        check_resource_version(key, current, (patched.get("metadata") or {}).get("resourceVersion"))
        if request.subresource == "status":
            candidate = with_status_of(current, patched)
        else:
            candidate = self._keep_status(resource, current, with_server_metadata(patched, current))
            candidate["apiVersion"], candidate["kind"] = current["apiVersion"], current["kind"]
        return self._write(request, key, current, candidate)

    def _write(
        self, request: kmock.Request, key: ObjectKey, current: Body, candidate: Body
    ) -> aiohttp.web.Response:
        """Store a replaced or patched object unless nothing changed; drop it once its finalizers are gone."""
        return aiohttp.web.json_response(
            self._store_write(request.subresource, key, current, candidate, dry_run=is_dry_run(request))
        )

    def _store_write(
        self, subresource: str | None, key: ObjectKey, current: Body, candidate: Body, *, dry_run: bool
    ) -> Body:
        if subresource is None:
            self._apply_rules(key[0], candidate)
        if subresource != "status" and spec_of(candidate) != spec_of(current):
            candidate["metadata"]["generation"] = current["metadata"].get("generation", 0) + 1
        if candidate == current:
            return current
        metadata = candidate["metadata"]
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            written = self._store.remove(key, current, candidate, dry_run=dry_run)
        else:
            written = self._store.update(key, current, candidate, dry_run=dry_run)
        if key[0] == CRDS and not dry_run:
            self._sync_definitions()
        return written

    def _delete(self, request: kmock.Request, key: ObjectKey) -> aiohttp.web.Response:
        resource, _, name = key
        current = self._store.existing(key)
        options = request.data if isinstance(request.data, Mapping) else {}
        check_preconditions(key, current, options.get("preconditions") or {})

        final = self._delete_object(key, current, dry_run=is_dry_run(request))
        if final["metadata"].get("finalizers") or resource not in self._builtins:
            return aiohttp.web.json_response(final)  # what is left of it; custom objects answer so anyway
        success = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {**details(resource, name), "uid": current["metadata"]["uid"]},
        }
        return aiohttp.web.json_response(success)

    def _delete_collection(self, request: kmock.Request, resource: kmock.resource) -> aiohttp.web.Response:
        dry_run = is_dry_run(request)
        selected = self._store.select(resource, request.namespace, selector_of(request, resource))
        deleted = [self._delete_object(key, obj, dry_run=dry_run) for key, obj in selected]
        metadata = {"resourceVersion": str(self._store.revision)}
        return aiohttp.web.json_response(self._list_body(resource, deleted, metadata))

    def _delete_object(self, key: ObjectKey, current: Body, *, dry_run: bool) -> Body:
        """Delete an object now, or mark it for deletion while it has finalizers; return its last state."""
        resource, _, name = key
        if resource == NAMESPACES:
            for inner_key, inner in self._store.in_namespace(name):
                self._store.remove(inner_key, inner, inner, dry_run=dry_run)
        if current["metadata"].get("finalizers"):
            if current["metadata"].get("deletionTimestamp"):
                return current
            marked = copy.deepcopy(current)
            marked["metadata"]["deletionTimestamp"] = now()
            marked["metadata"]["generation"] = current["metadata"].get("generation", 0) + 1
            return self._store.update(key, current, marked, dry_run=dry_run)
        removed = self._store.remove(key, current, current, dry_run=dry_run)
        if resource == CRDS and not dry_run:
            self._sync_definitions()
        return removed

    # ------------------------------------------------------------------- custom resources

    def _get_resources(self) -> list[kmock.resource]:
        """The resources that discovery lists: built in, declared by a CRD, or named by a test's reaction.

        Overrides kmock's protected hook, which adds the resource of every object ever stored, so
        that a resource whose CRD was deleted would stay discoverable. KubernetesScaffold's is the
        one without that (the declared resources and the reactions').
        """
        return kmock.KubernetesScaffold._get_resources(self)

    def _served(self, resource: kmock.resource) -> Served:
        """How the server serves ``resource``; 404 unless it is built in or a CRD declares it."""
        if resource in self._builtins:
            return discovery.builtin(self.resources, resource)
        served = self._custom.get(resource)
        if served is None:
            raise ApiError.no_such_path()
        return served

    def _keep_status(self, resource: kmock.resource, current: Body, candidate: Body) -> Body:
        """A write to a custom object with a status subresource leaves its status as stored."""
        if resource in self._builtins or not self._served(resource).has_status:
            return candidate
        return with_status_of(candidate, current)

    def _apply_rules(self, resource: kmock.resource, obj: Body) -> None:
        apply_type_rules(resource, obj)
        if resource == CRDS:
            crds.check_definition(obj)
            obj["status"] = crds.definition_status(obj, now())

    def _sync_definitions(self) -> None:
        """Serve what the stored CRDs declare: register new resources, forget (and empty) the gone ones."""
        declared: dict[kmock.resource, Served] = {}
        for _, definition in self._store.select(CRDS, None, Selector()):
            declared.update((served.resource, served) for served in crds.served_resources(definition))
        for resource in set(self._custom) - set(declared):
            discovery.unregister(self.resources, resource)
            for key, obj in self._store.select(resource, None, Selector()):
                self._store.remove(key, obj, obj, dry_run=False)
        for resource, served in declared.items():
            if self._custom.get(resource) != served:
                discovery.register(self.resources, served)
        self._custom = declared

    def _serve_scale(self, request: kmock.Request, served: Served) -> aiohttp.web.Response:
        """The scale subresource: an ``autoscaling/v1`` Scale read from and written to the CRD's paths."""
        assert served.scale is not None  # only resources whose CRD declares scale have the subresource
        if request.name is None or request.action == kmock.action.WATCH:
            raise ApiError.no_such_path()
        key = (served.resource, request.namespace, request.name)
        current = self._store.existing(key)
        scale = crds.scale_of(current, served.scale)
        match request.method:
            case kmock.method.GET:
                return aiohttp.web.json_response(scale)
            case kmock.method.PUT:
                wanted = object_body(request)
            case kmock.method.PATCH:
                wanted = apply_patch(
                    scale,
                    request.data,
                    content_type(request),
                    resource=served.resource,
                    name=request.name,
                    builtin=True,
                )
            case _:
                raise ApiError.method_not_allowed()
        check_resource_version(key, current, (wanted.get("metadata") or {}).get("resourceVersion"))
        candidate = crds.with_scale(current, wanted, served.scale, name=request.name)
        written = self._store_write("scale", key, current, candidate, dry_run=is_dry_run(request))
        return aiohttp.web.json_response(crds.scale_of(written, served.scale))

    # ------------------------------------------------------------------------------- rules

    def _new_object(self, resource: kmock.resource, namespace: str | None, name: str, body: Body) -> Body:
        version, kind = self._type_of(resource, body)
        metadata: Body = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
        metadata.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=now())
        metadata.update(user_metadata(body.get("metadata") or {}))
        rest = {
            key: copy.deepcopy(value)
            for key, value in body.items()
            if key not in ("apiVersion", "kind", "metadata")
        }
        obj: Body = {"apiVersion": version, "kind": kind, "metadata": metadata, **rest}
        if resource not in self._builtins and self._served(resource).has_status:
            obj.pop("status", None)  # as for a custom resource with a status subresource: /status sets it
        self._apply_rules(resource, obj)
        return obj

    def _ensure_namespace(self, name: str) -> None:
        key = (NAMESPACES, None, name)
        if self._store.get(key) is None:
            self._store.insert(key, self._new_object(NAMESPACES, None, name, {}), dry_run=False)

    def _type_of(self, resource: kmock.resource, body: Mapping[str, Any]) -> tuple[str, str]:
        """The apiVersion and kind that an object of this resource has; 400 if the body says otherwise."""
        version = api_version(resource)
        if body.get("apiVersion") not in (None, version):
            raise ApiError.bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version "
                f"({version})"
            )
        known = self._served(resource).kind
        kind = body.get("kind") or known
        if not kind:
            raise ApiError.bad_request(
                f"Object 'Kind' is missing in the body of a {resource_name(resource)} object"
            )
        if known and kind != known:
            raise ApiError.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({known})"
            )
        return version, str(kind)

    def _write_namespace(
        self, request: kmock.Request, resource: kmock.resource, metadata: Mapping[str, Any]
    ) -> str | None:
        """The namespace of an object to create: the URL's; 400 if the body names another one."""
        if request.namespace is None:
            if self._served(resource).namespaced:
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
            name = generated_name(prefix)
            if self._store.get((resource, namespace, name)) is None:
                return name
        raise ApiError.already_exists(resource, name)
