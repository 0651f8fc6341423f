"""Set-up checks of ``episode.gym_options``: every gym, judge, key and resource file is resolved before the first
episode (decision E28).

A bad option used to surface at the first rollout, after the weights, the users and the shim had started (a
92-line traceback), or never (a missing Search corpus): the gym was built per episode. :func:`check_gym_options`
runs when the episode settings are built, so a bad value is one line naming its YAML key and the CLI exits 2.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

#: Option keys whose values name files or folders (``corpus_path``, ``scenarios_path``, ``functions_path``, …).
PATH_KEY_PARTS = ("path", "_file", "_files", "_dir", "corpus")


def is_path_key(key: str) -> bool:
    """Whether an option's value names a file or folder (not ``class_path``: a class, issue #38)."""
    return key != "class_path" and any(part in key.lower() for part in PATH_KEY_PARTS)


def named_paths(options: Any, where: str) -> Iterator[tuple[str, str]]:
    """``(yaml key, value)`` of every string under a path-like key, at any depth (lists included)."""
    if isinstance(options, Mapping):
        for key, value in options.items():
            inner = f"{where}.{key}"
            if is_path_key(str(key)) and isinstance(value, (str, list, tuple)):
                values = [value] if isinstance(value, str) else value
                yield from ((inner, v) for v in values if isinstance(v, str))
            else:
                yield from named_paths(value, inner)


def check_judge(value: Any, where: str) -> None:
    """A gym's ``judge:``: known keys, an http(s) address, a positive deadline, retries and backoff >= 0, and a
    named key variable that is set."""
    from ..llm import api_key
    from .gyms.judging import judge_settings

    settings = judge_settings(value, where=where)
    if settings is None:
        return
    if settings.timeout_s <= 0:
        raise ValueError(f"{where}.judge.timeout_s must be > 0 seconds, got {settings.timeout_s}")
    if settings.max_retries < 0 or settings.retry_backoff_s < 0:
        raise ValueError(
            f"{where}.judge: max_retries and retry_backoff_s must be >= 0, got "
            f"{settings.max_retries} and {settings.retry_backoff_s}"
        )
    api_key(settings.api_key_env, where=f"{where}.judge.api_key_env")


def check_gym_options(gym_options: Mapping[str, Mapping[str, Any]], where: str = "episode.gym_options") -> None:
    """Every configured gym is known, its judge is usable, every file its options name exists, and the gym's
    own check (``check_options``, e.g. Travel's scenario files) passes; a ``ValueError`` naming the key if not."""
    from .registry import default_registry

    registry = default_registry()
    for name, options in gym_options.items():
        at = f"{where}.{name}"
        if not isinstance(options, Mapping):
            raise ValueError(f"{at} must be a mapping of the gym's options, got {type(options).__name__}")
        try:
            cls, resolved = registry.resolve(name, options)
        except (KeyError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from None
        if "judge" in resolved:
            check_judge(resolved["judge"], at)
        for key, value in named_paths(resolved, at):
            if not Path(value).exists():
                raise FileNotFoundError(f"{key}: {value} does not exist (relative paths are read from {Path.cwd()})")
        check = getattr(cls, "check_options", None)
        if check is not None:
            try:
                check(resolved)
            except (OSError, ValueError) as err:
                raise ValueError(f"{at}: {err}") from None
