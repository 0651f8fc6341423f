"""Argument checks shared across the package (no dependencies)."""

from __future__ import annotations

from collections.abc import Iterable


def check_choice(name: str, value: object, choices: Iterable[object], *, where: str | None = None) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``.

    The message names the field, the value and every allowed value, e.g.
    ``"agg='mean' is not supported; agg must be one of: token-mean, seq-mean-token-sum"``; ``where``
    (a file, row or object) prefixes it when given.
    """
    allowed = tuple(choices)
    if value in allowed:
        return
    prefix = f"{where}: " if where else ""
    listing = ", ".join(str(c) for c in allowed)
    raise ValueError(f"{prefix}{name}={value!r} is not supported; {name} must be one of: {listing}")


def import_object(path: str, *, key: str) -> object:
    """The object at ``package.module:NAME`` (a user's extension named in YAML under ``key``), or a ``ValueError``
    naming the key, the path and why it could not be imported."""
    import importlib

    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{key}: {path!r} is not an import path (package.module:NAME)")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"{key}: cannot import {path!r} ({error}); is its package on PYTHONPATH?") from None


def resolve_registered(name: str, registered: Iterable[str], register, *, what: str, key: str) -> str:
    """``name`` when it is registered; a ``package.module:function`` path imported and registered under that path
    (``register(name)(fn)``, a registry's decorator factory); else a ``ValueError`` naming the key and the choices."""
    known = list(registered)
    if name in known:
        return name
    if ":" not in name:
        raise ValueError(
            f"{key}: unknown {what} {name!r}; registered: {known}, or name your own as package.module:function"
        )
    fn = import_object(name, key=key)
    if not callable(fn):
        raise ValueError(f"{key}: {name!r} is a {type(fn).__name__}, not a function")
    if name not in list(registered):  # importing its module may have registered it under this path already
        register(name)(fn)
    return name
