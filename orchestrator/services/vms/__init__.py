"""Virtual machines: listing and reading them, creating them, and their whole life.

Authorization: every call needs USER or ADMIN. A VM is visible to the members of its VDC (and to
ADMIN); one of another VDC is reported exactly like one that does not exist. Creating needs the
VDC named by the request (the ``FlexPlane-VDC-ID`` header).

- ``listing``: a page of VMs, one VM (``list_vms``, ``get_vm``);
- ``inputs``: what a create is given, checked (names, SSH keys, user data, idempotency keys);
- ``plan``: a create checked against the catalog and the VDC, and the VDC's VMs now;
- ``create``: template, clone, configure, start (``create_vm``);
- ``lifecycle``: power, resize, delete.
"""

from orchestrator.services.vms.create import (
    CLONE_TIMEOUT,
    TEMPLATE_WAIT,
    VMID_ATTEMPTS,
    create_vm,
    meta_data,
)
from orchestrator.services.vms.inputs import (
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_SSH_KEY_LENGTH,
    MAX_SSH_KEYS,
    MAX_USER_DATA_BYTES,
    MIN_RSA_BITS,
    SSH_KEY_TYPES,
    USER_DATA_HEADERS,
    parse_ssh_key,
    parse_ssh_keys,
    validate_idempotency_key,
    validate_name,
    validate_user_data,
)
from orchestrator.services.vms.lifecycle import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    MAX_SHUTDOWN_TIMEOUT,
    SHUTDOWN_WAIT,
    TASK_TIMEOUT,
    Outcome,
    delete_vm,
    reboot_vm,
    resize_vm,
    shutdown_vm,
    snippet_name,
    start_vm,
    stop_vm,
    vendor_snippet_name,
)
from orchestrator.services.vms.listing import (
    DEFAULT_PAGE_SIZE,
    VM,
    Page,
    SortKey,
    VmFilter,
    decode_cursor,
    encode_cursor,
    get_vm,
    list_vms,
)
from orchestrator.services.vms.plan import BOOTSTRAP_TAG, LOCK_TTL, LOCK_WAIT, Bootstrap, Created, CreateVm

__all__ = [
    "BOOTSTRAP_TAG",
    "CLONE_TIMEOUT",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "LOCK_TTL",
    "LOCK_WAIT",
    "MAX_IDEMPOTENCY_KEY_LENGTH",
    "MAX_SHUTDOWN_TIMEOUT",
    "MAX_SSH_KEYS",
    "MAX_SSH_KEY_LENGTH",
    "MAX_USER_DATA_BYTES",
    "MIN_RSA_BITS",
    "SHUTDOWN_WAIT",
    "SSH_KEY_TYPES",
    "TASK_TIMEOUT",
    "TEMPLATE_WAIT",
    "USER_DATA_HEADERS",
    "VM",
    "VMID_ATTEMPTS",
    "Bootstrap",
    "CreateVm",
    "Created",
    "Outcome",
    "Page",
    "SortKey",
    "VmFilter",
    "create_vm",
    "decode_cursor",
    "delete_vm",
    "encode_cursor",
    "get_vm",
    "list_vms",
    "meta_data",
    "parse_ssh_key",
    "parse_ssh_keys",
    "reboot_vm",
    "resize_vm",
    "shutdown_vm",
    "snippet_name",
    "start_vm",
    "stop_vm",
    "validate_idempotency_key",
    "validate_name",
    "validate_user_data",
    "vendor_snippet_name",
]
