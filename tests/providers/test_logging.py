"""The providers' log lines: kopf's records (which carry its ``OperatorSettings``) written as JSON lines."""

from __future__ import annotations

import io
import json
import logging
import sys

import kopf

from flexplane.logs import json_formatter
from providers.__main__ import KopfExtras


def record_of_kopf() -> logging.LogRecord:
    """A record as kopf's object logger makes it: its settings and the object's reference as extras."""
    record = logging.LogRecord("kopf.objects", logging.INFO, __file__, 1, "Handler succeeded.", None, None)
    record.settings = kopf.OperatorSettings()  # a dataclass holding a SimpleQueue: no deep copy of it
    record.k8s_skip = False
    record.k8s_ref = {"kind": "ProxmoxMachine", "name": "m-1", "namespace": "vdc-demo"}
    return record


def written(record: logging.LogRecord, *filters: logging.Filter) -> tuple[str, str]:
    """What a JSON handler writes for ``record`` (its stream, and stderr's "Logging error" if any)."""
    stream, errors = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(json_formatter())
    for each in filters:
        handler.addFilter(each)
    saved, logging.raiseExceptions = logging.raiseExceptions, True

    stderr, sys.stderr = sys.stderr, errors
    try:
        handler.handle(record)
    finally:
        sys.stderr = stderr
        logging.raiseExceptions = saved
    return stream.getvalue(), errors.getvalue()


def test_a_record_with_an_extra_json_cannot_copy_is_still_written_as_one_json_line() -> None:
    line, errors = written(record_of_kopf())
    assert errors == ""
    fields = json.loads(line)
    assert fields["message"] == "Handler succeeded."
    assert fields["settings"] == "<OperatorSettings>"
    assert fields["k8s_ref"]["name"] == "m-1"


def test_the_providers_keep_kopfs_own_extras_out_of_their_lines() -> None:
    line, errors = written(record_of_kopf(), KopfExtras())
    assert errors == ""
    fields = json.loads(line)
    assert "settings" not in fields
    assert "k8s_skip" not in fields
    assert fields["k8s_ref"] == {"kind": "ProxmoxMachine", "name": "m-1", "namespace": "vdc-demo"}
