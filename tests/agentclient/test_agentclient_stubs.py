"""The committed gRPC stubs (the agent contract's, the CSI driver's) are exactly what scripts/gen_protos.py
generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr

    generated = sorted(Path(line).relative_to(tmp_path) for line in result.stdout.split())
    assert [path.name for path in generated] == [
        "agent_pb2.py",
        "agent_pb2.pyi",
        "agent_pb2_grpc.py",
        "csi_pb2.py",
        "csi_pb2.pyi",
        "csi_pb2_grpc.py",
    ]
    drifted = [
        str(path) for path in generated if (tmp_path / path).read_bytes() != (ROOT / path).read_bytes()
    ]
    assert drifted == [], f"regenerate with: python scripts/gen_protos.py ({', '.join(drifted)} drifted)"


def test_the_stubs_import_under_the_agentclient_package() -> None:
    from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc

    assert agent_pb2.DESCRIPTOR.package == "flexplane.agent.v1"
    assert agent_pb2_grpc.ProxmoxProxyStub.__module__ == "agentclient.proto.flexplane.agent.v1.agent_pb2_grpc"


def test_the_runtime_accepts_no_grpcio_older_than_the_stubs_were_generated_for() -> None:
    """Generated stubs refuse to import on a grpcio older than the grpcio-tools that wrote them."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    from agentclient.proto.flexplane.agent.v1 import agent_pb2_grpc

    generated = Version(agent_pb2_grpc.GRPC_GENERATED_VERSION)
    for project in (ROOT / "pyproject.toml", ROOT / "distributions" / "flexplane-agent" / "pyproject.toml"):
        dependencies = tomllib.loads(project.read_text(encoding="utf-8"))["project"]["dependencies"]
        (grpcio,) = [Requirement(line) for line in dependencies if Requirement(line).name == "grpcio"]
        floor = min(Version(spec.version) for spec in grpcio.specifier if spec.operator == ">=")
        assert floor >= generated, (
            f"{project.name}: {grpcio} admits a grpcio older than the stubs' {generated}"
        )
