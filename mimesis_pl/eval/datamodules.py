"""DataModules of the evaluation jobs (``mimesis-pl test``): gym tasks for episodes, replay plans.

Both hand the module plain Python batches (lists of task rows or of execution plans) in a fixed
order, kept on the host (the engine, not the batch, uses the device).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from torch.utils.data import DataLoader

from mimesis_pl.data.prompts import read_prompt_rows
from mimesis_pl.envs import GymTask
from mimesis_pl.eval.episodes.executor import gym_label, task_content
from mimesis_pl.eval.host_batches import HostBatches, as_list
from mimesis_pl.eval.replay import ExecutionPlan, load_cases, project

log = logging.getLogger(__name__)


class GymTaskDataModule(HostBatches):
    """Batches of gym task rows (UserRL parquet rows) for :class:`~mimesis_pl.modules.AgentEvalModule`.

    Args:
        files: task files (mixture specs / globs), e.g. ``[assets/data/gyms/val/*.parquet]``.
        gyms: keep only these gyms (``env_name`` such as ``TelepathyGym`` or label ``telepathy``).
        tasks_per_gym: keep the first N tasks of each gym in task-id order (None: all).
        batch_size: tasks per ``test_step``; each runs its n trials there.

    Tasks are sorted by (gym, task id), so a run — and a resumed run — sees the same tasks in the same
    order whatever the files' order. A task listed in several files (UserRL's validation file and its per-gym
    test files overlap) is kept once when its content is the same everywhere (``duplicates`` counts the rows
    dropped, and a warning says so); the same gym and task id with different content is an error at set-up,
    naming both rows.
    """

    def __init__(
        self, files: list[str], gyms: list[str] | None = None, tasks_per_gym: int | None = None, batch_size: int = 16
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if tasks_per_gym is not None and tasks_per_gym < 1:
            raise ValueError(f"tasks_per_gym must be >= 1 or null, got {tasks_per_gym}")
        self.files = list(files)
        self.gyms = list(gyms) if gyms else None
        self.tasks_per_gym = tasks_per_gym
        self.batch_size = batch_size
        self.rows: list[dict[str, Any]] = []
        self.duplicates = 0

    def setup(self, stage: str | None = None) -> None:
        if self.rows:
            return
        by_gym: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        wanted = {g.lower() for g in self.gyms} if self.gyms else None
        seen: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        for row in read_prompt_rows(self.files):
            task = GymTask.from_row(row, source=row["_source"])
            label = gym_label(task.env_name)
            if wanted is not None and label not in wanted and task.env_name.lower() not in wanted:
                continue
            if self._is_duplicate(seen, (label, task.key), task):
                continue
            by_gym[label].append((task.key, row))
        for label in sorted(by_gym):
            chosen = sorted(by_gym[label], key=lambda item: item[0])[: self.tasks_per_gym]
            self.rows.extend(row for _, row in chosen)
        if not self.rows:
            raise ValueError(f"no gym tasks in {self.files}" + (f" for gyms {self.gyms}" if self.gyms else ""))
        if self.duplicates:
            log.warning("%d task rows listed in more than one of %s were kept once", self.duplicates, self.files)

    def _is_duplicate(
        self, seen: dict[tuple[str, str], tuple[str, dict[str, Any]]], key: tuple[str, str], task: GymTask
    ) -> bool:
        """Whether ``task`` repeats one already read: the same content is dropped (counted), other content raises."""
        content = task_content(task)
        if key not in seen:
            seen[key] = (task.source, content)
            return False
        first, first_content = seen[key]
        if first_content != content:
            raise ValueError(
                f"task {key[0]}/{key[1]} is in {first} and {task.source} with different content; "
                "list each task in one file only"
            )
        self.duplicates += 1
        return True

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.rows, batch_size=self.batch_size, shuffle=False, collate_fn=as_list)


class ReplayCaseDataModule(HostBatches):
    """Batches of replay :class:`~mimesis_pl.eval.replay.ExecutionPlan` for
    :class:`~mimesis_pl.modules.ReplayEvalModule`.

    Args:
        paths: case files or folders (YAML/JSON, v1 format), e.g. ``[assets/replay]``.
        batch_size: cases per ``test_step``.

    Cases are validated and projected in ``setup``: a malformed case fails the job before any agent
    call, with an error naming its file, id, turn, path and step.
    """

    def __init__(self, paths: Sequence[str], batch_size: int = 8) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.paths = list(paths)
        self.batch_size = batch_size
        self.plans: list[ExecutionPlan] = []

    def setup(self, stage: str | None = None) -> None:
        if not self.plans:
            self.plans = [project(case) for case in load_cases(*self.paths)]
            if not self.plans:
                raise ValueError(f"no replay cases under {self.paths}")

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.plans, batch_size=self.batch_size, shuffle=False, collate_fn=as_list)
