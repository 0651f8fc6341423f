"""The partner/judge families (Sotopia, CoSER, MirrorBench, Humanual, userLLM, SimulatorArena): hand-worked
reward mappings, exact masks, and every one of the 24 mixture keys running its sample row through a scripted
engine with scripted doubles."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.clients import ScriptedJudge, parse_verdict
from mimesis_pl.tasks.coser import (
    CoserVerdict,
    coser_score,
    next_speaker,
    strip_thoughts,
)
from mimesis_pl.tasks.humanual import (
    HumanualVerdict,
    extract_response,
    humanual_score,
    length_factor,
)
from mimesis_pl.tasks.mirrorbench import strip_label
from mimesis_pl.tasks.registry import BUILTIN_TASKS, MIXTURE
from mimesis_pl.tasks.sim_arena import (
    DocVerdict,
    MathVerdict,
    arena_score,
    extract_message,
    wants_to_end,
)
from mimesis_pl.tasks.sotopia import (
    DIMENSIONS,
    SotopiaVerdict,
    parse_action,
    render_action,
    should_stop,
    sotopia_score,
)
from mimesis_pl.tasks.userllm import (
    choices_adherence,
    intent_overlap,
    prism_score,
    split_end,
)

DATA = Path(__file__).resolve().parents[2] / "assets/data/simulator_rl"
REPLY = (
    "\nI weigh what this person would say here\n</think>\n\n<response>Message: hmm ok, tell me more about it</response>"
)


def sample_rows() -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for split in ("val", "train"):
        for line in (DATA / f"{split}.jsonl").read_text().splitlines():
            row = json.loads(line)
            rows.setdefault(row["data_source"], row)
    return rows


def test_sotopia_score_is_the_weighted_normalised_mean():
    best = SotopiaVerdict(**{d: hi for d, (lo, hi, w) in DIMENSIONS.items()})
    worst = SotopiaVerdict(**{d: lo for d, (lo, hi, w) in DIMENSIONS.items()})
    assert sotopia_score(best) == 1.0 and sotopia_score(worst) == 0.0
    # goal 10 (w 2), relationship 0 → 0.5 (w 1), secret/social_rules 0 → 1 (w .5 each), the rest at their minimum
    mid = SotopiaVerdict(
        believability=0,
        relationship=0,
        knowledge=0,
        secret=0,
        social_rules=0,
        financial_and_material_benefits=-5,
        goal=10,
    )
    assert sotopia_score(mid) == pytest.approx((2 + 0.5 + 0.5 + 0.5) / 6)
    # out of range is a judge failure, never clamped into a score (docs/decisions.md S60)
    assert parse_verdict(json.dumps({d: 99 for d in DIMENSIONS}), SotopiaVerdict) is None


def test_sotopia_actions_and_stop_rules():
    assert parse_action('{"action_type": "leave", "argument": ""}') == ("leave", "")
    assert parse_action("just words") == ("speak", "just words")
    dance = '{"action_type": "dance", "argument": "hi"}'
    assert parse_action(dance) == ("speak", dance)  # an unknown type is speech with the whole text (S45)
    assert render_action("Maya", "speak", "hi") == 'Maya said: "hi"'
    assert render_action("Maya", "action", "waves") == "Maya [action] waves"
    assert not should_stop("leave", 4) and should_stop("leave", 5)


def test_coser_mapping_thoughts_and_next_speaker():
    assert coser_score(CoserVerdict(10, 10, 10, 10)) == 1.0
    assert coser_score(CoserVerdict(1, 1, 1, 1)) == 0.0
    assert parse_verdict(json.dumps(dict(zip(CoserVerdict.SCORE_RANGES, (1, 1, 0, -3)))), CoserVerdict) is None
    assert coser_score(CoserVerdict(10, 1, 5.5, 5.5)) == pytest.approx((100 + 0 + 44.4 + 44.4) / 400)  # int 5 (S83)
    assert strip_thoughts("[I hate this] Fine. (sighs)") == "Fine. (sighs)"
    speakers = ["Nora", "Environment", "Ida"]
    assert next_speaker("Next Speaker: Ida", speakers, "Nora", 1) == "Ida"
    assert next_speaker("Ida should speak", speakers, "Nora", 1) == "Environment"  # not a name: next in order (S48)
    assert next_speaker("Nora", speakers, "Nora", 1) == "Environment"  # the current speaker is not valid
    assert next_speaker("<END CHAT>", speakers, "Ida", 4) == "Nora"  # too early to end: next in order
    assert next_speaker("<END CHAT>", speakers, "Ida", 5) is None


def test_humanual_length_factor_tag_and_score():
    ref = " ".join(["word"] * 40)
    assert length_factor("a b c", "short reference") == 1.0
    assert length_factor(" ".join(["w"] * 6), ref) == pytest.approx(6 / 12)
    v = HumanualVerdict(stance=1, emotion=1, belief=0.5, value=0.5, goal=0, communication=0)
    assert humanual_score(v, "a b", "ref", tagged=True) == pytest.approx(0.5)
    assert humanual_score(v, "a b", "ref", tagged=False) == pytest.approx(0.5)  # as the reference (S80)
    assert humanual_score(v, "a b", "ref", tagged=False, untagged_factor=0.5) == pytest.approx(0.25)
    assert extract_response("x <response> hi </response>") == ("hi", True)
    assert extract_response("plain") == ("plain", False)


def test_userllm_terms():
    assert intent_overlap("cheap vegetarian recipe", "any cheap recipe ideas?") == pytest.approx(2 / 4)
    assert choices_adherence("where do people keep milk?", ["fridge", "oven", "car"]) == 1.0
    assert choices_adherence("is it the fridge or the oven?", ["fridge", "oven", "car"]) == 0.0
    assert choices_adherence("fridge oven car", ["fridge", "oven", "car"]) == 0.0
    assert split_end("thanks bye <|endconversation|> extra") == ("thanks bye", True)
    assert prism_score(0.5, True, True, False) == pytest.approx(0.5)


def test_arena_mapping_termination_and_labels():
    assert arena_score(MathVerdict(writing=5, interaction=2.5, fulfilment=0)) == pytest.approx(0.5)
    assert arena_score(
        DocVerdict(document=10, writing=5, interaction=5, writing_features=0, interaction_features=0)
    ) == pytest.approx(0.6)
    for said in (
        "terminate conversation",
        "OK thanks. [TERMINATE CONVERSATION]",
        "TERMINATE_CONVERSATION",
        "bye <|endconversation|>",
    ):
        assert wants_to_end(said)
    assert not wants_to_end("I will not terminate this")
    assert extract_message("thinking aloud. Query: what is a gcd?", "math") == "what is a gcd?"
    assert extract_message("Message: shorter please terminate conversation", "doc") == "shorter please"
    assert strip_label("User: hi there") == "hi there" and strip_label("note: hi") == "note: hi"


def test_the_mixture_lists_24_tasks_whose_keys_are_routed():
    assert len(MIXTURE) == 24
    assert all(key in BUILTIN_TASKS for _, _, key in MIXTURE.values())
    for alias in ("alignx", "alignx_pair", "alignx_ugc", "alignx_arbitrary", "alignx_history16"):
        assert get_task(alias).data_source == alias


def test_every_mixture_key_runs_its_sample_row_with_exact_masks(tiny_tokenizer):
    rows = sample_rows()
    eos = tiny_tokenizer.eos_token_id
    reply_ids = tiny_tokenizer(REPLY, add_special_tokens=False)["input_ids"] + [eos]
    for _, _, key in MIXTURE.values():
        ctx = make_context(tiny_tokenizer, lambda prompt, k: REPLY, max_new_tokens=96)
        result = asyncio.run(get_task(key).run(rows[key], ctx, group_id="g", gen_uid="0"))
        assert result.status == "ok", (key, result.status, result.error)
        assert 0.0 <= result.reward <= 1.0 and all(isinstance(v, float) for v in result.metrics.values()), key
        t = result.trajectory
        assert t.num_turns >= 1, key
        for span in t.turn_spans:  # every generated turn is trained exactly, nothing else is
            assert t.input_ids[span.start : span.end] == reply_ids, key
        assert sum(t.response_mask) == len(reply_ids) * t.num_turns, key
        if key in ("sotopia", "coser", "mirrorbench", "sim_arena_math", "sim_arena_doc"):
            context = tiny_tokenizer.decode([i for i, m in zip(t.input_ids, t.response_mask) if m == 0])
            assert t.num_turns >= 2 and "Tell me more" in context, key  # the partner's turns are context


def test_coser_plays_every_character_in_its_own_context(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: REPLY, max_new_tokens=96)
    result = asyncio.run(get_task("coser").run(sample_rows()["coser"], ctx, group_id="g", gen_uid="7"))
    trajectories = [result.trajectory, *result.extra_trajectories]
    assert result.status == "ok" and len(trajectories) == 2 and {t.gen_uid for t in trajectories} == {"7"}
    nora, ida = (tiny_tokenizer.decode(t.input_ids) for t in trajectories)
    assert "You are Nora" in nora and "You are Ida" not in nora and "You are Ida" in ida
    assert (
        "Nora: <response>Message: hmm ok" in ida and "Environment: I see. Tell me more." in ida
    )  # others' lines are Ida's context
    assert result.metrics["coser/characters"] == 2.0


def test_judge_failure_is_counted_not_scored(tiny_tokenizer):
    rows = sample_rows()
    for key in ("sotopia", "humanual-chat", "mirrorbench"):
        ctx = make_context(tiny_tokenizer, lambda p, k: REPLY, judge=ScriptedJudge(failure_rate=1.0), max_new_tokens=96)
        result = asyncio.run(get_task(key).run(rows[key], ctx, group_id="g", gen_uid="0"))
        assert result.status == "judge_failed" and not result.trained, key


def test_simulator_arena_user_can_end_and_sotopia_partner_can_open(tiny_tokenizer):
    rows = sample_rows()
    ctx = make_context(
        tiny_tokenizer, lambda p, k: "\nI got what I needed now\n</think>\n\nQuery: thanks! TERMINATE CONVERSATION"
    )
    result = asyncio.run(get_task("sim_arena_math").run(rows["sim_arena_math"], ctx, group_id="g", gen_uid="0"))
    assert result.metrics["sim_arena_math/turns"] == 1.0 and result.metrics["sim_arena_math/ended_by_user"] == 1.0
    row = json.loads(json.dumps(rows["sotopia"]))
    row["extra_info"]["eval_position"] = "agent2"
    ctx = make_context(tiny_tokenizer, lambda p, k: REPLY, max_new_tokens=96)
    result = asyncio.run(get_task("sotopia").run(row, ctx, group_id="g", gen_uid="0"))
    first_prompt = ctx.policy.engine.prompts[0]
    assert "Leo Park" in first_prompt.split("Maya Chen said")[0] and "Tell me more" in first_prompt


def test_served_partner_and_judge_are_a_change_of_settings(tiny_tokenizer):
    from test_tasks_judge_client import judge_server, settings

    from mimesis_pl.tasks.clients import OpenAIChatModel, OpenAIJudge

    action = '{"action_type": "speak", "argument": "Fine, I will pay on Friday."}'
    verdict = json.dumps({d: hi for d, (lo, hi, w) in DIMENSIONS.items()})

    async def run():
        async with judge_server([action, action, verdict]) as (url, seen):
            ctx = make_context(
                tiny_tokenizer, lambda p, k: REPLY, max_new_tokens=96, judge=OpenAIJudge(settings(url), "judge")
            )
            ctx.partner = OpenAIChatModel(settings(url), "partner")
            ctx.options = {"sotopia": {"max_turns": 4}}
            result = await get_task("sotopia").run(sample_rows()["sotopia"], ctx, group_id="g", gen_uid="0")
            await ctx.judge.aclose()
            await ctx.partner.aclose()
            return result, seen, ctx

    result, seen, ctx = asyncio.run(run())
    assert result.status == "ok" and result.reward == 1.0 and result.metrics["sotopia/goal"] == 10.0
    assert result.metrics["sotopia/eval_avg"] == pytest.approx(40 / 7)  # the raw mean (10+5+10+0+0+5+10)/7, S82
    assert len(seen) == 3 and "response_format" in seen[-1] and "response_format" not in seen[0]
    assert 'Leo Park said: "Fine, I will pay on Friday."' in ctx.policy.engine.prompts[1]
    assert not any("I weigh what this person" in json.dumps(body) for body in seen)  # reasoning never leaves
