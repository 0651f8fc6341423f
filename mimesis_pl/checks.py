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
