"""Which hosts must not be reached: internal address ranges, cloud metadata services by address
and by name, names that stand for this machine or a private network, and every spelling of an
IP address a resolver accepts (``inet_aton``: decimal, octal, hex, short forms)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

IP = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset(
    {
        # AWS (EC2 IMDS, its documented aliases)
        "instance-data", "instance-data.ec2.internal",
        # Google Cloud
        "metadata.google.internal", "metadata.goog", "metadata",
        # Azure
        "metadata.azure.com", "metadata.azure.internal",
        # Tencent Cloud, Alibaba Cloud, Huawei Cloud, IBM Cloud
        "metadata.tencentyun.com", "metadata.aliyun.com", "metadata.huaweicloud.com",
        "api.metadata.cloud.ibm.com",
        # Equinix Metal (Packet), Oracle Cloud, DigitalOcean, Hetzner, Linode, Vultr, Scaleway
        "metadata.packet.net", "metadata.platformequinix.com", "metadata.oraclecloud.com",
        "metadata.digitalocean.com", "metadata.hetzner.cloud", "metadata.linode.com",
        "metadata.vultr.com", "api-metadata.scaleway.com",
        # Kubernetes, Docker, Rancher, Consul
        "kubernetes", "kubernetes.default", "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local", "host.docker.internal",
        "gateway.docker.internal", "rancher-metadata", "consul",
    }
)  # fmt: skip
"""Host names of cloud metadata services and cluster internals."""

METADATA_IPS = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Hetzner, Linode, Vultr, IBM, Oracle
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.170.23",  # AWS EKS Pod Identity
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS Pod Identity over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer (a public-range address)
        "192.0.0.192",  # Oracle Cloud (legacy metadata)
        "169.254.0.23",  # Tencent Cloud
        "169.254.42.42",  # Scaleway
        "fd00:a9fe:a9fe::1",  # Linode over IPv6
    )
)
"""Addresses of cloud metadata services (most are link-local or private anyway; some are not)."""

PRIVATE_SUFFIXES = (
    ".internal",
    ".local",
    ".localhost",
    ".localdomain",
    ".home.arpa",
    ".lan",
    ".intranet",
    ".corp",
    ".svc",
    ".cluster.local",
)
# Wildcard DNS services that resolve a name to the IP written inside it.
_IP_IN_NAME = (".nip.io", ".sslip.io", ".xip.io", ".traefik.me", ".localtest.me", ".lvh.me")
LOOPBACK_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
        "localtest.me",
        "lvh.me",
    }
)
_IETF_V4 = ipaddress.IPv4Network("192.0.0.0/24")  # protocol assignments; only .9 and .10 route
_GLOBAL_IETF = frozenset({ipaddress.IPv4Address("192.0.0.9"), ipaddress.IPv4Address("192.0.0.10")})


def parse_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """Read ``text`` as ``inet_aton`` does: 1 to 4 parts, each decimal, octal (``0``) or hex (``0x``)."""
    parts = text.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]
    if not 1 <= len(parts) <= 4:
        return None
    nums: list[int] = []
    for p in parts:
        if re.fullmatch(r"0[xX][0-9a-fA-F]*", p):
            nums.append(int(p[2:] or "0", 16))
        elif re.fullmatch(r"0[0-7]+", p):
            nums.append(int(p, 8))
        elif re.fullmatch(r"[0-9]+", p):
            nums.append(int(p, 10))
        else:
            return None
    *head, last = nums
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for n in head:
        value = value * 256 + n
    return ipaddress.IPv4Address(value * 256 ** (4 - len(head)) + last)


def parse_ip(host: str) -> IP | None:
    """An IP address in any spelling (a zone id after ``%`` ignored), or ``None`` for a name."""
    h = host.strip("[]")
    if ":" in h:
        try:
            return ipaddress.IPv6Address(h.split("%", 1)[0])
        except ValueError:
            return None
    return parse_ipv4(h)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    packed = ip.packed
    if packed[:12] == b"\x00" * 12 and packed[12:] not in (b"\x00" * 4, b"\x00\x00\x00\x01"):
        return ipaddress.IPv4Address(packed[12:])  # IPv4-compatible (::a.b.c.d), deprecated
    if ip in ipaddress.IPv6Network("64:ff9b::/96") or ip in ipaddress.IPv6Network("64:ff9b:1::/48"):
        return ipaddress.IPv4Address(packed[12:])  # NAT64
    return None


def ip_problem(ip: IP) -> str | None:
    """Why ``ip`` must not be reached, or ``None`` for a globally routable address."""
    if ip in METADATA_IPS:
        return f"the cloud metadata service ({ip})"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            why = ip_problem(inner)
            return f"{why} (inside IPv6 {ip.compressed})" if why else None
    if ip.is_loopback:
        return f"a loopback address ({ip})"
    if ip.is_link_local:
        return f"a link-local address ({ip})"
    if ip.is_unspecified:
        return f"the unspecified address ({ip})"
    if ip.is_multicast:
        return f"a multicast address ({ip})"
    if ip.is_private or not ip.is_global or (ip in _IETF_V4 and ip not in _GLOBAL_IETF):
        return f"a private or reserved address ({ip})"
    return None


def name_problem(name: str) -> str | None:
    """Why the host name ``name`` must not be reached (without DNS), or ``None``."""
    host = name.lower().rstrip(".")
    if any(ord(c) < 0x21 or c == "\x7f" for c in host) or "%" in host:
        return f"a host that cannot be read ({host!r})"
    if host in METADATA_HOSTS:
        return f"a cloud metadata host ({host})"
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return f"this machine ({host})"
    if host.endswith(PRIVATE_SUFFIXES) or "." not in host:
        return f"an internal host ({host})"
    for suffix in _IP_IN_NAME:
        if host.endswith(suffix) or host == suffix[1:]:
            inner = host[: -len(suffix)]
            m = re.search(r"(\d{1,3}(?:[.-]\d{1,3}){3})$", inner)
            embedded: IP | None = parse_ip(m.group(1).replace("-", ".")) if m else None
            if m is None and (h := re.search(r"(?:^|[.-])([0-9a-f]{8})$", inner)):
                embedded = ipaddress.IPv4Address(int(h.group(1), 16))
            if embedded is None or ip_problem(embedded):
                return f"an address written in its name ({host})"
    return None


def allowed(host: str, ip: IP | None, allow: Iterable[str]) -> bool:
    for entry in allow:
        e = entry.strip().lower().rstrip(".")
        if e.startswith("*."):
            if host.endswith(e[1:]) or host == e[2:]:
                return True
        elif "/" in e and ip is not None:
            try:
                if ip in ipaddress.ip_network(e, strict=False):
                    return True
            except ValueError:
                continue
        elif e == host or (ip is not None and parse_ip(e) == ip):
            return True
    return False
