"""Images as templates: EnsureTemplate end to end.

A real agent process (mTLS gRPC) downloads from an ImageServer on loopback (allowlisted in
its configuration by host:port) and imports into the fake Proxmox over HTTPS. What the
agent did is checked in the fake's own state and in the ImageServer's request counts.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agentclient import (
    AgentDeadlineExceeded,
    AgentPool,
    AgentTarget,
    ChecksumMismatch,
    ImageDownloadFailed,
    ImageImportFailed,
    ImageRefused,
    TemplatePhase,
    TemplateProgress,
    TemplateRef,
)
from devstack.images import ImageServer, fake_image
from tests.agent.conftest import AgentProcess

IMAGE = "debian-12"
FILE = "debian-12.qcow2"
STORAGE = "local-lvm"
TIMEOUT = 30.0
TAGS = "fp-image-debian-12;fp-storage-local-lvm;fp-template"
WRONG_CHECKSUM = "sha256:" + "0" * 64


@pytest.fixture(scope="module")
def images() -> Iterator[ImageServer]:
    """The image server the agent allowlists (by host:port)."""
    server = ImageServer("127.0.0.1")
    server.add("debian-12.xz", b"\xfd7zXZ\x00" + fake_image("xz")[6:])
    with server:
        yield server


@pytest.fixture(scope="module")
def internal() -> Iterator[ImageServer]:
    """Another image server on loopback that the agent does not allowlist."""
    with ImageServer("127.0.0.1") as server:
        yield server


@pytest.fixture(scope="module")
def image_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("image-cache")


@pytest.fixture(scope="module")
def image_agent(
    launch: Callable[..., AgentProcess], images: ImageServer, image_cache: Path
) -> Iterator[AgentProcess]:
    process = launch(
        image_allow_hosts=[images.netloc], image_cache=str(image_cache), image_staging_storage="local"
    )
    yield process
    process.stop()


@pytest.fixture
def target(image_agent: AgentProcess) -> AgentTarget:
    return image_agent.target()


@pytest.fixture(autouse=True)
def clean(pve: Any, images: ImageServer, internal: ImageServer) -> Iterator[None]:
    """Each test starts with no template in the fake, no staged file, and fresh request records."""
    forget_templates(pve)
    pve.requests.clear()
    images.reset()
    internal.reset()
    content = pve.storages["local"]["content"]
    yield
    pve.storages["local"]["content"] = content
    forget_templates(pve)


def forget_templates(pve: Any) -> None:
    for vm in [vm for vm in pve.vms if vm.name.startswith("fp-tpl-")]:
        pve.vms.remove(vm)
        for store in pve.storages.values():
            for name in [n for n, v in store.get("volumes", {}).items() if v.get("vmid") == vm.vmid]:
                del store["volumes"][name]
    local = pve.storages["local"]
    local["files"] = {name for name in local["files"] if not name.startswith("fp-")}
    for name in [n for n in local.get("volumes", {}) if n.split("/", 1)[-1].startswith("fp-")]:
        del local["volumes"][name]


def templates(pve: Any) -> list[Any]:
    return [vm for vm in pve.vms if vm.name.startswith("fp-tpl-")]


def staged_files(pve: Any) -> list[str]:
    local = pve.storages["local"]
    return sorted(
        [name for name in local["files"] if name.startswith("fp-")]
        + [name for name in local.get("volumes", {}) if name.split("/", 1)[-1].startswith("fp-")]
    )


def uploads(pve: Any) -> list[tuple[str, str, bytes]]:
    return [r for r in pve.requests if r[0] == "POST" and r[1].endswith("/upload")]


def ensure(
    pool: AgentPool,
    target: AgentTarget,
    url: str,
    checksum: str,
    *,
    image: str = IMAGE,
    storage: str = STORAGE,
    reports: list[TemplateProgress] | None = None,
    timeout: float = TIMEOUT,
) -> TemplateRef:
    return pool.ensure_template(
        target,
        image,
        url,
        checksum,
        storage,
        timeout=timeout,
        on_progress=None if reports is None else reports.append,
    )


def phases(reports: list[TemplateProgress]) -> list[TemplatePhase]:
    seen: list[TemplatePhase] = []
    for report in reports:
        if not seen or seen[-1] is not report.phase:
            seen.append(report.phase)
    return seen


def assert_nothing_left(pve: Any, image_cache: Path) -> None:
    assert templates(pve) == []
    assert staged_files(pve) == []
    assert list(image_cache.iterdir()) == []


# ------------------------------------------------------------------- the template


def test_a_first_ensure_makes_a_tagged_template_on_the_agents_node(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    ref = ensure(pool, target, images.url(FILE), images.checksum(FILE))

    [vm] = templates(pve)
    assert ref == TemplateRef(vmid=vm.vmid, node="pve1")
    assert (vm.name, vm.node, vm.template) == ("fp-tpl-debian-12", "pve1", True)
    assert vm.config["tags"] == TAGS


def test_the_template_imports_its_disk_onto_the_storage_with_cloud_init_and_a_serial_console(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    ensure(pool, target, images.url(FILE), images.checksum(FILE))

    [vm] = templates(pve)
    assert vm.config["scsi0"].startswith(f"local-lvm:base-{vm.vmid}-disk-")
    assert "import-from=local:iso/fp-debian-12-" in vm.config["scsi0"]
    assert vm.config["ide2"].startswith("local-lvm:")
    assert "media=cdrom" in vm.config["ide2"]
    assert (vm.config["serial0"], vm.config["agent"], vm.config["boot"]) == (
        "socket",
        "enabled=1",
        "order=scsi0",
    )


def test_the_verified_image_is_uploaded_to_the_staging_storage_byte_for_byte(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    ensure(pool, target, images.url(FILE), images.checksum(FILE))

    [(_method, path, _body)] = uploads(pve)
    assert path == "/api2/json/nodes/pve1/storage/local/upload"
    assert pve.uploaded["content"] == "iso"
    assert pve.uploaded["checksum"] == images.checksum(FILE).split(":")[1]
    assert pve.uploaded["data"] == images.data(FILE)


def test_the_staged_file_and_the_download_are_removed_once_the_template_is_made(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer, image_cache: Path
) -> None:
    ensure(pool, target, images.url(FILE), images.checksum(FILE))

    assert staged_files(pve) == []
    assert list(image_cache.iterdir()) == []


def test_a_first_ensure_reports_each_phase_in_order(
    pool: AgentPool, target: AgentTarget, images: ImageServer
) -> None:
    reports: list[TemplateProgress] = []

    ref = ensure(pool, target, images.url(FILE), images.checksum(FILE), reports=reports)

    assert phases(reports) == [
        TemplatePhase.CHECKING,
        TemplatePhase.DOWNLOADING,
        TemplatePhase.VERIFYING,
        TemplatePhase.IMPORTING,
        TemplatePhase.DONE,
    ]
    size = len(images.data(FILE))
    last_download = [r for r in reports if r.phase is TemplatePhase.DOWNLOADING][-1]
    assert (last_download.bytes_done, last_download.bytes_total) == (size, size)
    assert (reports[-1].template_vmid, reports[-1].node) == (ref.vmid, "pve1")


def test_a_second_ensure_reuses_the_template_without_downloading_again(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    first = ensure(pool, target, images.url(FILE), images.checksum(FILE))
    reports: list[TemplateProgress] = []

    second = ensure(pool, target, images.url(FILE), images.checksum(FILE), reports=reports)

    assert second == first
    assert images.hits(FILE) == 1
    assert phases(reports) == [TemplatePhase.CHECKING, TemplatePhase.DONE]
    assert len(templates(pve)) == 1


def test_each_storage_gets_its_own_template_of_an_image(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    pve.storages["extra-lvm"] = {"type": "lvmthin", "active": 1, "content": "images,rootdir", "files": set()}
    try:
        first = ensure(pool, target, images.url(FILE), images.checksum(FILE))
        second = ensure(pool, target, images.url(FILE), images.checksum(FILE), storage="extra-lvm")
    finally:
        forget_templates(pve)
        del pve.storages["extra-lvm"]

    assert first.vmid != second.vmid
    assert images.hits(FILE) == 2


def test_two_concurrent_ensures_make_one_template(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    with ThreadPoolExecutor(max_workers=2) as threads:
        refs = list(
            threads.map(
                lambda _: ensure(pool, target, images.slow_url(FILE), images.checksum(FILE)), range(2)
            )
        )

    assert refs[0] == refs[1]
    assert images.hits(FILE) == 1
    assert len(templates(pve)) == 1


def test_a_caller_that_joins_an_import_under_way_sees_its_progress(
    pool: AgentPool, target: AgentTarget, images: ImageServer
) -> None:
    downloading = threading.Event()
    first: list[TemplateProgress] = []

    def follow(report: TemplateProgress) -> None:
        first.append(report)
        if report.phase is TemplatePhase.DOWNLOADING:
            downloading.set()

    with ThreadPoolExecutor(max_workers=1) as threads:
        started = threads.submit(
            pool.ensure_template,
            target,
            IMAGE,
            images.slow_url(FILE),
            images.checksum(FILE),
            STORAGE,
            timeout=TIMEOUT,
            on_progress=follow,
        )
        assert downloading.wait(TIMEOUT)
        reports: list[TemplateProgress] = []
        joined = ensure(pool, target, images.slow_url(FILE), images.checksum(FILE), reports=reports)

    assert joined == started.result()
    assert TemplatePhase.IMPORTING in phases(reports)
    assert images.hits(FILE) == 1


def test_the_import_goes_on_when_the_caller_gives_up_and_a_retry_gets_its_template(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    with pytest.raises(AgentDeadlineExceeded):
        ensure(pool, target, images.slow_url(FILE), images.checksum(FILE), timeout=0.3)

    ref = ensure(pool, target, images.slow_url(FILE), images.checksum(FILE))

    assert [vm.vmid for vm in templates(pve)] == [ref.vmid]
    assert images.hits(FILE) == 1


def test_a_redirect_within_the_allowlist_is_followed(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    ref = ensure(pool, target, images.redirect_url(images.url(FILE)), images.checksum(FILE))

    assert [vm.vmid for vm in templates(pve)] == [ref.vmid]


def test_a_half_made_vm_of_an_interrupted_import_is_replaced(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    pve.add_vm(4190, "fp-tpl-debian-12", node="pve1", config={"tags": TAGS})

    ref = ensure(pool, target, images.url(FILE), images.checksum(FILE))

    assert [(vm.vmid, vm.template) for vm in templates(pve)] == [(ref.vmid, True)]
    assert ref.vmid != 4190


def test_the_images_service_reports_serving(pool: AgentPool, target: AgentTarget) -> None:
    assert pool.check_health(target, service="flexplane.agent.v1.Images") is True


# ------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/debian-12.qcow2",
        "http://10.0.0.1/debian-12.qcow2",
        "http://[::1]/debian-12.qcow2",
        "http://[::ffff:127.0.0.1]/debian-12.qcow2",
        "file:///etc/passwd",
        "ftp://10.0.0.1/debian-12.qcow2",
        "http://user:secret@93.184.215.14/debian-12.qcow2",
    ],
)
def test_a_url_against_the_policy_is_refused_before_any_download(
    pool: AgentPool, target: AgentTarget, pve: Any, image_cache: Path, images: ImageServer, url: str
) -> None:
    with pytest.raises(ImageRefused) as caught:
        ensure(pool, target, url, images.checksum(FILE))

    assert caught.value.image == IMAGE
    assert uploads(pve) == []
    assert_nothing_left(pve, image_cache)


def test_a_loopback_server_that_is_not_allowlisted_is_never_contacted(
    pool: AgentPool, target: AgentTarget, internal: ImageServer
) -> None:
    with pytest.raises(ImageRefused, match=r"127\.0\.0\.1 is a loopback address"):
        ensure(pool, target, internal.url(FILE), internal.checksum(FILE))

    assert internal.requests == []


def test_a_host_name_resolving_to_loopback_is_refused(
    pool: AgentPool, target: AgentTarget, images: ImageServer
) -> None:
    url = f"http://localhost:{images.port}/images/{FILE}"

    with pytest.raises(ImageRefused, match=r"localhost \(127\.0\.0\.1\) is a loopback address"):
        ensure(pool, target, url, images.checksum(FILE))

    assert images.requests == []


def test_a_redirect_to_a_host_that_is_not_allowlisted_is_refused_before_following_it(
    pool: AgentPool,
    target: AgentTarget,
    pve: Any,
    images: ImageServer,
    internal: ImageServer,
    image_cache: Path,
) -> None:
    with pytest.raises(
        ImageRefused, match=r"the redirect to http://127\.0\.0\.1:\d+/images/debian-12\.qcow2"
    ):
        ensure(pool, target, images.redirect_url(internal.url(FILE)), internal.checksum(FILE))

    assert internal.requests == []
    assert images.hits() == 0
    assert_nothing_left(pve, image_cache)


def test_a_redirect_to_the_metadata_service_is_refused(
    pool: AgentPool, target: AgentTarget, images: ImageServer
) -> None:
    with pytest.raises(ImageRefused, match=r"169\.254\.169\.254 is a link-local address"):
        ensure(pool, target, images.redirect_url("http://169.254.169.254/latest/"), images.checksum(FILE))


def test_a_storage_that_holds_no_vm_disks_is_refused_before_downloading(
    pool: AgentPool, target: AgentTarget, images: ImageServer
) -> None:
    with pytest.raises(ImageImportFailed, match="storage local does not hold VM disks"):
        ensure(pool, target, images.url(FILE), images.checksum(FILE), storage="local")

    assert images.hits() == 0


def test_a_staging_storage_without_import_or_iso_content_is_refused_before_downloading(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    pve.storages["local"]["content"] = "vztmpl,backup"

    with pytest.raises(ImageImportFailed, match="takes neither import nor iso content"):
        ensure(pool, target, images.url(FILE), images.checksum(FILE))

    assert images.hits() == 0


# ------------------------------------------------------------------- failures leave nothing


def test_a_checksum_mismatch_leaves_no_file_and_no_vm(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer, image_cache: Path
) -> None:
    with pytest.raises(ChecksumMismatch) as caught:
        ensure(pool, target, images.url(FILE), WRONG_CHECKSUM)

    assert images.checksum(FILE).split(":")[1] in str(caught.value)
    assert uploads(pve) == []
    assert_nothing_left(pve, image_cache)


def test_a_truncated_download_leaves_no_file_and_no_vm(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer, image_cache: Path
) -> None:
    with pytest.raises(ImageDownloadFailed, match=r"was cut short after \d+ of 393216 bytes") as failure:
        ensure(pool, target, images.truncated_url(FILE), images.checksum(FILE))
    # The server sends half and hangs up; how much of that half arrives before the reset is TCP's say.
    got = re.search(r"after (\d+) of", str(failure.value))
    assert got is not None
    assert 0 < int(got.group(1)) <= 196608

    assert uploads(pve) == []
    assert_nothing_left(pve, image_cache)


def test_a_missing_image_fails_with_the_servers_answer(
    pool: AgentPool, target: AgentTarget, images: ImageServer
) -> None:
    with pytest.raises(ImageDownloadFailed, match="answered 404 Not Found"):
        ensure(pool, target, images.url("nothing.qcow2"), images.checksum(FILE))


def test_more_than_five_redirects_fail(pool: AgentPool, target: AgentTarget, images: ImageServer) -> None:
    url = images.url(FILE)
    for _ in range(6):
        url = images.redirect_url(url)

    with pytest.raises(ImageDownloadFailed, match="redirected more than 5 times"):
        ensure(pool, target, url, images.checksum(FILE))

    assert images.hits() == 0


def test_a_compressed_image_is_refused_and_leaves_nothing(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer, image_cache: Path
) -> None:
    with pytest.raises(ImageImportFailed, match="compressed with xz"):
        ensure(pool, target, images.url("debian-12.xz"), images.checksum("debian-12.xz"))

    assert uploads(pve) == []
    assert_nothing_left(pve, image_cache)


def test_a_failed_conversion_removes_the_half_made_vm_and_the_staged_file(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer, image_cache: Path
) -> None:
    pve.fail("POST", "/template", 500, "unable to create base volume", times=1)

    with pytest.raises(ImageImportFailed, match="unable to create base volume"):
        ensure(pool, target, images.url(FILE), images.checksum(FILE))

    assert_nothing_left(pve, image_cache)
    assert not any(v.get("vmid") for v in pve.storages[STORAGE].get("volumes", {}).values())


def test_a_failed_create_task_carries_proxmox_message_and_leaves_nothing(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer, image_cache: Path
) -> None:
    pve.fail("POST", "/nodes/pve1/qemu", error="unable_parse_drive_interface", times=1)

    with pytest.raises(ImageImportFailed, match="unable to parse drive interface scsi0"):
        ensure(pool, target, images.url(FILE), images.checksum(FILE))

    assert_nothing_left(pve, image_cache)


def test_an_import_that_loses_the_vm_id_race_many_times_in_a_row_still_makes_its_template(
    pool: AgentPool, target: AgentTarget, pve: Any, images: ImageServer
) -> None:
    """Every node of a zone imports an image at once when it is published, each asking /cluster/nextid:
    all but one lose each round (seen in CI: six imports in a zone, and the fifth loss was the end)."""
    taken = "unable to create VM - config file already exists (another creator took the id)"
    pve.fail("POST", "/nodes/pve1/qemu", 500, taken, times=8)

    done = ensure(pool, target, images.url(FILE), images.checksum(FILE))

    assert [vm.vmid for vm in templates(pve)] == [done.vmid]


def test_an_image_larger_than_the_agents_limit_is_refused(
    launch: Callable[..., AgentProcess],
    pool: AgentPool,
    pve: Any,
    images: ImageServer,
    tmp_path: Path,
) -> None:
    small = launch(image_allow_hosts=[images.netloc], image_cache=str(tmp_path), image_max_bytes=1000)
    try:
        with pytest.raises(ImageRefused, match=r"more than this agent's image_max_bytes \(1000\)"):
            ensure(pool, small.target(), images.url(FILE), images.checksum(FILE))
    finally:
        small.stop()

    assert_nothing_left(pve, tmp_path)
