"""Stop a run whose services are down instead of training (and validating) on failed episodes.

An episode that ended in ``user_error`` (the simulator did not answer), ``env_error``, ``judge_error`` or
``timeout`` — or, in simulator RL, a ``task_error`` or ``judge_failed`` row — is masked out of the loss and
counted. When most episodes of a step fail the same way, the job is not learning anything and a run that
finishes with exit code 0 and an exported "final" model would hide it. :func:`check_failure_share` raises
:class:`RolloutFailureError` (the CLI turns it into exit code 3) once the share of failed episodes in a step,
or in a validation pass, exceeds ``rollout.max_failed_share`` (docs/decisions.md A76).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..llm.redact import redact_reasoning

#: The statuses that count as failures for agent episodes (the trajectories' infrastructure failures).
AGENT_FAILURES = frozenset({"env_error", "user_error", "timeout", "judge_error"})
#: The same for simulator-RL rows: a partner, support agent or judge that did not answer.
TASK_FAILURES = frozenset({"task_error", "judge_failed"})


class RolloutFailureError(RuntimeError):
    """Too many episodes of a step (or of a validation pass) failed for infrastructure reasons."""


def check_max_failed_share(value: float, where: str) -> None:
    """``value`` must be a share in ``[0, 1]`` (``1`` never stops the run)."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{where} must be in [0, 1] (1: never stop), got {value!r}")


def failure_message(
    statuses: Sequence[str],
    errors: Sequence[str | None],
    *,
    failures: frozenset[str],
    max_share: float,
    what: str,
    services: str,
) -> str | None:
    """Why the run must stop, or ``None`` when the failed share is at most ``max_share``.

    ``statuses[i]`` and ``errors[i]`` describe episode *i*; ``what`` names the pass ("step 3", "validation
    after 4 steps"), ``services`` the endpoints the episodes depended on. The last failure's error text is
    quoted with any ``<think>`` reasoning removed.
    """
    if not statuses:
        return None
    failed = [i for i, status in enumerate(statuses) if status in failures]
    if len(failed) / len(statuses) <= max_share:
        return None
    counts = Counter(statuses[i] for i in failed)
    last = next((errors[i] for i in reversed(failed) if errors[i]), None)
    shown = ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))
    return (
        f"{len(failed)} of {len(statuses)} episodes in {what} failed ({shown}), more than "
        f"max_failed_share={max_share:g}: {services} is likely down or misconfigured; last failure: "
        f"{redact_reasoning(last)[:500] if last else 'no error text recorded'}"
    )


def check_failure_share(statuses: Sequence[str], errors: Sequence[str | None], **settings: Any) -> None:
    """Raise :class:`RolloutFailureError` with :func:`failure_message`'s text (same keywords) when the share is
    exceeded."""
    message = failure_message(statuses, errors, **settings)
    if message is not None:
        raise RolloutFailureError(message)
