"""The committed gRPC stubs are exactly what scripts/gen_protos.py generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "agentclient" / "proto" / "flexplane" / "agent" / "v1"


def test_the_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr

    generated = sorted(Path(line) for line in result.stdout.split())
    assert [path.name for path in generated] == ["agent_pb2.py", "agent_pb2.pyi", "agent_pb2_grpc.py"]
    drifted = [path.name for path in generated if path.read_bytes() != (STUBS / path.name).read_bytes()]
    assert drifted == [], f"regenerate with: python scripts/gen_protos.py ({', '.join(drifted)} drifted)"


def test_the_stubs_import_under_the_agentclient_package() -> None:
    from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc

    assert agent_pb2.DESCRIPTOR.package == "flexplane.agent.v1"
    assert agent_pb2_grpc.ProxmoxProxyStub.__module__ == "agentclient.proto.flexplane.agent.v1.agent_pb2_grpc"
