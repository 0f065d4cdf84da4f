"""What the Kubernetes pages let a user do, and the GraphQL mutation behind each (the parity test reads
:data:`MUTATIONS`): each view calls the same service function as that mutation's resolver.

The kubeconfig download is the ``kubeconfig`` query's (a read: nothing changes in the platform), so it
is a link, not a form, and has no entry here.
"""

from __future__ import annotations

from portal.actions import Action, registry

# Every portal action on Kubernetes clusters, with the GraphQL mutation that does the same.
CREATE = Action("cluster.create", "createKubernetesCluster")
SCALE = Action("cluster.scale", "scaleNodePool")
UPGRADE = Action("cluster.upgrade", "upgradeKubernetesCluster")
DELETE = Action("cluster.delete", "deleteKubernetesCluster")
RESTORE = Action("cluster.restore", "restoreKubernetesCluster")

MUTATIONS: dict[str, str] = registry(CREATE, SCALE, UPGRADE, DELETE, RESTORE)
