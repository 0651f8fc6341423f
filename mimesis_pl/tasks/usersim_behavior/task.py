"""The usersim-behavior rollout and reward, with the reference's defects fixed (docs/decisions.md S22).

Rows name one behaviour (several are a row error, not silently truncated) or none (control).
Seeded verification turns are replayed as context (mask 0), shown to the judge as context only and
never rule-checked; only the generated span is judged. A first turn that is malformed (no ``</think>``,
or cut by the length cap) scores 0 and stays in its group, as in the reference (S61); a rollout in which
the policy generated nothing at all is ``no_turns``, a row whose judge fails is ``judge_failed``, and a
support-agent outage is a ``task_error`` (S62) — these three are counted and kept out of the advantage.
The support agent sees the public transcript only; the judge sees private thoughts only for the
behaviours that need them (``needs_trace``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from ..base import RowError, TaskContext, TaskResult, extra_info, require, row_name
from ..clients import JudgeRequest
from ..conversation import BudgetExhausted, PolicyConversation
from ..think_format import (
    check_think_format,
    gated_reward,
    public_text,
    split_think_strict,
)
from .abcd import STANDIN_DIR, AbcdData, AbcdError, flatten_scenario
from .behaviors import Scene, get_behavior
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
        data = self.abcd(ctx)
        try:
            data.spec(flow, subflow)
        except AbcdError as err:
            raise RowError(f"{row_name(row)}: extra_info.flow/subflow {flow}/{subflow}: {err}") from None
        scene = Scene(data, flow, subflow, scenario)
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
            raise RowError(
                f"{row_name(row)}: extra_info.kwargs do not fit behaviour {behavior.name!r}: {err}"
            ) from None
        messages = [
            {"role": "system", "content": simulator_prompt(scenario, goal, hint)},
            {"role": "user", "content": CONNECTION_NOTICE},
        ]
        enable = ctx.enable_think
        conv = PolicyConversation(ctx.policy, messages, enable, sample=f"{row_name(row)} {gen_uid}")

        public: list[tuple[str, str]] = []
        thoughts: list[str] = []
        for role, text in data.verification_prefix(scenario, flow, subflow):  # replayed context, no gradient
            public.append((role, text))
            if role == "user":
                conv.append_assistant(text)
                thoughts.append("")
            else:
                conv.append([{"role": "user", "content": f"Agent: {text}"}])
        n_seed_public, n_seeded = len(public), len(thoughts)
        for _ in range(budget):
            try:
                turn = await conv.step()
            except BudgetExhausted:
                break
            utterance = public_text(turn.text, enable)
            if not utterance.strip():
                break
            thoughts.append((split_think_strict(turn.text)[0] or "") if enable else "")
            public.append(("user", utterance))
            reply = await ctx.support_agent.respond(procedure, public)
            if reply is None:  # an outage is not the simulator's doing: never judged or trained (S62)
                raise SupportAgentUnavailable(
                    f"{row_name(row)}: the support agent gave no reply to simulator turn {len(thoughts) - n_seeded} "
                    "after its retries"
                )
            public.append(("agent", reply))
            try:
                conv.append([{"role": "user", "content": f"Agent: {reply}"}])
            except BudgetExhausted:
                break
        n_sim = len(thoughts) - n_seeded
        # The policy wrote a turn but no usable message came out of it (malformed think block, or cut by the cap):
        # reward 0, scored and kept in its group, which is what teaches the policy to stop doing it (S61).
        malformed = n_sim == 0 and bool(conv.turns)

        generated = public[n_seed_public:]
        seed_text = transcript_text(render_public(public[:n_seed_public]))
        name = behavior.name if behavior is not None else "control"
        sub: dict[str, float] = {}
        verdict = None
        rule = None
        if n_sim > 0:
            if behavior is None:
                lines = render_public(generated)
                request = JudgeRequest(control_judge_prompt(transcript_text(lines), goal, seed_text), lines, goal)
                verdict = await ctx.judge.judge(request, ControlVerdict)
            else:
                lines = (
                    render_with_thoughts(generated, thoughts[n_seeded:])
                    if behavior.needs_trace
                    else render_public(generated)
                )
                request = JudgeRequest(
                    behavior_judge_prompt(behavior, transcript_text(lines), goal, seed_text), lines, goal
                )
                verdict = await ctx.judge.judge(request, BehaviorVerdict)
                try:
                    rule = behavior.check_rule(generated, scene, kwargs)
                except Exception as err:  # noqa: BLE001 -- a diagnostic only; its failure must not cost the row
                    log.warning("%s: rule of %s failed: %s", row_name(row), name, err)
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
            sub["rule"] = float(rule)  # logged, never rewarded
            if "exhibit" in sub:
                sub["rule_judge_gap"] = float(rule) - sub["exhibit"]
        if status == "ok" and any(t.truncated for t in conv.turns):
            status = "truncated"
        fmt = check_think_format(conv.turns, enable, ctx.policy.count_tokens, ctx.min_think_tokens)
        reward = gated_reward(score, fmt, is_train=ctx.is_train)
        metrics = {
            f"{PREFIX}/reward": score,
            f"{PREFIX}/n_sim_turns": float(n_sim),
            f"{PREFIX}/malformed_turn": float(malformed),
            f"{PREFIX}/is_control": float(behavior is None),
            f"{PREFIX}/{name}/reward": score,
            "all/score_v3": score,
            "all/format_correct": float(fmt.correct),
            "all/think_tokens": fmt.think_tokens,
        }
        for key, value in sub.items():
            metrics[f"{PREFIX}/{key}"] = value
            metrics[f"{PREFIX}/{name}/{key}"] = value
        trajectory = conv.trajectory(
            group_id=group_id,
            gen_uid=gen_uid,
            status=status,
            reward=reward,
            data_source=self.data_source,
            key=row_name(row),
        )
        transcript = conv.messages + [{"role": "public_transcript", "content": transcript_text(render_public(public))}]
        return TaskResult(
            data_source=self.data_source,
            gen_uid=gen_uid,
            status=status,
            reward=reward,
            score=score,
            metrics=metrics,
            trajectory=trajectory,
            transcript=transcript,
        )


def usersim_behavior(data_source: str) -> UsersimBehaviorTask:
    return UsersimBehaviorTask(data_source)
