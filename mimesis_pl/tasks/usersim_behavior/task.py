"""The usersim-behavior rollout and reward, with the reference's defects fixed (docs/decisions.md S22).

Rows name one behaviour (several are a row error, not silently truncated) or none (control).
Seeded verification turns are replayed as context (mask 0), shown to the judge as context only and
never rule-checked; only the generated span is judged. A first turn that is malformed (a think tag of the wrong
shape, e.g. an opener cut by the length cap before its close) scores 0 and stays in its group, as in the reference
(S61; a turn with no tag at all is read whole, S78); a rollout in which
the policy generated nothing at all is ``no_turns``, a row whose judge fails is ``judge_failed``, and a
support-agent outage is a ``task_error`` (S62) — these three are counted and kept out of the advantage.
The support agent sees the public transcript only; the judge sees private thoughts only for the
behaviours that need them (``needs_trace``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base import Rollout, RowError, Status, TaskContext, TaskResult, extra_info, require, row_name
from ..clients import Judge, JudgeRequest
from ..conversation import BudgetExhausted, PolicyConversation
from ..think_format import (
    FormatCheck,
    check_think_format,
    clean_response,
    gated_reward,
    split_think_strict,
)
from .abcd import STANDIN_DIR, AbcdData, AbcdError, flatten_scenario
from .behaviors import Behavior, Scene, get_behavior
from .prompts import (
    CONNECTION_NOTICE,
    BehaviorVerdict,
    ControlVerdict,
    behavior_judge_prompt,
    control_judge_prompt,
    render_public,
    render_with_thoughts,
    simulator_prompt,
    support_prompt,
    transcript_text,
)
from .reward import behavior_reward, control_reward
from .support import Procedure, SupportAgentUnavailable

log = logging.getLogger(__name__)
PREFIX = "usersim_behavior"


def _json(info: Mapping[str, Any], row: Mapping[str, Any], name: str, kind: type) -> Any:
    value = require(info, row, name)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise RowError(f"{row_name(row)}: extra_info.{name} is not valid JSON ({err})") from None
    if not isinstance(value, kind):
        raise RowError(f"{row_name(row)}: extra_info.{name} must be a JSON {kind.__name__}")
    return value


@dataclass(frozen=True)
class BehaviorRow:
    """A usersim-behavior row read against the ABCD data: the scene, the behaviour enacted (``None``: control) with
    its kwargs and hint, the simulator's goal line and the support agent's procedure."""

    scene: Scene
    budget: int
    behavior: Behavior | None
    kwargs: dict[str, Any]
    hint: str | None
    goal: str
    procedure: Procedure


def read_behavior_row(row: Mapping[str, Any], load: Callable[[], AbcdData]) -> BehaviorRow:
    """The row's fields (:class:`RowError` naming the field for a bad one), checked against the ABCD data that
    ``load`` gives (loaded once the behaviour is known, as before)."""
    info = extra_info(row)
    scenario = _json(info, row, "scenario", dict)
    ids, kw_list = _json(info, row, "behavior_ids", list), _json(info, row, "kwargs", list)
    if len(ids) > 1:
        raise RowError(f"{row_name(row)}: behavior_ids holds {len(ids)} behaviours; a row enacts one (or none)")
    flow, subflow = str(require(info, row, "flow")), str(require(info, row, "subflow"))
    budget = int(info.get("turn_budget") or 8)
    try:
        behavior = get_behavior(ids[0]) if ids else None
    except KeyError as err:
        raise RowError(f"{row_name(row)}: {err.args[0]}") from None
    kwargs = dict(kw_list[0]) if behavior is not None and kw_list else {}
    data = load()
    try:
        data.spec(flow, subflow)
    except AbcdError as err:
        raise RowError(f"{row_name(row)}: extra_info.flow/subflow {flow}/{subflow}: {err}") from None
    # the simulator's goal line comes from the scenario's own pair (empty without one); the support policy
    # from the row's pair, as in the reference
    goal_flow, goal_subflow = scenario.get("flow"), scenario.get("subflow")
    goal = data.goal(str(goal_flow or ""), str(goal_subflow)) if goal_subflow else ""
    values = flatten_scenario(scenario)
    procedure = Procedure(
        support_prompt(data.render_policy(flow, subflow)),
        required=[(f, values[f]) for f in data.required_fields(subflow) if f in values],
        hard_limit=data.has_hard_limit(flow, subflow),
        goal=goal,
    )
    try:
        hint = behavior.build_hint(**kwargs) if behavior is not None else None
    except TypeError as err:
        raise RowError(f"{row_name(row)}: extra_info.kwargs do not fit behaviour {behavior.name!r}: {err}") from None
    return BehaviorRow(Scene(data, flow, subflow, scenario), budget, behavior, kwargs, hint, goal, procedure)


@dataclass
class SupportEpisode:
    """The played episode: the public transcript (seeded turns first), the policy's private thought per user turn
    (``""`` for seeded ones) and how many of each were seeded."""

    conv: PolicyConversation
    public: list[tuple[str, str]] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    n_seed_public: int = 0
    n_seeded: int = 0

    @property
    def n_sim(self) -> int:
        """User turns the policy wrote."""
        return len(self.thoughts) - self.n_seeded

    @property
    def malformed(self) -> bool:
        """The policy wrote a turn but no usable message came out of it (a think tag of the wrong shape, e.g. an
        opener cut by the cap): reward 0, scored and kept in its group, which teaches the policy to stop (S61)."""
        return self.n_sim == 0 and bool(self.conv.turns)


async def play_behavior(task: BehaviorRow, conv: PolicyConversation, ctx: TaskContext, name: str) -> SupportEpisode:
    """The seeded verification turns replayed as context (no gradient), then up to ``budget`` policy turns, each
    answered by the support agent from the public transcript. Ends early on an empty turn or the length budget; a
    support-agent outage raises :class:`SupportAgentUnavailable` (never judged or trained, S62)."""
    episode, enable = SupportEpisode(conv), bool(conv.enable_think)
    scene = task.scene
    for role, text in scene.data.verification_prefix(scene.scenario, scene.flow, scene.subflow):
        episode.public.append((role, text))
        if role == "user":
            conv.append_assistant(text)
            episode.thoughts.append("")
        else:
            conv.append([{"role": "user", "content": f"Agent: {text}"}])
    episode.n_seed_public, episode.n_seeded = len(episode.public), len(episode.thoughts)
    for _ in range(task.budget):
        try:
            turn = await conv.step()
        except BudgetExhausted:
            break
        utterance = clean_response(turn.text, enable)
        if not utterance.strip():
            break
        episode.thoughts.append((split_think_strict(turn.text)[0] or "") if enable else "")
        episode.public.append(("user", utterance))
        reply = await ctx.support_agent.respond(task.procedure, episode.public)
        if reply is None:  # an outage is not the simulator's doing: never judged or trained (S62)
            raise SupportAgentUnavailable(
                f"{name}: the support agent gave no reply to simulator turn {episode.n_sim} after its retries"
            )
        episode.public.append(("agent", reply))
        try:
            conv.append([{"role": "user", "content": f"Agent: {reply}"}])
        except BudgetExhausted:
            break
    return episode


async def judge_behavior(
    task: BehaviorRow, episode: SupportEpisode, judge: Judge, name: str
) -> tuple[BehaviorVerdict | ControlVerdict | None, float | None]:
    """The judge's verdict on the generated span (seeded turns are context only) and the behaviour's rule value
    (a diagnostic: ``None`` without a rule, or when the rule fails)."""
    generated = episode.public[episode.n_seed_public :]
    seed_text = transcript_text(render_public(episode.public[: episode.n_seed_public]))
    behavior, goal = task.behavior, task.goal
    if behavior is None:
        lines = render_public(generated)
        request = JudgeRequest(control_judge_prompt(transcript_text(lines), goal, seed_text), lines, goal)
        return await judge.judge(request, ControlVerdict), None
    thoughts = episode.thoughts[episode.n_seeded :]
    lines = render_with_thoughts(generated, thoughts) if behavior.needs_trace else render_public(generated)
    request = JudgeRequest(behavior_judge_prompt(behavior, transcript_text(lines), goal, seed_text), lines, goal)
    verdict = await judge.judge(request, BehaviorVerdict)
    rule = None
    try:
        rule = behavior.check_rule(generated, task.scene, task.kwargs)
    except Exception as err:  # noqa: BLE001 -- a diagnostic only; its failure must not cost the row
        log.warning("%s: rule of %s failed: %s", name, behavior.name, err)
    return verdict, rule


def behavior_score(
    verdict: BehaviorVerdict | ControlVerdict | None, *, malformed: bool, n_sim: int, rule: float | None
) -> tuple[Status, float, dict[str, float]]:
    """The status, the score and the logged terms: a malformed first turn scores 0 (``ok``, S61), no turn is
    ``no_turns``, no verdict ``judge_failed``; else the control or behaviour reward with the verdict's terms. The
    rule value (and its gap to the judge's ``exhibit``) is logged, never rewarded."""
    sub: dict[str, float] = {}
    status: Status
    if malformed:
        status, score = "ok", 0.0
    elif n_sim == 0:
        status, score = "no_turns", 0.0
    elif verdict is None:
        status, score = "judge_failed", 0.0
    elif isinstance(verdict, ControlVerdict):
        status, score = "ok", control_reward(verdict)
        sub.update(cooperative=verdict.cooperative, naturalness=verdict.naturalness, on_task=verdict.on_task)
    else:
        status, score = "ok", behavior_reward(verdict)
        sub.update(
            exhibit=verdict.exhibit,
            placement=verdict.placement,
            naturalness=verdict.naturalness,
            on_task=verdict.on_task,
            announced=float(verdict.announced),
        )
    if rule is not None:
        sub["rule"] = float(rule)
        if "exhibit" in sub:
            sub["rule_judge_gap"] = float(rule) - sub["exhibit"]
    return status, score, sub


def behavior_metrics(
    behavior: Behavior | None, score: float, fmt: FormatCheck, episode: SupportEpisode, sub: Mapping[str, float]
) -> dict[str, float]:
    """The flat metrics: the family's, per behaviour (``usersim_behavior/<name>/…``, ``control`` for none) and the
    headlines."""
    name = behavior.name if behavior is not None else "control"
    metrics = {
        f"{PREFIX}/reward": score,
        f"{PREFIX}/n_sim_turns": float(episode.n_sim),
        f"{PREFIX}/malformed_turn": float(episode.malformed),
        f"{PREFIX}/is_control": float(behavior is None),
        f"{PREFIX}/{name}/reward": score,
        "all/score_v3": score,
        "all/format_correct": float(fmt.correct),
        "all/think_tokens": fmt.think_tokens,
    }
    for key, value in sub.items():
        metrics[f"{PREFIX}/{key}"] = value
        metrics[f"{PREFIX}/{name}/{key}"] = value
    return metrics


class UsersimBehaviorTask:
    data_source = "usersim-behavior"

    def __init__(self, data_source: str = "usersim-behavior") -> None:
        self.data_source = data_source
        self._data: dict[str, AbcdData] = {}

    def abcd(self, ctx: TaskContext) -> AbcdData:
        folder = str(ctx.options.get(self.data_source, {}).get("abcd_dir") or STANDIN_DIR)
        if folder not in self._data:
            self._data[folder] = AbcdData.load(folder)
        return self._data[folder]

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        task = read_behavior_row(row, lambda: self.abcd(ctx))
        run = Rollout(row, ctx, self.data_source, PREFIX, group_id, gen_uid)
        conv = run.conversation(
            [
                {"role": "system", "content": simulator_prompt(task.scene.scenario, task.goal, task.hint)},
                {"role": "user", "content": CONNECTION_NOTICE},
            ]
        )
        episode = await play_behavior(task, conv, ctx, row_name(row))
        verdict, rule = (
            (None, None) if episode.n_sim == 0 else await judge_behavior(task, episode, ctx.judge, row_name(row))
        )
        status, score, sub = behavior_score(verdict, malformed=episode.malformed, n_sim=episode.n_sim, rule=rule)
        if status == "ok" and any(t.truncated for t in conv.turns):
            status = "truncated"
        fmt = check_think_format(conv.turns, ctx.enable_think, ctx.policy.count_tokens, ctx.min_think_tokens)
        reward = gated_reward(score, fmt, is_train=ctx.is_train)
        metrics = behavior_metrics(task.behavior, score, fmt, episode, sub)
        public = [{"role": "public_transcript", "content": transcript_text(render_public(episode.public))}]
        return run.result(
            [conv], status=status, reward=reward, score=score, metrics=metrics, transcript=conv.messages + public
        )


def usersim_behavior(data_source: str) -> UsersimBehaviorTask:
    return UsersimBehaviorTask(data_source)
