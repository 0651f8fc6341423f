"""Eval-only transcript files: one JSON per validation row, ``<data_source>-<index>.json``."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..llm.secrets import redact_secrets
from .base import RowError, TaskResult, extra_info


def row_index(row: Mapping[str, Any]) -> Any:
    """``extra_info.index`` (or a top-level ``index``), else the loader's ``file:rowN`` tag. A row whose
    ``extra_info`` is malformed (bad JSON, a list) was already isolated as ``task_error``: its transcript is still
    written, under the loader's tag."""
    try:
        info = extra_info(row) if row.get("extra_info") is not None else dict(row)
    except RowError:
        info = {}
    index = info.get("index", row.get("index"))
    return index if index is not None else row.get("_source", "x")


def write_transcript(
    folder: Path, row: Mapping[str, Any], result: TaskResult, *, experiment_name: str, global_step: int
) -> Path:
    """Write ``{experiment_name, data_source, index, global_step, date, reward, status, reward_extra_info,
    extra, messages}`` for one row; the file name is sanitised."""
    index = row_index(row)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{result.data_source}-{index}")
    record = {
        "experiment_name": experiment_name,
        "data_source": result.data_source,
        "index": index,
        "global_step": int(global_step),
        "date": datetime.date.today().isoformat(),
        "reward": result.score,
        "status": result.status,
        "reward_extra_info": result.metrics,
        "extra": result.error or None,
        "messages": result.transcript,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(redact_secrets(json.dumps(record, indent=1, default=str)))  # no key values (D22)
    return path
