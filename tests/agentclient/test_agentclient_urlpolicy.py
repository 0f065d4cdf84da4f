"""The image URL policy and checksums shared by the agent and the orchestrator."""

from __future__ import annotations

import pytest

from agentclient.urlpolicy import (
    UrlRefused,
    UrlUnresolvable,
    check_url,
    is_allowlisted,
    normalize_allow_host,
    parse_checksum,
)

SHA256 = "ab" * 32
SHA512 = "cd" * 64


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.215.14/debian-12.qcow2",
        "https://93.184.215.14:8443/images/debian-12.qcow2?signature=abc",
        "http://[2606:4700:4700::1111]/image.qcow2",
        "HTTPS://93.184.215.14/UPPER.qcow2",
    ],
)
def test_it_accepts_a_public_http_or_https_address(url: str) -> None:
    check_url(url, resolve=False)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/x", "127.0.0.1 is a loopback address"),
        ("http://127.8.9.10:8080/x", "is a loopback address"),
        ("http://[::1]/x", "::1 is a loopback address"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
        ("http://[fe80::1]/x", "is a link-local address"),
        ("http://10.0.0.1/x", "10.0.0.1 is a private address"),
        ("http://172.16.5.4/x", "is a private address"),
        ("http://172.31.255.255/x", "is a private address"),
        ("http://192.168.1.10/x", "is a private address"),
        ("http://[fd00::1]/x", "is a private address"),
        ("http://100.64.0.1/x", "carrier-grade NAT"),
        ("http://100.127.255.254/x", "carrier-grade NAT"),
        ("http://224.0.0.251/x", "is a multicast address"),
        ("http://[ff02::1]/x", "is a multicast address"),
        ("http://240.0.0.1/x", "is a reserved address"),
        ("http://0.0.0.0/x", "the unspecified address"),
        ("http://[::]/x", "the unspecified address"),
        ("http://[::ffff:127.0.0.1]/x", r"loopback address \(127.0.0.1 inside an IPv6 address\)"),
        ("http://[::ffff:169.254.169.254]/x", r"link-local address \(169.254.169.254 inside"),
        ("http://[::ffff:10.1.2.3]/x", r"private address \(10.1.2.3 inside"),
        ("http://[64:ff9b::a9fe:a9fe]/x", r"link-local address \(169.254.169.254 inside"),
        ("http://[2002:7f00:1::]/x", r"loopback address \(127.0.0.1 inside"),
        ("http://[fec0::1]/x", "site-local"),
        ("http://192.0.2.7/x", "is a private address"),
    ],
)
def test_it_refuses_an_address_that_is_not_public(url: str, reason: str) -> None:
    with pytest.raises(UrlRefused, match=reason):
        check_url(url, resolve=False)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "uses file://: only http:// and https://"),
        ("ftp://93.184.215.14/x", "uses ftp://"),
        ("gopher://93.184.215.14/x", "uses gopher://"),
        ("//93.184.215.14/x", "uses no scheme"),
        ("93.184.215.14/x", "uses no scheme"),
        ("", "the URL is empty"),
        ("http:///x", "names no host"),
        ("http://user:secret@93.184.215.14/x", "carries a user name or password"),
        ("http://user@93.184.215.14/x", "carries a user name or password"),
        ("http://@93.184.215.14/x", "carries a user name or password"),
        ("http://93.184.215.14\\@127.0.0.1/x", "backslash"),
        ("http://93.184.215.14/x y", "white space"),
        ("http://93.184.215.14/x\r\nHost: evil", "white space"),
        ("http://127.1/x", "is a number but not an IP address written in full"),
        ("http://2130706433/x", "is a number but not an IP address"),
        ("http://0x7f000001/x", "is a number but not an IP address"),
        ("http://0177.0.0.1/x", "is a number but not an IP address"),
        ("http://[fe80::1%25eth0]/x", "contains '%'"),
        ("http://ex%61mple.com/x", "contains '%'"),
        ("http://93.184.215.14:99999/x", "is not a valid URL"),
        ("http://exa mple.com/x", "white space"),
        ("http://" + "a" * 5000 + ".com/", "longer than 4096"),
    ],
)
def test_it_refuses_a_url_that_is_malformed_or_not_http(url: str, reason: str) -> None:
    with pytest.raises(UrlRefused, match=reason):
        check_url(url, resolve=False)


def test_a_refusal_says_an_admin_may_allowlist_the_host() -> None:
    with pytest.raises(UrlRefused) as caught:
        check_url("http://10.0.0.1/debian.qcow2", resolve=False)

    assert str(caught.value) == (
        "10.0.0.1 is a private address; an admin may allowlist the host if this is intended"
    )


def test_a_refusal_is_a_value_error() -> None:
    assert issubclass(UrlRefused, ValueError)


def test_a_host_name_resolving_to_loopback_is_refused() -> None:
    with pytest.raises(UrlRefused, match=r"localhost \(127\.0\.0\.1\) is a loopback address"):
        check_url("http://localhost:8080/debian-12.qcow2")


def test_a_host_name_is_not_resolved_when_resolution_is_off() -> None:
    check_url("http://localhost:8080/debian-12.qcow2", resolve=False)


def test_a_host_name_that_does_not_resolve_is_refused_as_unresolvable() -> None:
    with pytest.raises(UrlUnresolvable, match=r"cannot resolve no-such-host\.invalid"):
        check_url("https://no-such-host.invalid/image.qcow2")


@pytest.mark.parametrize(
    ("url", "allow"),
    [
        ("http://127.0.0.1:8080/x", ["127.0.0.1:8080"]),
        ("http://127.0.0.1:8080/x", ["127.0.0.1"]),
        ("http://10.0.0.5/x", ["10.0.0.5:80"]),
        ("https://10.0.0.5/x", ["10.0.0.5:443"]),
        ("http://[::1]:8080/x", ["[::1]:8080"]),
        ("http://[::1]:8080/x", ["::1"]),
        ("http://localhost:8080/x", ["LOCALHOST"]),
        ("http://Mirror.Internal./x", ["mirror.internal"]),
    ],
)
def test_an_allowlisted_host_is_not_checked(url: str, allow: list[str]) -> None:
    check_url(url, allow_hosts=allow)


@pytest.mark.parametrize(
    ("url", "allow"),
    [
        ("http://127.0.0.1:8081/x", ["127.0.0.1:8080"]),
        ("http://127.0.0.2:8080/x", ["127.0.0.1:8080"]),
        ("http://10.0.0.5:8080/x", ["10.0.0.5:80"]),
        ("http://localhost:8080/x", ["127.0.0.1:8080"]),
        ("http://127.0.0.1:8080/x", ["localhost:8080"]),
    ],
)
def test_the_allowlist_matches_only_the_host_as_written_and_its_port(url: str, allow: list[str]) -> None:
    with pytest.raises(UrlRefused):
        check_url(url, allow_hosts=allow)


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "http://user:pw@127.0.0.1:8080/x", "ftp://127.0.0.1:8080/x"],
)
def test_the_allowlist_does_not_excuse_a_bad_scheme_or_credentials(url: str) -> None:
    with pytest.raises(UrlRefused):
        check_url(url, allow_hosts=["127.0.0.1:8080", "127.0.0.1"])


@pytest.mark.parametrize(
    ("entry", "normal"),
    [
        (" Mirror.Internal ", "mirror.internal"),
        ("127.0.0.1:8080", "127.0.0.1:8080"),
        ("[::1]:8080", "[::1]:8080"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[0:0::1]:8080", "[::1]:8080"),
        ("mirror.internal.:80", "mirror.internal:80"),
    ],
)
def test_an_allowlist_entry_is_normalized(entry: str, normal: str) -> None:
    assert normalize_allow_host(entry) == normal


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("", "is not a host or host:port"),
        ("http://mirror", "is not a host or host:port"),
        ("mirror/images", "is not a host or host:port"),
        ("user@mirror", "is not a host or host:port"),
        ("a b", "is not a host or host:port"),
        ("mirror:99999", "port 99999 is out of range"),
        ("[1.2.3.4]:80", "is not an IPv6 address"),
        ("mirror_!", "is not a host name or IP address"),
    ],
)
def test_a_malformed_allowlist_entry_is_a_value_error(entry: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        normalize_allow_host(entry)


def test_a_malformed_allowlist_entry_allows_nothing() -> None:
    assert not is_allowlisted("mirror", 80, ["http://mirror"])


@pytest.mark.parametrize(
    ("checksum", "parsed"),
    [
        (f"sha256:{SHA256}", ("sha256", SHA256)),
        (f"sha512:{SHA512}", ("sha512", SHA512)),
        (f"SHA256:{SHA256.upper()}", ("sha256", SHA256)),
        (f" sha256:{SHA256} ", ("sha256", SHA256)),
    ],
)
def test_it_parses_a_sha256_or_sha512_checksum(checksum: str, parsed: tuple[str, str]) -> None:
    assert parse_checksum(checksum) == parsed


@pytest.mark.parametrize(
    ("checksum", "reason"),
    [
        (SHA256, "sha256:<hex> or sha512:<hex>"),
        ("", "sha256:<hex> or sha512:<hex>"),
        (f"sha256:{SHA256[:-1]}", "has 64 hexadecimal digits, not 63"),
        (f"sha256:{SHA256}00", "has 64 hexadecimal digits, not 66"),
        (f"sha512:{SHA256}", "has 128 hexadecimal digits, not 64"),
        (f"sha256:{'g' * 64}", "sha256:<hex> or sha512:<hex>"),
        (f"md5:{'a' * 32}", "'md5' is not supported"),
        (f"sha1:{'a' * 40}", "'sha1' is not supported"),
        (f"sha256={SHA256}", "sha256:<hex> or sha512:<hex>"),
        (f"sha256::{SHA256}", "sha256:<hex> or sha512:<hex>"),
    ],
)
def test_it_refuses_any_other_checksum(checksum: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_checksum(checksum)
