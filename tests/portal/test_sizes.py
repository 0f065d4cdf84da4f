"""The one way the portal shows a size: binary units, the largest the size fills, one decimal at most."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from portal.templatetags.sizes import size


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (512, "MiB", "512 MiB"),
        (2048, "MiB", "2 GiB"),
        (1536, "MiB", "1.5 GiB"),
        (20, "GiB", "20 GiB"),
        (2048, "GiB", "2 TiB"),
        (0.5, "GiB", "512 MiB"),
        (34359738368, "B", "32 GiB"),
        (1000, "B", "1000 B"),
        (0, "GiB", "0 GiB"),
        (None, "B", "—"),
    ],
)
def test_a_size_is_shown_in_the_largest_binary_unit_it_fills(
    value: float | None, unit: str, shown: str
) -> None:
    assert size(value, unit) == shown


def test_a_decimal_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="binary unit"):
        size(1, "GB")


def test_templates_use_it_as_the_size_filter() -> None:
    template = Template('{% load sizes %}{{ b|size }}, {{ m|size:"MiB" }}, {{ g|size:"GiB" }}')
    assert template.render(Context({"b": 3 * 1024**3, "m": 4096, "g": 1.5})) == "3 GiB, 4 GiB, 1.5 GiB"
