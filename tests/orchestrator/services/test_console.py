"""Console tickets in this process, against the world's management cluster and the seeded running VM web-1
of VDC demo: a ticket opens one console, however many requests (or replicas) try it, and the record of a
spent ticket goes once the ticket can no longer be used."""

from __future__ import annotations

import datetime
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings

from orchestrator.errors import FlexPlaneError
from orchestrator.services import console
from orchestrator.services.context import Context
from orchestrator.sources.kube import KubeSource
from orchestrator.sources.kube_objects import KIND_LABEL, Lease
from tests.orchestrator.services.conftest import MakeContext

WEB_1 = "zone-a/100"  # devstack/seed.py: a running VM of VDC demo


def alice(make_context: MakeContext) -> Context:
    """A new request of a member of demo (each request its own context, as each websocket has)."""
    return make_context("USER", "vdc:demo", subject="console-tester")


def test_a_ticket_opens_one_console_and_a_second_open_with_it_is_refused_saying_so(
    make_context: MakeContext,
) -> None:
    ticket = console.issue_ticket(alice(make_context), WEB_1)

    target, slots = console.open_console(
        alice(make_context), console.redeem_ticket(alice(make_context).principal, ticket)
    )
    slots.release()  # the first console ended: its slots are free again, its ticket stays spent
    assert target.vm.id == WEB_1

    redeemed = console.redeem_ticket(alice(make_context).principal, ticket)  # genuine and fresh still
    with pytest.raises(console.TicketUsed) as refused:
        console.open_console(alice(make_context), redeemed)
    assert refused.value.message == (
        "this console ticket was used already: a ticket opens one console; reload the page to open another"
    )
    # A new ticket (the page reloaded) opens the console again.
    fresh = console.issue_ticket(alice(make_context), WEB_1)
    _, again = console.open_console(
        alice(make_context), console.redeem_ticket(alice(make_context).principal, fresh)
    )
    again.release()


def test_of_four_opens_at_once_with_one_ticket_exactly_one_opens_a_console(
    make_context: MakeContext,
) -> None:
    ticket = console.issue_ticket(alice(make_context), WEB_1)
    start = threading.Barrier(4)

    def open_once(_n: int) -> str:
        ctx = alice(make_context)
        redeemed = console.redeem_ticket(ctx.principal, ticket)
        start.wait()
        try:
            _target, slots = console.open_console(ctx, redeemed)
        except FlexPlaneError as exc:
            return type(exc).__name__
        slots.release()
        return "opened"

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = sorted(pool.map(open_once, range(4)))
    assert outcomes == ["TicketUsed", "TicketUsed", "TicketUsed", "opened"]


def test_a_spent_ticket_is_a_lease_kept_past_the_tickets_life_and_removed_after_it(
    wired: KubeSource, make_context: MakeContext
) -> None:
    long_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    stale = Lease(f"{console.SPENT_PREFIX}{'0' * 32}", "a-replica-that-died", long_ago, long_ago, 90, 0)
    wired.write_lease(stale, None, labels={KIND_LABEL: console.SPENT_KIND})

    ticket = console.redeem_ticket(
        alice(make_context).principal, console.issue_ticket(alice(make_context), WEB_1)
    )
    _, slots = console.open_console(alice(make_context), ticket)
    slots.release()

    record = wired.get_lease(f"fp-console-ticket-{ticket.id}")
    assert record is not None
    assert record.holder == "console-tester"
    keep = math.ceil(settings.FLEXPLANE_CONSOLE_TICKET_TTL + console.SPENT_MARGIN)
    assert record.duration_seconds == keep  # held from its use, past the ticket's whole life
    assert record.renew_time is not None
    assert record.renew_time > datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=30)
    labelled = {lease.name for lease in wired.list_leases(f"{KIND_LABEL}={console.SPENT_KIND}")}
    assert record.name in labelled
    assert stale.name not in labelled  # over: deleted by this spend
    assert wired.get_lease(stale.name) is None
