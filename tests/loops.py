"""A coroutine run to its end from a test, on a thread of its own.

The test's own thread may hold another's running event loop: pytest-playwright's sync API keeps one
there for as long as its browser lives (the session, in a worker that ran a browser test first), and
``asyncio.run`` refuses to start where a loop runs. A thread of its own has none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_apart(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a new thread; its result, or what it raised."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-loop") as pool:
        return pool.submit(asyncio.run, coroutine).result()
