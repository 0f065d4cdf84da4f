"""The platform catalog: compute and storage profiles, images, zones and hosts (VDCs: ``services.vdcs``).

Every catalog object is a ConfigMap of the platform namespace (``orchestrator.sources.kube``).
A request reads the whole catalog with one list call the first time it needs any of it, and
keeps that snapshot for the rest of the request (and only for it: the stateless rule).

Who may do what, decided here once: reading profiles, images, zones and hosts needs USER or
ADMIN; every write needs ADMIN. Every value is validated as its kind declares it
(``orchestrator.models.catalog``), and a bad one is a ``ValidationFailed`` naming its input
field. Removing a profile or an image removes it from the catalog and from the VDCs that allowed
it (``offerings``): the VMs made from it keep running, and keep what they were made from in their
own Proxmox config. A new one may be allowed in VDCs as it is created (``allow_in_vdcs``).

- ``snapshot``: the request's one read of the whole catalog, and the request's writes applied to it;
- ``fields``: typed, validated reads of an input's values, each failure naming its field;
- ``kinds``: each kind's inputs checked by their declaration, and how it is built and stored;
- ``reads``: each kind's objects, and one of them, for a caller who may read the catalog;
- ``changes``: creating, changing and deleting each kind's objects (ADMIN);
- ``offerings``: which VDCs offer a profile or an image, kept in step with the catalog.
"""

from orchestrator.models.catalog import MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH, MAX_TITLE_LENGTH
from orchestrator.services.catalog.changes import (
    allowed_in,
    create_compute_profile,
    create_host,
    create_image,
    create_kubernetes_version,
    create_storage_profile,
    create_zone,
    delete_compute_profile,
    delete_image,
    delete_kubernetes_version,
    delete_storage_profile,
    delete_zone,
    drop_host,
    update_compute_profile,
    update_host,
    update_image,
    update_kubernetes_version,
    update_storage_profile,
    update_zone,
)
from orchestrator.services.catalog.fields import (
    NAME_RULE,
    SLUG_RULE,
    Fields,
    check_fields,
    is_name,
    is_slug,
)
from orchestrator.services.catalog.offerings import ALLOW_IN_VDCS, Withdrawn
from orchestrator.services.catalog.reads import (
    compute_profile,
    host,
    host_endpoint,
    image,
    kubernetes_version,
    list_compute_profiles,
    list_hosts,
    list_images,
    list_kubernetes_versions,
    list_storage_profiles,
    list_zones,
    storage_profile,
    zone,
)
from orchestrator.services.catalog.snapshot import (
    COMPUTE_PROFILE,
    HOST,
    IMAGE,
    KINDS,
    STORAGE_PROFILE,
    VDC,
    ZONE,
    ZONE_LABEL,
    entries,
    forget,
    hosts,
    objects,
    remember,
    zone_targets,
    zones,
)

__all__ = [
    "ALLOW_IN_VDCS",
    "COMPUTE_PROFILE",
    "HOST",
    "IMAGE",
    "KINDS",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "MAX_TITLE_LENGTH",
    "NAME_RULE",
    "SLUG_RULE",
    "STORAGE_PROFILE",
    "VDC",
    "ZONE",
    "ZONE_LABEL",
    "Fields",
    "Withdrawn",
    "allowed_in",
    "check_fields",
    "compute_profile",
    "create_compute_profile",
    "create_host",
    "create_image",
    "create_kubernetes_version",
    "create_storage_profile",
    "create_zone",
    "delete_compute_profile",
    "delete_image",
    "delete_kubernetes_version",
    "delete_storage_profile",
    "delete_zone",
    "drop_host",
    "entries",
    "forget",
    "host",
    "host_endpoint",
    "hosts",
    "image",
    "is_name",
    "is_slug",
    "kubernetes_version",
    "list_compute_profiles",
    "list_hosts",
    "list_images",
    "list_kubernetes_versions",
    "list_storage_profiles",
    "list_zones",
    "objects",
    "remember",
    "storage_profile",
    "update_compute_profile",
    "update_host",
    "update_image",
    "update_kubernetes_version",
    "update_storage_profile",
    "update_zone",
    "zone",
    "zone_targets",
    "zones",
]
