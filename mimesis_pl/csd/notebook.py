"""Coach a batch of trajectories: pick turns, read the privileged channel, ask the coach, keep safe notes.

Per trajectory: read its user replies (the shim by episode id, or the in-process record), align them
to agent turns (:mod:`mimesis_pl.csd.evidence`), pick up to ``k`` turns, build one request per turn
with the hidden values the agent has not seen at that turn as ``avoid``, and ask the coach, with at
most ``max_concurrency`` calls in flight. Every outcome is counted; a failing coach call or shim read
costs its own notes only. The leak check is applied once more to every accepted note, whatever coach
wrote it.

Counters (all always present, so logs line up across steps):

====================  ==============================================================================
``made``              notes kept
``skipped_empty``     the coach answered nothing (e.g. a thinking coach ran out of tokens)
``skipped_none``      the coach answered ``NONE``
``failed``            the call failed (transport, HTTP error, malformed response, exception)
``leaked``            the note named a hidden value the agent had not seen; dropped (kept, and then
                      also counted in ``made``, with ``drop_leaked=False``)
``too_long``          over the length cap with no sentence end to cut at; dropped
``no_evidence``       turns left out because the reply before them had no private reasoning
``selected``          turns sent to the coach
``capped``            eligible turns left out by the per-episode cap ``k``
``truncated``         kept notes that were cut at a sentence end
``foresight``         kept notes written without private reasoning (``require_evidence=False``)
``misaligned``        turns whose shim entry could not be matched (they got no reasoning)
``unmatched_entries`` shim entries that belong to no agent turn (retries, strays)
``privileged_unavailable``  trajectories whose shim read failed (treated as having no evidence)
``skipped_failed``    trajectories skipped because their rollout failed (env/user error, timeout)
====================  ==============================================================================
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mimesis_pl.checks import check_choice
from mimesis_pl.csd.coach import Coach, CoachResult
from mimesis_pl.csd.evidence import (
    Alignment,
    TurnEvidence,
    UserTurn,
    assistant_turns,
    evidence_from_replies,
    rank_turns,
    replies_from_record,
    replies_from_shim,
)
from mimesis_pl.csd.leaks import candidate_values, find_leaks, unseen_values
from mimesis_pl.csd.prompts import (
    DEFAULT_LIMITS,
    STYLES,
    CoachRequest,
    HistoryLimits,
    Style,
    build_request,
)

log = logging.getLogger(__name__)

COUNTERS: tuple[str, ...] = (
    "made",
    "skipped_empty",
    "skipped_none",
    "failed",
    "leaked",
    "too_long",
    "no_evidence",
    "selected",
    "capped",
    "truncated",
    "foresight",
    "misaligned",
    "unmatched_entries",
    "privileged_unavailable",
    "skipped_failed",
    "skipped_gym",
)
_STATUS_COUNTER = {
    "ok": "made",
    "empty": "skipped_empty",
    "none": "skipped_none",
    "failed": "failed",
    "leaked": "leaked",
    "too_long": "too_long",
}
_FAILED_ROLLOUTS = frozenset({"env_error", "user_error", "timeout", "judge_error"})

#: ``"trajectory"``/``None``: read ``Trajectory.privileged`` (reasoning there only with an in-process
#: user: behind the shim the record holds public replies, and the reasoning must be read from the shim);
#: a shim URL (``http://…``); or an object with ``privileged(episode_id) -> list[entry]`` (sync like
#: ``ShimClient``, or async like ``AsyncShimClient``).
PrivilegedSource = Any


@dataclass(frozen=True)
class NoteRecord:
    """What happened to one selected turn (for logs and per-note filtering: docs/decisions.md A34).

    ``status`` is the coach's status, or ``leaked`` when the gate found hidden values (``leaks``);
    a ``leaked`` record carries its note only when leaked notes are kept (``drop_leaked=False``).
    """

    trajectory: int
    turn: int
    status: str
    note: str | None
    evidenced: bool
    has_next_reply: bool
    leaks: tuple[str, ...] = ()
    raw: str = ""


def _hidden_of(task: Any) -> Mapping[str, Any]:
    if task is None:
        return {}
    hidden = getattr(task, "hidden", task)  # a GymTask or its hidden mapping
    if not isinstance(hidden, Mapping):
        raise TypeError(f"tasks_hidden entries must be mappings or GymTasks, got {type(task).__name__}")
    return hidden


async def _read_entries(source: PrivilegedSource, episode_id: str) -> list[Mapping[str, Any]]:
    if hasattr(source, "privileged") and inspect.iscoroutinefunction(source.privileged):
        return list(await source.privileged(episode_id))
    # The blocking ShimClient must not stall the event loop that runs the coach calls.
    return list(await asyncio.to_thread(source.privileged, episode_id))


async def coach_batch(
    trajectories: Sequence[Any],
    tasks_hidden: Sequence[Any],
    privileged_source: PrivilegedSource,
    coach: Coach,
    k: int = 16,
    style: Style = "prospective",
    *,
    require_evidence: bool = True,
    max_concurrency: int = 16,
    limits: HistoryLimits = DEFAULT_LIMITS,
    skip_failed: bool = True,
    drop_leaked: bool = True,
    records: list[NoteRecord] | None = None,
) -> tuple[dict[tuple[int, int], str], Counter[str]]:
    """Notes for a batch: ``({(trajectory index, turn): note}, counters)``; notes in ascending key order.

    Args:
        trajectories: the rollout's trajectories (``messages``, ``privileged``, ``episode_id``, ``status``).
        tasks_hidden: per trajectory, its task's hidden fields (a mapping, a ``GymTask``, or None).
        privileged_source: where user replies come from (see :data:`PrivilegedSource`).
        coach: any :class:`Coach`.
        k: turns coached per trajectory at most.
        style: ``prospective`` or ``corrective``.
        require_evidence: coach only turns whose preceding reply carried private reasoning.
        max_concurrency: coach calls in flight at once.
        limits: the coach's view of the history.
        skip_failed: leave out trajectories whose rollout failed for infrastructure reasons.
        drop_leaked: drop notes that name a hidden value (default). ``False`` keeps them, still
            counted in ``leaked`` (and in ``made``) and flagged in their records — for the leak ablation.
        records: when given, one :class:`NoteRecord` per selected turn is appended, in key order.
    """
    check_choice("style", style, STYLES)
    if len(tasks_hidden) != len(trajectories):
        raise ValueError(f"tasks_hidden has {len(tasks_hidden)} entries for {len(trajectories)} trajectories")
    if k < 0 or max_concurrency < 1:
        raise ValueError(f"k must be >= 0 and max_concurrency >= 1, got k={k}, max_concurrency={max_concurrency}")
    from_record = privileged_source is None or privileged_source == "trajectory"
    if isinstance(privileged_source, str) and not from_record:
        from mimesis_pl.shim.client import AsyncShimClient

        async with AsyncShimClient(privileged_source) as client:
            return await coach_batch(
                trajectories,
                tasks_hidden,
                client,
                coach,
                k,
                style,
                require_evidence=require_evidence,
                max_concurrency=max_concurrency,
                limits=limits,
                skip_failed=skip_failed,
                drop_leaked=drop_leaked,
                records=records,
            )

    counts: Counter[str] = Counter({name: 0 for name in COUNTERS})
    limit = asyncio.Semaphore(max_concurrency)
    kept = _kept_trajectories(trajectories, tasks_hidden, skip_failed, counts)
    source = None if from_record else privileged_source
    all_evidence = await asyncio.gather(*(_turn_evidence(traj, source, limit, counts) for _, traj, _ in kept))
    jobs = _plan_requests(kept, all_evidence, k, style, require_evidence, limits, drop_leaked, counts)
    results = await asyncio.gather(*(_ask(coach, job, limit, drop_leaked) for job in jobs))
    return _collect_notes(jobs, results, counts, records), counts


@dataclass(frozen=True)
class _Job:
    """One turn to coach: its trajectory, its evidence, the coach request and the values it must not name."""

    trajectory: int
    evidence: TurnEvidence
    request: CoachRequest
    secret: tuple[str, ...]


def _kept_trajectories(
    trajectories: Sequence[Any], tasks_hidden: Sequence[Any], skip_failed: bool, counts: Counter[str]
) -> list[tuple[int, Any, Any]]:
    """``(index, trajectory, task)`` of the trajectories to coach; failed rollouts left out when asked, and
    those of gyms that are not episode-scoped (TauGym, as the reference's post-pass: docs/decisions.md A55)."""
    kept = []
    for i, (traj, task) in enumerate(zip(trajectories, tasks_hidden)):
        if skip_failed and getattr(traj, "status", "") in _FAILED_ROLLOUTS:
            counts["skipped_failed"] += 1
        elif not _episode_scoped(_hidden_of(task).get("env_name")):
            counts["skipped_gym"] += 1
        else:
            kept.append((i, traj, task))
    return kept


def _episode_scoped(env_name: Any) -> bool:
    from mimesis_pl.envs.registry import default_registry

    try:
        return default_registry().get(str(env_name)).episode_scoped if env_name else True
    except ValueError:  # a gym outside the built-in registry (e.g. an adapter gym) is coached
        return True


async def _turn_evidence(
    traj: Any, source: PrivilegedSource | None, limit: asyncio.Semaphore, counts: Counter[str]
) -> list[TurnEvidence]:
    """Per agent turn, the user reply before it and its private reasoning: from the record (``source``
    None) or from the privileged channel, aligned to the turns."""
    if source is None:
        return evidence_from_replies(replies_from_record(traj).replies)
    try:
        async with limit:
            entries = await _read_entries(source, traj.episode_id)
    except Exception as err:  # noqa: BLE001 - an unreadable shim costs this trajectory's notes only
        log.warning("privileged read for episode %s failed: %r", traj.episode_id, err)
        counts["privileged_unavailable"] += 1
        entries = None
    alignment: Alignment = replies_from_shim(traj, entries) if entries is not None else replies_from_record(traj)
    if entries is None:  # keep public replies, drop any in-process reasoning: no channel
        alignment.replies = [None if r is None else UserTurn(r.public, "") for r in alignment.replies]
    counts["misaligned"] += alignment.misaligned
    counts["unmatched_entries"] += alignment.unmatched_entries
    return evidence_from_replies(alignment.replies)


def _plan_requests(
    kept: Sequence[tuple[int, Any, Any]],
    all_evidence: Sequence[list[TurnEvidence]],
    k: int,
    style: Style,
    require_evidence: bool,
    limits: HistoryLimits,
    drop_leaked: bool,
    counts: Counter[str],
) -> list[_Job]:
    """Pick up to ``k`` turns per trajectory and build each one's coach request, with its secret."""
    jobs: list[_Job] = []
    for (i, traj, task), evidence in zip(kept, all_evidence):
        ranked = rank_turns(evidence, require_evidence=require_evidence)
        counts["no_evidence"] += sum(1 for e in evidence if not e.evidenced) if require_evidence else 0
        counts["capped"] += max(0, len(ranked) - k)
        positions = assistant_turns(traj.messages)
        # Secret at turn t = hidden values the agent has not seen before t (the note is read before t).
        values = candidate_values(_hidden_of(task))
        unseen = unseen_values(values, [str(m.get("content") or "") for m in traj.messages]) if values else None
        for t in sorted(ranked[:k]):
            secret = unseen[positions[t]] if unseen is not None else []
            # Keeping leaked notes means the coach must not drop them itself: it gets no avoid list,
            # and the gate in _ask flags them.
            request = build_request(
                traj.messages,
                evidence[t],
                style,
                limits=limits,
                avoid=secret if drop_leaked else (),
                tag=f"{traj.episode_id}:{t}",
            )
            jobs.append(_Job(i, evidence[t], request, tuple(secret)))
    counts["selected"] += len(jobs)
    return jobs


async def _ask(coach: Coach, job: _Job, limit: asyncio.Semaphore, drop_leaked: bool) -> CoachResult:
    """The coach's answer to one request, after the leak gate that applies to every coach."""
    async with limit:
        try:
            result = await coach.note(job.request)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - a coach that raises is a failed call, like any other
            return CoachResult(None, "failed", "", error=f"{type(err).__name__}: {err}")
    leaks = tuple(find_leaks(result.note, job.secret)) if result.note is not None else ()
    if leaks and drop_leaked:
        return CoachResult(None, "leaked", result.raw, leaks=leaks)
    if leaks:
        return replace(result, leaks=leaks)
    return result


def _collect_notes(
    jobs: Sequence[_Job], results: Sequence[CoachResult], counts: Counter[str], records: list[NoteRecord] | None
) -> dict[tuple[int, int], str]:
    """Count every outcome, keep the notes by ``(trajectory, turn)`` and append one record per job."""
    notes: dict[tuple[int, int], str] = {}
    for job, result in zip(jobs, results):
        evidence = job.evidence
        counts[_STATUS_COUNTER[result.status]] += 1
        counts["leaked"] += result.status == "ok" and bool(result.leaks)  # kept (drop_leaked=False) but flagged
        if result.note is not None:
            notes[(job.trajectory, evidence.turn)] = result.note
            counts["truncated"] += result.truncated
            counts["foresight"] += not evidence.evidenced
        if records is not None:
            status = "leaked" if result.leaks else result.status
            records.append(
                NoteRecord(
                    job.trajectory,
                    evidence.turn,
                    status,
                    result.note,
                    evidence.evidenced,
                    evidence.has_reply,
                    result.leaks,
                    result.raw,
                )
            )
    return notes
