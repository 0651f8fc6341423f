"""Global batch sizes and each rank's share of them (pure functions, no torch.distributed).

Batch sizes in configs are global, as in the reference: ``data.batch_size`` prompts per training
step and ``ppo_mini_batch_size`` trajectories per optimiser step, whatever the number of processes.
Each rank takes an equal share; a size that does not divide is an error naming the key.
"""

from __future__ import annotations

import random


def per_rank_share(global_n: int, world_size: int, name: str) -> int:
    """``global_n / world_size``, or a ``ValueError`` naming ``name`` when it does not divide.

    >>> per_rank_share(64, 16, "data.batch_size")
    4
    """
    if world_size < 1:
        raise ValueError(f"world size must be >= 1, got {world_size}")
    if global_n < 1:
        raise ValueError(f"{name} must be >= 1, got {global_n}")
    if global_n % world_size:
        below = global_n - global_n % world_size
        raise ValueError(
            f"{name}={global_n} is a global size and must divide evenly over {world_size} processes "
            f"(each rank takes an equal share); use a multiple of {world_size}, e.g. {below or world_size} "
            f"or {below + world_size}"
        )
    return global_n // world_size


def plan_minibatches(
    n_slots: int,
    trained: list[int],
    share: int,
    micro_batch_size: int,
    epochs: int = 1,
    seed: int | None = None,
    pad: bool = False,
) -> list[list[list[int]]]:
    """Mini-batches (each a list of micro-batches of tensor rows) for one rank's PPO update.

    A rank's experience has ``n_slots`` trajectories (its prompts × samples, in that order), of
    which ``trained`` (sorted slot indices) are trained on; tensor row ``k`` holds slot
    ``trained[k]``. Each epoch (slots shuffled with ``seed + epoch`` when ``seed`` is set) cuts the
    slots into mini-batches of ``share`` slots — this rank's part of one optimiser step — and keeps
    the trained rows of each, split into micro-batches of ``micro_batch_size``. The number of
    mini-batches depends only on ``n_slots`` and ``share``, so every rank takes the same number of
    optimiser steps however many of its trajectories failed. With ``pad``, each mini-batch is
    filled with empty micro-batches up to ``ceil(share / micro_batch_size)``, so that every rank
    also runs the same number of forwards (FSDP gathers weights inside each one).
    """
    if share < 1 or micro_batch_size < 1:
        raise ValueError(f"share and micro_batch_size must be >= 1, got {share} and {micro_batch_size}")
    row_of = {slot: row for row, slot in enumerate(trained)}
    if len(row_of) != len(trained) or any(not 0 <= s < n_slots for s in trained):
        raise ValueError(f"trained slots {trained} must be distinct and in [0, {n_slots})")
    most_micro = -(-share // micro_batch_size)
    plan: list[list[list[int]]] = []
    for epoch in range(epochs):
        slots = list(range(n_slots))
        if seed is not None:
            random.Random(seed * 1_000_003 + epoch).shuffle(slots)
        for start in range(0, n_slots, share):
            rows = [row_of[s] for s in slots[start : start + share] if s in row_of]
            micro = [rows[i : i + micro_batch_size] for i in range(0, len(rows), micro_batch_size)]
            if pad:
                micro += [[] for _ in range(most_micro - len(micro))]
            plan.append(micro)
    return plan
