"""``flexplane`` installs alone, with the client's distribution (distributions/flexplane-client), and runs
there as its console script: help, completion, and a command's exit code, with Django nowhere."""

from __future__ import annotations

from pathlib import Path

from tests.distributions import ROOT, install_into_clean_venv

CLIENT_PROJECT = ROOT / "distributions" / "flexplane-client"


def test_the_console_script_runs_from_the_client_distribution_alone(tmp_path: Path) -> None:
    python, run = install_into_clean_venv(CLIENT_PROJECT, tmp_path)
    flexplane = str(python.with_name("flexplane"))
    # A config folder of its own, and lines wide enough that the error is not wrapped.
    environment = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path), "COLUMNS": "300"}

    helped = run(flexplane, "vms", "--help")
    # The completion script for bash, as `--install-completion` sources it (--show-completion asks the
    # parent process which shell it is, which a test runner's need not be).
    completion = run("/usr/bin/env", "_FLEXPLANE_COMPLETE=source_bash", flexplane)
    refused = run("/usr/bin/env", *(f"{k}={v}" for k, v in environment.items()), flexplane, "vms", "list")
    django = run(
        str(python),
        "-c",
        "import importlib.util; print(importlib.util.find_spec('django'))",
    )

    assert helped.returncode == 0, helped.stderr[-3000:]
    assert "create" in helped.stdout
    assert completion.returncode == 0, completion.stderr[-3000:]
    assert "_FLEXPLANE_COMPLETE" in completion.stdout
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert "flexplane login" in refused.stderr
    assert django.stdout.split() == ["None"]
