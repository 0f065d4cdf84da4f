"""``flexplane clusters``: the VDC's Kubernetes clusters, and a kubeconfig to reach one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from apiclient.cli.output import Column, Output, OutputOption, show
from apiclient.cli.session import session_of
from apiclient.errors import NotFound

CLUSTER_COLUMNS: list[Column] = [
    ("NAME", "name"),
    ("VERSION", "version"),
    ("PHASE", "phase"),
    ("ENDPOINT", "endpoint"),
    ("NETWORK", "network"),
    ("CREATED", "createdAt"),
]

clusters = typer.Typer(help="The VDC's Kubernetes clusters.", no_args_is_help=True)

ClusterArgument = Annotated[str, typer.Argument(help="the cluster's name")]


@clusters.command(
    "list", epilog="Example: `flexplane clusters list -o json | jq -r '.[] | .name + \" \" + .phase'`."
)
def list_clusters(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The VDC's clusters with their phase."""
    session = session_of(ctx)
    show(session.out, session.api().kubernetes_clusters().kubernetes_clusters, output, CLUSTER_COLUMNS)


@clusters.command("show", epilog="Example: `flexplane clusters show demo -o yaml`.")
def show_cluster(ctx: typer.Context, cluster: ClusterArgument, output: OutputOption = Output.TABLE) -> None:
    """One cluster: its control plane, node pools and conditions."""
    session = session_of(ctx)
    found = session.api().kubernetes_cluster(cluster).kubernetes_cluster
    if found is None:
        raise NotFound(f"no cluster {cluster} in the VDC")
    show(session.out, found, output, CLUSTER_COLUMNS)


@clusters.command(
    "kubeconfig",
    epilog=(
        "Examples: `flexplane clusters kubeconfig demo > demo.yaml`, "
        "`flexplane clusters kubeconfig demo -f ~/.kube/demo && KUBECONFIG=~/.kube/demo kubectl get nodes`."
    ),
)
def kubeconfig(
    ctx: typer.Context,
    cluster: ClusterArgument,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", dir_okay=False, help="write it here (mode 0600), not to stdout"),
    ] = None,
) -> None:
    """A kubeconfig of yours for the cluster: a client certificate valid 8 hours."""
    session = session_of(ctx)
    answer = session.api().kubeconfig(cluster).kubeconfig
    if answer is None:
        raise NotFound(f"no cluster {cluster} in the VDC")
    if file is None:
        session.out.out(
            answer.kubeconfig, end="" if answer.kubeconfig.endswith("\n") else "\n", highlight=False
        )
        return
    # Its key is a credential: created 0600, never readable by others.
    descriptor = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(answer.kubeconfig)
    file.chmod(0o600)
    session.err.print(f"Wrote {file} (valid until {answer.expires_at}).")
