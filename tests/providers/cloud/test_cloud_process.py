"""``python -m providers.cloud``'s settings: options, or the variables the control plane's pod sets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from providers.cloud.__main__ import arguments

ROOT = Path(__file__).resolve().parents[3]


def test_the_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "FLEXPLANE_CLOUD_KUBECONFIG": "/etc/flexplane/tenant/kubeconfig",
        "FLEXPLANE_URL": "https://flexplane.example.com",
        "FLEXPLANE_CLOUD_KEY": "/etc/flexplane/key/key.json",
        "FLEXPLANE_IDENTITY_URL": "https://id.example.com",
        "FLEXPLANE_PROJECT_ID": "301",
        "FLEXPLANE_CLOUD_CLUSTER": "web",
        "FLEXPLANE_CLOUD_VDC": "demo",
        "FLEXPLANE_CLOUD_INTERVAL": "15",
    }.items():
        monkeypatch.setenv(name, value)

    settings = arguments([])

    assert (settings.cluster, settings.vdc, settings.interval) == ("web", "demo", 15.0)
    assert settings.key == "/etc/flexplane/key/key.json"


def test_a_process_without_its_identity_refuses_to_start_naming_what_is_missing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "providers.cloud", "--kubeconfig", "/nowhere", "--url", "http://x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )

    assert done.returncode == 2
    assert "missing cluster, vdc, key, identity-url and project (or token-file)" in done.stderr
