"""What ``flexplane`` tells a user to run next, as words a shell passes on as meant."""

from __future__ import annotations

import shlex

import pytest

from apiclient.cli.app import task_of
from apiclient.errors import ApiError


@pytest.mark.parametrize(
    ("task_id", "words"),
    [
        ("ZXhhbXBsZQ", ["flexplane", "tasks", "show", "ZXhhbXBsZQ"]),
        # base64url: one id in 64 begins with "-", which would be read as an option without "--".
        ("-Zx_aW1wbGU", ["flexplane", "tasks", "show", "--", "-Zx_aW1wbGU"]),
    ],
)
def test_a_refused_mutations_task_is_named_by_a_command_that_reads_its_id_as_an_id(
    task_id: str, words: list[str]
) -> None:
    hint = task_of(ApiError("VM quit/powerdown failed", data={"task": {"id": task_id}}))
    command = hint.split("`")[1]
    assert shlex.split(command) == words


def test_no_task_no_hint() -> None:
    assert task_of(ApiError("refused", data={"task": None})) == ""
