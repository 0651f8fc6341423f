"""Run many rows concurrently, one failure never failing the batch (docs/decisions.md S5), and summarise the results.

``run_rows`` isolates every rollout: an exception or a per-rollout deadline becomes a ``task_error``
result (counted, logged, never trained on). ``step_metrics`` and ``validation_metrics`` are pure
summaries of a list of :class:`TaskResult` with the reference's metric keys.

Every rollout samples from its own episode seed, drawn from torch's global RNG in (row, sample) order before
any rollout runs, so which rollout gets which seed does not depend on how partner and judge replies
interleave (docs/decisions.md A74; the turn seeds are derived in :mod:`.conversation`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..rollout.loop import derive_episode_seed, draw_episode_seed, run_seed_now
from .base import UNSCORED, TaskContext, TaskResult, failed_result, row_name
from .registry import get_task

log = logging.getLogger(__name__)


async def run_row(
    row: Mapping[str, Any],
    ctx: TaskContext,
    group_id: str,
    gen_uid: str,
    timeout_s: float | None,
    seed: int | None = None,
) -> TaskResult:
    """One rollout of ``row``; never raises for a problem of the row, the task or a partner.

    Its conversations sample from ``seed`` (drawn now, before the first await, when not given; with a seed in
    the policy's sampling settings every turn uses that one).
    """
    seed = seed if seed is not None else draw_episode_seed(ctx.policy.sampling)
    ctx = replace(ctx, policy=ctx.policy.for_episode(seed))
    try:
        task = get_task(str(row.get("data_source")))
        result = await asyncio.wait_for(task.run(row, ctx, group_id=group_id, gen_uid=gen_uid), timeout_s)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # noqa: BLE001 -- isolate the row (S5): counted as task_error, masked from the loss
        log.warning("%s (%s): %s: %s", row_name(row), gen_uid, type(err).__name__, err)
        return failed_result(
            row, gen_uid, err if not isinstance(err, TimeoutError) else TimeoutError(f"over {timeout_s} s")
        )
    return result


async def run_rows(
    rows: Sequence[Mapping[str, Any]],
    n_samples: int,
    ctx: TaskContext,
    group_ids: Sequence[str],
    timeout_s: float | None = None,
    max_concurrency: int = 64,
    run_seed: int | None = None,
) -> list[TaskResult]:
    """``n_samples`` rollouts per row, concurrently; results in (row, sample) order.

    Rollout ``k`` of group ``g`` samples from a seed derived from ``run_seed`` (torch's initial seed when
    ``None``), ``g`` and ``k``, so a resumed run repeats the uninterrupted one (D20).
    """
    limit = asyncio.Semaphore(max_concurrency)
    run_seed = run_seed_now() if run_seed is None else run_seed

    async def one(row, group_id: str, k: int, seed: int | None) -> TaskResult:
        async with limit:
            return await run_row(row, ctx, group_id, f"{group_id}-{k}", timeout_s, seed)

    # Each rollout's seed is fixed here, before any rollout runs (A74, D20).
    slots = [(r, g, k) for r, g in zip(rows, group_ids) for k in range(n_samples)]
    jobs = [one(r, g, k, derive_episode_seed(ctx.policy.sampling, run_seed, g, k)) for r, g, k in slots]
    return list(await asyncio.gather(*jobs))


def _means(results: Sequence[TaskResult]) -> dict[str, float]:
    sums: dict[str, float] = defaultdict(float)
    counts: Counter[str] = Counter()
    for r in results:
        for key, value in r.metrics.items():
            sums[key] += float(value)
            counts[key] += 1
    return {key: sums[key] / counts[key] for key in sums}


def step_metrics(results: Sequence[TaskResult]) -> dict[str, float]:
    """Per-task flat metrics (means over the rollouts that carry them) and batch statistics.

    Failure rates (``rollout/judge_failed_rate``, ``rollout/task_error_rate``, ``rollout/no_turns_rate``)
    are over all rollouts; rewards are means over the scored ones only. A partner, environment or support agent
    that was down (:class:`~.base.PartnerUnavailable`) is a ``task_error`` like any other failed rollout, so
    ``rollout/task_error_rate`` (and ``rollout/<data_source>/task_error_rate``) is the one rate that shows it.
    """
    n = max(1, len(results))
    scored = [r for r in results if r.status not in UNSCORED]
    metrics = _means(scored)
    statuses = Counter(r.status for r in results)
    for status in ("judge_failed", "task_error", "no_turns", "truncated"):
        metrics[f"rollout/{status}_rate"] = statuses.get(status, 0) / n
    metrics["rollout/reward_mean"] = sum(r.reward for r in scored) / max(1, len(scored))
    metrics["rollout/score_mean"] = sum(r.score for r in scored) / max(1, len(scored))
    for source in sorted({r.data_source for r in results}):
        mine = [r for r in scored if r.data_source == source]
        if mine:
            metrics[f"rollout/{source}/reward"] = sum(r.reward for r in mine) / len(mine)
        every = [r for r in results if r.data_source == source]
        metrics[f"rollout/{source}/judge_failed_rate"] = sum(r.status == "judge_failed" for r in every) / len(every)
        metrics[f"rollout/{source}/task_error_rate"] = sum(r.status == "task_error" for r in every) / len(every)
    lengths = [r.trajectory.response_length for r in results if r.trajectory is not None]
    metrics["rollout/response_tokens_mean"] = sum(lengths) / max(1, len(lengths))
    return metrics


def validation_metrics(results: Sequence[TaskResult]) -> dict[str, float]:
    """``val-core/<ds>/reward/mean@1`` (ungated scores of scored rows), ``val-aux/<ds>/<key>/mean@1``,
    and sample-weighted headlines ``val-core/all/score``, ``val-core/all/format_correct`` and failure rates."""
    out: dict[str, float] = {}
    by_source: dict[str, list[TaskResult]] = defaultdict(list)
    for r in results:
        by_source[r.data_source].append(r)
    for source, rows in sorted(by_source.items()):
        scored = [r for r in rows if r.status not in UNSCORED]
        if scored:
            out[f"val-core/{source}/reward/mean@1"] = sum(r.score for r in scored) / len(scored)
        for key, value in _means(scored).items():
            out[f"val-aux/{source}/{key}/mean@1"] = value
        out[f"val-aux/{source}/judge_failed/mean@1"] = sum(r.status == "judge_failed" for r in rows) / len(rows)
        out[f"val-aux/{source}/task_error/mean@1"] = sum(r.status == "task_error" for r in rows) / len(rows)
    scored = [r for r in results if r.status not in UNSCORED]
    headline = _means(scored)
    for key in ("all/score", "all/format_correct", "all/think_tokens", "all/score_v3"):
        if key in headline:
            out[f"val-core/{key}"] = headline[key]
    n = max(1, len(results))
    out["val-core/all/judge_failed_rate"] = sum(r.status == "judge_failed" for r in results) / n
    out["val-core/all/task_error_rate"] = sum(r.status == "task_error" for r in results) / n
    return out


def with_eval_context(ctx: TaskContext) -> TaskContext:
    """The context for validation: no format gate."""
    return replace(ctx, is_train=False)
