"""DataModules of the simulator-fidelity suites: the items, loaded and checked in ``setup``, in file order."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from torch.utils.data import DataLoader

from mimesis_pl.eval.datamodules import _HostBatches
from mimesis_pl.eval.simulator.loaders import (
    SOUL_AXES,
    RealUserSimCase,
    load_realusersim_cases,
    load_soul_validation,
    load_turing_rows,
)
from mimesis_pl.eval.simulator.tau_data import load_tau_tasks


def _as_list(batch: list[Any]) -> list[Any]:
    return batch


class _ItemDataModule(_HostBatches):
    def __init__(self, files: list[str], limit: int | None, batch_size: int) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be >= 1 or null, got {limit}")
        self.files, self.limit, self.batch_size = list(files), limit, batch_size
        self.items: list[Any] = []

    def load(self) -> list[Any]:
        raise NotImplementedError

    def setup(self, stage: str | None = None) -> None:
        if not self.items:
            self.items = self.load()[: self.limit]

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.items, batch_size=self.batch_size, shuffle=False, collate_fn=_as_list)


class TuringRowDataModule(_ItemDataModule):
    """PRISM held-out rows (parquet or JSONL, turing-rl format).

    Args:
        files: files, folders or globs; ``limit``: first N rows; ``batch_size``: rows per ``test_step``.
    """

    def __init__(self, files: list[str], limit: int | None = None, batch_size: int = 64) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)

    def load(self) -> list[Any]:
        return load_turing_rows(self.files)


@dataclass(frozen=True)
class RealUserSimItem:
    """A case with its donor for the shuffled-profile condition."""

    case: RealUserSimCase
    donor: RealUserSimCase


def sattolo_derangement(n: int, seed: int) -> list[int]:
    """``donor[i]`` for ``i < n``: Sattolo's algorithm (one n-cycle), so no index maps to itself (n ≥ 2)."""
    order = list(range(n))
    rng = random.Random(seed)
    for i in range(n - 1, 0, -1):
        j = rng.randrange(i)
        order[i], order[j] = order[j], order[i]
    return order


class RealUserSimDataModule(_ItemDataModule):
    """RealUserSim PT3 cases (``test_sets/<split>.jsonl``), each paired with a donor profile.

    Args:
        files: split files, folders or globs.
        derangement_seed: seed of the Sattolo derangement that picks each case's donor (over the kept
            cases, after ``limit``); the mapping is saved with the results.
        limit: first N cases; ``batch_size``: cases per ``test_step``.
    """

    def __init__(
        self, files: list[str], derangement_seed: int = 0, limit: int | None = None, batch_size: int = 32
    ) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)
        self.derangement_seed = derangement_seed

    def load(self) -> list[Any]:
        return load_realusersim_cases(self.files)

    def setup(self, stage: str | None = None) -> None:
        if self.items:
            return
        cases = self.load()[: self.limit]
        if len(cases) < 2:
            raise ValueError(
                f"the shuffled-profile condition needs at least 2 cases, got {len(cases)} from {self.files}"
            )
        donors = sattolo_derangement(len(cases), self.derangement_seed)
        self.items = [RealUserSimItem(case, cases[d]) for case, d in zip(cases, donors)]


class TauTaskDataModule(_ItemDataModule):
    """tau-bench tasks for tau-USI rollouts (JSON list or JSONL).

    Args:
        files: task files; ``limit``: first N tasks; ``batch_size``: tasks per ``test_step``.
    """

    def __init__(self, files: list[str], limit: int | None = None, batch_size: int = 32) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)

    def load(self) -> list[Any]:
        return load_tau_tasks(self.files)


class SoulDataModule(_ItemDataModule):
    """SOUL validation rows (C3 parquet or JSONL, ``<set>_val.*``), in axis order, each set's rows by index.

    Args:
        files: files, folders or globs of validation rows.
        sets: the ``data_source`` keys to run (default: every set found in ``files``); each is run by its
            simulator-RL task (every SOUL set has one in ``mimesis_pl.tasks.registry.ROUTES``). An empty
            list is an error (it would run nothing and leave an older report in place).
        limit: first N rows *per set*; ``batch_size``: rows per ``test_step``.
    """

    def __init__(
        self, files: list[str], sets: list[str] | None = None, limit: int | None = None, batch_size: int = 64
    ) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)
        if sets is not None and not list(sets):
            raise ValueError(
                "SOUL sets: [] selects no set, so nothing would run and no report would be written; "
                "list the data_source keys to run, or leave sets unset (null) to run every set found in files"
            )
        self.sets = None if sets is None else list(sets)

    def load(self) -> list[Any]:
        known = [s for sets in SOUL_AXES.values() for s in sets]
        by_set = load_soul_validation(self.files)
        if self.sets is not None:
            unknown = [s for s in self.sets if s not in known]
            absent = [s for s in self.sets if s in known and s not in by_set]
            if unknown or absent:
                raise ValueError(
                    f"SOUL sets: {unknown or absent} {'are not SOUL sets' if unknown else 'have no rows'} "
                    f"in {self.files} (SOUL sets: {known})"
                )
        chosen = [s for s in known if s in by_set and (self.sets is None or s in self.sets)]
        return [row for s in chosen for row in sorted(by_set[s], key=lambda r: r.index)[: self.limit]]

    def setup(self, stage: str | None = None) -> None:
        if not self.items:
            self.items = self.load()
        if not self.items:
            raise ValueError(f"SOUL: no validation row in {self.files}; nothing to evaluate")
