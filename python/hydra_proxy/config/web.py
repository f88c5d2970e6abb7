"""The syntax of the settings that say which web clients may call the proxy
(``allowed_hosts``, ``allowed_origins``; server/checks/browser_guard.py applies them)."""

from __future__ import annotations

ANY_HOST = "*"


def normal_origin(origin: str) -> str:
    """An origin as browsers send it: lower case, no trailing slash."""
    return origin.strip().lower().rstrip("/")


def origin_problem(origin: str) -> str | None:
    """Why `origin` cannot be an allowed_origins entry (None: it can)."""
    scheme, sep, rest = normal_origin(origin).partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest or "*" in rest:
        return "an origin is scheme://host[:port], e.g. http://localhost:5173 (no path, no *)"
    return None


def host_problem(host: str) -> str | None:
    """Why `host` cannot be an allowed_hosts entry (None: it can)."""
    name = host.strip().lower()
    if name == ANY_HOST:
        return None
    if not name or "/" in name or "*" in name or " " in name:
        return 'a host is a name or an address, e.g. "hydra.internal" (or "*": any host)'
    if name.startswith("[") or name.count(":") == 1:
        return "give the host without its port (and an IPv6 address without brackets)"
    return None
