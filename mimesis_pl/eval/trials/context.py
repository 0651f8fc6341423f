"""Everything besides the task and the agent that can change a trial's answer, for its cache key (decision E25).

A trial was keyed by the simulator's name and the gym options as written, so a simulator sampled at another
temperature or served at another address, another run seed, a resource file edited in place (a Search corpus,
Travel scenarios) or new weights served under the same name all reused old trials. :func:`trial_context` is
what joins the key (through the executor's configuration hash): the users' resolved settings and their served
revision, the run seed, a content hash of every file or folder the gym options name, and the served revision of
every served model the gym options name (gym judges).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...envs.option_checks import is_path_key
from ...llm.served import key_for_listing, role_revision
from .keys import plain

#: Settings that say how to reach or authenticate a role, not what it answers: kept out of keys.
NOT_IDENTITY = frozenset({"timeout_s", "api_key_env", "shim_token_env", "max_retries", "retry_backoff_s", "shim"})


def path_digest(path: Path) -> str:
    """sha256 of a file's bytes; of a folder, over its files' relative paths and bytes in sorted order."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if file is not path:
            digest.update(file.relative_to(path).as_posix().encode("utf-8") + b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def resource_digests(options: Any, key: str = "") -> dict[str, str]:
    """A content hash of every existing file the options name (anywhere in them), and of every existing folder
    named under a path-like key (``*path*``, ``*_file``, ``*_dir``, ``*corpus*``), by the value as written."""
    out: dict[str, str] = {}
    if isinstance(options, Mapping):
        for name, value in options.items():
            out.update(resource_digests(value, str(name)))
    elif isinstance(options, (list, tuple)):
        for value in options:
            out.update(resource_digests(value, key))
    elif isinstance(options, str) and options.strip():
        path = Path(options)
        if path.is_file() or (is_path_key(key) and path.is_dir()):
            out[options] = path_digest(path)
    return out


def served_models(options: Any) -> dict[str, str]:
    """``"model@url"`` → the revision (served, else the mapping's ``revision``) of every mapping in ``options``
    that names a served model (``model`` and an http(s) ``url``/``base_url``): the gym judges."""
    out: dict[str, str] = {}
    if isinstance(options, Mapping):
        url = options.get("base_url") or options.get("url")
        model = options.get("model")
        if isinstance(url, str) and url.startswith(("http://", "https://")) and isinstance(model, str):
            key = key_for_listing(_str(options.get("api_key_env")))
            out[f"{model}@{url}"] = role_revision(_str(options.get("revision")), url, model, key)
        for value in options.values():
            out.update(served_models(value))
    elif isinstance(options, (list, tuple)):
        for value in options:
            out.update(served_models(value))
    return out


def users_identity(users: Any) -> dict[str, Any]:
    """The users' settings that can change their replies (their class, sampling, model, address), and for a
    served simulator the revision it is served at (else its ``revision`` setting)."""
    fields = plain(users) if dataclasses.is_dataclass(users) else {}
    identity = {"kind": type(users).__name__, **{k: v for k, v in fields.items() if k not in NOT_IDENTITY}}
    url = getattr(users, "upstream_url", None) or getattr(users, "shim_url", None)
    if url:
        key = key_for_listing(getattr(users, "api_key_env", None))
        identity["revision"] = role_revision(
            _str(getattr(users, "revision", None)), url, getattr(users, "model", ""), key
        )
    model_dir = getattr(users, "model_dir", None)
    if isinstance(model_dir, str) and model_dir:  # a checkpoint the job serves itself: its weights' content hash
        from ...serve.revision import revision_of

        identity["revision"] = revision_of(model_dir)
    return identity


def gym_context(options: Mapping[str, Any]) -> dict[str, Any]:
    """What one gym's options name beyond their text: resource contents and served revisions (empty: none)."""
    context = {"resources": resource_digests(options), "served": served_models(options)}
    return {name: value for name, value in context.items() if value}


def trial_context(users: Any, gym_options: Mapping[str, Mapping[str, Any]], seed: int) -> dict[str, Any]:
    """What joins every trial's key besides the task, the agent and the gym options as written (E25); what a
    gym's options name is under ``per_gym`` (the executor adds only the trial's own gym's to its key)."""
    per_gym = {gym: gym_context(options) for gym, options in gym_options.items()}
    return {
        "users": users_identity(users),
        "seed": int(seed),
        "per_gym": {gym: context for gym, context in per_gym.items() if context},
    }


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
