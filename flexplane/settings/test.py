"""Settings for the test process itself (the orchestrator under test runs as its own process)."""

from typing import cast

from flexplane.settings import *  # noqa: F403

DEBUG = False

# The fake zones, the Kubernetes emulator and the other aiohttp servers the tests run in this process
# log no access line per request: formatting them (as JSON, for every Proxmox and Kubernetes call of
# every test) took about 6% of this process's time. The harness counts the calls itself
# (devstack.fakezones' traffic); LOG_LEVEL does not bring them back, this does.
cast(dict[str, object], LOGGING["loggers"])["aiohttp.access"] = {"level": "WARNING"}  # noqa: F405
