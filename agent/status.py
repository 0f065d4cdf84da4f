"""What the agent reports about itself beyond its identity: its certificate's renewal and its last update.

One ``AgentStatus`` per process. The renewal loop and the updater write to it; ``Agent.GetInfo``
reads it on every call, so the admin sees the state of the moment.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from agentclient.proto.flexplane.agent.v1 import agent_pb2


@dataclass
class RenewalState:
    last_success: float = 0.0
    last_error: str = ""
    failures: int = 0
    next_attempt: float = 0.0


@dataclass
class UpdateState:
    result: int = agent_pb2.UpdateStatus.RESULT_NONE
    from_version: str = ""
    to_version: str = ""
    message: str = ""
    at: float = 0.0


# The flexplane-agent package writes its version into its venv (packaging/build_deb.py). The agent,
# and every release it updates itself to, runs on that venv's Python: sys.prefix is the venv.
PACKAGE_VERSION_FILE = "PACKAGE_VERSION"


def package_version(prefix: Path | None = None) -> str:
    """The version of the Debian package whose venv runs this Python; "" when not run from the package."""
    try:
        return (Path(sys.prefix if prefix is None else prefix) / PACKAGE_VERSION_FILE).read_text().strip()
    except OSError:
        return ""


@dataclass
class AgentStatus:
    """The mutable part of ``AgentInfo``."""

    certificate_not_after: float = 0.0
    proxmox_version: str = ""
    package_version: str = field(default_factory=package_version)
    renewal: RenewalState = field(default_factory=RenewalState)
    update: UpdateState = field(default_factory=UpdateState)

    def to_proto(self, *, version: str, node: str, zone: str, identity: str) -> agent_pb2.AgentInfo:
        renewal, update = self.renewal, self.update
        return agent_pb2.AgentInfo(
            version=version,
            node=node,
            zone=zone,
            identity=identity,
            proxmox_version=self.proxmox_version,
            package_version=self.package_version,
            certificate_not_after=int(self.certificate_not_after),
            renewal=agent_pb2.RenewalStatus(
                last_success=int(renewal.last_success),
                last_error=renewal.last_error,
                failures=renewal.failures,
                next_attempt=int(renewal.next_attempt),
            ),
            update=agent_pb2.UpdateStatus(
                result=update.result,  # type: ignore[arg-type]
                from_version=update.from_version,
                to_version=update.to_version,
                message=update.message,
                at=int(update.at),
            ),
        )
