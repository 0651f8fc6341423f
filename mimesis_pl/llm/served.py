"""What a server says it serves: the revision in ``GET /v1/models``, for cache keys (decision E25).

``mimesis-pl serve`` lists each model as ``{"id": NAME, ..., "revision": "sha256:…"}`` (a hash of the weights'
files); vLLM and SGLang list no revision. Every evaluation cache keys a served role by :func:`role_revision`:
the served revision when the server reports one, else the role's ``revision`` setting.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from .endpoint import api_key, bearer_headers

log = logging.getLogger(__name__)


def models_url(base_url: str) -> str:
    """``{root}/v1/models`` for a server given as ``http://host:port``, ``…/`` or ``…/v1[/]``."""
    root = base_url.rstrip("/")
    return f"{root}/models" if root.endswith("/v1") else f"{root}/v1/models"


def revision_in(listing: Any, model: str) -> str | None:
    """The ``revision`` of ``model`` in a ``/v1/models`` reply; ``None`` when it is not listed or has none."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            revision = entry.get("revision")
            return revision if isinstance(revision, str) and revision else None
    return None


def served_revision(base_url: str, model: str, api_key: str | None = None, timeout_s: float = 10.0) -> str | None:
    """The revision the server at ``base_url`` reports for ``model``; ``None`` when it reports none.

    A server that cannot be asked (down, no ``/v1/models``, not JSON) reports none: a warning names it, and the
    caller keys on the role's ``revision`` setting.
    """
    url = models_url(base_url)
    request = urllib.request.Request(url, headers=bearer_headers(api_key))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:  # noqa: S310 -- http(s) checked by callers
            listing = json.loads(reply.read().decode("utf-8"))
    except (OSError, ValueError) as err:  # URLError and timeouts are OSErrors; bad JSON a ValueError
        log.warning("%s: no served revision for %r (%s); its revision setting keys the cache", url, model, err)
        return None
    return revision_in(listing, model)


def role_revision(setting: str | None, base_url: str | None, model: str, api_key: str | None = None) -> str:
    """What a role's cache keys name: the served revision when the server reports one, else ``setting``
    (``"unversioned"`` when that is empty too); a role without an http(s) address has only its setting."""
    served = served_revision(base_url, model, api_key) if (base_url or "").startswith(("http://", "https://")) else None
    return served or setting or "unversioned"


def key_for_listing(env_name: str | None) -> str | None:
    """The key to ask ``/v1/models`` with: ``env_name``'s value, ``None`` when none is named or it is unset (the
    role's own requests report an unset key: D12)."""
    try:
        return api_key(env_name, where="api_key_env")
    except ValueError:
        return None
