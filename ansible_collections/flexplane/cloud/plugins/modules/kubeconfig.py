#!/usr/bin/python
# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A kubeconfig of the caller for one of the VDC's clusters, written to a file only its owner reads.

Each kubeconfig the API gives is new (a client certificate made for the download, valid 8 hours, each
issuance audited), so the module asks for one only when the file has none of this cluster that stays
valid for ``renew_before`` more seconds: a second run within that time changes nothing.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: kubeconfig
short_description: A kubeconfig for a flex.plane Kubernetes cluster
version_added: 0.1.0
description:
  - Writes a kubeconfig of the caller (a service account, a person) for one of the VDC's Kubernetes
    clusters to O(dest), mode C(0600). Its client certificate is valid 8 hours.
  - The file is left as it is while it holds a kubeconfig of that cluster (its API server) whose
    certificate is valid for O(renew_before) more seconds; otherwise a new one is asked for and written.
author:
  - flex.plane contributors (@flexplane)
extends_documentation_fragment:
  - flexplane.cloud.flexplane
options:
  cluster:
    description:
      - The cluster's name.
    type: str
    required: true
  dest:
    description:
      - The file to write.
    type: path
    required: true
  renew_before:
    description:
      - Seconds before the certificate expires from which a new kubeconfig is written.
    type: int
    default: 3600
attributes:
  check_mode:
    description: Reports whether a new kubeconfig would be written, without asking for one.
    support: full
  diff_mode:
    description: The file's cluster, server and certificate expiry before and after (never its keys).
    support: full
"""

EXAMPLES = r"""
- name: A kubeconfig for the cluster apps
  flexplane.cloud.kubeconfig:
    cluster: apps
    dest: "{{ lookup('env', 'HOME') }}/.kube/apps"

- name: Its nodes
  ansible.builtin.command: kubectl --kubeconfig ~/.kube/apps get nodes
  changed_when: false
"""

RETURN = r"""
dest:
  description: The file.
  returned: always
  type: str
expires_at:
  description: When the file's certificate expires (ISO 8601).
  returned: when the file holds one (not in check mode before a first write)
  type: str
"""

import base64  # noqa: E402
import datetime  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from ..module_utils.flexplane import answered, fail, module_of, payload  # noqa: E402

# Read-write for its owner only: the file holds a private key.
MODE = 0o600


def held(path: str) -> dict[str, Any]:
    """The cluster, server and certificate expiry of the kubeconfig at ``path``; {} for none, or one
    that cannot be read."""
    import yaml  # both come with flexplane-client (PyYAML, PyJWT[crypto])
    from cryptography import x509

    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        cluster = document["clusters"][0]
        certificate = base64.b64decode(document["users"][0]["user"]["client-certificate-data"])
        expires = x509.load_pem_x509_certificate(certificate).not_valid_after_utc
        server = cluster["cluster"]["server"]
    except (OSError, ValueError, KeyError, IndexError, TypeError, yaml.YAMLError):
        return {}
    return {"cluster": cluster["name"], "server": server, "expires_at": expires.isoformat()}


def fresh(found: dict[str, Any], cluster: str, endpoint: Any, renew_before: int) -> bool:
    """Whether the file holds a kubeconfig of this cluster good for ``renew_before`` more seconds."""
    if not found or found["cluster"] != cluster or found["server"] != endpoint:
        return False
    left = datetime.datetime.fromisoformat(found["expires_at"]) - datetime.datetime.now(datetime.UTC)
    return left.total_seconds() > renew_before


def write(dest: str, text: str) -> None:
    """The file replaced at once, never readable by others even for a moment."""
    directory = Path(dest).resolve().parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=directory, prefix=".kubeconfig-")
    temporary = Path(name)
    try:
        os.fchmod(handle, MODE)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        temporary.replace(dest)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def run(module: Any) -> None:
    params = module.params
    result: dict[str, Any] = {"changed": False, "dest": params["dest"]}
    with answered(module, **result) as api:
        cluster = api.kubernetes_cluster(params["cluster"]).kubernetes_cluster
        if cluster is None:
            fail(module, f"cluster {params['cluster']} is not the VDC's", code="NOT_FOUND", field="cluster")
        before = held(params["dest"])
        result["changed"] = not fresh(before, cluster.name, cluster.endpoint, params["renew_before"])
        after = before
        if result["changed"] and not module.check_mode:
            issued = payload(api.kubeconfig(cluster.name).kubeconfig, "kubeconfig")
            write(params["dest"], issued.kubeconfig)
            after = held(params["dest"])
        elif result["changed"]:
            after = {"cluster": cluster.name, "server": cluster.endpoint, "expires_at": None}
        if module._diff:
            result["diff"] = {"before": before, "after": after}
        if after.get("expires_at"):
            result["expires_at"] = after["expires_at"]
        module.exit_json(**result)


def main() -> None:
    module = module_of(
        {
            "cluster": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "renew_before": {"type": "int", "default": 3600},
        }
    )
    run(module)


if __name__ == "__main__":
    main()
