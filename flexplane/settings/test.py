"""Settings for the test process itself (the orchestrator under test runs as its own process)."""

from flexplane.settings import *  # noqa: F403

DEBUG = False
