"""What a service call knows about its request: who asks, for which VDC, and what was read so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from orchestrator.auth import Principal
from orchestrator.errors import Unavailable

T = TypeVar("T")


@dataclass
class Context:
    """One request's caller and its per-request memo (the only cache allowed: it dies with the request)."""

    principal: Principal
    # The VDC the request acts in (the FlexPlane-VDC-ID header, or the portal's URL); None: not scoped.
    vdc: str | None = None
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    # Zones or hosts that did not answer: the data returned is partial, and says so.
    unavailable: list[Unavailable] = field(default_factory=list)

    def memoize(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()`` once per request for ``key``."""
        if key not in self._memo:
            self._memo[key] = compute()
        value: T = self._memo[key]
        return value

    def memoized(self, key: Any) -> Any | None:
        """What ``memoize`` keeps for ``key`` if this request computed it already, else ``None``."""
        return self._memo.get(key)

    def report_unavailable(self, failures: list[Unavailable]) -> None:
        for failure in failures:
            if all(failure.where != known.where for known in self.unavailable):
                self.unavailable.append(failure)
