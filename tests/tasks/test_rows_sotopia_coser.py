"""Sotopia and CoSER on rows shaped as the reference writes them: fields, variants, defaults, and the RowError of
a missing or malformed field (naming file, row and field)."""

from __future__ import annotations

import asyncio
import json

import pytest
from reference_rows import COSER_CIRCUMSTANCE, reference_row
from task_fixtures import make_context

from mimesis_pl.data.simulator_rl import read_task_rows
from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.base import RowError

REPLY = '{"action_type": "speak", "argument": "Can we talk about the rent?"}'


def _file(tmp_path, rows):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_sotopia_reads_agent1_agent2_fields_and_seats_the_policy_as_agent1_by_default(tiny_tokenizer):
    row = reference_row("sotopia")
    task = get_task("sotopia").parse_row(row)
    assert task.names == ("Maya Chen", "Leo Park") and task.me == 0
    assert task.scenario == "Maya Chen and Leo Park share a flat; the rent is due and Leo Park is short."
    assert task.backgrounds == ("A nurse who values fairness.", "A musician, often broke.")
    assert task.relationship == "flatmates"
    ctx = make_context(tiny_tokenizer, lambda p, k: REPLY, enable_think=False, max_new_tokens=64)
    ctx.options = {"sotopia": {"max_turns": 3}}
    result = asyncio.run(get_task("sotopia").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    first = ctx.policy.engine.prompts[0]
    # the policy's prompt holds its own background, not the other's; the policy speaks first (agent 1)
    assert "A nurse who values fairness." in first and "A musician, often broke." not in first
    assert "About Leo Park: Unknown" in first and "flatmates" in first
    assert "said" not in first  # nobody spoke before the policy's first turn
    assert ctx.partner.requests[0][0]["content"].count("A musician, often broke.") == 1


def test_sotopia_missing_name_and_bad_agent_names_json_are_row_errors_naming_file_row_and_field(tmp_path):
    missing = reference_row("sotopia")
    del missing["extra_info"]["agent2_name"]
    with pytest.raises(RowError, match=r"rows\.jsonl:row0: extra_info needs field 'agent2_name'"):
        read_task_rows([_file(tmp_path, [missing])])
    bad = reference_row("sotopia")
    for key in ("agent1_name", "agent2_name"):
        del bad["extra_info"][key]
    bad["extra_info"]["agent_names"] = '["Maya Chen", "Leo'  # the package's earlier alias, as broken JSON
    with pytest.raises(RowError, match=r"rows\.jsonl:row0: field extra_info\.agent_names is not valid JSON"):
        read_task_rows([_file(tmp_path, [bad])])
    alias = reference_row("sotopia")
    for key in ("agent1_name", "agent2_name"):
        del alias["extra_info"][key]
    alias["extra_info"]["agent_names"] = json.dumps(["Maya Chen", "Leo Park"])
    assert get_task("sotopia").parse_row(alias).names == ("Maya Chen", "Leo Park")


def test_sotopia_eval_position_agent2_lets_the_partner_open():
    row = reference_row("sotopia")
    row["extra_info"]["eval_position"] = "agent2"
    assert get_task("sotopia").parse_row(row).me == 1


def test_coser_reads_the_circumstance_as_dict_or_json_string_the_same():
    as_string = reference_row("coser")
    as_dict = reference_row("coser")
    as_dict["extra_info"]["circumstance"] = json.loads(as_string["extra_info"]["circumstance"])
    coser = get_task("coser")
    a, b = coser.parse_row(as_string), coser.parse_row(as_dict)
    assert a == b
    assert a.speakers == ("Nora", "Ida", "Environment")  # Environment appended when missing
    # motivation / thought from the circumstance's top-level key_characters, descriptions from plot.key_characters
    assert a.motivations == {"Nora": "Save the inn at any cost.", "Ida": "Sell before winter and leave."}
    assert a.descriptions == {"Nora": "The elder sister, who runs the inn.", "Ida": ""}
    assert a.book == "The Inn at Gull Point" and a.plot == "Two sisters inherit a failing inn."
    assert a.dialogues[1] == ("Ida", "[She folds the letter.] Then we drown with it.")
    assert a.wo_thought is False and a.continue_from == 0


def test_coser_plays_the_reference_row_and_judges_against_its_dialogues(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: "(sighs) We hold on.", enable_think=False)
    ctx.options = {"coser": {"max_rounds": 3}}
    result = asyncio.run(get_task("coser").run(reference_row("coser"), ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    nora = tiny_tokenizer.decode(result.trajectory.input_ids)
    assert "The Inn at Gull Point" in nora and "Save the inn at any cost." in nora and "Dreamy and restless." in nora
    judged = ctx.judge.requests[-1][-1]["content"]
    assert "Nora: We can't sell." in judged and "Then we drown with it." in judged


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda c: c.pop("book"), "'book'"),
        (lambda c: c["plot"].pop("summary"), "plot needs field 'summary'"),
        (lambda c: c.pop("key_characters"), "'key_characters'"),
        (lambda c: c.pop("character_profiles"), "'character_profiles'"),
        (lambda c: c["key_characters"][0].pop("name"), r"key_characters\[0\]\.name"),
    ],
)
def test_coser_missing_circumstance_fields_are_row_errors(tmp_path, edit, field):
    circumstance = json.loads(json.dumps(COSER_CIRCUMSTANCE))
    edit(circumstance)
    row = reference_row("coser")
    row["extra_info"]["circumstance"] = json.dumps(circumstance)
    with pytest.raises(RowError, match=rf"rows\.jsonl:row0: .*circumstance.*{field}"):
        read_task_rows([_file(tmp_path, [row])])


def test_coser_circumstance_bad_json_is_a_row_error(tmp_path):
    row = reference_row("coser")
    row["extra_info"]["circumstance"] = '{"book": '
    with pytest.raises(RowError, match=r"row0: field extra_info\.circumstance is not valid JSON"):
        read_task_rows([_file(tmp_path, [row])])
