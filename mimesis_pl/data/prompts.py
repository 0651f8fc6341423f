"""RL prompt sets: UserRL-format gym rows (``prompt``, ``reward_model``, ``extra_info``) in batches.

A batch is a list of row dicts (one per prompt); the agent's rollout stage turns each into
``n_samples`` episodes. Files use the mixture grammar (``path_or_glob.parquet[:ratio]``); the order
is seeded and resumable like the SFT DataModules'.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from torch.utils.data import DataLoader

from ..scale import per_rank_share
from .batching import ResumableBucketBatchSampler, ResumableSamplerMixin, check_batch_size
from .mixture import ParquetRows, mixture_index, parse_file_specs

REQUIRED_COLUMNS = ("data_source", "prompt", "reward_model", "extra_info")


def read_prompt_rows(specs: list[str], seed: int = 0, max_samples: int | None = None) -> list[dict[str, Any]]:
    """All rows of a mixture, each tagged with ``_source`` (file:row) for error messages."""
    parsed = parse_file_specs(specs)
    rows = ParquetRows([s.path for s in parsed])
    for f, spec in enumerate(parsed):
        missing = sorted(set(REQUIRED_COLUMNS) - set(rows.schema_names(f)))
        if missing:
            raise ValueError(
                f"{spec.path}: missing column(s) {missing}; a gym prompt row needs {list(REQUIRED_COLUMNS)}"
            )
    out = []
    for f, i in mixture_index(rows.num_rows, [s.ratio for s in parsed], seed=seed, max_samples=max_samples):
        row = dict(rows.row(f, i))
        row["_source"] = f"{rows.paths[f]}:row{i}"
        out.append(row)
    check_gyms_known(out)
    return out


def check_gyms_known(rows: list[dict[str, Any]]) -> None:
    """Every row parses as a gym task and names a gym there is (checked at set-up, not at the first rollout:
    E28); a ``ValueError`` naming the row's file:row."""
    from ..envs import GymTask, default_registry

    registry = default_registry()
    for row in rows:
        task = GymTask.from_row(row, source=str(row.get("_source", "<row>")))
        try:
            registry.canonical_name(task.env_name)
        except ValueError as err:
            raise ValueError(f"{row.get('_source', '<row>')}: {err}") from None


def _as_list(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return batch


class RankShareBatchSampler:
    """This rank's contiguous share of each global batch of ``inner`` (which all ranks build alike).

    Rank ``r`` of ``W`` takes rows ``[r·B/W, (r+1)·B/W)`` of every global batch of ``B`` rows, so
    the prompts of one training step are the same whatever the number of processes. Position,
    epoch and resume state are ``inner``'s.
    """

    def __init__(self, inner: ResumableBucketBatchSampler, rank: int, world_size: int) -> None:
        self.inner = inner
        self.rank = rank
        self.world_size = world_size

    def __iter__(self):
        for batch in self.inner:
            share = per_rank_share(len(batch), self.world_size, "data.init_args.batch_size")
            yield batch[self.rank * share : (self.rank + 1) * share]

    def __len__(self) -> int:
        return len(self.inner)

    def batches(self, epoch: int) -> list[list[int]]:
        """This rank's share of every batch of ``epoch``, in order (what iterating the epoch yields from its start)."""
        out = []
        for batch in self.inner.batches(epoch):
            share = per_rank_share(len(batch), self.world_size, "data.init_args.batch_size")
            out.append(batch[self.rank * share : (self.rank + 1) * share])
        return out

    @property
    def sampler(self) -> ResumableBucketBatchSampler:
        """Where Lightning calls ``set_epoch`` (``batch_sampler.sampler``): the inner sampler, so each epoch
        reshuffles."""
        return self.inner

    def set_epoch(self, epoch: int) -> None:
        self.inner.set_epoch(epoch)

    def state_dict(self, consumed_batches: int) -> dict[str, Any]:
        return self.inner.state_dict(consumed_batches)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.inner.load_state_dict(state)


class GymPromptDataModule(ResumableSamplerMixin, pl.LightningDataModule):
    """Batches of gym prompt rows for RL.

    Args:
        files: training prompt files (mixture specs).
        batch_size: prompts per training step over all processes (reference: 64; each runs
            ``n_samples`` episodes); each rank takes ``batch_size / world_size`` of them, which
            must divide.
        val_files: validation prompts (the RL validation of ``model.init_args.validation``).
        max_samples: cap on training prompts.
        seed: order seed.
        drop_last: drop an epoch's last batch when it is short of ``batch_size`` (as the
            reference); keeping it needs a remainder that divides over the processes.
    """

    def __init__(
        self,
        files: list[str],
        batch_size: int = 64,
        val_files: list[str] | None = None,
        max_samples: int | None = None,
        seed: int = 0,
        drop_last: bool = True,
    ) -> None:
        super().__init__()
        check_batch_size(batch_size)
        self.files = list(files)
        self.batch_size = batch_size
        self.drop_last = drop_last
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
            per_rank_share(self.batch_size, world, "data.init_args.batch_size")
            if len(self.train_rows) < self.batch_size and self.drop_last:
                raise ValueError(
                    f"{len(self.train_rows)} training prompts cannot fill one batch of data.init_args.batch_size="
                    f"{self.batch_size} (drop_last is on): lower batch_size or add prompts"
                )
            # Every rank builds the same global batches and takes its share of each.
            inner = ResumableBucketBatchSampler(
                [1] * len(self.train_rows), batch_size=self.batch_size, seed=self.seed, drop_last=self.drop_last
            )
            self._install_sampler(RankShareBatchSampler(inner, rank, world))
        self._lookahead_rows = self.train_rows
        return DataLoader(self.train_rows, batch_sampler=self._train_sampler, collate_fn=_as_list)
