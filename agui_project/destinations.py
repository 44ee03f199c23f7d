"""The SSRF guard: may this process send a request to that URL's host?

Used where the server sends requests to addresses it was told (webhooks' and callback URLs,
MCP servers over HTTP). A host that resolves to an address that is not global — loopback,
private, link-local (the clouds' metadata service), shared (100.64/10), reserved, multicast,
unspecified — is refused unless that address is inside the networks allowed for that use. Every
address the name resolves to is judged, an IPv4-mapped IPv6 address as its IPv4 one. Checked
before each request. A DNS answer that changes between the check and the connection (DNS
rebinding) is caught where the request is sent to the address judged (`pinned`: the webhooks' and
callback URLs); the MCP client's requests resolve again (run the process where internal services
need their own authentication).
"""

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import httpx


@dataclass
class Pinned:
    """How to send a request to the address that was judged: its URL names the address, the Host
    header and the TLS server name (its certificate is checked against it) the URL's own host."""

    url: str
    headers: dict = field(default_factory=dict)
    extensions: dict = field(default_factory=dict)


def pinned(url, allowed, setting):
    """(the reason a request to `url` is refused, or None; Pinned when it is not). httpx given the
    name resolves it again to connect: a name answering an allowed address to the check and
    127.0.0.1 a moment later (DNS rebinding) reached the loopback address."""
    host = urlsplit(url).hostname
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"host not resolved: {exc}", None
    problem = _judge(host, infos, allowed, setting)
    if problem:
        return problem, None
    parsed = httpx.URL(url)
    address = infos[0][4][0]  # a link-local IPv6 address keeps its zone (%eth0)
    return None, Pinned(str(parsed.copy_with(host=address)), {"Host": parsed.netloc.decode("ascii")},
                        {"sni_hostname": parsed.host} if parsed.scheme == "https" else {})


# IPv6 prefixes that carry an IPv4 address a gateway forwards to: NAT64 (RFC 6052, 8215), the
# IPv4-translated form of SIIT (::ffff:0:a.b.c.d, RFC 2765) and the deprecated IPv4-compatible form
# (::a.b.c.d). Python's is_global holds for 64:ff9b::a9fe:a9fe and ::ffff:0:a9fe:a9fe, so on an IPv6
# network with such a translator the metadata service was one callback_url away.
_EMBEDS_IPV4 = [ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "::ffff:0:0:0/96", "::/96")]
# internal, though Python's is_global holds: site-local addresses (deprecated by RFC 3879, still routed
# inside some networks)
_INTERNAL = [ipaddress.ip_network("fec0::/10")]


def _ipv4_inside(address):
    """The IPv4 address an IPv6 one reaches (mapped, 6to4, NAT64, IPv4-compatible), else None."""
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.sixtofour:
        return address.sixtofour
    if any(address in n for n in _EMBEDS_IPV4) and not (address.is_loopback or address.is_unspecified):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _judge(host, infos, allowed, setting):
    networks = [ipaddress.ip_network(n) for n in allowed]
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if address.version == 6:
            address = _ipv4_inside(address) or address
        internal = not address.is_global or any(address in n for n in _INTERNAL if n.version == address.version)
        if internal and not any(address in n for n in networks):
            return f"refused: {host} resolves to {address}, an internal address ({setting})"
    return None


def refused(url, allowed, setting):
    """The reason a request to `url` is refused, or None. `allowed`: the networks (CIDR strings)
    internal addresses may be in; `setting`: its name, for the reason."""
    host = urlsplit(url).hostname
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"host not resolved: {exc}"
    return _judge(host, infos, allowed, setting)


async def refused_async(url, allowed, setting):
    """refused(), resolving on the running loop's resolver (no blocking call in the loop)."""
    host = urlsplit(url).hostname
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"host not resolved: {exc}"
    return _judge(host, infos, allowed, setting)


def where_it_goes(url):
    """A URL as a reviewer or the log may read it: where it goes, without what often authorises it (a
    token in its query, a user and password, a fragment), which is the requester's and the admins'."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # accepted before it was checked so: nothing of it is shown
        return ""
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
