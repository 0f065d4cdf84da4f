"""Something brought up from parts and torn down again, such as the world or a test's own platform."""

from __future__ import annotations

from typing import Self


class Lifecycle:
    """``start()`` brings the parts up (``_start``); ``stop()`` tears down whichever of them run, so it
    also cleans up after a start that failed half-way. As a context manager: started, then stopped."""

    def _start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
