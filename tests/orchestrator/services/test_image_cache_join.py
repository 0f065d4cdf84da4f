"""When a joining host's caching is done asking (``image_cache.settled``): pure."""

from __future__ import annotations

from orchestrator.services.image_cache import CacheStart, settled

HOST = "zone-a/pve2"


def test_a_joining_host_is_settled_once_every_image_started_or_was_refused_for_a_reason_of_its_own() -> None:
    started = CacheStart(HOST, "debian-12", "local-lvm")
    refused = CacheStart(HOST, "broken", "local-lvm", "the checksum does not match")
    assert settled([started, refused])
    assert settled([])


def test_an_image_its_agent_did_not_answer_for_in_time_is_asked_again_even_when_another_started() -> None:
    """Seen in CI: a loaded agent took on debian-12 and did not answer for ubuntu-24.04 within the start's
    deadline; the host went without it until its first create."""
    started = CacheStart(HOST, "debian-12", "local-lvm")
    unanswered = CacheStart(HOST, "ubuntu-24.04", "local-lvm", "the agent did not answer", answered=False)
    assert not settled([started, unanswered])
