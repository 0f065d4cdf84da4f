"""The services reach the management cluster and Proxmox through the request's ``Context`` (or a source
handed in), never through the process's instances: so every public service runs on the tests' in-memory
stand-ins as it runs on the real systems. Only ``services.context`` names the process's sources."""

from __future__ import annotations

import ast
from pathlib import Path

import orchestrator.services

SERVICES = Path(orchestrator.services.__file__).parent
# The process's instances; and the clients a service would make of its own (their types it may name).
PROCESS_SOURCES = {
    "orchestrator.sources.kube": {"kube"},
    "orchestrator.sources.proxmox": {"proxmox"},
    "orchestrator.sources.clusterapi": {"clusterapi"},
    "orchestrator.sources.zitadel": {"zitadel", "require_zitadel"},
}
CLIENTS = {"KubeSource", "ProxmoxSource", "ZoneApi", "ClusterApiSource", "ZitadelSource"}
ALLOWED = {SERVICES / "context.py"}


def reaches_process_sources(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module in PROCESS_SOURCES:
            names = {alias.name for alias in node.names} & PROCESS_SOURCES[node.module]
            found += [f"{path.relative_to(SERVICES.parent.parent)}:{node.lineno} {n}" for n in sorted(names)]
        elif isinstance(node, ast.ImportFrom) and node.module == "orchestrator.sources":
            modules = {alias.name for alias in node.names} & {"kube", "proxmox", "clusterapi", "zitadel"}
            found += [
                f"{path.relative_to(SERVICES.parent.parent)}:{node.lineno} {m}" for m in sorted(modules)
            ]
    return found


def test_no_service_but_the_context_reaches_the_process_sources() -> None:
    offenders = [
        line
        for path in sorted(SERVICES.rglob("*.py"))
        if path not in ALLOWED
        for line in reaches_process_sources(path)
    ]
    assert offenders == []


def test_the_check_sees_the_one_module_allowed_to_reach_them() -> None:
    found = reaches_process_sources(SERVICES / "context.py")
    assert sorted(line.rpartition(" ")[2] for line in found) == ["clusterapi", "kube", "proxmox", "zitadel"]
