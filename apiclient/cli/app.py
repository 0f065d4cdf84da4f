"""The ``flexplane`` command: its root (profile, VDC), its exit codes, ``login`` and ``logout``, and the
resources' commands (apiclient/cli/compute.py, network.py, clusters.py).

Exit codes, for scripts (docs/api.md lists them too):

    0  done
    1  the API refused or failed (INVALID, CONFLICT, QUOTA_EXCEEDED, UNAVAILABLE, ...), or did not answer
    2  the command line is wrong (an unknown option, a missing argument, no API configured)
    3  not found (NOT_FOUND: a VM, a network, a cluster, ... the caller cannot see)
    4  not signed in or not allowed (UNAUTHENTICATED, FORBIDDEN, a login denied or expired)
    5  a followed task failed or was still running at its deadline (--wait)
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.text import Text
from typer.core import TyperGroup

from apiclient.cli import clusters, compute, network, storage
from apiclient.cli.config import DEFAULT_PROFILE, Credential, Profile
from apiclient.cli.session import Environment, Session, session_of
from apiclient.cli.signin import DeviceLogin, service_account_credential
from apiclient.errors import ApiError, Forbidden, NotFound, TaskFailed, TaskTimedOut, Unauthenticated


class ExitCode(enum.IntEnum):
    OK = 0
    API_ERROR = 1
    USAGE = 2
    NOT_FOUND = 3
    AUTH = 4
    TASK_FAILED = 5


def exit_code(error: ApiError) -> ExitCode:
    if isinstance(error, NotFound):
        return ExitCode.NOT_FOUND
    if isinstance(error, Unauthenticated | Forbidden):
        return ExitCode.AUTH
    if isinstance(error, TaskFailed | TaskTimedOut):
        return ExitCode.TASK_FAILED
    return ExitCode.API_ERROR


class Commands(TyperGroup):
    """The root group: a failure the API answered becomes a line on stderr and its exit code, never a
    traceback (the commands below raise the client's typed errors as they come)."""

    def invoke(self, ctx: Any) -> Any:  # typer's own (vendored) click Context
        try:
            return super().invoke(ctx)
        except ApiError as error:
            complain(ctx, f"{error.code}: {error}{task_of(error)}")
            raise typer.Exit(exit_code(error)) from error
        except httpx.HTTPError as error:
            complain(ctx, f"the API did not answer: {error}")
            raise typer.Exit(ExitCode.API_ERROR) from error
        finally:
            if isinstance(ctx.obj, Session):
                ctx.obj.close()


def task_of(error: ApiError) -> str:
    """Where to see the task a refused mutation still started (a stop that Proxmox failed)."""
    task = error.data.get("task") if isinstance(error.data, dict) else None
    if isinstance(task, dict) and task.get("id"):
        task_id = str(task["id"])
        # An id is base64url: one in 64 begins with "-", which the shell's next word would read as an
        # option; "--" ends the options first.
        separator = "-- " if task_id.startswith("-") else ""
        return f" (its task: `flexplane tasks show {separator}{task_id}`)"
    return ""


def complain(ctx: Any, message: str) -> None:
    session = ctx.obj if isinstance(ctx.obj, Session) else Session(Environment())
    session.err.print(Text.assemble(("error", "bold red"), ": ", message))


app = typer.Typer(
    name="flexplane",
    cls=Commands,
    help="flex.plane's API from a terminal: VMs, networks, gateways, snapshots and Kubernetes clusters.",
    epilog=(
        "Sign in once with `flexplane login` (a browser approves this terminal) or `flexplane login "
        "--service-account-key KEY.json`; then e.g. `flexplane vms list -o json | jq`. Exit codes: 0 done, "
        "1 API error, 2 usage, 3 not found, 4 not signed in or not allowed, 5 task failed."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)
app.add_typer(compute.vdcs, name="vdcs")
app.add_typer(compute.vms, name="vms")
app.add_typer(compute.snapshots, name="snapshots")
app.add_typer(compute.tasks, name="tasks")
app.add_typer(network.networks, name="networks")
app.add_typer(network.security_groups, name="security-groups")
app.add_typer(network.gateways, name="gateways")
app.add_typer(network.public_ips, name="public-ips")
app.add_typer(network.port_forwards, name="port-forwards")
app.add_typer(clusters.clusters, name="clusters")
app.add_typer(storage.volumes, name="volumes")


@app.callback()
def root(
    ctx: typer.Context,
    profile: Annotated[
        str, typer.Option("--profile", "-p", envvar="FLEXPLANE_PROFILE", help="the profile to act with")
    ] = DEFAULT_PROFILE,
    vdc: Annotated[
        str | None,
        typer.Option("--vdc", envvar="FLEXPLANE_VDC", help="the VDC to act in (default: the profile's)"),
    ] = None,
) -> None:
    environment = ctx.obj if isinstance(ctx.obj, Environment) else Environment()
    ctx.obj = Session(environment, profile, vdc)


@app.command(
    epilog=(
        "Examples: `flexplane login --url https://flexplane.example.com --issuer https://zitadel.example.com "
        "--project-id 2795... --client-id 2796...@flexplane` (a browser approves the code it shows); "
        "`flexplane login --service-account-key ci-key.json` (the key createServiceAccount answered)."
    )
)
def login(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option(help="the API's origin (the orchestrator)")] = None,
    issuer: Annotated[str | None, typer.Option(help="the identity provider's issuer (Zitadel's URL)")] = None,
    project_id: Annotated[str | None, typer.Option(help="flex.plane's project id in Zitadel")] = None,
    client_id: Annotated[
        str | None, typer.Option(help="the CLI's application (client id) in Zitadel")
    ] = None,
    vdc: Annotated[str | None, typer.Option(help="the VDC commands act in unless told")] = None,
    ca_file: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="a CA bundle to trust (a private CA)")
    ] = None,
    service_account_key: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="sign in as a service account with its key file"),
    ] = None,
) -> None:
    """Sign in: a person through a browser (the OAuth device login), or a script with a service account's
    key. The profile remembers where; the tokens are cached (mode 0600) and renewed as they expire."""
    session = session_of(ctx)
    profile = session.profile().merged(
        url=url,
        issuer=issuer,
        project_id=project_id,
        client_id=client_id,
        vdc=vdc,
        ca_file=str(ca_file.resolve()) if ca_file else None,
    )
    missing = [name for name in ("url", "issuer", "project_id") if not getattr(profile, name)]
    if service_account_key is None and not profile.client_id:
        missing.append("client_id")
    if missing:
        options = ", ".join("--" + name.replace("_", "-") for name in missing)
        raise typer.BadParameter(f"profile {session.profile_name} does not know them yet", param_hint=options)
    http = session.identity_http(profile)
    if service_account_key is not None:
        try:
            key = json.loads(service_account_key.read_text(encoding="utf-8"))
            credential = service_account_credential(key, profile, http)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--service-account-key") from error
    else:
        credential = device_login(session, profile, http)
    session.store.save_profile(session.profile_name, profile)
    session.store.save_credential(session.profile_name, credential)
    who = f" as {credential.subject}" if credential.subject else ""
    session.err.print(f"Logged in{who} (profile {session.profile_name}).")


def device_login(session: Session, profile: Profile, http: httpx.Client) -> Credential:
    """The device authorization grant: the URL and code shown on stderr, then the person's tokens."""
    device = DeviceLogin(
        str(profile.issuer), str(profile.client_id), str(profile.project_id), http, sleep=session.env.sleep
    )
    codes = device.start()
    where = codes.verification_uri_complete or codes.verification_uri
    session.err.print(f"Open {where} in a browser and approve the code [bold]{codes.user_code}[/bold].")
    session.err.print(f"(Or go to {codes.verification_uri} and enter it.) Waiting…")
    return device.wait(codes)


@app.command(epilog="Examples: `flexplane logout`, `flexplane --profile ci logout`.")
def logout(ctx: typer.Context) -> None:
    """Forget the profile's tokens (or service account key); its settings stay."""
    session = session_of(ctx)
    if session.store.forget_credential(session.profile_name):
        session.err.print(f"Logged out (profile {session.profile_name}).")
    else:
        session.err.print(f"Profile {session.profile_name} was not logged in.")


def main() -> None:
    """The ``flexplane`` console script."""
    app()
