"""The import itself: :class:`TemplateManager` finds, imports and converts templates on this node."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.images.download import Downloaded, Downloader, remove_stale_parts
from agent.images.jobs import Job, Throttle
from agent.images.nodeapi import NodeApi, TemplateImportError, data_of
from agent.images.request import EnsureRequest
from agent.metrics import TEMPLATE_REQUESTS
from agent.proxmox import ProxmoxClient
from agentclient.templates import (
    TemplatePhase,
    TemplateProgress,
    is_template_of,
    split_tags,
    template_name,
    template_tags,
)
from agentclient.urlpolicy import display_url

log = logging.getLogger(__name__)

# The upload to the node's own Proxmox may take this long, plus a second per UPLOAD_RATE bytes.
UPLOAD_BASE_SECONDS = 300.0
UPLOAD_RATE = 4 * 1024 * 1024
# VM ids tried when /cluster/nextid races with other creators: every node of a zone imports the images
# offered there at once when they are published (each import asks nextid, and all but one lose each
# round), so the losers try again after a random pause, up to this many times.
CREATE_ATTEMPTS = 16
CREATE_RETRY_PAUSE = (0.02, 0.25)  # seconds, chosen at random between these
# How many imports of other callers (with another URL or checksum) a call waits through.
FOLLOW_ROUNDS = 8
# Shutting down: how long imports under way get to clean up after being cancelled.
CLOSE_TIMEOUT = 30.0

_COMPRESSED = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
)


class TemplateManager:
    """Ensures templates on this node; one per agent, closed (awaited) before Proxmox's client."""

    def __init__(
        self,
        proxmox: ProxmoxClient,
        downloader: Downloader,
        *,
        node: str,
        cache: Path,
        staging_storage: str,
    ) -> None:
        self.api = NodeApi(proxmox, node)
        self.proxmox = proxmox
        self.downloader = downloader
        self.node = node
        self.cache = cache
        self.staging_storage = staging_storage
        self._jobs: dict[tuple[str, str], Job] = {}

    def prepare(self) -> None:
        """At start-up: remove the downloads a crash left in the cache (created at the first download)."""
        if removed := remove_stale_parts(self.cache):
            log.info("removed %d interrupted download(s) from %s", removed, self.cache)

    async def ensure(self, request: EnsureRequest) -> AsyncIterator[TemplateProgress]:
        """Progress reports until the template of request.image on request.storage is ready (DONE).

        Raises DownloadRefused, DownloadFailed, ChecksumMismatchError, TemplateImportError,
        Interrupted, or ProxmoxUnreachableError.
        """
        failure: BaseException | None = None
        for _round in range(FOLLOW_ROUNDS):
            job = self._jobs.get(request.key)
            if job is None:
                job = self._start(request)
            elif job.request != request:
                log.info(
                    "template of %s on %s: waiting for the import under way (another URL or checksum)",
                    request.image,
                    request.storage,
                )
            async for progress in job.follow():
                yield progress
            failure = job.failure()
            if failure is None:
                return
            if job.request == request:
                raise failure
            # Another caller's import failed; this caller's URL or checksum may do better.
        assert failure is not None
        raise failure

    async def aclose(self) -> None:
        """Cancel the imports under way and let them clean up."""
        tasks = [job.task for job in self._jobs.values()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT)

    # ------------------------------------------------------------------ jobs

    def _start(self, request: EnsureRequest) -> Job:
        job = Job(request, self._run)
        self._jobs[request.key] = job

        def ended(task: asyncio.Task[TemplateProgress]) -> None:
            if self._jobs.get(request.key) is job:
                del self._jobs[request.key]
            job.finish()
            if task.cancelled():
                log.warning("template of %s on %s: cancelled", request.image, request.storage)
            elif (error := task.exception()) is not None:
                log.warning("template of %s on %s failed: %s", request.image, request.storage, error)

        job.task.add_done_callback(ended)
        return job

    def _report(
        self, phase: TemplatePhase, message: str, done: int = 0, total: int = 0, vmid: int = 0
    ) -> TemplateProgress:
        return TemplateProgress(
            phase=phase,
            bytes_done=done,
            bytes_total=total,
            message=message,
            template_vmid=vmid,
            node=self.node,
        )

    async def _run(self, job: Job) -> TemplateProgress:
        request = job.request
        name = template_name(request.image)
        job.publish(self._report(TemplatePhase.CHECKING, f"looking for {name} on {request.storage}"))
        vmid, leftovers = await self._find(request)
        if vmid is not None:
            TEMPLATE_REQUESTS.labels("hit").inc()
            log.info("template of %s on %s: reusing VM %d", request.image, request.storage, vmid)
            return self._done(job, vmid, f"{name} (VM {vmid}) is ready on {request.storage}")
        TEMPLATE_REQUESTS.labels("miss").inc()
        content = await self._staging_content(request)
        for leftover in leftovers:
            await self._remove_leftover(leftover)
        shown = display_url(request.url)
        job.publish(self._report(TemplatePhase.CHECKING, f"checking {shown}"))
        log.info("template of %s on %s: downloading %s", request.image, request.storage, shown)
        downloaded = await self.downloader.fetch(
            request.url,
            algorithm=request.algorithm,
            digest=request.digest,
            directory=self.cache,
            on_progress=lambda done, total: job.publish(
                self._report(TemplatePhase.DOWNLOADING, f"downloading {shown}", done, total)
            ),
            on_verify=lambda size: job.publish(
                self._report(
                    TemplatePhase.VERIFYING, f"verifying the {request.algorithm} checksum", size, size
                )
            ),
        )
        try:
            vmid = await self._import(job, downloaded, content)
        finally:
            downloaded.path.unlink(missing_ok=True)
        log.info("template of %s on %s: VM %d made", request.image, request.storage, vmid)
        return self._done(job, vmid, f"{name} (VM {vmid}) is ready on {request.storage}")

    def _done(self, job: Job, vmid: int, message: str) -> TemplateProgress:
        report = self._report(TemplatePhase.DONE, message, vmid=vmid)
        job.publish(report)
        return report

    # --------------------------------------------------------------- finding

    async def _find(self, request: EnsureRequest) -> tuple[int | None, list[dict[str, Any]]]:
        """The template's vmid (None if there is none) and VMs an interrupted import left."""
        resources = await self.api.call(
            "GET", "/cluster/resources", {"type": "vm"}, what="listing the cluster's guests"
        )
        mine = [
            resource
            for resource in (resources if isinstance(resources, list) else [])
            if isinstance(resource, dict)
            and resource.get("node") == self.node
            and is_template_of(resource, request.image, request.storage)
        ]
        templates = sorted(int(r["vmid"]) for r in mine if str(r.get("template", 0)) == "1")
        if len(templates) > 1:
            log.warning(
                "%d templates of %s on %s (VMs %s): using the first",
                len(templates),
                request.image,
                request.storage,
                ", ".join(map(str, templates)),
            )
        leftovers = [r for r in mine if str(r.get("template", 0)) != "1"]
        return (templates[0] if templates else None), leftovers

    async def _staging_content(self, request: EnsureRequest) -> str:
        """Check both storages on this node; the content type to upload the image as (import or iso)."""
        listing = await self.api.call(
            "GET", f"/nodes/{self.node}/storage", what="listing the node's storages"
        )
        storages = {str(s.get("storage")): s for s in (listing if isinstance(listing, list) else [])}
        target = self._usable_storage(storages, request.storage, "storage")
        if "images" not in split_tags(str(target.get("content", ""))):
            raise TemplateImportError(
                f"storage {request.storage} does not hold VM disks "
                f"(its content: {target.get('content') or 'none'})"
            )
        staging = self._usable_storage(
            storages, self.staging_storage, "the staging storage (image_staging_storage)"
        )
        contents = split_tags(str(staging.get("content", "")))
        for content in ("import", "iso"):
            if content in contents:
                return content
        raise TemplateImportError(
            f"the staging storage {self.staging_storage} takes neither import nor iso content: "
            "add import to its content types"
        )

    def _usable_storage(self, storages: dict[str, Any], name: str, role: str) -> dict[str, Any]:
        storage = storages.get(name)
        if not isinstance(storage, dict):
            raise TemplateImportError(f"{role} {name} is not available on node {self.node}")
        if str(storage.get("active", 1)) != "1":
            raise TemplateImportError(f"{role} {name} is not active on node {self.node}")
        return storage

    async def _remove_leftover(self, resource: dict[str, Any]) -> None:
        vmid = int(resource["vmid"])
        if resource.get("lock"):
            raise TemplateImportError(
                f"VM {vmid} ({resource.get('name')}), left by an earlier import, is locked "
                f"({resource['lock']}); try again once its task has ended"
            )
        log.warning("removing VM %d, left half-made by an earlier import", vmid)
        await self._destroy(vmid)

    # ------------------------------------------------------------- importing

    async def _import(self, job: Job, downloaded: Downloaded, content: str) -> int:
        """Upload, create the VM, convert it; on failure remove what was made. Returns the vmid."""
        request = job.request
        disk_format = detect_format(downloaded.head)
        suffix = disk_format if content == "import" else "img"
        filename = f"fp-{request.image}-{downloaded.digest[:16]}.{suffix}"
        volume = f"{self.staging_storage}:{content}/{filename}"
        made: list[int] = []
        try:
            try:
                await self._upload(job, downloaded, content, filename)
                vmid = await self._create(job, volume, disk_format, made)
                job.publish(self._report(TemplatePhase.IMPORTING, f"converting VM {vmid} to a template"))
                upid = await self.api.call(
                    "POST",
                    f"/nodes/{self.node}/qemu/{vmid}/template",
                    what=f"converting VM {vmid} to a template",
                )
                if upid is not None:
                    await self.api.wait(upid, what=f"converting VM {vmid} to a template")
                return vmid
            except BaseException as exc:
                problems = [
                    problem for vmid in made if (problem := await self._remove_half_made(vmid, request))
                ]
                if problems and isinstance(exc, TemplateImportError):
                    raise TemplateImportError(
                        f"{exc}; cleaning up failed too: {'; '.join(problems)}"
                    ) from exc
                raise
        finally:
            await self._remove_staged(volume)

    async def _upload(self, job: Job, downloaded: Downloaded, content: str, filename: str) -> None:
        size = downloaded.size
        message = f"copying the image to storage {self.staging_storage}"
        job.publish(self._report(TemplatePhase.IMPORTING, message, 0, size))
        throttle = Throttle()

        def progress(sent: int, total: int) -> None:
            if throttle() or sent == total:
                job.publish(self._report(TemplatePhase.IMPORTING, message, sent, total))

        answer = await self.proxmox.upload(
            f"/nodes/{self.node}/storage/{self.staging_storage}/upload",
            {"content": content, "checksum-algorithm": downloaded.algorithm, "checksum": downloaded.digest},
            downloaded.path,
            filename,
            timeout=UPLOAD_BASE_SECONDS + size / UPLOAD_RATE,
            on_progress=progress,
        )
        await self.api.wait(data_of(answer, message), what=message)

    async def _create(self, job: Job, volume: str, disk_format: str, made: list[int]) -> int:
        """Create the VM importing volume; its vmid is in made as soon as Proxmox took the request."""
        request = job.request
        for _attempt in range(CREATE_ATTEMPTS):
            vmid = int(await self.api.call("GET", "/cluster/nextid", what="choosing a VM id"))
            what = f"creating VM {vmid} ({template_name(request.image)})"
            job.publish(self._report(TemplatePhase.IMPORTING, f"{what}, importing the {disk_format} disk"))
            try:
                upid = await self.api.call(
                    "POST", f"/nodes/{self.node}/qemu", self._vm_config(request, vmid, volume), what=what
                )
                made.append(vmid)
                await self.api.wait(upid, what=what)
            except TemplateImportError as exc:
                if "already exists" in str(exc):
                    log.info("VM id %d was taken meanwhile; trying another", vmid)
                    if vmid in made:
                        made.remove(vmid)  # another creator's VM: never this import's to remove
                    await asyncio.sleep(random.uniform(*CREATE_RETRY_PAUSE))  # noqa: S311 - jitter
                    continue
                raise
            return vmid
        raise TemplateImportError(
            f"no free VM id after {CREATE_ATTEMPTS} attempts: other creators took each one"
        )

    def _vm_config(self, request: EnsureRequest, vmid: int, volume: str) -> dict[str, str]:
        return {
            "vmid": str(vmid),
            "name": template_name(request.image),
            "tags": ";".join(template_tags(request.image, request.storage)),
            "description": (
                f"flex.plane template of image {request.image}\n"
                f"source: {display_url(request.url)}\n"
                f"checksum: {request.checksum}"
            ),
            "ostype": "l26",
            "scsihw": "virtio-scsi-single",
            "scsi0": f"{request.storage}:0,import-from={volume},discard=on",
            "ide2": f"{request.storage}:cloudinit",
            "boot": "order=scsi0",
            "serial0": "socket",
            "vga": "serial0",
            "agent": "enabled=1",
        }

    # ------------------------------------------------------------- cleaning up

    async def _destroy(self, vmid: int) -> None:
        what = f"removing VM {vmid}"
        upid = await self.api.call(
            "DELETE",
            f"/nodes/{self.node}/qemu/{vmid}",
            {"purge": "1", "destroy-unreferenced-disks": "1"},
            what=what,
        )
        await self.api.wait(upid, what=what)

    async def _remove_half_made(self, vmid: int, request: EnsureRequest) -> str | None:
        """Remove VM vmid if it is still there and is this import's; a problem to report, or None."""
        try:
            resources = await self.api.call(
                "GET", "/cluster/resources", {"type": "vm"}, what="listing the cluster's guests"
            )
            found = [
                r
                for r in (resources if isinstance(resources, list) else [])
                if isinstance(r, dict) and str(r.get("vmid")) == str(vmid)
            ]
            if not found:
                return None  # Proxmox removed it itself when its create task failed
            if found[0].get("node") != self.node or not is_template_of(
                found[0], request.image, request.storage
            ):
                log.warning("VM %d is not the template being made: leaving it", vmid)
                return None
            log.info("removing VM %d, half-made by a failed import", vmid)
            await self._destroy(vmid)
        except Exception as exc:
            log.error("VM %d, half-made by a failed import, could not be removed: %s", vmid, exc)
            return f"VM {vmid} could not be removed ({exc})"
        return None

    async def _remove_staged(self, volume: str) -> None:
        what = f"removing the staged image {volume}"
        try:
            upid = await self.api.call(
                "DELETE", f"/nodes/{self.node}/storage/{self.staging_storage}/content/{volume}", what=what
            )
            if upid is not None:
                await self.api.wait(upid, what=what)
        except Exception as exc:
            log.error("%s failed, remove it by hand: %s", what, exc)


def detect_format(head: bytes) -> str:
    """The disk format of an image by its first bytes: qcow2, vmdk or raw.

    TemplateImportError for a compressed file: Proxmox would import it as a raw disk of garbage.
    """
    if head.startswith(b"QFI\xfb"):
        return "qcow2"
    if head.startswith(b"KDMV"):
        return "vmdk"
    for magic, name in _COMPRESSED:
        if head.startswith(magic):
            raise TemplateImportError(
                f"the image is compressed with {name}: flex.plane imports qcow2, vmdk or raw disk images"
            )
    return "raw"
