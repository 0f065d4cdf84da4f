"""The client side of the agent contract: typed errors and a pool of mTLS channels to agents.

This package (with the generated stubs under ``agentclient.proto``) is the only code
the agent shares with the rest of flex.plane.
"""

from agentclient.credentials import ClientTLS, ClientTLSError, ClientTLSFiles
from agentclient.errors import (
    AgentBusy,
    AgentConnectionLost,
    AgentDeadlineExceeded,
    AgentError,
    AgentTLSError,
    AgentUnavailable,
    ChecksumMismatch,
    ClientNotAllowed,
    ImageDownloadFailed,
    ImageError,
    ImageImportFailed,
    ImageRefused,
    ProxmoxError,
    ProxmoxNoAnswer,
    ProxmoxUnreachable,
    ProxyRefused,
    SnippetError,
    SnippetFailed,
    SnippetRefused,
)
from agentclient.identity import AgentTarget, host_identity
from agentclient.pool import AgentInfo, AgentPool
from agentclient.templates import TemplatePhase, TemplateProgress, TemplateRef

__all__ = [
    "AgentBusy",
    "AgentConnectionLost",
    "AgentDeadlineExceeded",
    "AgentError",
    "AgentInfo",
    "AgentPool",
    "AgentTLSError",
    "AgentTarget",
    "AgentUnavailable",
    "ChecksumMismatch",
    "ClientNotAllowed",
    "ClientTLS",
    "ClientTLSError",
    "ClientTLSFiles",
    "ImageDownloadFailed",
    "ImageError",
    "ImageImportFailed",
    "ImageRefused",
    "ProxmoxError",
    "ProxmoxNoAnswer",
    "ProxmoxUnreachable",
    "ProxyRefused",
    "SnippetError",
    "SnippetFailed",
    "SnippetRefused",
    "TemplatePhase",
    "TemplateProgress",
    "TemplateRef",
    "host_identity",
]
