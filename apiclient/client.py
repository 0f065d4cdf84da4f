"""``FlexPlane``: the generated operations (apiclient/generated/) with what a script needs around them.

The generated client knows the operations and their types; this layer adds what every script would
otherwise write again: authentication (``apiclient.auth``), the VDC a client acts in, every failure the
API answers raised as a typed exception (``apiclient.errors``: a mutation whose payload carries
``errors`` raises too, instead of returning the payload for the caller to check), ``follow`` for a
mutation's task and ``paged`` for a connection.

    from apiclient import FlexPlane, QuotaExceeded

    with FlexPlane("https://flexplane.example.com", token, vdc="demo") as api:
        created = api.create_virtual_machine(CreateVirtualMachineInput(name="web-3", ...))
        api.follow(created.create_virtual_machine.task)
        for vm in api.all_virtual_machines():
            print(vm.name, vm.status)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import httpx

from apiclient.auth import BearerToken
from apiclient.errors import NotFound, ProtocolError, TaskFailed, TaskTimedOut, from_graphql, from_payload
from apiclient.generated.client import GeneratedClient
from apiclient.generated.enums import TaskStatus
from apiclient.generated.input_types import VirtualMachineFilter
from apiclient.generated.task import TaskTask
from apiclient.generated.virtual_machines import VirtualMachinesVirtualMachinesEdgesNode

VDC_HEADER = "FlexPlane-VDC-ID"
# A connection's page when the caller does not say (the API's own default is 50).
PAGE_SIZE = 50

Node = TypeVar("Node", covariant=True)


class PageInfo(Protocol):
    @property
    def has_next_page(self) -> bool: ...

    @property
    def end_cursor(self) -> str | None: ...


class Edge(Protocol[Node]):
    @property
    def node(self) -> Node: ...


class Connection(Protocol[Node]):
    """A page of a Relay connection, as the generated models carry one (``virtualMachines``)."""

    @property
    def edges(self) -> Sequence[Edge[Node]]: ...

    @property
    def page_info(self) -> PageInfo: ...


class TaskRef(Protocol):
    """Anything with a task's id: a mutation's ``task``, a listing's, ``task(id)``'s."""

    @property
    def id(self) -> str: ...


class FlexPlane(GeneratedClient):
    """The API at ``url`` (the orchestrator's origin; its endpoint is ``/graphql``), as whoever ``auth``
    says: a bearer token, or an ``httpx.Auth`` such as ``ServiceAccountKey``. With ``vdc``, every call
    acts in that VDC (the ``FlexPlane-VDC-ID`` header), as the API requires of VDC-scoped operations.

    ``transport`` replaces the network (an in-process app in tests: ``httpx.WSGITransport``);
    ``verify`` is httpx's (an ``ssl.SSLContext`` trusting the platform's CA, or ``False``)."""

    def __init__(
        self,
        url: str,
        auth: httpx.Auth | str,
        *,
        vdc: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        verify: Any = True,
        poll_interval: float = 1.0,
    ) -> None:
        http = httpx.Client(
            auth=BearerToken(auth) if isinstance(auth, str) else auth,
            headers={VDC_HEADER: vdc} if vdc else {},
            timeout=timeout,
            transport=transport,
            verify=verify,
        )
        super().__init__(url=f"{url.rstrip('/')}/graphql", http_client=http)
        self.acting_in = vdc
        self.poll_interval = poll_interval

    def close(self) -> None:
        self.http_client.close()

    def get_data(self, response: httpx.Response) -> dict[str, Any]:
        """The answer's data, or the typed exception of its errors: top-level ones (with HTTP 401 and 403,
        which carry them too) and a mutation payload's ``errors``."""
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not ("data" in body or "errors" in body):
            raise ProtocolError(f"HTTP {response.status_code} from {response.url}: not an answer of the API")
        data = body.get("data")
        if body.get("errors"):
            raise from_graphql(body["errors"], data)
        if not response.is_success or not isinstance(data, dict):
            raise ProtocolError(f"HTTP {response.status_code} from {response.url} without data or errors")
        # Every mutation's payload has errors, and no query's object does (tests/apiclient checks it).
        for payload in data.values():
            if isinstance(payload, dict) and payload.get("errors"):
                raise from_payload(payload)
        return data

    def follow(
        self,
        task: TaskRef | str,
        *,
        timeout: float = 900.0,
        seen: Callable[[TaskTask], None] | None = None,
    ) -> TaskTask:
        """Wait for a task to end, reading it every ``poll_interval`` seconds (the API offers no
        subscription for it); returns its final state (with Proxmox's log), raises ``TaskFailed`` if it
        failed and ``TaskTimedOut`` if it still runs after ``timeout`` seconds. ``seen`` is told each state
        read (the CLI's progress bar)."""
        task_id = task if isinstance(task, str) else task.id
        deadline = time.monotonic() + timeout
        while True:
            current = self.task(task_id).task
            if current is None:
                raise NotFound(f"task {task_id} not found")
            if seen is not None:
                seen(current)
            if current.status == TaskStatus.SUCCEEDED:
                return current
            if current.status == TaskStatus.FAILED:
                raise TaskFailed(current)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TaskTimedOut(current, timeout)
            time.sleep(min(self.poll_interval, remaining))

    @staticmethod
    def paged(page: Callable[[str | None], Connection[Node]]) -> Iterator[Node]:
        """Every node of a connection, page after page: ``page(after)`` asks for the page after the
        cursor ``after`` (``None``: the first). Pages are asked for as the iteration reaches them."""
        after: str | None = None
        while True:
            connection = page(after)
            for edge in connection.edges:
                yield edge.node
            info = connection.page_info
            if not info.has_next_page:
                return
            if info.end_cursor is None or info.end_cursor == after:
                raise ProtocolError(f"a page says more follow but gives no new cursor (after {after!r})")
            after = info.end_cursor

    def all_virtual_machines(
        self, filter_: VirtualMachineFilter | None = None, *, page_size: int = PAGE_SIZE
    ) -> Iterator[VirtualMachinesVirtualMachinesEdgesNode]:
        """Every VM the client sees (in its VDC, else all of the caller's), by name, ``page_size`` a call."""

        def page(after: str | None) -> Connection[VirtualMachinesVirtualMachinesEdgesNode]:
            return self.virtual_machines(first=page_size, after=after, filter_=filter_).virtual_machines

        return self.paged(page)
