"""Length-bucketed, seeded, resumable batching and padding collation for token sequences."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import Sampler


class ResumableBucketBatchSampler(Sampler[list[int]]):
    """Yield batches of indices whose sequences have similar lengths (sharded across ranks).

    Each epoch shuffles the indices with ``seed + epoch``, cuts them into windows of
    ``bucket_factor * batch_size``, sorts each window by length (so padding stays small), forms
    batches, and shuffles the batch order. A batch holds at most ``batch_size`` sequences and, when
    ``max_tokens`` is set, at most ``max_tokens`` padded tokens (a single longer sequence still
    forms its own batch).

    The order is a pure function of ``(seed, epoch)``; :meth:`state_dict` records the epoch and how
    many batches of it were consumed, so a resumed run continues with the next batch.
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        max_tokens: int | None = None,
        seed: int = 0,
        shuffle: bool = True,
        bucket_factor: int = 50,
        drop_last: bool = False,
        rank: int = 0,
        num_replicas: int = 1,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 or None, got {max_tokens}")
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.seed = seed
        self.shuffle = shuffle
        self.bucket_factor = bucket_factor
        self.drop_last = drop_last
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is outside [0, num_replicas={num_replicas})")
        self.rank = rank
        self.num_replicas = num_replicas
        self.epoch = 0
        self._skip = 0  # batches of ``self.epoch`` already consumed (set by load_state_dict)

    def batches(self, epoch: int) -> list[list[int]]:
        """All batches of ``epoch``, in order (deterministic)."""
        order = list(range(len(self.lengths)))
        rng = random.Random(self.seed * 1_000_003 + epoch)
        if self.shuffle:
            rng.shuffle(order)
        window = self.batch_size * self.bucket_factor if self.shuffle else len(order)
        batches: list[list[int]] = []
        for w in range(0, len(order), max(window, 1)):
            chunk = order[w : w + window]
            if self.shuffle:
                chunk.sort(key=lambda i: self.lengths[i])
            batches.extend(self._pack(chunk))
        if self.drop_last and batches and len(batches[-1]) < self.batch_size and self.max_tokens is None:
            batches.pop()
        if self.shuffle:
            rng.shuffle(batches)
        if self.num_replicas > 1 and batches:
            # Every rank must take the same number of steps: repeat batches from the start of the
            # epoch rather than drop any (no data is lost; a few batches are seen twice).
            short = -len(batches) % self.num_replicas
            batches = batches + batches[:short]
            batches = batches[self.rank :: self.num_replicas]
        return batches

    def _pack(self, indices: list[int]) -> list[list[int]]:
        out: list[list[int]] = []
        cur: list[int] = []
        longest = 0
        for i in indices:
            width = max(longest, self.lengths[i])
            full = len(cur) >= self.batch_size or (self.max_tokens and width * (len(cur) + 1) > self.max_tokens)
            if cur and full:
                out.append(cur)
                cur, width = [], self.lengths[i]
            cur.append(i)
            longest = width
        if cur:
            out.append(cur)
        return out

    def __iter__(self) -> Iterator[list[int]]:
        batches = self.batches(self.epoch)
        skip, self._skip = self._skip, 0
        yield from batches[skip:]

    def __len__(self) -> int:
        # The full epoch: on a mid-epoch resume Lightning restores its own batch counters and
        # expects only the remaining batches from the iterator.
        return len(self.batches(self.epoch))

    @property
    def sampler(self) -> ResumableBucketBatchSampler:
        """Lightning calls ``set_epoch`` on ``dataloader.batch_sampler.sampler``, never on the batch
        sampler itself; exposing ourselves there is what makes each epoch reshuffle."""
        return self

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self._skip = 0
        self.epoch = epoch

    def state_dict(self, consumed_batches: int) -> dict[str, Any]:
        return {"seed": self.seed, "epoch": self.epoch, "consumed_batches": consumed_batches}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("seed", self.seed) != self.seed:
            raise ValueError(f"checkpoint was made with data seed {state['seed']}, this run uses {self.seed}")
        self.epoch = int(state["epoch"])
        self._skip = int(state["consumed_batches"])


def check_batch_size(batch_size: int, max_tokens_per_batch: int | None = None) -> None:
    """Fail at construction, naming the config key, rather than in the first dataloader."""
    if batch_size < 1:
        raise ValueError(f"data.init_args.batch_size must be >= 1, got {batch_size}")
    if max_tokens_per_batch is not None and max_tokens_per_batch < 1:
        raise ValueError(f"data.init_args.max_tokens_per_batch must be >= 1 or null, got {max_tokens_per_batch}")


def collate_padded(samples: Sequence[dict[str, Any]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad ``input_ids`` / ``loss_mask`` lists into tensors.

    Returns ``input_ids [B, T]`` (long), ``attention_mask [B, T]`` (long), ``loss_mask [B, T]``
    (long; 1 where the *token itself* is a training target) and ``position_ids [B, T]``.
    """
    width = max(len(s["input_ids"]) for s in samples)
    batch = len(samples)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((batch, width), dtype=torch.long)
    loss_mask = torch.zeros((batch, width), dtype=torch.long)
    for row, s in enumerate(samples):
        n = len(s["input_ids"])
        input_ids[row, :n] = torch.as_tensor(s["input_ids"], dtype=torch.long)
        attention_mask[row, :n] = 1
        loss_mask[row, :n] = torch.as_tensor(s["loss_mask"], dtype=torch.long)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "loss_mask": loss_mask,
        "position_ids": position_ids,
    }


class ResumableSamplerMixin:
    """DataModule mixin: checkpoint and restore the position of ``self._train_sampler``.

    Subclasses create the sampler with :meth:`_install_sampler`; a state loaded before the sampler
    exists (Lightning restores before it asks for the dataloader) is applied when it is installed.
    """

    _train_sampler: ResumableBucketBatchSampler | None = None
    _pending_state: dict[str, Any] | None = None

    def _install_sampler(self, sampler: ResumableBucketBatchSampler) -> ResumableBucketBatchSampler:
        if self._pending_state is not None:
            sampler.load_state_dict(self._pending_state)
            self._pending_state = None
        self._train_sampler = sampler
        return sampler

    def state_dict(self) -> dict[str, Any]:
        if self._train_sampler is None or getattr(self, "trainer", None) is None:
            return {}
        # ``processed`` counts the batch whose on_train_batch_end is saving this checkpoint;
        # ``completed`` lags by one there.
        consumed = self.trainer.fit_loop.epoch_loop.batch_progress.current.processed
        return {"train_sampler": self._train_sampler.state_dict(consumed_batches=consumed)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = state_dict.get("train_sampler")
        if state is None:
            return
        if self._train_sampler is not None:
            self._train_sampler.load_state_dict(state)
        else:
            self._pending_state = state

    def batch_rows(self, epoch: int, index: int) -> list[Any] | None:
        """The rows the train loader yields as batch ``index`` of ``epoch`` (this rank's share), ``None`` past the
        epoch's end: rollouts started ahead of the loader (``rollout.max_staleness``) read them here.

        Subclasses that can look ahead set ``_lookahead_rows`` (the rows the sampler's indices point into)."""
        rows = getattr(self, "_lookahead_rows", None)
        if self._train_sampler is None or rows is None:
            raise RuntimeError(f"{type(self).__name__} cannot look ahead: no train sampler over known rows yet")
        batches = self._train_sampler.batches(epoch)
        return [rows[i] for i in batches[index]] if index < len(batches) else None
