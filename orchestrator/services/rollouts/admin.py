"""What an admin does with a rollout: starts one (its canaries named, or drawn as a percentage of the
hosts), halts it, resumes it; and what the API and the portal show of it (:class:`RolloutStatus`, and the
channel's served version while a rollout holds it). ADMIN only."""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass, replace

from packaging.version import Version

from orchestrator.errors import Conflict, ValidationFailed
from orchestrator.services import access, catalog, releases
from orchestrator.services.context import Context
from orchestrator.services.rollouts import model, records
from orchestrator.services.rollouts.model import (
    CANARY,
    DEFAULT_SOAK_MINUTES,
    KIND,
    MAX_SOAK_MINUTES,
    SOAKING,
    Halt,
    Rollout,
)
from orchestrator.sources.protocols import KubeApi

logger = logging.getLogger(__name__)


def channel(ctx: Context) -> releases.Channel:
    """What the channel serves (``agentReleaseChannel``), its served version the one hosts outside the
    canaries get now when a rollout holds the channel. ADMIN only."""
    found = releases.channel(ctx)
    rollout = records.current(ctx.kube)
    if rollout is None or found.pin is not None:
        return found
    version = rollout.version if rollout.promoted(model.now()) else rollout.baseline
    served = releases.PublishedRelease(version, {}, "") if version in found.versions else None
    return replace(found, served=served)


@dataclass(frozen=True)
class RolloutStatus:
    """A rollout as the API shows it: stored, and its phase now."""

    rollout: Rollout
    phase: str
    hosts: list[str]

    @property
    def phase_words(self) -> str:
        """The phase as a page says it: "rolling out", "soaking"."""
        return self.phase.lower().replace("_", " ")

    @property
    def updated_hosts(self) -> list[str]:
        return [host for host in self.hosts if host in self.rollout.healthy]


def _status(ctx: Context, rollout: Rollout) -> RolloutStatus:
    hosts = [host.key for host in catalog.hosts(ctx)]
    return RolloutStatus(rollout, rollout.phase(model.now(), hosts), hosts)


def rollout(ctx: Context) -> RolloutStatus | None:
    """The rollout and its phase; None when none was started. ADMIN only."""
    access.require_admin(ctx)
    found = records.current(ctx.kube)
    return None if found is None else _status(ctx, found)


def _draw(version: str, host: str) -> str:
    """A host's place in the draw of a version's canaries: stable for it, different for the next."""
    return hashlib.sha256(f"{version}/{host}".encode()).hexdigest()


def _canaries(hosts: list[str], version: str, named: list[str] | None, percent: int | None) -> list[str]:
    if named and percent is not None:
        raise ValidationFailed("canaryHosts", "name canary hosts or a canary percent, not both")
    if not named and percent is None:
        raise ValidationFailed("canaryHosts", "name canary hosts (zone/host) or a canary percent")
    if percent is not None:
        if not 1 <= percent <= 100:
            raise ValidationFailed("canaryPercent", f"the canary percent must be 1 to 100, not {percent}")
        if not hosts:
            raise ValidationFailed("canaryPercent", "there are no hosts to pick canaries from")
        count = math.ceil(len(hosts) * percent / 100)
        return sorted(hosts, key=lambda host: _draw(version, host))[:count]
    assert named is not None
    unknown = [host for host in dict.fromkeys(h.strip() for h in named) if host not in hosts]
    if unknown:
        raise ValidationFailed(
            "canaryHosts",
            f"no such host: {', '.join(unknown)} (hosts are named zone/host: {', '.join(hosts) or 'none'})",
        )
    return list(dict.fromkeys(h.strip() for h in named))


def _baseline(source: KubeApi, version: str, published: list[str], before: Rollout | None) -> str:
    """What every host is served while the canaries try ``version``: see the package's docstring."""
    pin = releases.current_pin(source)
    if pin is not None:
        return pin.version
    if before is not None:
        return before.version if before.halt is None else before.baseline
    older = [v for v in published if Version(v) < Version(version)]
    return older[-1] if older else ""


def start_rollout(
    ctx: Context,
    version: str,
    canary_hosts: list[str] | None,
    canary_percent: int | None,
    soak_minutes: int | None,
) -> RolloutStatus:
    """Serve ``version`` to the canaries now, to every host once they ran it healthy for the soak
    time. ADMIN only. Any pin is removed: the rollout holds the channel instead."""
    access.require_admin(ctx)
    version = version.strip()
    published = [release.version for release in releases.published()]
    if version not in published:
        raise ValidationFailed(
            "version",
            f"version {version} is not published in the release channel "
            f"(published: {', '.join(published) or 'none'})",
        )
    soak = DEFAULT_SOAK_MINUTES if soak_minutes is None else soak_minutes
    if not 0 <= soak <= MAX_SOAK_MINUTES:
        raise ValidationFailed("soakMinutes", f"the soak time must be 0 to {MAX_SOAK_MINUTES} minutes")
    read = records.read(ctx.kube)
    before = None if read is None else read[0]
    now = model.now()
    if before is not None and before.phase(now) in (CANARY, SOAKING):
        raise Conflict(
            f"the rollout of {before.version} is in its {before.phase(now).lower()} phase: halt it first"
        )
    hosts = [host.key for host in catalog.hosts(ctx)]
    canaries = _canaries(hosts, version, canary_hosts, canary_percent)
    baseline = _baseline(ctx.kube, version, published, before)
    if baseline == version:
        raise ValidationFailed("version", f"the channel already serves {version} to every host")
    started = Rollout(version, baseline, tuple(canaries), soak, ctx.principal.subject, now, canary_percent)
    records.store(ctx.kube, started, read[1] if read is not None else records.unreadable_at(ctx.kube))
    if ctx.kube.delete_catalog(KIND, releases.PIN_ID):
        logger.info("agent rollout: the pin made way for the rollout")
    logger.info(
        "agent rollout: %s started %s (from %s) on canaries %s, soak %d min",
        started.started_by,
        version,
        baseline or "nothing",
        ", ".join(canaries),
        soak,
    )
    return _status(ctx, started)


def _started(ctx: Context) -> tuple[Rollout, str]:
    read = records.read(ctx.kube)
    if read is None:
        raise Conflict("no agent rollout was started")
    return read


def halt_rollout(ctx: Context, reason: str | None) -> RolloutStatus:
    """Stop the rollout where it is: no further host gets its version. ADMIN only."""
    access.require_admin(ctx)
    found, read_at = _started(ctx)
    if found.halt is not None:
        raise Conflict(f"the rollout of {found.version} is halted already: {found.halt.message}")
    why = f": {reason.strip()}" if reason and reason.strip() else ""
    who = ctx.principal.name or ctx.principal.subject
    halted = replace(found, halt=Halt("", f"halted by {who}{why}", model.now()))
    records.store(ctx.kube, halted, read_at)
    logger.info("agent rollout: %s", halted.halt.message if halted.halt else "")
    return _status(ctx, halted)


def resume_rollout(ctx: Context) -> RolloutStatus:
    """Go on with a halted rollout; the host that failed is excused: its failure no longer halts it, and
    as a canary it is no longer waited for. ADMIN only."""
    access.require_admin(ctx)
    found, read_at = _started(ctx)
    if found.halt is None:
        raise Conflict(f"the rollout of {found.version} is not halted")
    failed = found.halt.host
    excused = found.excused + ((failed,) if failed and failed not in found.excused else ())
    resumed = replace(found, halt=None, excused=excused)
    records.store(ctx.kube, resumed, read_at)
    logger.info("agent rollout: %s resumed %s", ctx.principal.subject, found.version)
    return _status(ctx, resumed)
