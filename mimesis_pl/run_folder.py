"""One live run per run folder: a run claims its folder with ``.run.lock`` before it writes there (decision D21)."""

from __future__ import annotations

import json
import os
from pathlib import Path

LOCK_NAME = ".run.lock"


class RunFolderInUse(RuntimeError):
    """Another live run writes into the same run folder; the message names the folder and its process."""


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` runs on this machine (one we may not signal still runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim_run_folder(folder: Path) -> Path:
    """Mark ``folder`` as this process's run folder (``.run.lock`` holding the pid); a folder marked by another
    live process is a :class:`RunFolderInUse` (decision D21). A mark left by a process that is gone (killed) is
    taken over."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / LOCK_NAME
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = _owner(lock)
            if owner is not None and owner != os.getpid() and pid_alive(owner):
                raise RunFolderInUse(
                    f"{folder} is the run folder of another run still going (pid {owner}): give this run its own "
                    "folder (another trainer.logger.init_args.version, name or save_dir) or wait for that run"
                ) from None
            lock.unlink(missing_ok=True)  # ours, or left by a run that is gone
            continue
        with os.fdopen(fd, "w") as handle:
            json.dump({"pid": os.getpid()}, handle)
        return lock
    raise RunFolderInUse(f"{folder}: could not claim {LOCK_NAME} (another run claims it at the same time)")


def topmost_missing(folder: Path) -> Path | None:
    """The outermost folder of ``folder``'s path that does not exist yet (``None`` when ``folder`` exists)."""
    missing = None
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing = candidate
    return missing


def _owner(lock: Path) -> int | None:
    try:
        return int(json.loads(lock.read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable or half-written: treated as left behind
