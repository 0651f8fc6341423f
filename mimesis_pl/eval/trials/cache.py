"""Append-only JSONL store of finished trials, so that a killed run resumes without losing work.

Each finished trial is one line, appended and fsync'd before the runner moves on. On open, a torn last
line (the process died mid-write) is cut; any other unreadable line is an error naming the file and
line. Several records may share a key (an unscored attempt, later re-run); the last one wins.
Unscored trials are stored too, but they do not count as done: a resumed run re-runs them.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from mimesis_pl.checks import check_choice
from mimesis_pl.eval.io import append_line_durable, repair_torn_tail
from mimesis_pl.eval.trials.keys import RunIdentity, TrialKey
from mimesis_pl.eval.values import freeze, json_value_problem, thaw

log = logging.getLogger(__name__)

TrialStatus = Literal["scored", "unscored"]


@dataclass(frozen=True)
class TrialRecord:
    """The result of one trial.

    ``reward`` is the raw episode reward (scored trials only); ``success`` is the trial's own verdict
    when it has one, else None (the gym's success rule decides at aggregation). ``failure`` and
    ``error`` say why an unscored trial could not be scored; ``info`` holds JSON extras (termination
    reason, turns, transcript path, ...).
    """

    key: TrialKey
    status: TrialStatus
    reward: float | None = None
    success: bool | None = None
    failure: str | None = None
    error: str | None = None
    attempts: int = 1
    info: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    finished_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        check_choice("status", self.status, ("scored", "unscored"), where=f"trial {self.key.describe()}")
        if self.status == "scored" and (self.reward is None or not math.isfinite(self.reward)):
            raise ValueError(f"trial {self.key.describe()}: a scored trial needs a finite reward, got {self.reward!r}")
        problem = json_value_problem(dict(self.info))
        if problem:
            raise ValueError(f"trial {self.key.describe()}: info is not JSON: {problem}")
        object.__setattr__(self, "info", freeze(self.info))

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key.to_dict(),
            "digest": self.key.digest,
            "status": self.status,
            "reward": self.reward,
            "success": self.success,
            "failure": self.failure,
            "error": self.error,
            "attempts": self.attempts,
            "info": thaw(self.info),
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialRecord:
        return cls(
            key=TrialKey.from_dict(data["key"]),
            status=data["status"],
            reward=data.get("reward"),
            success=data.get("success"),
            failure=data.get("failure"),
            error=data.get("error"),
            attempts=data.get("attempts", 1),
            info=data.get("info") or {},
            finished_at=data.get("finished_at", 0.0),
        )


class TrialCache:
    """Durable map ``TrialKey -> TrialRecord`` backed by one JSONL file (created on first write).

    Safe for concurrent ``append`` from threads and asyncio tasks of one process.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._latest: dict[str, TrialRecord] = {}
        self.repaired_bytes = 0
        if self.path.exists():
            self.repaired_bytes = repair_torn_tail(self.path)
            if self.repaired_bytes:
                log.warning(
                    "%s: dropped a torn last record (%d bytes) left by an interrupted run",
                    self.path,
                    self.repaired_bytes,
                )
            self._load()

    def _load(self) -> None:
        with open(self.path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = TrialRecord.from_dict(json.loads(line))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
                    problem = f"{type(err).__name__}: {err}"
                    raise ValueError(f"{self.path}:{number}: unreadable trial record ({problem})") from None
                self._latest[record.key.digest] = record

    def append(self, record: TrialRecord) -> None:
        line = json.dumps(record.to_dict(), ensure_ascii=False, sort_keys=True, allow_nan=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_line_durable(self.path, line)
            self._latest[record.key.digest] = record

    def get(self, key: TrialKey) -> TrialRecord | None:
        return self._latest.get(key.digest)

    def is_done(self, key: TrialKey) -> bool:
        """True when the latest record of ``key`` is scored (unscored trials are to be re-run)."""
        record = self.get(key)
        return record is not None and record.status == "scored"

    def records(self, identity: RunIdentity | None = None) -> list[TrialRecord]:
        """The latest record of every key, in first-seen order; only ``identity``'s run when given
        (one cache file may hold several models under test, revisions or partners)."""
        records = list(self._latest.values())
        if identity is None:
            return records
        return [r for r in records if r.key.identity == identity]

    def __iter__(self) -> Iterator[TrialRecord]:
        return iter(self.records())

    def __len__(self) -> int:
        return len(self._latest)
