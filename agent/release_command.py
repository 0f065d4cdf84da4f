"""``flexplane-agent release keygen|build|install|push``: the release commands, for the operator.

``keygen`` makes the release signing key, ``build`` builds and signs a release (:mod:`agent.release`),
``install`` makes one a node's current release (its first one; later ones are self-updates,
:mod:`agent.update`), ``push`` publishes one to an OCI registry (:mod:`agent.update.registry`),
where nodes then pull it from.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
import sys
from pathlib import Path

from agent.release import (
    CURRENT,
    VERSIONS,
    Installation,
    Manifest,
    ReleaseError,
    ReleaseRefused,
    build,
    check_artifact,
    generate_keys,
    install_file,
    load_private_key,
    load_public_key,
    read_envelope,
    verify,
)

# ``release push --username``: the password, never on the command line.
PASSWORD_VARIABLE = "FLEXPLANE_REGISTRY_PASSWORD"  # noqa: S105 - a variable's name


def _keygen(args: argparse.Namespace) -> None:
    generate_keys(Path(args.private), Path(args.public))
    print(f"signing key {args.private} (keep it offline), public key {args.public} (release_public_key)")


def _build(args: argparse.Namespace) -> None:
    source = Path(args.source) if args.source else None
    built = build(args.version, load_private_key(Path(args.key)), Path(args.out), source)
    print(f"built {built.artifact} ({built.manifest.size} bytes, sha256 {built.manifest.sha256})")
    print(f"signed {built.envelope}")


def _install(args: argparse.Namespace) -> None:
    installation = Installation(Path(args.install_dir))
    key = load_public_key(Path(args.public_key))
    manifest = install_file(installation, Path(args.artifact), Path(args.manifest), key)
    print(f"installed {manifest.version}: {installation.root / CURRENT} -> {VERSIONS}/{manifest.version}")


def _push(args: argparse.Namespace) -> None:
    """Check the files are a release (signed by --public-key, when given), then push them."""
    import asyncio

    from agent.update.registry import Access, RegistryUnavailable, Repository, push_files

    try:
        repository = Repository.parse(args.registry)
    except ValueError as exc:
        raise ReleaseError(str(exc)) from None
    envelope = read_envelope(Path(args.manifest).read_bytes())
    if args.public_key:
        manifest = verify(envelope, load_public_key(Path(args.public_key)))
    else:
        encoded = envelope.get("manifest")
        try:
            manifest = Manifest.from_bytes(base64.b64decode(str(encoded), validate=True))
        except binascii.Error:
            raise ReleaseRefused("the signed manifest's manifest is not base64") from None
    check_artifact(Path(args.artifact), manifest)
    access = Access(repository.host)
    if args.credentials:
        access = Access.read(Path(args.credentials))
    elif args.username:
        access = Access(repository.host, args.username, os.environ.get(PASSWORD_VARIABLE, ""))
    if args.ca:
        access = Access(access.registry, access.username, access.password, Path(args.ca).read_text())
    try:
        digest = asyncio.run(
            push_files(repository, access, Path(args.artifact), Path(args.manifest), manifest)
        )
    except RegistryUnavailable as exc:
        raise ReleaseError(str(exc)) from None
    print(f"pushed {manifest.version} to {repository}:{manifest.version} ({repository}@{digest})")


def run_release(args: argparse.Namespace) -> int:
    try:
        args.action(args)
    except (ReleaseError, ReleaseRefused, OSError) as exc:
        print(f"flexplane-agent release: {exc}", file=sys.stderr)
        return 2
    return 0


def _release_files(parser: argparse.ArgumentParser) -> None:
    """The two files of a built release: its artifact and its signed manifest."""
    parser.add_argument("--artifact", required=True, help="flexplane-agent-<version>.pyz")
    parser.add_argument("--manifest", required=True, help="flexplane-agent-<version>.release.json")


def add_release(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``flexplane-agent release keygen|build|install|push``."""
    parser = commands.add_parser("release", help="make, sign and install agent releases")
    parser.set_defaults(handler=run_release)
    actions = parser.add_subparsers(dest="release_command", metavar="ACTION", required=True)

    keygen = actions.add_parser("keygen", help="create the Ed25519 release signing key")
    keygen.add_argument("--private", required=True, help="where to write the signing key (0600)")
    keygen.add_argument("--public", required=True, help="where to write its public key")
    keygen.set_defaults(action=_keygen)

    build_parser = actions.add_parser("build", help="build and sign a release")
    build_parser.add_argument("--version", required=True, help="the release's version (PEP 440)")
    build_parser.add_argument("--key", required=True, help="the Ed25519 signing key (PEM)")
    build_parser.add_argument("--out", required=True, help="the folder to write the release into")
    build_parser.add_argument(
        "--source", help="a checkout holding agent/ and agentclient/ (default: this one)"
    )
    build_parser.set_defaults(action=_build)

    install = actions.add_parser("install", help="verify a release and make it the current one")
    _release_files(install)
    install.add_argument("--public-key", required=True, help="the release public key (PEM)")
    install.add_argument("--install-dir", required=True, help="the agent's install_dir")
    install.set_defaults(action=_install)

    push = actions.add_parser("push", help="push a release to an OCI registry, tagged with its version")
    _release_files(push)
    push.add_argument(
        "--registry", required=True, help="the repository: host[:port]/path, e.g. reg:5000/flexplane/agent"
    )
    push.add_argument("--public-key", help="check the release's signature before pushing (PEM)")
    push.add_argument("--credentials", help='a JSON file {"registry", "username", "password", "ca"}')
    push.add_argument("--username", help=f"the registry account (its password in ${PASSWORD_VARIABLE})")
    push.add_argument("--ca", help="the CA the registry's certificate is of (default: the system's)")
    push.set_defaults(action=_push)
