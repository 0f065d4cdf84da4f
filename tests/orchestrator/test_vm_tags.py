"""The VDC a guest's raw tag string names (``vdc_in``, the listing's fast path) is the one its parsed tags
name (``vdc_of(parse_tags(...))``), for any tag string Proxmox could hold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.models.vms import vdc_in, vdc_of
from orchestrator.sources.qemu_config import parse_tags

_tag_text = st.text(alphabet="abcdefp-vd0123", max_size=12)
_tag = st.one_of(_tag_text, _tag_text.map(lambda value: f"fp-vdc-{value}"), st.just("fp-vdc-"))
_separator = st.sampled_from([";", ",", " ", ";;", ", "])


@st.composite
def tag_strings(draw: st.DrawFn) -> str:
    tags: list[str] = draw(st.lists(_tag, max_size=6))
    leading: bool = draw(st.booleans())
    out = draw(_separator) if tags and leading else ""
    for tag in tags:
        out += tag + draw(_separator)
    trailing: bool = draw(st.booleans())
    return out if trailing else out.rstrip(";, ")


@given(tag_strings())
def test_the_fast_path_names_the_vdc_the_parsed_tags_name(raw: str) -> None:
    assert vdc_in(raw) == vdc_of(parse_tags(raw))


@pytest.mark.parametrize(
    ("raw", "vdc"),
    [
        (None, None),
        ("", None),
        ("fp-cp-small;fp-img-debian-12;fp-vdc-demo", "demo"),
        ("fp-vdc-demo;fp-vdc-other", "demo"),  # the first, as vdc_of
        ("xfp-vdc-demo", None),  # not a tag of its own
        ("xfp-vdc-demo;fp-vdc-other", "other"),
        ("fp-vdc-;fp-vdc-demo", "demo"),  # an empty value is no VDC
        ("old, fp-vdc-demo other", "demo"),  # older releases' separators
    ],
)
def test_the_vdc_tag_in_a_tag_string(raw: str | None, vdc: str | None) -> None:
    assert vdc_in(raw) == vdc
