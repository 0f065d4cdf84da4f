#!/usr/bin/env python3
"""``make image``: the orchestrator's OCI image, built with no container engine and no registry.

    python3 packaging/build_image.py [--build .build]

1. A minimal Debian 12 root with python3 (debootstrap from Debian's archive, cached: debian_root.py).
2. ``packaging/image/orchestrator/rootfs.sh`` makes the image's root filesystem from it: the app's
   wheel in a venv, templates, collected static files, the user ``flexplane``; no pip, apt or docs.
   The Containerfile's rootfs stage runs the same script, so an engine's build holds the same files.
3. umoci (Debian's) writes that tree as one layer of an OCI image in the layout
   ``<build>/image/oci``, and sets its configuration from the Containerfile's final stage (user,
   entrypoint, command, environment, port, labels): the Containerfile is the one definition of it.

umoci rather than buildah: it only writes an OCI layout on disk from a folder, with no storage
driver, no container and no user namespaces to set up, which is all a daemonless build from a
debootstrap root needs; buildah would need containers/storage (vfs here) and copy the tree once
more into its store before committing it. ``skopeo`` copies the layout to a registry or an archive.

Tags: the project's version (``0.1.0``, what the chart deploys by default) and the build's own
(``0.1.0-git<commits>.<hash>[-dirty]``: OCI tags have no ``+``). Prints the image's reference.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from build_deb import git, package_version, project_version  # noqa: E402
from debian_root import DEFAULT_BUILD, ensure_root  # noqa: E402

DEFINITION = HERE / "image" / "orchestrator"
CONTAINERFILE = DEFINITION / "Containerfile"
ROOTFS_SH = DEFINITION / "rootfs.sh"
# rootfs.sh's debootstrap, made ahead here and cached (the same suite and packages as in the script).
SUITE = "bookworm"
# The mesh hub (manage.py mesh_hub, the same image) calls ip and wg, and wireguard-go where the node's
# kernel has no WireGuard (the chart mounts /dev/net/tun for it).
BASE_PACKAGES = ["python3", "python3-venv", "ca-certificates", "iproute2", "wireguard-tools", "wireguard-go"]
ROOTFS_STAGE = "rootfs"


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class ImageConfig:
    """The final stage of the Containerfile: what the image's configuration says."""

    image: str
    copies: list[list[str]]
    env: list[str]
    user: str
    workdir: str
    ports: list[str]
    entrypoint: list[str]
    cmd: list[str]
    labels: dict[str, str]


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) of a Containerfile, continuation lines joined and comments dropped."""
    joined, found = "", []
    for line in text.splitlines():
        if not joined and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        joined += line
        keyword, _, rest = joined.strip().partition(" ")
        found.append((keyword.upper(), rest.strip()))
        joined = ""
    return found


def stages(text: str) -> tuple[dict[str, str], list[Stage]]:
    """The global ARGs (with their defaults) and each stage with its instructions."""
    global_args: dict[str, str] = {}
    found: list[Stage] = []
    for keyword, rest in instructions(text):
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(found))
            found.append(Stage(name=name, base=words[0]))
        elif not found:
            if keyword != "ARG":
                raise ValueError(f"{keyword} before the first FROM")
            key, _, value = rest.partition("=")
            global_args[key] = value
        else:
            found[-1].instructions.append((keyword, rest))
    return global_args, found


def substitute(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), ""), value)


def image_config(text: str, build_args: dict[str, str]) -> ImageConfig:
    global_args, found = stages(text)
    final = found[-1]
    if final.base != "scratch":
        raise ValueError("the final stage must start FROM scratch: its files are the rootfs stage's only")
    args = dict(global_args)
    config = ImageConfig(global_args.get("IMAGE", ""), [], [], "", "/", [], [], [], {})
    for keyword, rest in final.instructions:
        if keyword == "ARG":
            key, _, default = rest.partition("=")
            args[key] = build_args.get(key, default)
        elif keyword == "COPY":
            config.copies.append(rest.split())
        elif keyword == "ENV":
            config.env += [substitute(pair, args) for pair in shlex.split(rest)]
        elif keyword == "USER":
            config.user = rest
        elif keyword == "WORKDIR":
            config.workdir = rest
        elif keyword == "EXPOSE":
            config.ports += rest.split()
        elif keyword in ("ENTRYPOINT", "CMD"):
            setattr(config, keyword.lower(), json.loads(rest))
        elif keyword == "LABEL":
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                config.labels[key] = substitute(value, args)
        else:
            raise ValueError(f"the final stage may only configure the image, not {keyword}")
    if config.copies != [[f"--from={ROOTFS_STAGE}", "/rootfs", "/"]]:
        raise ValueError(
            f"the final stage must copy the {ROOTFS_STAGE} stage's /rootfs to / and nothing else"
        )
    return config


def umoci(*args: str) -> None:
    subprocess.run(["umoci", *args], check=True)  # noqa: S603, S607 - Debian's umoci


def tags() -> tuple[str, str]:
    """The project's version, and this build's (Debian's version as an OCI tag: + and ~ are not allowed)."""
    return project_version(), package_version().replace("+", "-").replace("~", "-").replace(
        ".dirty", "-dirty"
    )


def build(build_dir: Path) -> tuple[str, Path]:
    work = build_dir / "image"
    rootfs, layout, bundle = work / "rootfs", work / "oci", work / "bundle"
    for stale in (rootfs, layout, bundle):
        if stale.exists():
            shutil.rmtree(stale)
    work.mkdir(parents=True, exist_ok=True)
    base = ensure_root(build_dir, SUITE, BASE_PACKAGES)
    subprocess.run(  # noqa: S603 - the image definition's own script
        [str(ROOTFS_SH), str(ROOT), str(rootfs)],
        check=True,
        env={**os.environ, "FLEXPLANE_BASE_ROOT": str(base)},
    )
    version_tag, build_tag = tags()
    try:
        revision = git("rev-parse", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        revision = "unknown"
    config = image_config(
        CONTAINERFILE.read_text(encoding="utf-8"), {"VERSION": package_version(), "REVISION": revision}
    )
    image = f"{layout}:{version_tag}"
    umoci("init", "--layout", str(layout))
    umoci("new", "--image", image)
    umoci("unpack", "--image", image, str(bundle))
    shutil.rmtree(bundle / "rootfs")
    rootfs.rename(bundle / "rootfs")
    umoci("repack", "--image", image, str(bundle))
    settings = ["--config.user", config.user, "--config.workingdir", config.workdir, "--clear=config.env"]
    settings += [f"--config.entrypoint={word}" for word in config.entrypoint]
    settings += [f"--config.cmd={word}" for word in config.cmd]
    settings += [f"--config.env={pair}" for pair in config.env]
    settings += [f"--config.exposedports={port}" for port in config.ports]
    settings += [f"--config.label={key}={value}" for key, value in config.labels.items()]
    settings += ["--author=flex.plane", "--history.created_by=packaging/build_image.py"]
    umoci("config", "--image", image, *settings)
    umoci("tag", "--image", image, build_tag)
    umoci("gc", "--layout", str(layout))  # the blobs of the steps before the last configuration
    shutil.rmtree(bundle)
    return f"{config.image}:{version_tag}", layout


def main() -> int:
    parser = argparse.ArgumentParser(description="Build the orchestrator's OCI image without a daemon.")
    parser.add_argument("--build", type=Path, default=DEFAULT_BUILD, help="the build folder")
    args = parser.parse_args()
    reference, layout = build(args.build.resolve())
    print(f"{reference} in the OCI layout {layout} (tags: {', '.join(tags())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
