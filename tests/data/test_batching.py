import torch

from mimesis_pl.data.batching import ResumableBucketBatchSampler, collate_padded


def test_every_index_once_per_epoch_and_deterministic():
    lengths = [5, 1, 9, 3, 3, 7, 2, 8, 6, 4, 10]
    a = ResumableBucketBatchSampler(lengths, batch_size=3, seed=1)
    b = ResumableBucketBatchSampler(lengths, batch_size=3, seed=1)
    assert list(a) == list(b)
    flat = sorted(i for batch in a for i in batch)
    assert flat == list(range(len(lengths)))
    a.set_epoch(1)
    assert list(a) != list(b)  # a new epoch reshuffles


def test_buckets_reduce_padding():
    lengths = [1, 100] * 8
    sampler = ResumableBucketBatchSampler(lengths, batch_size=4, seed=0)
    for batch in sampler:
        assert len({lengths[i] for i in batch}) == 1


def test_max_tokens_caps_padded_size():
    lengths = [10, 10, 10, 10, 40]
    sampler = ResumableBucketBatchSampler(lengths, batch_size=8, max_tokens=30, shuffle=False)
    batches = sampler.batches(0)
    # [10,10,10] = 30 padded tokens; the 4th 10 starts a new batch; 40 > 30 still forms its own batch
    assert batches == [[0, 1, 2], [3], [4]]


def test_resume_continues_with_next_batch():
    lengths = list(range(1, 30))
    full = list(ResumableBucketBatchSampler(lengths, batch_size=4, seed=3))
    resumed = ResumableBucketBatchSampler(lengths, batch_size=4, seed=3)
    resumed.load_state_dict({"seed": 3, "epoch": 0, "consumed_batches": 2})
    assert list(resumed) == full[2:]
    assert list(resumed) == full  # the skip applies to the resumed epoch only


def test_ranks_partition_the_batches():
    lengths = list(range(1, 24))
    r0 = ResumableBucketBatchSampler(lengths, batch_size=4, seed=0, rank=0, num_replicas=2)
    r1 = ResumableBucketBatchSampler(lengths, batch_size=4, seed=0, rank=1, num_replicas=2)
    assert len(list(r0)) == len(list(r1))
    seen = {i for b in list(r0) + list(r1) for i in b}
    assert seen == set(range(len(lengths)))


def test_collate_padded():
    batch = collate_padded(
        [{"input_ids": [5, 6, 7], "loss_mask": [0, 1, 1]}, {"input_ids": [8], "loss_mask": [1]}], pad_id=0
    )
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["loss_mask"].tolist() == [[0, 1, 1], [1, 0, 0]]
    assert batch["position_ids"].tolist() == [[0, 1, 2], [0, 0, 0]]
    assert batch["input_ids"].dtype == torch.long
