"""Validation patterns hold a value whole: ``"sp-nl\\n"`` is no VM name.

Python's ``$`` matches before a final newline, so ``re.match(r"^[a-z]+$", "sp\\n")`` holds. Every
pattern of the product (orchestrator, portal, agent, agentclient, devstack, flexplane) is walked: each
compiled pattern a module or class holds, found by importing every module, and each pattern literal
passed to an ``re`` function or method in the source, found by reading it. None may use ``$``: they
``fullmatch`` or anchor with ``\\Z``. A new pattern is found by the same walk, wherever it is added.
Then each validator is asked about a value it accepts, followed by a newline, and refuses it; a VM's
name over GraphQL too. (A header cannot carry one: HTTP ends a header's line there.)
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
import re._constants as sre_constants  # the parser re itself uses: a pattern's anchors, exactly
import re._parser as sre_parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentclient.identity import is_dns_label
from agentclient.snippets import check_snippet_name
from agentclient.templates import check_image_name, check_storage_id
from orchestrator.models.tasks import Upid
from orchestrator.models.vms import parse_vm_id
from orchestrator.services.catalog.fields import Fields
from orchestrator.services.vms.inputs import validate_name
from orchestrator.sources.qemu_config import is_drive_key, is_tag
from tests.apikit import GraphQL
from tests.vmkit import CREATE, DEBIAN, SMALL, STANDARD

pytestmark = pytest.mark.promise("validation")

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("orchestrator", "portal", "agent", "agentclient", "devstack", "flexplane")
# The re functions and Pattern methods whose first argument is a pattern (re.X(pattern, ...)).
# Modules that run under settings of their own (the identity provider's, production's, the ASGI entry
# point's check of them): they cannot be imported here, so their patterns are read from the source
# alone. Any other module must import.
ELSEWHERE = ("devstack.identity.", "flexplane.settings.production", "flexplane.asgi")
RE_FUNCTIONS = {"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"}
UPID = "UPID:pve1:0000043F:00001DB9:6B0CA1DA:qmstart:101:root@pam!flexplane:"


def source_files() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not path.name.endswith("_pb2.py") and not path.name.endswith("_pb2_grpc.py"):
                yield path


def module_names() -> Iterator[str]:
    for package in PACKAGES:
        yield package
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            yield info.name


# Walked once a run (two tests each read a walk's findings): the walk over every module and file is the cost.
@functools.cache
def compiled_patterns() -> dict[str, re.Pattern[Any]]:
    """Every compiled pattern a module of the product holds, or a class of it: ``module.NAME``."""
    found: dict[str, re.Pattern[Any]] = {}
    for name in module_names():
        if name.startswith(ELSEWHERE):
            continue
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found[f"{name}.{attribute}"] = value
            elif isinstance(value, type) and value.__module__ == name:
                for inner, member in vars(value).items():
                    if isinstance(member, re.Pattern):
                        found[f"{name}.{attribute}.{inner}"] = member
    return found


@functools.cache
def literal_patterns() -> dict[str, tuple[str | bytes, int]]:
    """Every pattern literal given to an ``re`` function in the source: ``path:line`` -> (pattern, flags)."""
    found: dict[str, tuple[str | bytes, int]] = {}
    for path in source_files():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr not in RE_FUNCTIONS or not node.args:
                continue
            first = node.args[0]
            if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "re"):
                continue
            if isinstance(first, ast.Constant) and isinstance(first.value, str | bytes):
                found[f"{path.relative_to(ROOT)}:{node.lineno}"] = (first.value, 0)
    return found


def ends_before_a_newline(pattern: str | bytes, flags: int) -> bool:
    """Whether the pattern uses ``$`` (AT_END: the end, or before a final newline) anywhere."""
    parsed = sre_parse.parse(pattern, flags)

    def walk(items: Any) -> Iterator[tuple[Any, Any]]:
        for op, argument in items:
            yield op, argument
            for part in argument if isinstance(argument, tuple | list) else ():
                if isinstance(part, sre_parse.SubPattern):
                    yield from walk(part)
                elif isinstance(part, list):
                    for alternative in part:
                        if isinstance(alternative, sre_parse.SubPattern):
                            yield from walk(alternative)

    return any(op is sre_constants.AT and argument is sre_constants.AT_END for op, argument in walk(parsed))


# ------------------------------------------------------------------------------------ the walk


def test_the_walk_finds_the_patterns_of_every_package() -> None:
    compiled = compiled_patterns()
    for package in ("orchestrator", "agent", "agentclient", "devstack"):
        assert any(name.startswith(f"{package}.") for name in compiled), package
    assert "orchestrator.services.vms.inputs._NAME" in compiled
    assert len(compiled) > 40
    assert len(literal_patterns()) > 5


def test_the_walk_sees_a_dollar_anchor_wherever_it_is() -> None:
    assert ends_before_a_newline(r"^[a-z]+$", 0)
    assert ends_before_a_newline(r"(?=.{1,3}$)[a-z]+", 0)
    assert ends_before_a_newline(r"a(?:b|c$)", 0)
    assert ends_before_a_newline(r"(?:x(?:y$)+)?", 0)
    assert not ends_before_a_newline(r"[a-z]+\Z", 0)
    assert not ends_before_a_newline(r"[$]\$", 0)


def test_no_compiled_pattern_of_the_product_matches_before_a_final_newline() -> None:
    lax = [name for name, p in compiled_patterns().items() if ends_before_a_newline(p.pattern, p.flags)]
    assert lax == [], "use fullmatch or \\Z, not $"


def test_no_pattern_literal_in_the_source_matches_before_a_final_newline() -> None:
    lax = [
        where
        for where, (pattern, flags) in literal_patterns().items()
        if ends_before_a_newline(pattern, flags)
    ]
    assert lax == [], "use fullmatch or \\Z, not $"


# ------------------------------------------------------------------------------------ each validator


def refuses(check: Callable[[str], Any]) -> Callable[[str], bool]:
    """A validator that raises (or answers None or False) for what it refuses, as a yes/no."""

    def accepted(value: str) -> bool:
        try:
            return check(value) not in (None, False)
        except (ValueError, LookupError) as exc:
            return not exc
        except Exception as exc:  # the product's own refusals: ValidationFailed, UrlRefused, ...
            if type(exc).__module__.startswith(("orchestrator", "agentclient", "agent")):
                return False
            raise

    return accepted


# (Proxmox sizes and checksums are read stripped of surrounding whitespace, on purpose: not here.)
VALIDATORS: dict[str, tuple[Callable[[str], bool], str]] = {
    "a VM's name": (refuses(validate_name), "sp-nl"),
    "a catalog name": (refuses(lambda v: Fields({"name": v}).name("name")), "ubuntu-24.04"),
    "a zone or VDC id": (refuses(lambda v: Fields({"id": v}).slug("id")), "zone-a"),
    "a Proxmox tag": (refuses(is_tag), "fp-vdc-demo"),
    "a drive key": (refuses(is_drive_key), "scsi0"),
    "a VM id": (refuses(parse_vm_id), "zone-a/100"),
    "a UPID": (refuses(Upid.parse), UPID),
    "a host name": (refuses(is_dns_label), "pve1"),
    "a snippet name": (refuses(check_snippet_name), "fp-abc.yaml"),
    "an image name": (refuses(check_image_name), "debian-12"),
    "a storage id": (refuses(check_storage_id), "local-lvm"),
}


@pytest.mark.parametrize("what", sorted(VALIDATORS))
def test_a_validator_refuses_a_value_it_accepts_followed_by_a_newline(what: str) -> None:
    accepted, value = VALIDATORS[what]
    assert accepted(value), f"{what}: {value!r} should be accepted"
    assert not accepted(value + "\n"), f"{what}: {value + chr(10)!r} was accepted"


# ------------------------------------------------------------------------------------ over HTTP


def test_a_vm_name_ending_in_a_newline_is_invalid_over_graphql(api: GraphQL) -> None:
    values = {"name": "sp-nl\n", "computeProfile": SMALL, "storageProfile": STANDARD, "image": DEBIAN}
    answer = api(CREATE, user="alice", vdc="demo", variables={"input": values})
    errors = answer.data["createVirtualMachine"]["errors"]
    assert [(e["field"], e["code"]) for e in errors] == [("name", "INVALID")], answer.body
