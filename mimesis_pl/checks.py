"""Argument checks shared across the package (no dependencies)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TypeVar

T = TypeVar("T")


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


def build_choice(
    value: object,
    base: type[T],
    *,
    key: str,
    renamed_kinds: Mapping[str, str] | None = None,
    defaults: Mapping[str, object] | None = None,
) -> T:
    """A ``base`` choice given in YAML the way jsonargparse writes one, for options read from a plain mapping (a
    gym's ``gym_options``): an instance of ``base`` as is, or ``{class_path: X, init_args: {...}}`` where ``X`` is
    ``package.module.Class`` or the bare name of a ``base`` subclass. A ``kind:`` mapping (the spelling before issue
    #38) is a ``ValueError`` naming the ``class_path`` that replaces it (``renamed_kinds``: old kind → class path);
    anything else is a ``ValueError`` naming ``key``. ``defaults`` go under ``init_args``."""
    if isinstance(value, base):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"{key}: expected {{class_path: ..., init_args: {{...}}}}, got {type(value).__name__}")
    if "kind" in value and "class_path" not in value:
        raise ValueError(old_kind_message(key, value, renamed_kinds or {}))
    extra = sorted(set(value) - {"class_path", "init_args"})
    if "class_path" not in value or extra:
        raise ValueError(f"{key}: expected {{class_path: ..., init_args: {{...}}}}, got keys {sorted(value)}")
    cls = _choice_class(str(value["class_path"]), base, key=key)
    init_args = dict(value.get("init_args") or {})
    if dataclasses.is_dataclass(cls):
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(init_args) - known)
        if unknown:
            raise ValueError(f"{key}: unknown keys {unknown} for {cls.__name__}; known: {sorted(known)}")
        defaults = {k: v for k, v in (defaults or {}).items() if k in known}
    try:
        return cls(**{**(defaults or {}), **init_args})
    except TypeError as error:
        raise ValueError(f"{key}: {cls.__name__}: {error}") from None


def old_kind_message(key: str, value: Mapping[str, object], renamed_kinds: Mapping[str, str]) -> str:
    """What to write instead of an old ``kind:`` mapping (one ``class_path`` idiom for every role, issue #38)."""
    kind = value.get("kind")
    rest = ", ".join(f"{k}: {v}" for k, v in value.items() if k != "kind")
    new = renamed_kinds.get(str(kind))
    if new is None:
        return (
            f"{key}: 'kind' is no longer read; choose a class by class_path (one of {sorted(renamed_kinds.values())})"
        )
    return (
        f"{key}: 'kind: {kind}' was replaced by a class_path; write {key}: {{class_path: {new}, init_args: {{{rest}}}}}"
    )


def _choice_class(path: str, base: type, *, key: str) -> type:
    import importlib

    if "." not in path:
        found = {c.__name__: c for c in _subclasses(base)}
        if path not in found:
            raise ValueError(f"{key}: unknown class {path!r}; known: {sorted(found)}, or a package.module.Class path")
        return found[path]
    module_name, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"{key}: cannot import {path!r} ({error}); is its package on PYTHONPATH?") from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ValueError(f"{key}: {path} is not a {base.__name__}")
    return cls


def _subclasses(base: type) -> list[type]:
    out = []
    for sub in base.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out
