"""Simulator-RL rows: ``data_source`` + ``extra_info`` (+ ``prompt``), from parquet or JSONL.

Files use the mixture grammar (``path_or_glob[:ratio]``); JSONL files hold one row per line. Every
row's ``data_source`` must name a registered task: an unknown one is an error at set-up naming the
file and row and listing the known keys, not a surprise in the middle of a run. Every row is then read by
its task (``parse_row``): a file whose rows its task cannot read stops set-up naming the first bad row and
the count per family, or, with ``skip_bad_rows``, those rows are left out, counted and logged, so a run never
trains on part of its mixture without saying so. The training order
is seeded and resumable (the sampler position is checkpointed).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import lightning.pytorch as pl
import pyarrow.parquet as pq
from torch.utils.data import DataLoader

from ..tasks.base import RowError, parse_row, row_name
from ..tasks.registry import UnknownTaskError, get_task, known_data_sources, task_specs
from .batching import ResumableBucketBatchSampler, ResumableSamplerMixin
from .mixture import mixture_index, parse_file_specs

log = logging.getLogger(__name__)


def _read_file(path: str) -> list[dict[str, Any]]:
    if path.endswith(".jsonl"):
        rows = []
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:row{n}: not valid JSON ({err})") from None
                rows.append(row)
        return rows
    return pq.read_table(path).to_pylist()


def check_row(row: Any, where: str) -> dict[str, Any]:
    """A row with a known ``data_source``; errors name ``where``. Its fields are the task's to read
    (:func:`parse_task_row`)."""
    if not isinstance(row, Mapping):
        raise TypeError(f"{where}: a row must be an object, got {type(row).__name__}")
    source = row.get("data_source")
    if not isinstance(source, str) or not source:
        raise ValueError(f"{where}: field data_source is missing or not a string")
    if source not in task_specs():  # a dict lookup per row; the sorted list only for the message
        raise UnknownTaskError(
            f"{where}: unknown data_source {source!r}; known data sources: {', '.join(known_data_sources())}"
        )
    return dict(row)


def _index_of(row: Mapping[str, Any]) -> Any:
    info = row.get("extra_info")
    if isinstance(info, str):
        try:
            info = json.loads(info)
        except json.JSONDecodeError:
            info = None
    return info.get("index") if isinstance(info, Mapping) else row.get("index")


def parse_task_row(row: dict[str, Any], validation: bool) -> None:
    """Have the row's task read it (:func:`~mimesis_pl.tasks.base.parse_row`): a :class:`RowError` names the row
    and field. A validation row also needs ``extra_info.index`` (its results and transcript are filed by it)."""
    parse_row(get_task(row["data_source"]), row)
    if validation and _index_of(row) is None:
        raise RowError(f"{row_name(row)}: a validation row needs field extra_info.index")


@dataclass
class BadRows:
    """Rows their task cannot read, per ``data_source``: the count and the first row's error."""

    counts: Counter[str] = field(default_factory=Counter)
    first: dict[str, str] = field(default_factory=dict)

    def add(self, source: str, error: Exception) -> None:
        self.counts[source] += 1
        self.first.setdefault(source, str(error))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        return "; ".join(f"{s}: {n} (first: {self.first[s]})" for s, n in sorted(self.counts.items()))


def read_file_rows(path: str, validation: bool, bad: BadRows, skip_bad_rows: bool) -> list[dict[str, Any]]:
    """The rows of one file, each tagged ``_source`` = ``file:rowN`` and read by its task; a row its task cannot
    read is counted in ``bad`` and, with ``skip_bad_rows``, left out (docs/decisions.md S41)."""
    rows = []
    for n, raw in enumerate(_read_file(path)):
        where = f"{path}:row{n}"
        row = check_row(raw, where)
        row["_source"] = where
        try:
            parse_task_row(row, validation)
        except RowError as err:
            bad.add(row["data_source"], err)
            continue
        rows.append(row)
    return rows


def read_task_rows(
    specs: list[str],
    seed: int = 0,
    max_samples: int | None = None,
    *,
    validation: bool = False,
    skip_bad_rows: bool = False,
) -> list[dict[str, Any]]:
    """The rows of a mixture in mixture order. Every row is read by its task first: rows it cannot read stop
    set-up with the count per family and the first bad row of each, or with ``skip_bad_rows`` are left out,
    counted and logged (``bad_rows`` of :class:`SimulatorRLDataModule`)."""
    rows, _ = read_task_rows_counted(specs, seed, max_samples, validation=validation, skip_bad_rows=skip_bad_rows)
    return rows


def read_task_rows_counted(
    specs: list[str], seed: int, max_samples: int | None, *, validation: bool, skip_bad_rows: bool
) -> tuple[list[dict[str, Any]], BadRows]:
    parsed = parse_file_specs(specs)
    bad = BadRows()
    tables = [read_file_rows(s.path, validation, bad, skip_bad_rows) for s in parsed]
    what = "val" if validation else "train"
    if bad.total and not skip_bad_rows:
        raise RowError(
            f"{what} files: {bad.total} rows their task cannot read ({bad.summary()}); fix them, or set "
            "skip_bad_rows: true to leave them out (counted and logged)"
        )
    if bad.total:
        log.warning("%s files: skipped %d rows their task cannot read: %s", what, bad.total, bad.summary())
    out = []
    for f, i in mixture_index([len(t) for t in tables], [s.ratio for s in parsed], seed=seed, max_samples=max_samples):
        out.append(dict(tables[f][i]))
    return out, bad


def resolve_specs(specs: list[str], data_dir: str | None, skip_missing: bool, what: str) -> tuple[list[str], list[str]]:
    """``(kept, skipped)``: relative names joined to ``data_dir``; a missing file is an error naming it, or,
    with ``skip_missing``, left out, counted and logged (for runs on a subset of the mixture)."""
    kept, skipped = [], []
    for spec in specs:
        path = os.path.join(data_dir, spec) if data_dir and not os.path.isabs(spec) else spec
        try:
            parse_file_specs([path])
        except FileNotFoundError as err:
            if not skip_missing:
                raise FileNotFoundError(
                    f"{what}: {err} (data_dir={data_dir!r}; set skip_missing: true to run a subset)"
                ) from None
            skipped.append(path)
            continue
        kept.append(path)
    if skipped:
        log.warning(
            "%s: skipped %d of %d files that are missing: %s", what, len(skipped), len(specs), ", ".join(skipped)
        )
    return kept, skipped


def _as_list(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return batch


class SimulatorRLDataModule(ResumableSamplerMixin, pl.LightningDataModule):
    """Batches of task rows for :class:`~mimesis_pl.modules.SimulatorRL`.

    Args:
        files: training rows (mixture specs; ``.parquet`` or ``.jsonl``).
        batch_size: prompts per step (reference: 64, each sampled ``n_samples`` times).
        val_files: validation rows; the module validates on them itself (before training and every
            ``val_every_n_steps``), so Lightning's own validation loop stays off.
        max_samples, val_max_samples: caps on rows.
        seed: order seed.
        data_dir: folder that relative file names are read from (the reference's ``$MIMESIS_DATA_DIR/sim_rl_data``).
        skip_missing: leave missing files out (counted in ``skipped_files`` and logged) instead of failing;
            for runs on a subset of the mixture. Off by default: a missing file is an error naming it.
        skip_bad_rows: leave out rows their task cannot read (counted per family in ``bad_rows`` and logged)
            instead of failing. Off by default: set-up stops naming the first bad row and the count per family.
    """

    def __init__(
        self,
        files: list[str],
        batch_size: int = 64,
        val_files: list[str] | None = None,
        max_samples: int | None = None,
        val_max_samples: int | None = None,
        seed: int = 0,
        data_dir: str | None = None,
        skip_missing: bool = False,
        skip_bad_rows: bool = False,
    ) -> None:
        super().__init__()
        self.skip_bad_rows = skip_bad_rows
        #: rows left out per data_source (``skip_bad_rows``), train and val together
        self.bad_rows: Counter[str] = Counter()
        self.data_dir = data_dir
        self.skip_missing = skip_missing
        self.skipped_files: list[str] = []
        self.files = list(files)
        self.batch_size = batch_size
        self.val_files = list(val_files) if val_files else []
        self.max_samples = max_samples
        self.val_max_samples = val_max_samples
        self.seed = seed
        self.train_rows: list[dict[str, Any]] = []
        self.val_rows: list[dict[str, Any]] = []

    def setup(self, stage: str | None = None) -> None:
        if not self.train_rows:
            files, skipped = resolve_specs(self.files, self.data_dir, self.skip_missing, "train files")
            val_files, val_skipped = resolve_specs(self.val_files, self.data_dir, self.skip_missing, "val files")
            self.skipped_files = skipped + val_skipped
            self.files, self.val_files = files, val_files
            self.train_rows, bad = read_task_rows_counted(
                self.files, self.seed, self.max_samples, validation=False, skip_bad_rows=self.skip_bad_rows
            )
            self.bad_rows.update(bad.counts)
            if not self.train_rows:
                raise ValueError(f"no rows in {self.files}")
        if self.val_files and not self.val_rows:
            self.val_rows, bad = read_task_rows_counted(
                self.val_files, self.seed, self.val_max_samples, validation=True, skip_bad_rows=self.skip_bad_rows
            )
            self.bad_rows.update(bad.counts)

    def train_dataloader(self) -> DataLoader:
        if self._train_sampler is None:
            rank, world = (self.trainer.global_rank, self.trainer.world_size) if self.trainer else (0, 1)
            self._install_sampler(
                ResumableBucketBatchSampler(
                    [1] * len(self.train_rows),
                    batch_size=self.batch_size,
                    seed=self.seed,
                    rank=rank,
                    num_replicas=world,
                )
            )
        self._lookahead_rows = self.train_rows  # rollouts ahead of the loader read batches here (batch_rows)
        return DataLoader(self.train_rows, batch_sampler=self._train_sampler, collate_fn=_as_list)
