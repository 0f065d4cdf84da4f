"""Task ids, as a hostile tenant would read and edit them: they say nothing of the Proxmox task they
name (a UPID names the API token, the node and the worker's pid), a task has one id, and an id edited
by hand or made with another deployment's key names no task (NotFound, as an unknown id)."""

from __future__ import annotations

import base64

import pytest
from django.core import signing
from django.test import override_settings

from orchestrator.errors import NotFound
from orchestrator.services.tasks import decode_task_id, encode_task_id

pytestmark = pytest.mark.promise("isolation")

UPID = "UPID:pve2:0000043F:00001DB9:6B0CA1DA:qmstart:101:root@pam!flexplane:"


def test_a_task_id_reveals_nothing_of_its_upid() -> None:
    """No part of the UPID (the token id, the node, the pid, ...) shows in the id, nor in its decoding."""
    task_id = encode_task_id("zone-a", UPID, "demo")
    padded = task_id + "=" * (-len(task_id) % 4)
    decoded = base64.urlsafe_b64decode(padded).decode("latin-1")
    parts = {"flexplane", "root@pam", "pve2", "0000043F", "00001DB9", "6B0CA1DA", "qmstart", "demo", "zone-a"}
    for seen in (task_id, task_id.lower(), decoded, decoded.lower()):
        assert [part for part in parts if part.lower() in seen.lower()] == []
    # Nor any four characters running in the UPID, wherever they fall in the id.
    runs = {UPID[i : i + 4] for i in range(len(UPID) - 3)}
    assert [run for run in runs if run in task_id or run in decoded] == []


def test_a_task_id_signed_in_the_old_readable_form_is_not_found() -> None:
    readable = signing.Signer(salt="flexplane.orchestrator.task").sign_object(
        ["zone-a", UPID, "demo"], compress=False
    )
    with pytest.raises(NotFound):
        decode_task_id(readable)


def test_a_tampered_task_id_is_not_found() -> None:
    good = encode_task_id("zone-a", UPID, "demo")
    # Every character changed in turn (the last one's spare bits too: one task has one id).
    flipped = [good[:i] + ("A" if good[i] != "A" else "B") + good[i + 1 :] for i in range(len(good))]
    for forged in (
        *flipped,
        good[:-4],
        good + "AAAA",
        good + "!",
        "zone-a/" + UPID,
        "",
        "é" * 40,
        "A" * 5000,
    ):
        with pytest.raises(NotFound):
            decode_task_id(forged)


def test_a_task_id_of_another_key_is_not_found() -> None:
    with override_settings(SECRET_KEY="another deployment's secret key, as long as any other"):
        elsewhere = encode_task_id("zone-a", UPID, "demo")
        assert decode_task_id(elsewhere)[1].raw == UPID
    assert elsewhere != encode_task_id("zone-a", UPID, "demo")
    with pytest.raises(NotFound):
        decode_task_id(elsewhere)
