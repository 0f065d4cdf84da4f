"""The agent's server lets its callers' keepalive pings through.

A gRPC server sends a caller away (GOAWAY ``too_many_pings``) at its third ping sooner than the server
allows, and gRPC ignores a channel argument it does not know. The agent once named its interval with a key
gRPC does not read (``grpc.http2.min_recv_ping_interval_without_data_ms``), so it allowed one ping in five
minutes (gRPC's default), and every quiet channel of the orchestrator (pinging every 30 s) was sent away
after 90 s, a console open on a still screen among them.
"""

from __future__ import annotations

from agent.server import SERVER_OPTIONS
from agentclient.pool import KEEPALIVE_TIME_MS

# gRPC's key (GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS) for the shortest interval between a
# caller's pings that a server allows.
MIN_PING_INTERVAL = "grpc.http2.min_ping_interval_without_data_ms"


def test_the_agent_allows_its_callers_keepalive_pings_under_grpcs_own_key() -> None:
    options = dict(SERVER_OPTIONS)

    assert options[MIN_PING_INTERVAL] <= KEEPALIVE_TIME_MS
    assert [key for key in options if "ping_interval" in key] == [MIN_PING_INTERVAL]
