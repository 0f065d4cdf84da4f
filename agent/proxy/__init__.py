"""The Proxmox proxy's check: which calls the agent forwards, with which parameters and values.

``routes`` declares each forwarded route and its parameters, ``params`` the validators, ``paths`` the
methods, path patterns and size limits, ``check`` the function that applies them all, ``refusal`` the
error and the log marker of a refusal.
"""

from agent.proxy.check import authorize
from agent.proxy.params import Policy
from agent.proxy.paths import (
    MAX_PARAM_VALUE_BYTES,
    METHODS,
    PLACEHOLDERS,
    check_params,
    check_path,
)
from agent.proxy.refusal import REFUSED, NotAllowed, refusals
from agent.proxy.routes import ALLOWED, ALLOWED_ROWS, Route, compile_table

__all__ = [
    "ALLOWED",
    "ALLOWED_ROWS",
    "MAX_PARAM_VALUE_BYTES",
    "METHODS",
    "PLACEHOLDERS",
    "REFUSED",
    "NotAllowed",
    "Policy",
    "Route",
    "authorize",
    "check_params",
    "check_path",
    "compile_table",
    "refusals",
]
