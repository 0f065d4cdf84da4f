"""The orchestrator's side as a pod runs it, for the mesh's namespace tests: run (``python -m
tests.mesh.pod_client identity=address ...``) inside a namespace with no route to the mesh, it takes
the orchestrator's own agent pool (``orchestrator.sources.proxmox``, built from its settings, so
FLEXPLANE_MESH_PROXY decides the proxy) and checks each agent's health: one JSON line per agent."""

from __future__ import annotations

import json
import sys

import django


def main(argv: list[str]) -> int:
    django.setup()
    from agentclient import AgentTarget
    from agentclient.errors import AgentError
    from orchestrator.sources.proxmox import proxmox

    pool = proxmox().pool
    for arg in argv:
        identity, _, address = arg.partition("=")
        target = AgentTarget(identity, address)
        result: dict[str, object] = {"identity": identity, "proxy": pool.proxy_for(target)}
        try:
            result["serving"] = pool.check_health(target, timeout=5)
        except AgentError as exc:
            result["error"] = str(exc)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
