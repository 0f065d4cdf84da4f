"""The rollout's record: one ConfigMap of the platform namespace (kind ``agent-release``, id ``rollout``,
beside the pin), read and written at its resource version, so that two replicas never overwrite what the
other learnt."""

from __future__ import annotations

import logging

from packaging.version import InvalidVersion

from orchestrator.services.rollouts.model import KIND, ROLLOUT_ID, Rollout
from orchestrator.sources.protocols import KubeApi

logger = logging.getLogger(__name__)


def read(source: KubeApi) -> tuple[Rollout, str] | None:
    """The rollout stored and its resource version, or None (an unreadable one is logged and ignored,
    as the pin is)."""
    entry = source.get_catalog(KIND, ROLLOUT_ID)
    if entry is None:
        return None
    try:
        return Rollout.from_spec(entry.spec), entry.resource_version
    except (KeyError, ValueError, TypeError, InvalidVersion) as exc:
        logger.warning("agent rollout: ignoring the unreadable rollout: %r", exc)
        return None


def current(source: KubeApi) -> Rollout | None:
    found = read(source)
    return None if found is None else found[0]


def store(source: KubeApi, rollout: Rollout, read_at: str | None) -> None:
    """Write the rollout: created, or replaced at the resource version it was read at (Conflict when
    another replica wrote it since: what it learnt is not overwritten)."""
    if read_at is None:
        source.create_catalog(KIND, ROLLOUT_ID, rollout.to_spec())
    else:
        source.replace_catalog(KIND, ROLLOUT_ID, rollout.to_spec(), read_at)


def unreadable_at(source: KubeApi) -> str | None:
    """The resource version of a stored rollout that could not be read (a new one replaces it)."""
    entry = source.get_catalog(KIND, ROLLOUT_ID)
    return None if entry is None else entry.resource_version
