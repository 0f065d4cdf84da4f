"""Images as Proxmox templates on the agent's own node: the work behind Images.EnsureTemplate.

For an (image, storage) the agent keeps one template, found again by its name and tags
alone (see :mod:`agentclient.templates`). When there is none it

1. checks the storages: the template's storage must hold VM disks, and the staging storage
   (``image_staging_storage``) must take ``import`` content (PVE 8.4 and later; preferred)
   or, failing that, ``iso`` content;
2. downloads the URL under the URL policy and verifies the checksum (:mod:`agent.images.download`);
3. uploads the verified file to the staging storage (``POST .../storage/{staging}/upload``,
   with the checksum, which Proxmox verifies again);
4. creates a VM (``POST /nodes/{node}/qemu``) whose disk imports that file onto the storage
   (``scsi0: <storage>:0,import-from=<staged volume>``), with a cloud-init drive, a serial
   console and the guest agent enabled, named and tagged as the template; then converts it
   to a template (``POST .../template``), waiting for each Proxmox task;
5. removes the staged file and the download.

Anything that fails after the VM was created removes that VM (purging its disks), and the
staged file and the download are removed whatever happens: a failure leaves nothing
half-made behind. A VM with the template's name and tags that is not a template (an
import interrupted by a crash) is removed before the next import.

One import runs at a time per (image, storage): callers that come while it runs follow
its progress and then reuse its template. The import does not belong to a caller: it
goes on when the caller goes away, so that a retry finds it under way or done.

The package's modules: :mod:`~agent.images.request` (the request, checked),
:mod:`~agent.images.download` (step 2), :mod:`~agent.images.nodeapi` (Proxmox calls and tasks),
:mod:`~agent.images.jobs` (one import per template, followed by its callers) and
:mod:`~agent.images.manager` (the steps above).
"""

from agent.images.jobs import Interrupted
from agent.images.manager import TemplateManager, detect_format
from agent.images.nodeapi import NodeApi, TemplateImportError
from agent.images.request import EnsureRequest, InvalidRequest

__all__ = [
    "EnsureRequest",
    "Interrupted",
    "InvalidRequest",
    "NodeApi",
    "TemplateImportError",
    "TemplateManager",
    "detect_format",
]
