"""Typed objects between the stages of simulator RL: a row in, a :class:`TaskResult` out.

A task runs one row with the policy and returns the rollout's trajectory, its reward, flat float
metrics (logged per task), a status and the rollout's ``gen_uid``. Statuses other than ``ok`` and
``truncated`` mean the row cannot be scored fairly (``judge_failed``, ``no_turns``, ``task_error``):
such rows are counted, logged as rates and kept out of the advantage (docs/decisions.md S3, S5, S22).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..rollout.trajectory import Trajectory
from .clients import Judge, Partner
from .conversation import BudgetExhausted, Policy, PolicyConversation
from .think_format import GeneratedTurn

Status = Literal["ok", "truncated", "judge_failed", "no_turns", "task_error"]
#: Rows with these statuses are masked out of the loss and out of the group baselines.
UNSCORED = frozenset({"judge_failed", "no_turns", "task_error"})


class RowError(ValueError):
    """A row that cannot be run (missing or malformed field); the message names the row and field."""


class PartnerUnavailable(Exception):  # noqa: N818 -- the name says what happened, as the callers read it
    """A partner, environment or support-agent call that failed after the client's bounded retries (HTTP error,
    garbage, connection refused). A task raises it instead of ending the dialogue early; the runner turns it into
    a ``task_error`` (counted in ``rollout/task_error_rate`` / ``val-core/all/task_error_rate``, never trained on or
    scored: docs/decisions.md S3, S5, S40)."""


@dataclass
class TaskContext:
    """Everything a task may use for one row.

    ``is_train`` drives the think-format gate (training only) and eval-only transcript dumps;
    ``support_agent`` and ``partner`` are the frozen counterparts; ``judge`` scores open-ended rows.
    """

    policy: Policy
    judge: Judge
    partner: Partner
    support_agent: Any
    is_train: bool = True
    global_step: int = 0
    min_think_tokens: int = 4
    enable_think: bool = True  # for tasks that follow the global setting (usersim-behavior)
    options: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # per data_source, e.g. {"usersim-behavior": {"abcd_dir": ...}}


@dataclass
class TaskResult:
    """One rollout of one row."""

    data_source: str
    gen_uid: str
    status: Status
    reward: float  # the training reward (format gate applied when is_train)
    score: float  # the ungated task score (what evaluation reports)
    metrics: dict[str, float]
    trajectory: Trajectory | None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    #: Further trajectories of the same rollout (CoSER: one per character the policy played); they share the
    #: reward, status and ``gen_uid``, so FoldGRPO counts the rollout once in its group statistics.
    extra_trajectories: list[Trajectory] = field(default_factory=list)

    @property
    def trained(self) -> bool:
        return self.status not in UNSCORED and self.trajectory is not None and self.trajectory.num_turns > 0


@dataclass(frozen=True)
class Rollout:
    """One rollout of one row: the row, its context and the names its result carries (``prefix``: of the task's
    metric keys, ``sotopia/reward``)."""

    row: Mapping[str, Any]
    ctx: TaskContext
    data_source: str
    prefix: str
    group_id: str
    gen_uid: str

    def option(self, name: str, default: Any) -> Any:
        """This task's setting ``name`` from ``task_options`` (e.g. ``{sotopia: {max_turns: 4}}``)."""
        return self.ctx.options.get(self.data_source, {}).get(name, default)

    def conversation(self, messages: Sequence[Mapping[str, Any]], who: str | None = None) -> PolicyConversation:
        """A new conversation of the policy (the context's ``enable_think``), named after the row, the rollout and
        ``who`` plays in it (if any)."""
        sample = f"{row_name(self.row)} {self.gen_uid}" + ("" if who is None else f" {who}")
        return PolicyConversation(self.ctx.policy, messages, self.ctx.enable_think, sample=sample)

    def result(
        self,
        convs: Sequence[PolicyConversation],
        *,
        status: Status,
        reward: float,
        score: float,
        metrics: dict[str, float],
        transcript: list[dict[str, Any]],
    ) -> TaskResult:
        """The :class:`TaskResult`: one trajectory per conversation (the first is the result's ``trajectory``, the
        others its ``extra_trajectories``), all with this status and reward."""
        source, uid = self.data_source, self.gen_uid
        names = {"group_id": self.group_id, "gen_uid": uid, "data_source": source, "key": row_name(self.row)}
        trajectories = [c.trajectory(status=status, reward=reward, **names) for c in convs]
        first, *extra = trajectories
        return TaskResult(source, uid, status, reward, score, metrics, first, transcript, extra_trajectories=extra)


async def only_turn(conv: PolicyConversation, row: Mapping[str, Any], room: str) -> GeneratedTurn:
    """The policy's one turn of a single-turn rollout; a :class:`RowError` when the prompt leaves no room for it
    (``room`` ends the message: ``to reply``)."""
    try:
        return await conv.step()
    except BudgetExhausted:
        raise RowError(f"{row_name(row)}: the prompt ({conv.prompt_length} tokens) leaves no room {room}") from None


class Task(Protocol):
    """A simulator-RL task family member, registered under its ``data_source``.

    A task may also define ``parse_row(row) -> object``: read and validate every field the task needs (raising
    :class:`RowError` naming the row and field) without calling any model. Data set-up calls it on every row
    through :func:`parse_row` (docs/decisions.md S41); ``run`` should read its fields through the same method.
    """

    data_source: str

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult: ...


def parse_row(task: Any, row: Mapping[str, Any]) -> Any:
    """The task's own reading of ``row`` (its ``parse_row``), or by default the row's ``extra_info`` mapping
    (:func:`extra_info`) for tasks that do not define one. Raises :class:`RowError` for a row it cannot read."""
    parse = getattr(task, "parse_row", None)
    return parse(row) if callable(parse) else extra_info(row)


def row_name(row: Mapping[str, Any]) -> str:
    """``file:rowN`` when the loader tagged the row, else ``data_source#index``."""
    if row.get("_source"):
        return str(row["_source"])
    info = row.get("extra_info") or {}
    index = info.get("index", "?") if isinstance(info, Mapping) else "?"
    return f"{row.get('data_source', '?')}#{index}"


def extra_info(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's ``extra_info`` as a dict (a JSON string is parsed); a :class:`RowError` otherwise."""
    info = row.get("extra_info")
    if isinstance(info, str):
        try:
            info = json.loads(info)
        except json.JSONDecodeError as err:
            raise RowError(f"{row_name(row)}: field extra_info is not valid JSON ({err})") from None
    if not isinstance(info, Mapping):
        raise RowError(f"{row_name(row)}: field extra_info must be a dict, got {type(info).__name__}")
    return dict(info)


def require(info: Mapping[str, Any], row: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` present (non-null) in ``info``; a :class:`RowError` naming them otherwise."""
    for name in names:
        if info.get(name) is not None:
            return info[name]
    raise RowError(f"{row_name(row)}: extra_info needs field {' or '.join(repr(n) for n in names)}")


def decoded(value: Any, row: Mapping[str, Any], name: str) -> Any:
    """``value``, or the JSON it encodes when it is a string (the reference writes dicts and lists either way);
    a string that is not JSON is a :class:`RowError` naming the row and field."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as err:
        raise RowError(f"{row_name(row)}: field {name} is not valid JSON ({err})") from None


def expect(value: Any, kinds: tuple[type, ...], row: Mapping[str, Any], name: str) -> Any:
    """``value`` when it is one of ``kinds`` (a bool is not an int here); a :class:`RowError` naming the row,
    the field and the type found otherwise."""
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        want = " or ".join(k.__name__ for k in kinds)
        raise RowError(f"{row_name(row)}: field {name} must be {want}, got {type(value).__name__}")
    return value


_TRUE = frozenset({"true", "1", "yes", "y"})
_FALSE = frozenset({"false", "0", "no", "n", ""})


def flag(value: Any, row: Mapping[str, Any], name: str) -> bool:
    """A boolean field as the reference writes it: a bool, 0/1, or a true/1/yes/y / false/0/no/n string (any
    case; ``None`` is false). ``"False"`` is false, unlike ``bool("False")``; anything else is a :class:`RowError`."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise RowError(f"{row_name(row)}: field {name} must be a boolean (true/false, yes/no, 0/1), got {value!r}")


def failed_result(row: Mapping[str, Any], gen_uid: str, error: BaseException) -> TaskResult:
    """The result of a row whose task raised: counted, flagged, never trained on (S5)."""
    source = str(row.get("data_source", "?"))
    return TaskResult(
        data_source=source,
        gen_uid=gen_uid,
        status="task_error",
        reward=0.0,
        score=0.0,
        metrics={"all/task_error": 1.0},
        trajectory=None,
        error=f"{type(error).__name__}: {error}",
    )
