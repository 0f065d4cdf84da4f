"""The providers' access to Secrets, granted namespace by namespace: by a RoleBinding they make for
themselves in each namespace they work in, before they touch a Secret there.

Their namespaces come and go at run time (each VDC's ``vdc-<vdc>``, made by the orchestrator with the
VDC's first cluster; each hosted control plane's ``fpcp-<vdc>-<cluster>``, made by the control plane
provider), so no Role of a fixed namespace can grant them, and a ClusterRole granting Secrets would grant
kube-system's as well. The chart's ClusterRole therefore grants no Secret, only ``bind`` on two
ClusterRoles: ``FLEXPLANE_PROVIDERS_VDC_ROLE`` (a VDC's Secrets: machines' bootstrap data read, Cluster
API's ``<cluster>-kubeconfig`` and ``<cluster>-ca`` written and deleted) and
``FLEXPLANE_PROVIDERS_CONTROL_PLANE_ROLE`` (a control plane's PKI and kubeconfigs, written, and the
ServiceMonitor of its API server's /metrics, :mod:`providers.controlplane.monitoring`). The providers
bind their own account (``FLEXPLANE_SERVICE_ACCOUNT``, ``<namespace>/<name>``) to the first in a
``vdc-*`` namespace and to the second in an ``fpcp-*`` one, as the orchestrator binds itself to its VDC
role; the chart's admission fence admits exactly those RoleBindings. Unset (the devstack, whose emulator
enforces no RBAC), nothing is bound.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from orchestrator.sources.kube_objects import VDC_NAMESPACE_PREFIX

VDC_ROLE_SETTING = "FLEXPLANE_PROVIDERS_VDC_ROLE"
CONTROL_PLANE_ROLE_SETTING = "FLEXPLANE_PROVIDERS_CONTROL_PLANE_ROLE"
ACCOUNT_SETTING = "FLEXPLANE_SERVICE_ACCOUNT"
CONTROL_PLANE_NAMESPACE_PREFIX = "fpcp-"
RBAC_API = "rbac.authorization.k8s.io/v1"


@dataclass(frozen=True)
class SecretsAccess:
    """The ClusterRoles the providers bind themselves to, and the account they are ("": none)."""

    vdc_role: str = ""
    control_plane_role: str = ""
    account: str = ""  # <namespace>/<name>

    def __post_init__(self) -> None:
        if (self.vdc_role or self.control_plane_role) and self.account.count("/") != 1:
            raise ValueError(
                f"{ACCOUNT_SETTING} must be <namespace>/<name> when the providers bind themselves "
                f"({VDC_ROLE_SETTING}, {CONTROL_PLANE_ROLE_SETTING}), not {self.account!r}"
            )

    @classmethod
    def from_environment(cls) -> SecretsAccess:
        """From the environment; ValueError when a role is named without an account to bind."""
        return cls(
            os.environ.get(VDC_ROLE_SETTING, "").strip(),
            os.environ.get(CONTROL_PLANE_ROLE_SETTING, "").strip(),
            os.environ.get(ACCOUNT_SETTING, "").strip(),
        )

    def role_in(self, namespace: str) -> str:
        """The role the providers hold in ``namespace`` ("": none to bind)."""
        if namespace.startswith(VDC_NAMESPACE_PREFIX):
            return self.vdc_role
        if namespace.startswith(CONTROL_PLANE_NAMESPACE_PREFIX):
            return self.control_plane_role
        return ""

    def binding(self, namespace: str) -> dict[str, Any] | None:
        """The RoleBinding that lets the providers at the Secrets of ``namespace`` (None: nothing to bind,
        access is the deployment's affair)."""
        role = self.role_in(namespace)
        if not role:
            return None
        account_namespace, account_name = self.account.split("/", 1)
        return {
            "apiVersion": RBAC_API,
            "kind": "RoleBinding",
            "metadata": {"name": role, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account_name, "namespace": account_namespace}],
        }


# No role named: nothing is bound (the devstack's, and any deployment that grants Secrets itself).
NO_BINDING = SecretsAccess()
