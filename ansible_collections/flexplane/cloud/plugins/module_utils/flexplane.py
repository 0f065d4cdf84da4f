# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every flexplane.cloud module shares: the connection options, a client of the API built from them
(flexplane-client's ``FlexPlane``), the API's failures as the module's, and its answers as plain data.

The modules are thin: the client already types the operations, raises each failure the API answers as an
``ApiError`` of its code, follows tasks and authenticates with a service account's key. What is left here
is Ansible's side: options with environment fallbacks, ``fail_json`` with the API's code, field and
message, and the answer's models as dicts (snake_case, as Ansible's return values are).
"""

from __future__ import annotations

import ssl
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule, env_fallback, missing_required_lib

CLIENT_IMPORT_ERROR: str | None
# The API's input types (``inputs.CreateNetworkInput``) for the modules, which import nothing of the
# client themselves: without it, ``client`` fails the module before they use one.
inputs: Any
try:
    import httpx

    from apiclient import ApiError, FlexPlane, ProtocolError, ServiceAccountKey
    from apiclient.generated import input_types as inputs  # pylint: disable=unused-import
except ImportError:
    CLIENT_IMPORT_ERROR = traceback.format_exc()
    inputs = None
else:
    CLIENT_IMPORT_ERROR = None

# The distribution that holds ``apiclient``, named in the failure when it is missing.
CLIENT_DISTRIBUTION = "flexplane-client"

Payload = TypeVar("Payload")


def fail(module: AnsibleModule, msg: str, **details: Any) -> NoReturn:
    """``module.fail_json``, which exits; typed so, for the code after it."""
    module.fail_json(msg=msg, **details)
    raise SystemExit(1)


def payload(value: Payload | None, mutation: str) -> Payload:
    """A mutation's payload, which the schema lets be null but the API always answers (its errors are
    raised by the client): a null one is not an answer of the API."""
    if value is None:
        raise ProtocolError(f"{mutation} answered no payload")
    return value


def connection_argument_spec() -> dict[str, Any]:
    """The options of doc_fragments/flexplane.py, each with its environment variable."""
    return {
        "url": {"type": "str", "required": True, "fallback": (env_fallback, ["FLEXPLANE_URL"])},
        "vdc": {"type": "str", "required": True, "fallback": (env_fallback, ["FLEXPLANE_VDC"])},
        "token": {"type": "str", "no_log": True, "fallback": (env_fallback, ["FLEXPLANE_TOKEN"])},
        "service_account_key": {
            "type": "path",
            "no_log": False,  # the key file's path; the key itself is never an option's value
            "fallback": (env_fallback, ["FLEXPLANE_SERVICE_ACCOUNT_KEY"]),
        },
        "issuer": {"type": "str", "fallback": (env_fallback, ["FLEXPLANE_ISSUER"])},
        "project_id": {"type": "str", "fallback": (env_fallback, ["FLEXPLANE_PROJECT_ID"])},
        "ca_file": {"type": "path", "fallback": (env_fallback, ["FLEXPLANE_CA_FILE"])},
        "validate_certs": {
            "type": "bool",
            "default": True,
            "fallback": (env_fallback, ["FLEXPLANE_VALIDATE_CERTS"]),
        },
        "timeout": {"type": "float", "default": 30.0},
        "poll_interval": {"type": "float", "default": 1.0},
    }


def module_of(argument_spec: dict[str, Any], **options: Any) -> AnsibleModule:
    """An ``AnsibleModule`` of the connection's options and the module's own, in check mode when asked.
    A token or a key is checked for here rather than with ``required_one_of``: both may come from the
    environment, which the check would not see."""
    return AnsibleModule(
        argument_spec={**connection_argument_spec(), **argument_spec},
        supports_check_mode=True,
        mutually_exclusive=[("token", "service_account_key")],
        **options,
    )


def _verify(params: dict[str, Any]) -> Any:
    """httpx's ``verify``: off, the platform's CA, or the system's store."""
    if not params["validate_certs"]:
        return False
    if params["ca_file"]:
        return ssl.create_default_context(cafile=params["ca_file"])
    return True


def origin(issuer: str) -> str:
    """Where the key is exchanged: the issuer's origin (Zitadel's token endpoint is ``/oauth/v2/token``
    under it, whatever path the issuer has), as the CLI takes it."""
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}"


def _auth(module: AnsibleModule, verify: Any) -> Any:
    """The token as it is, or the service account's key exchanged at the issuer."""
    params = module.params
    if params["token"]:
        return params["token"]
    if not params["service_account_key"]:
        module.fail_json(msg="one of token and service_account_key is required (or FLEXPLANE_TOKEN, ...)")
    missing = [name for name in ("issuer", "project_id") if not params[name]]
    if missing:
        module.fail_json(msg=f"service_account_key needs {' and '.join(missing)}", field=missing[0])
    try:
        return ServiceAccountKey.from_file(
            params["service_account_key"],
            origin(params["issuer"]),
            params["project_id"],
            http=httpx.Client(verify=verify, timeout=params["timeout"]),
        )
    except (OSError, ValueError) as error:
        fail(module, f"cannot read the service account's key {params['service_account_key']}: {error}")


def client(module: AnsibleModule) -> FlexPlane:
    """The API in the module's VDC, as its token or service account says; fails the module without
    flexplane-client."""
    if CLIENT_IMPORT_ERROR is not None:
        module.fail_json(msg=missing_required_lib(CLIENT_DISTRIBUTION), exception=CLIENT_IMPORT_ERROR)
    params = module.params
    verify = _verify(params)
    return FlexPlane(
        params["url"],
        _auth(module, verify),
        vdc=params["vdc"],
        timeout=params["timeout"],
        verify=verify,
        poll_interval=params["poll_interval"],
    )


@contextmanager
def answered(module: AnsibleModule, **result: Any) -> Iterator[FlexPlane]:
    """A client for the block; what the API refuses fails the module with its code, field and message
    (and ``result``: what the module had done before it), and so does an API that does not answer."""
    api = client(module)
    try:
        yield api
    except ApiError as error:
        problems = [
            {"code": problem.code, "field": problem.field, "message": problem.message}
            for problem in error.problems
        ]
        module.fail_json(
            msg=f"{error.code}: {error}",
            code=error.code,
            field=error.field,
            problems=problems,
            **result,
        )
    except httpx.HTTPError as error:
        module.fail_json(msg=f"the API at {module.params['url']} did not answer: {error}", **result)
    finally:
        api.close()


def vm_named(api: FlexPlane, name: str) -> Any:
    """The VDC's VM of that name, or None (a deleted VM's last state does not count)."""
    for vm in api.all_virtual_machines(inputs.VirtualMachineFilter(nameContains=name)):
        if vm.name == name and vm.status != "deleted":
            return vm
    return None


def plain(model: Any) -> Any:
    """An answer's model as Ansible returns it: a dict of snake_case keys (None stays None)."""
    if model is None:
        return None
    if isinstance(model, list):
        return [plain(item) for item in model]
    dumped: Any = model.model_dump(mode="json", by_alias=False)
    return dumped


def diff_of(before: Any, after: Any) -> dict[str, Any]:
    """Ansible's ``diff``: what was and what is (or would be: check mode), ``{}`` for something absent."""
    return {"before": before or {}, "after": after or {}}
