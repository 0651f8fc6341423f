"""Refuse a configuration whose coach and user simulator share one endpoint.

If the coach talked to the user's shim, its calls (and any gym judge calls sent there) would share the
user's server and could land in the privileged buffer as if they were the user's thoughts. The
reference compared raw strings once per process, so ``localhost`` vs ``127.0.0.1``, a default port
written out, or a trailing ``/v1/`` slipped through (docs/decisions.md A12, A13). Here both URLs are
reduced to the server they reach — ``(host, port)`` — before comparing.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Loopback and "any address" all reach this machine; a server bound to 0.0.0.0 answers on 127.0.0.1.
_LOCAL = "127.0.0.1"


def endpoint_key(url: str, *, what: str = "URL") -> tuple[str, int]:
    """Reduce ``url`` to the ``(host, port)`` of the server it reaches.

    Host names are lower-cased and stripped of a trailing dot; every loopback or unspecified address
    (``localhost``, ``127.0.0.0/8``, ``::1``, ``0.0.0.0``, ``::``, IPv4-mapped forms) becomes
    ``127.0.0.1``; a missing port becomes the scheme's default. The path (``/v1``, ``/ep/{id}/v1``,
    trailing slashes) does not matter: two paths on one server are still one server.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"{what} is empty; give a full http(s)://HOST:PORT URL")
    text = url.strip()
    if "://" not in text:
        text = "http://" + text  # "127.0.0.1:8710" is a common shorthand in configs
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"{what} {url!r} has scheme {parts.scheme!r}; expected http or https")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{what} {url!r} has an invalid port") from None
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise ValueError(f"{what} {url!r} has no host")
    return _canonical_host(host), port if port is not None else _DEFAULT_PORTS[scheme]


def check_distinct_endpoints(user_url: str, coach_url: str) -> None:
    """Raise ValueError naming both URLs when the coach would reach the user simulator's server.

    Run it wherever a job is configured with both a user simulator (behind its shim) and a coach;
    start a second :class:`~mimesis_pl.shim.service.PrivilegedShim` for the coach.
    """
    user = endpoint_key(user_url, what="user simulator URL")
    coach = endpoint_key(coach_url, what="coach URL")
    if user == coach:
        host, port = user
        raise ValueError(
            f"coach URL {coach_url!r} and user simulator URL {user_url!r} reach the same server "
            f"({host}:{port}); the coach must use its own shim instance on another port, otherwise "
            "its calls share the user's privileged channel"
        )


def _canonical_host(host: str) -> str:
    if host == "localhost" or host.endswith(".localhost") or host == "localhost.localdomain":
        return _LOCAL
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    address = mapped or address
    if address.is_loopback or address.is_unspecified:
        return _LOCAL
    return address.compressed
