"""RL prompt sets: UserRL-format gym rows (``prompt``, ``reward_model``, ``extra_info``) in batches.

A batch is a list of row dicts (one per prompt); the ``RolloutCallback`` turns each into
``n_samples`` episodes. Files use the mixture grammar (``path_or_glob.parquet[:ratio]``); the order
is seeded and resumable like the SFT DataModules'.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from torch.utils.data import DataLoader

from .batching import (
    ResumableBucketBatchSampler,
    ResumableSamplerMixin,
    check_batch_size,
)
from .mixture import ParquetRows, mixture_index, parse_file_specs

REQUIRED_COLUMNS = ("data_source", "prompt", "reward_model", "extra_info")


def read_prompt_rows(specs: list[str], seed: int = 0, max_samples: int | None = None) -> list[dict[str, Any]]:
    """All rows of a mixture, each tagged with ``_source`` (file:row) for error messages."""
    parsed = parse_file_specs(specs)
    rows = ParquetRows([s.path for s in parsed])
    for f, spec in enumerate(parsed):
        missing = sorted(set(REQUIRED_COLUMNS) - set(rows.schema_names(f)))
        if missing:
            raise ValueError(f"{spec.path}: missing column(s) {missing}; a gym prompt row needs {list(REQUIRED_COLUMNS)}")
    out = []
    for f, i in mixture_index(rows.num_rows, [s.ratio for s in parsed], seed=seed, max_samples=max_samples):
        row = dict(rows.row(f, i))
        row["_source"] = f"{rows.paths[f]}:row{i}"
        out.append(row)
    return out


def _as_list(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return batch


class GymPromptDataModule(ResumableSamplerMixin, pl.LightningDataModule):
    """Batches of gym prompt rows for RL.

    Args:
        files: training prompt files (mixture specs).
        batch_size: prompts per training step (reference: 64; each runs ``n_samples`` episodes).
        val_files: optional validation prompts (used by evaluation callbacks).
        max_samples: cap on training prompts.
        seed: order seed.
    """

    def __init__(
        self, files: list[str], batch_size: int = 64, val_files: list[str] | None = None, max_samples: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        check_batch_size(batch_size)
        self.files = list(files)
        self.batch_size = batch_size
        self.val_files = list(val_files) if val_files else None
        self.max_samples = max_samples
        self.seed = seed
        self.train_rows: list[dict[str, Any]] = []
        self.val_rows: list[dict[str, Any]] = []

    def setup(self, stage: str | None = None) -> None:
        if not self.train_rows:
            self.train_rows = read_prompt_rows(self.files, self.seed, self.max_samples)
            if not self.train_rows:
                raise ValueError(f"no prompt rows in {self.files}")
        if self.val_files and not self.val_rows:
            self.val_rows = read_prompt_rows(self.val_files, self.seed)

    def train_dataloader(self) -> DataLoader:
        if self._train_sampler is None:
            rank, world = (self.trainer.global_rank, self.trainer.world_size) if self.trainer else (0, 1)
            self._install_sampler(
                ResumableBucketBatchSampler(
                    [1] * len(self.train_rows), batch_size=self.batch_size, seed=self.seed, rank=rank, num_replicas=world
                )
            )
        return DataLoader(self.train_rows, batch_sampler=self._train_sampler, collate_fn=_as_list)
