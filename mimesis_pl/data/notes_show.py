"""``mimesis-pl data notes``: read what a CSD run's coach told the agent (``<run>/coach_notes.jsonl``).

    mimesis-pl data notes runs/agent_csd/version_0                  # a summary, then the first 10 notes
    mimesis-pl data notes runs/agent_csd/version_0 --step 3 --n 50   # one step's notes
    mimesis-pl data notes runs/agent_csd/version_0/coach_notes.jsonl --status leaked

Each line of the file is one coached turn (written by the coach stage every step): ``step``, ``episode_id``,
``group_id``, ``task``, ``turn``, ``status`` (``ok``, ``leaked``, ``none``, ``failed`` …), ``note``,
``dropped_as_leak``, ``leaked_values``, ``evidenced`` and ``placebo``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

NOTES_FILE = "coach_notes.jsonl"


def notes_file(path: Path) -> Path:
    """``path`` itself, or ``path/coach_notes.jsonl`` for a run folder; an error naming what is missing."""
    if path.is_dir():
        path = path / NOTES_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file; give a CSD run folder (runs/<job>/version_N) or its {NOTES_FILE}"
        )
    return path


def read_notes(path: Path) -> list[dict[str, Any]]:
    """The file's lines as dicts; a line that is not a JSON object is an error naming the file and line."""
    lines = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: not a JSON line ({exc})") from None
        if not isinstance(line, dict):
            raise ValueError(f"{path}:{n}: expected a JSON object, got {type(line).__name__}")
        lines.append(line)
    return lines


def format_note(line: dict[str, Any]) -> str:
    """One coached turn in three lines: where, the note, the placebo."""
    flags = [line.get("status", "?")]
    if line.get("evidenced"):
        flags.append("evidenced")
    if line.get("dropped_as_leak"):
        flags.append(f"dropped: named {line.get('leaked_values', 0)} hidden value(s)")
    head = (
        f"step {line.get('step')} · {line.get('task')} · episode {line.get('episode_id')} · turn {line.get('turn')}"
        f" · {', '.join(flags)}"
    )
    return f"{head}\n  note:    {line.get('note')}\n  placebo: {line.get('placebo')}"


def summary(lines: list[dict[str, Any]]) -> str:
    statuses = Counter(str(line.get("status")) for line in lines)
    steps = sorted({line.get("step") for line in lines if isinstance(line.get("step"), int)})
    span = f"steps {steps[0]}–{steps[-1]}" if steps else "no steps"
    shown = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    evidenced = sum(bool(line.get("evidenced")) for line in lines)
    return f"{len(lines)} coached turns over {span} ({shown}); {evidenced} with the user's private reasoning"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mimesis-pl data notes", description=__doc__.split("\n\n")[0])
    p.add_argument("path", type=Path, help=f"a CSD run folder or its {NOTES_FILE}")
    p.add_argument("--step", type=int, default=None, help="only this training step")
    p.add_argument("--task", default=None, help="only this task key")
    p.add_argument("--status", default=None, help="only notes with this status (ok, leaked, none, failed, …)")
    p.add_argument("--n", type=int, default=10, help="notes to print after the summary (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        lines = read_notes(notes_file(args.path))
    except (OSError, ValueError) as exc:
        print(f"mimesis-pl data notes: error: {exc}", file=sys.stderr)
        return 2
    chosen = [
        line
        for line in lines
        if (args.step is None or line.get("step") == args.step)
        and (args.task is None or line.get("task") == args.task)
        and (args.status is None or line.get("status") == args.status)
    ]
    print(summary(lines))
    if len(chosen) != len(lines):
        print(f"{len(chosen)} match the filters")
    for line in chosen[: max(0, args.n)]:
        print(format_note(line))
    return 0
