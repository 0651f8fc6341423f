"""What an episode leaves behind, and the scorer that reads it.

An :class:`EpisodeRecord` is the actual trajectory of one episode as the environment ran it: per agent
turn, the agent's output as produced, the action the environment executed (or why it could not), the
observation the environment answered with — the agent's next input — and the step reward; plus the
termination, the public conversation and the simulator's side (for diagnosis; never shown to the
agent). Every observation here comes from a real call (``source: "real"``), unlike replay histories,
which are fixtures.

Scoring is a pure function of the record (:func:`episode_outcome`), so recorded transcripts can be
scored again without re-running anything (:func:`read_transcripts`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mimesis_pl.eval.gym_metrics import episode_score
from mimesis_pl.eval.io import append_line_durable
from mimesis_pl.eval.trials.keys import TrialKey
from mimesis_pl.eval.trials.runner import TrialOutcome
from mimesis_pl.failures import EnvironmentFailure, FailureKind, InfrastructureFailure, JudgeFailure, SimulatorFailure

RECORD_VERSION = 1


class EpisodeTimeout(InfrastructureFailure):
    """A gym reset or step passed its deadline (the episode ended with status ``timeout``)."""

    kind = FailureKind.TIMEOUT


# Terminations that say the infrastructure failed, not the agent: the trial is retried, then unscored.
FAILURE_FOR_STATUS: Mapping[str, type[InfrastructureFailure]] = {
    "env_error": EnvironmentFailure,
    "user_error": SimulatorFailure,
    "judge_error": JudgeFailure,
    "timeout": EpisodeTimeout,
}


@dataclass(frozen=True)
class EpisodeStep:
    """One agent turn as the environment handled it.

    ``agent_output`` is the turn exactly as handed to the environment (reasoning, prose, tool call);
    ``action`` is the executed ``{"choice", "content"}``, or None when the call could not be executed
    (``tool_error`` says why; the turn is still spent, as in training). ``observation`` is None only
    for a turn that never reached the environment (generation cut by the length limit).
    """

    turn: int
    agent_output: str
    action: Mapping[str, str] | None
    tool_error: str | None
    observation: str | None
    reward: float
    done: bool
    finish_reason: str | None = None
    source: str = "real"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["action"] = dict(self.action) if self.action is not None else None
        return out


@dataclass(frozen=True)
class EpisodeRecord:
    """The recorded trajectory of one episode (see the module docstring).

    ``status`` is the termination (``finished``, ``max_turns``, ``truncated``, ``aborted``,
    ``env_error``, ``user_error``, ``timeout``); ``turn_rewards`` the per-turn rewards the gym gave.
    """

    episode_id: str
    env_name: str
    task_id: str
    status: str
    turn_rewards: tuple[float, ...]
    steps: tuple[EpisodeStep, ...]
    messages: tuple[Mapping[str, Any], ...] = ()
    simulator: tuple[Mapping[str, str | None], ...] = ()
    error: str | None = None
    counters: Mapping[str, int] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in FAILURE_FOR_STATUS

    @property
    def reward(self) -> float:
        """The episode reward: the sum of turn rewards (in [0, 1] for the built-in gyms but Travel: A40)."""
        return float(sum(self.turn_rewards))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION,
            "episode_id": self.episode_id,
            "env_name": self.env_name,
            "task_id": self.task_id,
            "status": self.status,
            "turn_rewards": list(self.turn_rewards),
            "steps": [s.to_dict() for s in self.steps],
            "messages": [dict(m) for m in self.messages],
            "simulator": [dict(s) for s in self.simulator],
            "error": self.error,
            "counters": dict(self.counters),
            "duration_s": self.duration_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        return cls(
            episode_id=data["episode_id"],
            env_name=data["env_name"],
            task_id=data["task_id"],
            status=data["status"],
            turn_rewards=tuple(float(r) for r in data["turn_rewards"]),
            steps=tuple(EpisodeStep(**s) for s in data.get("steps", ())),
            messages=tuple(data.get("messages", ())),
            simulator=tuple(data.get("simulator", ())),
            error=data.get("error"),
            counters=dict(data.get("counters", {})),
            duration_s=float(data.get("duration_s", 0.0)),
        )


def episode_outcome(record: EpisodeRecord) -> TrialOutcome:
    """Score one recorded episode: its reward, or a classified failure when the infrastructure broke.

    Raises the :class:`~mimesis_pl.failures.InfrastructureFailure` matching an ``env_error`` /
    ``user_error`` / ``judge_error`` / ``timeout`` termination, so the trial runner retries it and
    finally reports it unscored — never as a reward of 0.
    """
    failure = FAILURE_FOR_STATUS.get(record.status)
    if failure is not None:
        raise failure(
            f"episode {record.episode_id} ({record.env_name}/{record.task_id}) ended with "
            f"{record.status}: {record.error or 'no error message'}"
        )
    answers = [
        (str(s.action.get("content", "")), float(s.reward))
        for s in record.steps
        if s.action is not None and s.action.get("choice") == "answer"
    ]
    info = {
        "episode_id": record.episode_id,
        "status": record.status,
        "turns": len(record.steps),
        "turn_rewards": list(record.turn_rewards),
        "tool_errors": int(record.counters.get("tool_errors", 0)),
        # (content, reward) of every executed answer, for per-gym metrics (Travel's per-aspect scores)
        "answers": [list(a) for a in answers],
    }
    score = episode_score(record.env_name, record.task_id, record.turn_rewards, answers)
    return TrialOutcome(reward=score, info=info)


def append_transcript(path: str | Path, key: TrialKey, attempt_of: int, record: EpisodeRecord) -> None:
    """Append one episode (one attempt of trial ``key``) to the transcripts JSONL, durably."""
    line = {"key": key.to_dict(), "digest": key.digest, "attempt": attempt_of, "episode": record.to_dict()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    append_line_durable(path, json.dumps(line, ensure_ascii=False, sort_keys=True, allow_nan=False))


def read_transcripts(path: str | Path) -> Iterator[tuple[TrialKey, int, EpisodeRecord]]:
    """Every recorded attempt as ``(trial key, attempt, record)``, in the order written.

    Re-scoring is ``episode_outcome(record)`` on the last attempt of each key; a torn last line (the
    run was killed mid-write) is skipped.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines):
                return
            raise ValueError(f"{path}:{number}: not a transcript record ({err.msg})") from None
        yield TrialKey.from_dict(data["key"]), int(data.get("attempt", 1)), EpisodeRecord.from_dict(data["episode"])
