"""What the Kubernetes pages let a user do, and the GraphQL mutation behind each (the parity test reads
:data:`MUTATIONS`): each view calls the same service function as that mutation's resolver.

The kubeconfig download is the ``kubeconfig`` query's (a read: nothing changes in the platform), so it
is a link, not a form, and has no entry here.
"""

from __future__ import annotations

CREATE = "cluster.create"
SCALE = "cluster.scale"
UPGRADE = "cluster.upgrade"
DELETE = "cluster.delete"

# Every portal action on Kubernetes clusters -> the GraphQL mutation that does the same.
MUTATIONS: dict[str, str] = {
    CREATE: "createKubernetesCluster",
    SCALE: "scaleNodePool",
    UPGRADE: "upgradeKubernetesCluster",
    DELETE: "deleteKubernetesCluster",
}
