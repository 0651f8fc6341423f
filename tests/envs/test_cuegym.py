"""CueGym (docs/decisions.md A94-A97): the scripted user's public cue and private reasoning, the rewards, the coach's
aspect note and the leak check, the experts, and the task splits."""

from __future__ import annotations

import asyncio

import pytest

from mimesis_pl.csd.coach import finish_note
from mimesis_pl.csd.leaks import hidden_values
from mimesis_pl.csd.scripted_coach import ASPECT_ADVICE, open_aspect_advice
from mimesis_pl.data.cuegym import make_tasks, probe_contexts
from mimesis_pl.data.expert_traces import record_expert_traces
from mimesis_pl.envs import Action, GymTask, TaskDataError
from mimesis_pl.envs.gyms.cue import CUES, CueGym, answer_reward, names_every_value, read_musts, scripted_reply
from mimesis_pl.envs.user_protocol import UserReply

MUSTS = [
    {"aspect": "material", "value": "nylon", "cue": "It will get wet a lot."},
    {"aspect": "colour", "value": "black", "cue": "It has to go with my other things."},
]
PERSONA = {"gym": "CueGym", "item": "jacket", "musts": MUSTS, "turns": 4}
OPEN = "What will you use it for?"


def reply(*utterances: str, **persona) -> UserReply:
    return scripted_reply({**PERSONA, **persona}, list(utterances))


def test_the_first_reply_only_cues_the_first_must_and_the_reasoning_names_it():
    r = reply(OPEN)
    assert r.public == "It will get wet a lot."
    assert "Open: material (hinted, not asked)." in r.reasoning and "Turns left for them: 3." in r.reasoning
    assert "colour black (not hinted yet)" in r.reasoning
    assert "material" not in r.public and "nylon" not in r.public


def test_asking_another_aspect_repeats_the_open_cue():
    r = reply(OPEN, "What about the size?")
    assert r.public == "Anything is fine for the size. As I said, it will get wet a lot."
    assert "which I do not care about" in r.reasoning and "Open: material" in r.reasoning


def test_asking_the_must_reveals_its_value_and_cues_the_next():
    r = reply(OPEN, "What about the material?")
    assert r.public == "It has to be nylon. Also, it has to go with my other things."
    assert "Open: colour (hinted, not asked)." in r.reasoning and "Turns left for them: 2." in r.reasoning
    done = reply(OPEN, "What about the material?", "Which color do you like?")
    assert done.public == "It has to be black. That is all I need."
    assert "Open: none" in done.reasoning


def test_again_none_and_out_of_order():
    assert reply(OPEN, "What about the size?", "And the size?").public.startswith("You asked that already. As I said")
    none = reply(OPEN, "Do you like it?").public
    assert none == "Please ask about one aspect: colour, size, material or price. As I said, it will get wet a lot."
    # a must-have asked before its cue is revealed; the open cue is still the first one
    early = reply(OPEN, "What about the colour?").public
    assert early == "It has to be black. As I said, it will get wet a lot."
    # "I" keeps its capital after "Also, "
    trails = [{**MUSTS[0]}, {**MUSTS[1], "cue": "I am a student."}]
    assert reply(OPEN, "The material?", musts=trails).public.endswith("Also, I am a student.")


def test_explicit_cues_name_the_aspect():
    assert reply(OPEN, cue_mode="explicit").public == "It will get wet a lot, so the material matters."


def test_a_correct_answer_names_every_value():
    musts = read_musts({"musts": MUSTS}, where="t")
    assert names_every_value("A black nylon jacket.", musts)
    assert not names_every_value("A nylon jacket.", musts)
    price = read_musts({"musts": [{"aspect": "price", "value": "under 40", "cue": "I am a student."}]}, where="t")
    assert names_every_value("One under 40.", price) and not names_every_value("One under 60.", price)
    assert (answer_reward(True, "terminal"), answer_reward(True, "per_reveal"), answer_reward(False, "terminal")) == (
        1.0,
        0.5,
        0.0,
    )


class _RuleUser:
    async def reply(self, messages, *, episode_id=""):
        import json
        import re

        persona = json.loads(re.search(r"<persona>(.*)</persona>", messages[0]["content"], re.S).group(1))
        return scripted_reply(persona, [m["content"] for m in messages if m["role"] == "user"])


def _task(**hidden) -> GymTask:
    return GymTask(
        "CueGym",
        "interact_cue",
        ({"role": "user", "content": "hi"},),
        {"id": "t", "item": "jacket", "musts": MUSTS, "turns": 4, **hidden},
    )


def _play(gym: CueGym, moves):
    async def run():
        await gym.reset(_task())
        return [await gym.step(Action(c, t)) for c, t in moves]

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("rule", "expected"), [("terminal", [0.0, 0.0, 0.0, 1.0]), ("per_reveal", [0.0, 0.25, 0.25, 0.5])]
)
def test_a_played_episode_pays_by_its_rule(rule, expected):
    moves = [("action", OPEN), ("action", "The material?"), ("action", "The colour?"), ("answer", "Black nylon.")]
    results = _play(CueGym(user=_RuleUser(), reward_rule=rule), moves)
    assert [r.reward for r in results] == expected
    assert results[-1].done and not any(r.done for r in results[:-1])
    assert all("Open:" not in r.observation and "nylon" not in r.observation.split(".")[-1] for r in results[:1])


@pytest.mark.parametrize(
    ("rule", "answer", "expected"),
    [("values", "Black nylon.", 1.0), ("values", "Nylon.", 0.0), ("revealed", "I recommend one.", 1.0)],
)
def test_the_answer_rule_decides_what_a_correct_answer_is(rule, answer, expected):
    moves = [("action", OPEN), ("action", "The material?"), ("action", "The colour?"), ("answer", answer)]
    assert _play(CueGym(user=_RuleUser(), answer_rule=rule), moves)[-1].reward == expected
    missed = [("action", OPEN), ("action", "The size?"), ("action", "The colour?"), ("answer", "Black nylon.")]
    assert _play(CueGym(user=_RuleUser(), answer_rule="revealed"), missed)[-1].reward == 0.0


def test_a_wrong_question_costs_the_sparse_reward():
    moves = [("action", OPEN), ("action", "The size?"), ("action", "The material?"), ("answer", "Nylon.")]
    assert sum(r.reward for r in _play(CueGym(user=_RuleUser()), moves)) == 0.0


def test_bad_rows_name_the_field():
    with pytest.raises(TaskDataError, match=r"musts\[0\]\.aspect 'weight'"):
        read_musts({"musts": [{"aspect": "weight", "value": "x", "cue": "y"}]}, where="f.parquet row 3")
    with pytest.raises(TaskDataError, match="f.parquet row 3: field 'musts'"):
        read_musts({}, where="f.parquet row 3")
    with pytest.raises(TaskDataError, match="distinct aspects"):
        read_musts({"musts": [MUSTS[0], MUSTS[0]]}, where="f")
    with pytest.raises(ValueError, match="reward_rule"):
        CueGym(reward_rule="dense")
    with pytest.raises(ValueError, match="answer_rule"):
        CueGym(answer_rule="aspects")


# -- the coach's aspect note and the leak check ----------------------------------------------------------------
def test_the_aspect_note_follows_the_open_line_and_the_turns_left():
    assert open_aspect_advice(reply(OPEN).reasoning) == ASPECT_ADVICE["ask"].format(aspect="material")
    last = reply(OPEN, "The size?", "The price?").reasoning  # one turn left, material still open
    assert "Turns left for them: 1." in last and open_aspect_advice(last) == ASPECT_ADVICE["last"]
    told = reply(OPEN, "The material?", "The colour?").reasoning
    assert open_aspect_advice(told) == ASPECT_ADVICE["all"]
    assert open_aspect_advice("My position: x.") is None


def test_the_leak_check_keeps_the_aspect_and_drops_the_value():
    row = make_tasks(n_train=1, n_test=1, n_sft=0, seed=3)["train"][0]
    task = GymTask.from_row(row, source="row")
    musts = read_musts(task.hidden, where="row")
    public = "\n".join(m["content"] for m in task.public) + "\n" + musts[0].cue
    avoid = hidden_values(task.hidden, public_text=public)
    assert {m.value for m in musts} <= set(avoid) and not {m.aspect for m in musts} & set(avoid)
    assert musts[1].cue in avoid  # the second cue is not public yet
    kept = finish_note(ASPECT_ADVICE["ask"].format(aspect=musts[0].aspect), avoid=avoid)
    assert kept.status == "ok"
    value = musts[0].value.split()[-1]
    leaked = finish_note(
        f"The user needs a {value} {task.hidden['item']}; ask about the {musts[0].aspect}.", avoid=avoid
    )
    assert leaked.status == "leaked" and value in " ".join(leaked.leaks)


# -- experts and splits ----------------------------------------------------------------------------------------
def test_the_coached_expert_always_succeeds_and_the_uncoached_one_guesses():
    splits = make_tasks(n_train=120, n_test=0, n_sft=0, seed=1)
    tasks = [GymTask.from_row(r, source=f"row {i}") for i, r in enumerate(splits["train"])]
    records, counts = asyncio.run(record_expert_traces(tasks, max_turns=4, min_score=0.0))
    assert counts["recorded/CueGym"] == 120 and all(r["score"] == 1.0 for r in records)
    records, counts = asyncio.run(record_expert_traces(tasks, max_turns=4, min_score=0.0, coached_share=0.5))
    coached = [r for r in records if "coach_notes" in r]
    guessed = [r["score"] for r in records if "coach_notes" not in r]
    assert all(r["score"] == 1.0 for r in coached) and 30 < len(coached) < 90
    # two uniform draws among the aspects not asked yet hit both must-haves with probability 1/6
    assert 0.0 < sum(guessed) / len(guessed) < 0.4


def test_splits_keep_test_combinations_unseen_and_sft_cues_uninformative():
    splits = make_tasks(n_train=378, n_test=42, n_sft=400, seed=0)
    combos = {
        split: {
            (r["reward_model"]["item"], tuple((m["aspect"], m["value"]) for m in r["reward_model"]["musts"]))
            for r in rows
        }
        for split, rows in splits.items()
    }
    assert len(splits["test"]) == 42 and not combos["test"] & (combos["train"] | combos["sft"])
    mapped = [m["cue"] in CUES[m["aspect"]] for r in splits["train"] for m in r["reward_model"]["musts"]]
    assert all(mapped)
    random_cues = [m["cue"] in CUES[m["aspect"]] for r in splits["sft"] for m in r["reward_model"]["musts"]]
    assert 0.1 < sum(random_cues) / len(random_cues) < 0.4  # 2 of 8 phrasings match by chance


def test_probe_contexts_end_where_the_decision_is_made():
    rows = make_tasks(n_train=0, n_test=3, n_sft=0, seed=0)["test"]
    tasks = [GymTask.from_row(r, source=f"row {i}") for i, r in enumerate(rows)]
    probes = probe_contexts(tasks)
    assert [len(v) for v in probes.values()] == [6, 6, 6]
    for plain, coached in zip(probes["test"], probes["test_coached"], strict=True):
        assert plain["messages"][-1]["role"] == "tool" and coached["messages"][:-1] == plain["messages"]
        assert (
            plain["correct"] == coached["correct"]
            and f"about the {plain['correct']}" in coached["messages"][-1]["content"]
        )
        assert "Open:" not in str(plain["messages"])
