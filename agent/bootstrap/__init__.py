"""``flexplane-agent bootstrap``: enroll this Proxmox node into flex.plane with one command.

    flexplane-agent bootstrap --orchestrator https://flexplane.example.com --token <join token>

Run as root on the node, with a join token an admin made (``createHostJoinToken``); the token
names the zone and the host, so nothing else is needed. First it checks the node as
``flexplane-agent doctor`` does (:mod:`~agent.bootstrap.doctor`) and stops, having changed nothing,
on a blocking finding. Then, in order, it

1. sets up the agent's Proxmox user, roles (for the node's Proxmox VE version) and permissions, each
   on the narrowest path, gives the snippets storage (``local``) the snippets content type (or, with
   ``--no-storage-changes``, refuses and names the command), and makes this node's API token
   (``agent.pveadmin``: least privilege for what the agent forwards);
2. makes the node's private key (it never leaves the node) and sends a CSR, the token and the
   agent's endpoint to the orchestrator's enrollment endpoint over HTTPS; the answer is the
   certificate, the platform CA bundle and the agent's settings;
3. when those settings offer self-update (the release channel's URL and the platform's release
   public key), installs the channel's release as ``flexplane-agent release install`` would
   (``--install-dir``, default ``/opt/flexplane-agent``: ``versions/<version>``, ``current``),
   downloaded and verified by the code the agent updates itself with (``agent.update``);
4. writes, under ``--root`` (default ``/``): ``/etc/flexplane/agent.key`` (0600), ``agent.crt``,
   ``platform-ca.crt``, ``proxmox-token`` (0600), ``orchestrator-ca.crt`` (with ``--ca-file``),
   ``release-public.pem`` (with self-update), ``agent.toml`` (0640, last), and
   ``/etc/systemd/system/flexplane-agent.service``, whose ExecStart runs ``current``'s release
   (self-update needs that), or this agent's own code when the channel publishes none;
5. enables and starts the service (``agent.service``), or leaves that to others (``--no-start``).

Nothing is written before the orchestrator has answered, so an unreachable orchestrator leaves
no half-written configuration: run the same command again while the token is valid. A release
the channel serves that does not verify (unsigned, tampered, partial) stops the bootstrap before
any file is written, as the agent's own update would refuse it. Files are
staged in a folder beside their destination and renamed into place; a file already as it should
be is left alone. Running it again on an enrolled node (with a new token) is safe, and each step
says what it did: unchanged, written or renewed.

``flexplane-agent remove`` (:mod:`~agent.bootstrap.remove`) undoes step 1 for one node: it deletes
that node's token only, so the other nodes' agents keep working.

The steps live in the package's modules, in order: :mod:`~agent.bootstrap.options` (the command
line), :mod:`~agent.bootstrap.enroll` (1, 2), :mod:`~agent.bootstrap.channel` (3),
:mod:`~agent.bootstrap.files` (4) and :mod:`~agent.bootstrap.command` (all of them, and 5).
"""

from agent.bootstrap.channel import (
    Installed,
    Updates,
    install_channel_release,
    offered_updates,
    report_release,
)
from agent.bootstrap.command import add_bootstrap, bootstrap, run_bootstrap
from agent.bootstrap.doctor import Finding, Host, add_doctor, examine
from agent.bootstrap.enroll import enroll, issued, setup_proxmox
from agent.bootstrap.files import Planned, config_text, config_values, exec_start, install, staging
from agent.bootstrap.options import DEFAULT_PORT, BootstrapError, Options, parse_options, primary_address
from agent.bootstrap.remove import add_remove, configured_node, remove

__all__ = [
    "DEFAULT_PORT",
    "BootstrapError",
    "Finding",
    "Host",
    "Installed",
    "Options",
    "Planned",
    "Updates",
    "add_bootstrap",
    "add_doctor",
    "add_remove",
    "bootstrap",
    "config_text",
    "config_values",
    "configured_node",
    "enroll",
    "examine",
    "exec_start",
    "install",
    "install_channel_release",
    "issued",
    "offered_updates",
    "parse_options",
    "primary_address",
    "remove",
    "report_release",
    "run_bootstrap",
    "setup_proxmox",
    "staging",
]
