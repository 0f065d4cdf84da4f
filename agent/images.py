"""Images as Proxmox templates on the agent's own node: the work behind Images.EnsureTemplate.

For an (image, storage) the agent keeps one template, found again by its name and tags
alone (see :mod:`agentclient.templates`). When there is none it

1. checks the storages: the template's storage must hold VM disks, and the staging storage
   (``image_staging_storage``) must take ``import`` content (PVE 8.4 and later; preferred)
   or, failing that, ``iso`` content;
2. downloads the URL under the URL policy and verifies the checksum (:mod:`agent.download`);
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
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.download import (
    PROGRESS_INTERVAL,
    Downloaded,
    Downloader,
    remove_stale_parts,
)
from agent.proxmox import ProxmoxClient
from agentclient.templates import (
    TemplatePhase,
    TemplateProgress,
    check_image_name,
    check_storage_id,
    is_template_of,
    split_tags,
    template_name,
    template_tags,
)
from agentclient.urlpolicy import display_url, parse_checksum

log = logging.getLogger(__name__)

# A Proxmox task (an upload, an import of many GiB) that has not ended after this long has failed.
TASK_TIMEOUT = 4 * 3600.0
# Task status polling: the first delay, growing to the longest.
TASK_POLL_FIRST = 0.1
TASK_POLL_LONGEST = 2.0
# How many of a failed task's last log lines travel with the error.
TASK_LOG_TAIL = 8
TASK_LOG_PAGE = 500
TASK_LOG_PAGES = 20
# The upload to the node's own Proxmox may take this long, plus a second per UPLOAD_RATE bytes.
UPLOAD_BASE_SECONDS = 300.0
UPLOAD_RATE = 4 * 1024 * 1024
# VM ids tried when /cluster/nextid races with another creator.
CREATE_ATTEMPTS = 5
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
_UPID_NODE = re.compile(r"UPID:([^:]+):")


class InvalidRequest(ValueError):
    """The request itself is malformed: image name, URL, checksum or storage."""


class TemplateImportError(Exception):
    """Proxmox refused or failed a step of the import; the message carries Proxmox's own text."""


class Interrupted(Exception):
    """The import was cancelled: the agent is shutting down."""


@dataclass(frozen=True)
class EnsureRequest:
    """A validated EnsureTemplate request."""

    image: str
    url: str
    algorithm: str
    digest: str
    storage: str

    @classmethod
    def parse(cls, image: str, url: str, checksum: str, storage: str) -> EnsureRequest:
        """Validate the request's fields; InvalidRequest names the first bad one."""
        try:
            check_image_name(image)
            check_storage_id(storage)
            algorithm, digest = parse_checksum(checksum)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        if not url:
            raise InvalidRequest("the image URL is empty")
        return cls(image=image, url=url, algorithm=algorithm, digest=digest, storage=storage)

    @property
    def key(self) -> tuple[str, str]:
        return (self.image, self.storage)

    @property
    def checksum(self) -> str:
        return f"{self.algorithm}:{self.digest}"


class NodeApi:
    """The node's Proxmox API for the agent's own work (not the proxy's allowlist)."""

    def __init__(self, proxmox: ProxmoxClient, node: str) -> None:
        self.proxmox = proxmox
        self.node = node

    async def call(
        self, method: str, path: str, params: Mapping[str, str] | None = None, *, what: str
    ) -> Any:
        """Proxmox's decoded data; TemplateImportError naming what was being done when it answers an error."""
        answer = await self.proxmox.request(method, path, params or {})
        if answer.status >= 400:
            detail = answer.message.rstrip(".")
            if answer.errors:
                detail += " (" + "; ".join(f"{k}: {v}" for k, v in sorted(answer.errors.items())) + ")"
            raise TemplateImportError(f"{what}: Proxmox answered {answer.status}: {detail}")
        return json.loads(answer.data_json)

    async def wait(self, upid: Any, *, what: str, timeout: float = TASK_TIMEOUT) -> None:
        """Poll the task until it stops; unless it ends OK, TemplateImportError with its status and log."""
        if not isinstance(upid, str) or not (found := _UPID_NODE.match(upid)):
            raise TemplateImportError(f"{what}: Proxmox answered {upid!r} instead of a task id")
        path = f"/nodes/{found.group(1)}/tasks/{upid}"
        deadline = time.monotonic() + timeout
        delay = TASK_POLL_FIRST
        while True:
            status = await self.call("GET", path + "/status", what=f"{what} (following its task)")
            if isinstance(status, dict) and status.get("status") == "stopped":
                break
            if time.monotonic() > deadline:
                raise TemplateImportError(f"{what}: its task {upid} did not end within {timeout:g} s")
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, TASK_POLL_LONGEST)
        exit_status = str(status.get("exitstatus") or "unknown")
        if exit_status == "OK" or exit_status.startswith("WARNINGS"):
            if exit_status != "OK":
                log.warning("%s: task %s ended with %s", what, upid, exit_status)
            return
        tail = await self._log_tail(path + "/log", exit_status)
        raise TemplateImportError(f"{what} failed: {exit_status}" + (f" (task log: {tail})" if tail else ""))

    async def _log_tail(self, path: str, exit_status: str) -> str:
        """The task's last log lines, joined, without the final TASK ERROR line (it is the exit status)."""
        lines: collections.deque[str] = collections.deque(maxlen=TASK_LOG_TAIL + 1)
        try:
            for page in range(TASK_LOG_PAGES):
                params = {"start": str(page * TASK_LOG_PAGE), "limit": str(TASK_LOG_PAGE)}
                entries = await self.call("GET", path, params, what="reading the task log")
                if not isinstance(entries, list):
                    break
                lines.extend(str(entry.get("t", "")) for entry in entries if isinstance(entry, dict))
                if len(entries) < TASK_LOG_PAGE:
                    break
        except (TemplateImportError, OSError) as exc:
            log.warning("cannot read the log of a failed task: %s", exc)
        kept = [line for line in lines if line and line not in (f"TASK ERROR: {exit_status}", "TASK OK")]
        return " | ".join(kept[-TASK_LOG_TAIL:])


class _Follower:
    """One caller following a job: the reports it has not read yet, a slow reader getting the latest."""

    def __init__(self, latest: TemplateProgress | None) -> None:
        self.queue: collections.deque[TemplateProgress] = collections.deque([latest] if latest else [])
        self.wake = asyncio.Event()

    def push(self, progress: TemplateProgress) -> None:
        if self.queue and self.queue[-1].phase is progress.phase and progress.phase is not TemplatePhase.DONE:
            self.queue[-1] = progress
        else:
            self.queue.append(progress)
        self.wake.set()


class _Job:
    """One import (or reuse) of an (image, storage), and the callers following it."""

    def __init__(
        self, request: EnsureRequest, work: Callable[[_Job], Coroutine[Any, Any, TemplateProgress]]
    ) -> None:
        self.request = request
        self.latest: TemplateProgress | None = None
        self.finished = False
        self._followers: set[_Follower] = set()
        self.task = asyncio.create_task(work(self), name=f"ensure-template-{request.image}-{request.storage}")

    def publish(self, progress: TemplateProgress) -> None:
        self.latest = progress
        for follower in self._followers:
            follower.push(progress)

    def finish(self) -> None:
        self.finished = True
        for follower in self._followers:
            follower.wake.set()

    def failure(self) -> BaseException | None:
        """Why the finished job failed, or None if it succeeded."""
        if self.task.cancelled():
            return Interrupted(
                f"the import of image {self.request.image} was interrupted: the agent is stopping"
            )
        return self.task.exception()

    async def follow(self) -> AsyncIterator[TemplateProgress]:
        """Every report from now on (starting with the latest), until the job ends."""
        follower = _Follower(self.latest)
        self._followers.add(follower)
        try:
            while True:
                while follower.queue:
                    yield follower.queue.popleft()
                if self.finished:
                    return
                follower.wake.clear()
                await follower.wake.wait()
        finally:
            self._followers.discard(follower)


class _Throttle:
    """True at most once per PROGRESS_INTERVAL."""

    def __init__(self) -> None:
        self._last = 0.0

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._last < PROGRESS_INTERVAL:
            return False
        self._last = now
        return True


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
        self._jobs: dict[tuple[str, str], _Job] = {}

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

    def _start(self, request: EnsureRequest) -> _Job:
        job = _Job(request, self._run)
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

    async def _run(self, job: _Job) -> TemplateProgress:
        request = job.request
        name = template_name(request.image)
        job.publish(self._report(TemplatePhase.CHECKING, f"looking for {name} on {request.storage}"))
        vmid, leftovers = await self._find(request)
        if vmid is not None:
            log.info("template of %s on %s: reusing VM %d", request.image, request.storage, vmid)
            return self._done(job, vmid, f"{name} (VM {vmid}) is ready on {request.storage}")
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

    def _done(self, job: _Job, vmid: int, message: str) -> TemplateProgress:
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

    async def _import(self, job: _Job, downloaded: Downloaded, content: str) -> int:
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

    async def _upload(self, job: _Job, downloaded: Downloaded, content: str, filename: str) -> None:
        size = downloaded.size
        message = f"copying the image to storage {self.staging_storage}"
        job.publish(self._report(TemplatePhase.IMPORTING, message, 0, size))
        throttle = _Throttle()

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
        if answer.status >= 400:
            detail = answer.message.rstrip(".")
            if answer.errors:
                detail += " (" + "; ".join(f"{k}: {v}" for k, v in sorted(answer.errors.items())) + ")"
            raise TemplateImportError(f"{message}: Proxmox answered {answer.status}: {detail}")
        await self.api.wait(json.loads(answer.data_json), what=message)

    async def _create(self, job: _Job, volume: str, disk_format: str, made: list[int]) -> int:
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
