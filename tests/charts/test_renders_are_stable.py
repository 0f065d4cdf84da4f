"""Secrets generated once stay: a chart rendered twice without a cluster, as a GitOps tool renders it on
every sync, renders the same text both times.

A key, a CA or a password made at render time (``randAlphaNum``, ``genCA``, with ``lookup`` to read it
back, which finds nothing offline) would come out new on each sync: a new platform CA cuts off every
agent, a new masterkey bricks Zitadel's database. The charts make none: the operator makes each once
(the command is in each chart's values.yaml and in the render's refusal when it is missing).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from tests.charts import test_flextenant_chart, test_identity_chart, test_providers_chart
from tests.charts.kit import merged

ROOT = Path(__file__).resolve().parents[2]
# A template's actions (``{{ ... }}``), its comments (``{{/* ... */}}``) left out.
ACTIONS = re.compile(r"\{\{-?(?!\s*/\*)(.*?)-?\}\}", re.DOTALL)
# The template functions that make a value anew on each render, and the one that reads a value back.
GENERATORS = re.compile(
    r"\b(lookup|genCA|genCAWithKey|genPrivateKey|genSelfSignedCert\w*|genSignedCert\w*|randAlphaNum|randAlpha"
    r"|randNumeric|randAscii|randBytes|randInt|uuidv4|now|shuffle)\b"
)
# Each chart with the values an install must give, and its example values files.
CHARTS: dict[str, dict[str, Any]] = {
    "flextenant": test_flextenant_chart.REQUIRED,
    "providers": test_providers_chart.REQUIRED,
    "identity": test_identity_chart.MINIMAL,
}
RENDERS = [
    (chart, values_file.name)
    for chart in CHARTS
    for values_file in sorted((ROOT / "charts" / chart / "ci").glob("*.yaml"))
] + [(chart, "") for chart in CHARTS]


def render_once(chart: str, values_file: str) -> dict[str, str]:
    """One render, from a chart loaded for it alone: nothing carries over from another render."""
    path = ROOT / "charts" / chart
    values = CHARTS[chart]
    if values_file:
        values = merged(values, yaml.safe_load((path / "ci" / values_file).read_text()))
    with helm_python.Chart.load(path) as loaded:
        return dict(loaded.render(values, name=chart, namespace="flexplane", is_install=True))


@pytest.mark.parametrize(("chart", "values_file"), RENDERS, ids=lambda v: v or "required-only")
def test_a_second_render_changes_nothing(chart: str, values_file: str) -> None:
    first, second = render_once(chart, values_file), render_once(chart, values_file)
    assert first.keys() == second.keys()
    assert [path for path in first if first[path] != second[path]] == []


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_no_template_makes_a_value_at_render_time(chart: str) -> None:
    templates = (ROOT / "charts" / chart / "templates").rglob("*")
    found = {
        f"{path.name}: {match.group(1)}"
        for path in templates
        if path.is_file()
        for action in ACTIONS.findall(path.read_text())
        for match in GENERATORS.finditer(action)
    }
    assert found == set()
