"""Every action of the admin pages, and the GraphQL mutation that does the same.

The portal is a face over the API: whatever an admin can do here, an automation user can do
through ``schema.graphql``. Each portal area keeps such a registry in its ``actions.py``
(``MUTATIONS``: action -> mutation name). The admin views perform only registered actions
(:func:`action`), every form that performs one names it in ``data-action``, and
``tests/portal/test_portal_action_parity.py`` fails when an action has no mutation in the
schema, or when a form of the portal names no registered action.
"""

from __future__ import annotations

from portal.actions import checked

MUTATIONS: dict[str, str] = {
    "compute-profile.create": "createComputeProfile",
    "compute-profile.update": "updateComputeProfile",
    "compute-profile.delete": "deleteComputeProfile",
    "storage-profile.create": "createStorageProfile",
    "storage-profile.update": "updateStorageProfile",
    "storage-profile.delete": "deleteStorageProfile",
    "image.create": "createImage",
    "image.update": "updateImage",
    "image.delete": "deleteImage",
    "kubernetes-version.create": "createKubernetesVersion",
    "kubernetes-version.update": "updateKubernetesVersion",
    "kubernetes-version.delete": "deleteKubernetesVersion",
    "zone.create": "createZone",
    "zone.update": "updateZone",
    "zone.delete": "deleteZone",
    "vdc.create": "createVdc",
    "vdc.update": "updateVdc",
    "vdc.delete": "deleteVdc",
    "host.cordon": "cordonHost",
    "host.uncordon": "uncordonHost",
    "host.drain": "drainHost",
    "host.update-now": "updateHostNow",
    "host.remove": "removeHost",
    "host.join-token": "createHostJoinToken",
    "host.rollout-halt": "haltAgentRollout",
    "host.rollout-resume": "resumeAgentRollout",
}


action = checked(MUTATIONS, __name__)
