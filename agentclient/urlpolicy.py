"""Which image URLs flex.plane fetches: the policy shared by the agent and the orchestrator.

An image URL must be plain ``http`` or ``https``, name a host, carry no user name or
password, and point at a public address: loopback, link-local, private, CGNAT,
multicast, reserved and unspecified addresses are refused, whether written as a
literal or reached through DNS (every address a name resolves to is checked), and
also in the IPv6 forms that embed an IPv4 address (``::ffff:10.0.0.1``, 6to4, NAT64).
An admin exempts a host from the address checks by allowlisting it, as written in
the URL (``mirror.internal``) or with its port (``127.0.0.1:8080``, ``[::1]:8080``).

The agent checks the first URL and every redirect target, and checks the addresses
again when it connects (see ``agent.images.download``), so that a name cannot resolve to a
public address for the check and to a private one for the download.

Image checksums are ``sha256:<hex>`` or ``sha512:<hex>`` (:func:`parse_checksum`).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from yarl import URL

SCHEMES = frozenset({"http", "https"})
MAX_URL_LENGTH = 4096

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# 100.64.0.0/10, RFC 6598: carrier-grade NAT space, routed inside a provider's network.
_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
# 64:ff9b::/96, RFC 6052: NAT64, whose last 32 bits are the IPv4 address reached.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# A host name as DNS carries it after IDNA: letters, digits, hyphens, underscores, dots.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
# Something that looks like a number: inet_aton would read 127.1, 2130706433 or 0x7f.1 as an address.
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]*))*")
# An allowlist entry: a host, or host:port, or [v6] or [v6]:port.
_ALLOW_ENTRY = re.compile(r"(?P<host>\[[0-9a-f:.]+\]|[^\s\[\]/:@?#]+)(?::(?P<port>[0-9]{1,5}))?")

_DIGEST_LENGTHS = {"sha256": 64, "sha512": 128}
_CHECKSUM = re.compile(r"(?P<algorithm>[A-Za-z0-9]+):(?P<digest>[0-9A-Fa-f]+)")


class UrlRefused(ValueError):
    """The URL is not fetched; the message says why, for an admin to read."""


class UrlUnresolvable(UrlRefused):
    """The URL's host name did not resolve, so its addresses could not be checked.

    A subclass of UrlRefused: a caller that must refuse what it cannot check needs no
    special case, and one that knows the name may resolve elsewhere (the agent's node
    has its own DNS) can tell it apart.
    """


@dataclass(frozen=True)
class UrlTarget:
    """What a checked URL reaches: scheme, host (lowercase ASCII, no brackets) and port."""

    scheme: str
    host: str
    port: int
    address: IPAddress | None

    @property
    def netloc(self) -> str:
        """host:port as an allowlist entry writes it (IPv6 in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def check_url(url: str, allow_hosts: Collection[str] = (), resolve: bool = True) -> None:
    """Refuse url with UrlRefused unless flex.plane may fetch an image from it.

    allow_hosts lists hosts exempt from the address checks, as written in a URL (case
    does not matter) or as host:port. With resolve, a host name is resolved and every
    address it has is checked (UrlUnresolvable when it has none); without, only
    literal addresses are.
    """
    target = parse_url(url)
    if is_allowlisted(target.host, target.port, allow_hosts):
        return
    if target.address is not None:
        check_address(target.address, shown=target.host)
        return
    if resolve:
        check_addresses(target.host, resolve_host(target.host, target.port))


def parse_url(url: str) -> UrlTarget:
    """The scheme, host and port of an image URL, or UrlRefused for one that is malformed or odd."""
    if not isinstance(url, str) or not url:
        raise UrlRefused("the URL is empty")
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused(f"the URL is longer than {MAX_URL_LENGTH} characters")
    if not url.isprintable() or any(char.isspace() or char == "\\" for char in url):
        raise UrlRefused("the URL contains white space, a backslash or a control character")
    try:
        parsed = URL(url)
        port = parsed.port
    except (ValueError, TypeError) as exc:
        raise UrlRefused(f"{display_url(url)} is not a valid URL ({exc})") from None
    scheme = (parsed.scheme or "").lower()
    if scheme not in SCHEMES:
        shown = f"{scheme}://" if scheme else "no scheme"
        raise UrlRefused(f"{display_url(url)} uses {shown}: only http:// and https:// images are fetched")
    if "@" in (parsed.raw_authority or "") or "@" in _raw_authority(url):
        raise UrlRefused(
            f"{display_url(url)} carries a user name or password: put no credentials in image URLs"
        )
    host = (parsed.raw_host or "").lower()
    if not host:
        raise UrlRefused(f"{display_url(url)} names no host")
    if port is None:  # an http(s) URL always has its default port
        raise UrlRefused(f"{display_url(url)} has no port")
    if "%" in host:
        raise UrlRefused(f"the host {host!r} contains '%' (an escape or an IPv6 zone): never fetched")
    address = literal_address(host)
    if address is None:
        host = host.rstrip(".")
        if _NUMERIC_HOST.fullmatch(host):
            raise UrlRefused(f"the host {host!r} is a number but not an IP address written in full")
        if not _HOST_NAME.fullmatch(host) or len(host) > 253:
            raise UrlRefused(f"the host {host!r} is not a valid host name")
    return UrlTarget(scheme=scheme, host=host, port=port, address=address)


def literal_address(host: str) -> IPAddress | None:
    """The address host is a literal of, or None for a name (IPv6 with or without brackets)."""
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


def refusal(address: IPAddress) -> str | None:
    """Why an address is not fetched from ("a loopback address", ...), or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = refusal(embedded)
            return f"{reason} ({embedded} inside an IPv6 address)" if reason else None
        if address.is_site_local:
            return "a site-local address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.version == 4 and address in _CGNAT:
        return "a carrier-grade NAT (100.64.0.0/10) address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "not a public address"
    return None


def check_address(address: IPAddress, shown: str = "") -> None:
    """UrlRefused if address is not one images are fetched from; shown names the host it came from."""
    reason = refusal(address)
    if reason is not None:
        source = f"{shown} ({address})" if shown and shown != str(address) else str(address)
        raise UrlRefused(f"{source} is {reason}; an admin may allowlist the host if this is intended")


def check_addresses(host: str, addresses: Iterable[IPAddress]) -> None:
    """UrlRefused unless every address host resolved to is public (and there is at least one)."""
    found = list(addresses)
    if not found:
        raise UrlUnresolvable(f"{host} has no address")
    for address in found:
        check_address(address, shown=host)


def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address of host, as the system resolver answers (UrlUnresolvable when it cannot)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UrlUnresolvable(f"cannot resolve {host}: {getattr(exc, 'strerror', None) or exc}") from None
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = literal_address(str(sockaddr[0]).split("%", 1)[0])
        if address is not None and address not in addresses:
            addresses.append(address)
    return addresses


def normalize_allow_host(entry: str) -> str:
    """An allowlist entry as matching compares it: lowercase host or host:port; ValueError if malformed."""
    text = entry.strip().lower() if isinstance(entry, str) else ""
    bare = literal_address(text) if text and not text.startswith("[") else None
    if bare is not None:
        return str(bare)  # an address without a port, IPv6 ones without brackets
    found = _ALLOW_ENTRY.fullmatch(text)
    if not text or found is None:
        raise ValueError(f"{entry!r} is not a host or host:port")
    host, port = found.group("host"), found.group("port")
    if host.startswith("["):
        address = literal_address(host)
        if not isinstance(address, ipaddress.IPv6Address):
            raise ValueError(f"{entry!r}: {host} is not an IPv6 address")
        host = f"[{address}]" if port is not None else str(address)
    else:
        host = host.rstrip(".")
        if literal_address(host) is None and not _HOST_NAME.fullmatch(host):
            raise ValueError(f"{entry!r}: {host!r} is not a host name or IP address")
    if port is not None and not 0 < int(port) <= 65535:
        raise ValueError(f"{entry!r}: port {port} is out of range")
    return f"{host}:{int(port)}" if port is not None else host


def is_allowlisted(host: str, port: int, allow_hosts: Collection[str]) -> bool:
    """Whether host (as written, lowercase) or host:port is one of allow_hosts."""
    if not allow_hosts:
        return False
    allowed = set()
    for entry in allow_hosts:
        try:
            allowed.add(normalize_allow_host(entry))
        except ValueError:
            continue  # a malformed entry allows nothing (configurations validate theirs on load)
    host = host.lower().removeprefix("[").removesuffix("]").rstrip(".")
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return host in allowed or netloc in allowed


def parse_checksum(checksum: str) -> tuple[str, str]:
    """("sha256" or "sha512", lowercase hex digest) of ``sha256:<hex>`` or ``sha512:<hex>``.

    Raises ValueError for another algorithm, a digest of the wrong length, or anything that is
    not hexadecimal.
    """
    found = _CHECKSUM.fullmatch(checksum.strip()) if isinstance(checksum, str) else None
    if found is None:
        raise ValueError("a checksum is sha256:<hex> or sha512:<hex>")
    algorithm, digest = found.group("algorithm").lower(), found.group("digest").lower()
    if algorithm not in _DIGEST_LENGTHS:
        raise ValueError(f"checksum algorithm {algorithm!r} is not supported: use sha256 or sha512")
    if len(digest) != _DIGEST_LENGTHS[algorithm]:
        raise ValueError(
            f"a {algorithm} checksum has {_DIGEST_LENGTHS[algorithm]} hexadecimal digits, not {len(digest)}"
        )
    return algorithm, digest


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for: IPv4-mapped, 6to4 or NAT64; else None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _raw_authority(url: str) -> str:
    """The authority of url as written: between "//" and the first "/", "?" or "#" after it."""
    _, separator, rest = url.partition("//")
    if not separator:
        return ""
    for end in "/?#":
        rest = rest.split(end, 1)[0]
    return rest


def display_url(url: str, limit: int = 200) -> str:
    """A URL for messages and logs: without its query (it may hold a signature), cut short."""
    base = url.split("?", 1)[0].split("#", 1)[0]
    return base if len(base) <= limit else base[: limit - 3] + "..."
