"""The agent's downloader on its own: the connect-time address check, formats, leftovers."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.images import TemplateImportError, detect_format
from agent.images.download import (
    PART_PREFIX,
    PART_SUFFIX,
    ChecksumMismatchError,
    Downloader,
    DownloadRefused,
    PolicyResolver,
    remove_stale_parts,
)
from devstack.images import ImageServer


async def test_the_resolver_refuses_a_name_with_a_loopback_address() -> None:
    resolver = PolicyResolver(allow_hosts=())
    try:
        with pytest.raises(OSError, match=r"localhost \(127\.0\.0\.1\) is a loopback address"):
            await resolver.resolve("localhost", 80)
    finally:
        await resolver.close()


async def test_the_resolver_answers_for_an_allowlisted_name() -> None:
    resolver = PolicyResolver(allow_hosts=("localhost:8080",))
    try:
        results = await resolver.resolve("localhost", 8080)
    finally:
        await resolver.close()

    assert "127.0.0.1" in {result["host"] for result in results}


async def test_the_resolver_checks_the_port_of_an_allowlist_entry() -> None:
    resolver = PolicyResolver(allow_hosts=("localhost:8080",))
    try:
        with pytest.raises(OSError, match="is a loopback address"):
            await resolver.resolve("localhost", 8081)
    finally:
        await resolver.close()


async def test_a_name_resolving_to_loopback_is_refused_when_connecting_even_if_the_check_was_skipped(
    tmp_path: Path,
) -> None:
    with ImageServer("127.0.0.1") as images:
        url = f"http://localhost:{images.port}/images/debian-12.qcow2"
        async with Downloader(allow_hosts=(), max_bytes=1 << 30) as downloader:
            downloader.check = _skip_check  # type: ignore[method-assign]  # as if DNS had answered otherwise
            with pytest.raises(DownloadRefused, match="is a loopback address"):
                await downloader.fetch(url, algorithm="sha256", digest="0" * 64, directory=tmp_path)

        assert images.requests == []


async def _skip_check(url: str) -> None:
    return None


async def test_a_mismatching_download_removes_its_file(tmp_path: Path) -> None:
    with ImageServer("127.0.0.1") as images:
        async with Downloader(allow_hosts=(images.netloc,), max_bytes=1 << 30) as downloader:
            with pytest.raises(ChecksumMismatchError):
                await downloader.fetch(
                    images.url("debian-12.qcow2"), algorithm="sha512", digest="0" * 128, directory=tmp_path
                )

    assert list(tmp_path.iterdir()) == []


async def test_a_download_is_verified_with_sha512_too(tmp_path: Path) -> None:
    with ImageServer("127.0.0.1") as images:
        digest = images.checksum("debian-12.qcow2", "sha512").split(":")[1]
        async with Downloader(allow_hosts=(images.netloc,), max_bytes=1 << 30) as downloader:
            downloaded = await downloader.fetch(
                images.url("debian-12.qcow2"), algorithm="sha512", digest=digest, directory=tmp_path
            )

        assert downloaded.path.read_bytes() == images.data("debian-12.qcow2")
    assert downloaded.head.startswith(b"QFI\xfb")


def test_leftover_downloads_are_removed(tmp_path: Path) -> None:
    (tmp_path / f"{PART_PREFIX}abc{PART_SUFFIX}").write_bytes(b"partial")
    (tmp_path / "keep.txt").write_text("not ours")

    assert remove_stale_parts(tmp_path) == 1
    assert [path.name for path in tmp_path.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(
    ("head", "disk_format"),
    [
        (b"QFI\xfb\x00\x00\x00\x03", "qcow2"),
        (b"KDMV\x01\x00\x00\x00", "vmdk"),
        (b"\xeb\x63\x90" + bytes(8), "raw"),
    ],
)
def test_the_disk_format_is_told_by_the_first_bytes(head: bytes, disk_format: str) -> None:
    assert detect_format(head) == disk_format


@pytest.mark.parametrize(
    ("head", "name"),
    [(b"\x1f\x8b\x08", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh9", "bzip2")],
)
def test_a_compressed_image_is_not_taken_for_a_raw_disk(head: bytes, name: str) -> None:
    with pytest.raises(TemplateImportError, match=f"compressed with {name}"):
        detect_format(head)
