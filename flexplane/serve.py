"""``python -m flexplane.serve``: the ASGI app (``flexplane.asgi``) under uvicorn, on every endpoint of one
process: HTTP, a second HTTP port answering only ``/metrics`` (``orchestrator.metrics_http``), and HTTPS
(the devstack's enrollment, the release tests' platform).

    python -m flexplane.serve [--host 0.0.0.0] [--port 8000] [--metrics-port 9100]
                              [--https-port 8443 --certfile cert.pem --keyfile key.pem]
                              [--proxy-headers [--forwarded-allow-ips '*']] [--timeout-keep-alive 5]

uvicorn with httptools and uvloop parses and answers a request in less of the interpreter's time than
daphne (Twisted); Channels' consumers serve the websockets as before. One uvicorn server serves the plain
endpoints (one socket each) and another the HTTPS one (one TLS context a server): both run on one event
loop with the one application, and a SIGTERM or SIGINT stops both gracefully (connections finish, the
websockets are closed). uvicorn's own access log is off: flexplane.logs logs each request once, without
its query string, and uvicorn's other lines go through the app's logging.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
from collections.abc import Iterator, Sequence

import uvicorn
import uvloop

APP = "flexplane.asgi:application"


class _Server(uvicorn.Server):
    """A uvicorn server whose signals are the process's, handled once for every server (uvicorn's own
    handling would let the last server started take them from the others)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _listening(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=2048)


def _config(
    args: argparse.Namespace, certfile: str | None = None, keyfile: str | None = None
) -> uvicorn.Config:
    return uvicorn.Config(
        APP,
        http="httptools",
        ws="websockets-sansio",
        lifespan="off",  # Channels' router serves http and websocket only
        access_log=False,
        log_config=None,  # uvicorn's own lines go through the app's logging (flexplane.logs: JSON lines)
        proxy_headers=args.proxy_headers,
        forwarded_allow_ips=args.forwarded_allow_ips,
        timeout_keep_alive=args.timeout_keep_alive,
        server_header=False,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )


async def serve(args: argparse.Namespace) -> None:
    plain = _config(args) if args.port or args.metrics_port else None
    tls = _config(args, args.certfile, args.keyfile) if args.https_port else None
    # The app is imported (Django set up) before any port listens: a connection that gets in is served.
    for config in filter(None, (plain, tls)):
        config.load()
    servers: list[tuple[_Server, list[socket.socket]]] = []
    if plain is not None:
        ports = (port for port in (args.port, args.metrics_port) if port)
        servers.append((_Server(plain), [_listening(args.host, port) for port in ports]))
    if tls is not None:
        servers.append((_Server(tls), [_listening(args.host, args.https_port)]))

    def stop() -> None:
        for server, _ in servers:
            server.should_exit = True

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    await asyncio.gather(*(server.serve(sockets=sockets) for server, sockets in servers))


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m flexplane.serve",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address every endpoint listens on")
    parser.add_argument("--port", type=int, default=0, help="HTTP (0: none)")
    parser.add_argument("--metrics-port", type=int, default=0, help="HTTP for /metrics only (0: none)")
    parser.add_argument("--https-port", type=int, default=0, help="HTTPS (0: none)")
    parser.add_argument("--certfile", help="the HTTPS endpoint's certificate chain (PEM)")
    parser.add_argument("--keyfile", help="its private key (PEM)")
    parser.add_argument(
        "--proxy-headers",
        action="store_true",
        help="take the client's address and scheme from X-Forwarded-For/-Proto (behind an ingress)",
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        default="*",
        help="the proxies trusted with those headers, comma-separated (default: any, as behind an ingress)",
    )
    parser.add_argument("--timeout-keep-alive", type=int, default=5, help="seconds an idle connection stays")
    args = parser.parse_args(argv)
    if not (args.port or args.https_port):
        parser.error("give --port, --https-port or both")
    if args.https_port and not (args.certfile and args.keyfile):
        parser.error("--https-port needs --certfile and --keyfile")
    if args.metrics_port and args.metrics_port in (args.port, args.https_port):
        parser.error("--metrics-port must differ from the other ports: it answers /metrics only")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    uvloop.run(serve(arguments(argv)))


if __name__ == "__main__":
    main()
