"""What the Proxmox proxy forwards: the names earlier code imports, now declared in :mod:`agent.proxy`
(routes with their parameters and validators, the check, the refusal marker)."""

from agent.proxy import (
    ALLOWED,
    ALLOWED_ROWS,
    MAX_PARAM_VALUE_BYTES,
    METHODS,
    PLACEHOLDERS,
    REFUSED,
    NotAllowed,
    Policy,
    Route,
    authorize,
    check_params,
    check_path,
    compile_table,
)

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
]
