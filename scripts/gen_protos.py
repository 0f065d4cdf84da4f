"""Generate the Python gRPC stubs of the agent contract and of the CSI driver with grpcio-tools.

Run from anywhere (the paths are taken from this file's location)::

    .venv/bin/python scripts/gen_protos.py            # write next to the .proto files
    .venv/bin/python scripts/gen_protos.py --out DIR  # write the same tree under DIR

The repository root is the only include path (with protobuf's own), so the generated modules import
each other as ``agentclient.proto.flexplane.agent.v1.agent_pb2``: the proto tree is never
put on ``sys.path`` (the Django project owns the top-level package ``flexplane``).
The generated files are committed; a test regenerates them into a temporary folder
and fails when they drift from the committed ones.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = Path("agentclient") / "proto"
PROTOS = (
    PROTO_ROOT / "flexplane" / "agent" / "v1" / "agent.proto",
    Path("providers") / "csi" / "proto" / "csi.proto",
)
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def generated_files(proto: Path) -> list[Path]:
    """The files protoc writes for one .proto, relative to the output folder."""
    stem = proto.with_suffix("")
    return [stem.with_name(stem.name + suffix) for suffix in GENERATED_SUFFIXES]


def generate(out_dir: Path = ROOT) -> list[Path]:
    """Run protoc for every contract file; returns the paths written under out_dir."""
    well_known = resources.files("grpc_tools") / "_proto"
    written: list[Path] = []
    for proto in PROTOS:
        (out_dir / proto.parent).mkdir(parents=True, exist_ok=True)
        args = [
            "grpc_tools.protoc",
            f"-I{ROOT}",
            f"-I{well_known}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            f"--pyi_out={out_dir}",
            str(ROOT / proto),
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {proto}")
        written.extend(out_dir / path for path in generated_files(proto))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT, help="output root (default: the repository)")
    args = parser.parse_args(argv)
    for path in generate(args.out.resolve()):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
