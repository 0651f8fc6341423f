"""Durable file writes for eval artifacts: whole files by write-temp-then-rename, logs by fsync'd appends.

A run may be killed at any instant; readers must then see either the old or the new file, and an
append-only log whose last line may be torn but whose earlier lines are intact.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mimesis_pl.llm.secrets import redact_secrets


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some filesystems do not allow opening a directory; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Replace ``path`` with ``text``, known key values removed (D22)."""
    return write_bytes_atomic(path, redact_secrets(text).encode("utf-8"))


def write_json_atomic(path: str | os.PathLike[str], value: Any) -> Path:
    return write_text_atomic(path, json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def write_jsonl_atomic(path: str | os.PathLike[str], rows: Iterable[Any]) -> Path:
    lines = [json.dumps(row, ensure_ascii=False, allow_nan=False, sort_keys=True) for row in rows]
    return write_text_atomic(path, "".join(line + "\n" for line in lines))


def append_line_durable(path: str | os.PathLike[str], line: str) -> None:
    """Append one line (no newline inside) and fsync before returning."""
    if "\n" in line:
        raise ValueError("append_line_durable: the line must not contain a newline")
    path = Path(path)
    created = not path.exists()
    with open(path, "ab") as fh:
        fh.write(redact_secrets(line).encode("utf-8") + b"\n")  # known key values removed (D22)
        fh.flush()
        os.fsync(fh.fileno())
    if created:
        _fsync_dir(path.parent)


def repair_torn_tail(path: str | os.PathLike[str]) -> int:
    """Cut a last line that has no newline (a write interrupted by a crash); return the bytes removed.

    Without this, the next append would be glued onto the torn fragment and both lines would be lost.
    """
    path = Path(path)
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with open(path, "r+b") as fh:
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return len(data) - keep
