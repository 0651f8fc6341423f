"""Streaming SFT data: lazy, sharded by rank and worker, every sample once per epoch, resumable."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch
from torch.utils.data import DataLoader

from mimesis_pl.data.chat_sft import JsonlChatSFTDataModule
from mimesis_pl.data.streaming import (
    StreamingSFTBatches,
    pack_by_length,
    window_offset,
    worker_skip,
)

from ..conftest import ASSETS

FILES = [str(ASSETS / "data/chat_sft/train.jsonl")]


def test_pack_by_length_hand_worked():
    lengths = [5, 3, 9, 2]
    assert pack_by_length([3, 1, 0, 2], lengths, batch_size=2, max_tokens=None) == [[3, 1], [0, 2]]
    # max_tokens 10: [2,3] pads to 3x2=6; adding 5 -> 5x3=15 > 10; [5] then 9x2=18 > 10 -> [9] alone
    assert pack_by_length([3, 1, 0, 2], lengths, batch_size=8, max_tokens=10) == [[3, 1], [0], [2]]


def test_worker_skip_round_robin():
    # 7 consumed batches from 3 workers: worker 0 gave batches 0, 3, 6; worker 1 gave 1, 4; worker 2 gave 2, 5
    assert [worker_skip(7, w, 3) for w in range(3)] == [3, 2, 2]
    assert window_offset(0, 0, 16) == 0 and 0 <= window_offset(0, 3, 16) < 16


def _stream(n=23, window=5, rank=0, world=1, batch_size=2):
    rows = [{"id": f"r{k}", "len": 1 + (k * 7) % 11} for k in range(n)]
    rendered = Counter()

    def prepare(row, stats):
        rendered[row["id"]] += 1
        return {"input_ids": [0] * row["len"], "loss_mask": [1] * row["len"], "sample_id": row["id"]}

    stream = StreamingSFTBatches(
        lambda: iter(rows),
        prepare,
        keep=lambda row: row["id"] != "r4",
        collate=lambda b: [s["sample_id"] for s in b],
        batch_size=batch_size,
        shuffle_window=window,
        seed=3,
        rank=rank,
        world_size=world,
    )
    return stream, rendered


def _epoch(stream, shard, shards, epoch=0):
    return [[s["sample_id"] for s in b] for b in stream.epoch_batches(epoch, shard, shards)]


def test_every_kept_row_once_per_epoch_across_shards_and_lengths_bucketed():
    stream, _ = _stream()
    for epoch in (0, 1):
        seen = [sid for shard in range(3) for batch in _epoch(stream, shard, 3, epoch) for sid in batch]
        assert sorted(seen) == sorted(f"r{k}" for k in range(23) if k != 4)
    assert _epoch(stream, 1, 3, 0) == _epoch(stream, 1, 3, 0)  # deterministic
    assert _epoch(stream, 0, 1, 0) != _epoch(stream, 0, 1, 1)  # windows mix differently each epoch


def test_stream_is_lazy_endless_and_resumes_with_the_next_batch():
    stream, rendered = _stream()
    first = list(itertools.islice(iter(stream), 3))
    assert sum(rendered.values()) <= 10  # two windows of 5 rendered, not the 23 rows
    run = list(itertools.islice(iter(stream), 30))  # > one epoch (11 batches): it goes on
    assert len(run) == 30 and run[:3] == first
    resumed, _ = _stream()
    resumed.load_state_dict(stream.state_dict(consumed_batches=17))
    assert list(itertools.islice(iter(resumed), 5)) == run[17:22]


def test_ranks_take_disjoint_shards():
    a, _ = _stream(rank=0, world=2)
    b, _ = _stream(rank=1, world=2)
    ids_a = {s for batch in itertools.islice(iter(a), 6) for s in batch}
    ids_b = {s for batch in itertools.islice(iter(b), 6) for s in batch}
    assert ids_a and ids_b and not ids_a & ids_b


def test_datamodule_streaming_matches_the_rendered_samples(tiny_model_path):
    kwargs = {"files": FILES, "tokenizer_path": str(tiny_model_path), "batch_size": 4, "val_fraction": 0.25}
    eager = JsonlChatSFTDataModule(**kwargs)
    eager.setup("fit")
    lazy = JsonlChatSFTDataModule(streaming=True, shuffle_window=8, **kwargs)
    lazy.setup("fit")
    assert not lazy.train_samples  # nothing rendered at set-up
    n_batches = len(eager.train_dataloader())
    stream = lazy.train_dataloader()
    ids = Counter()
    for batch in itertools.islice(stream, 40):
        ids.update(tuple(row[m.bool()].tolist()) for row, m in zip(batch["input_ids"], batch["attention_mask"]))
    assert len(eager.train_samples) >= 8 and n_batches >= 2
    want = Counter(tuple(s["input_ids"]) for s in eager.train_samples)
    assert set(ids) == set(want)  # the same samples, nothing of the validation split
    val = lazy.val_dataloader()
    assert sorted(s["sample_id"] for s in lazy.val_samples) == sorted(s["sample_id"] for s in eager.val_samples)
    assert len(val) > 0


def test_datamodule_streaming_with_two_workers_covers_each_sample_once_per_epoch(tiny_model_path):
    dm = JsonlChatSFTDataModule(
        files=FILES, tokenizer_path=str(tiny_model_path), batch_size=4, streaming=True, num_workers=2, shuffle_window=6
    )
    dm.setup("fit")
    eager = JsonlChatSFTDataModule(files=FILES, tokenizer_path=str(tiny_model_path), batch_size=4)
    eager.setup("fit")
    stream = dm.train_stream()
    per_epoch = [len(list(stream.epoch_batches(0, w, 2))) for w in range(2)]
    loader = DataLoader(stream, batch_size=None, num_workers=2)
    total = sum(b["input_ids"].shape[0] for b in itertools.islice(loader, 2 * min(per_epoch)))
    assert total <= len(eager.train_samples)
    n = sum(len(b) for w in range(2) for b in stream.epoch_batches(0, w, 2))
    assert n == len(eager.train_samples)
    with pytest.raises(ValueError, match="no training samples"):
        next(iter(StreamingSFTBatches(lambda: iter([]), None, None, None, batch_size=1)))
    assert isinstance(next(iter(loader))["input_ids"], torch.Tensor)
