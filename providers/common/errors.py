"""What a provider's ``ensure_*`` step raises when the world does not match yet: try again later.

Handlers turn it into ``kopf.TemporaryError`` (kopf calls the handler again after ``delay`` seconds);
the step has written the condition that says why before it raises.
"""

from __future__ import annotations


class Retry(Exception):
    """Not done yet: ``message`` says what is awaited; try again in ``delay`` seconds (None: the handler's
    backoff)."""

    def __init__(self, message: str, delay: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.delay = delay
