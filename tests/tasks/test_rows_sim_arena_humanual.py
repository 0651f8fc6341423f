"""SimulatorArena (math, doc) and Humanual on rows shaped as the reference writes them."""

from __future__ import annotations

import asyncio
import json

import pytest
from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.data.simulator_rl import read_task_rows
from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.base import RowError
from mimesis_pl.tasks.humanual import extract_response, flatten_context


def _raw(source: str) -> dict:
    return json.loads(reference_row(source)["extra_info"]["raw"])


def test_sim_arena_merges_raw_over_extra_info_and_raw_wins():
    row = reference_row("sim_arena_math")
    row["extra_info"]["problem"] = "outside raw"
    fields = _raw("sim_arena_math")
    del fields["user_profile_text"]
    row["extra_info"]["raw"] = json.dumps(fields)
    row["extra_info"]["user_profile_text"] = "only outside raw"
    task = get_task("sim_arena_math").parse_row(row)
    assert task.problem == "Simplify 12/18." and task.profile == "only outside raw"
    assert task.queries == "how do i simplify 12/18\nso its 2/3?"  # a list, newline-joined
    assert task.conversation == "Student: how do i simplify 12/18\nAI Tutor: Find the greatest common divisor."
    assert task.interaction_features == (("asks for the next step", "Does the student ask?"),)


def test_sim_arena_reads_the_top_level_row_when_extra_info_is_not_a_mapping():
    fields = _raw("sim_arena_math")
    row = {"data_source": "sim_arena_math", "prompt": [], "index": 3, **fields}
    assert get_task("sim_arena_math").parse_row(row).problem == "Simplify 12/18."


def test_sim_arena_doc_is_judged_against_the_rows_real_fields(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: "Message: it is for a cafe job", enable_think=False)
    ctx.options = {"sim_arena_doc": {"max_user_turns": 1}}
    result = asyncio.run(get_task("sim_arena_doc").run(reference_row("sim_arena_doc"), ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    judged = ctx.judge.requests[-1][-1]["content"]
    for expected in ("make it shorter", "AI Writing Assistant: Sure.", "short, warm", "lowercase: Lowercase?"):
        assert expected in judged, expected
    prompt = ctx.policy.engine.prompts[0]
    assert "cover letter" in prompt and "2 years at a cafe" in prompt and "Apply for a barista job." in prompt


@pytest.mark.parametrize(
    "source, field",
    [("sim_arena_math", "problem"), ("sim_arena_doc", "intent"), ("sim_arena_doc", "human_user_queries")],
)
def test_sim_arena_required_fields_are_row_errors_naming_file_row_and_field(tmp_path, source, field):
    fields = _raw(source)
    del fields[field]
    row = reference_row(source)
    row["extra_info"]["raw"] = json.dumps(fields)
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(RowError, match=rf"rows\.jsonl:row0: extra_info needs field '{field}'"):
        read_task_rows([str(path)])


def test_sim_arena_incomplete_features_are_skipped():
    fields = _raw("sim_arena_doc")
    fields["target_interaction_style_features"] = [{"Feature Name": "x"}, {"Feature Question": "y?"}, "z"]
    row = reference_row("sim_arena_doc")
    row["extra_info"]["raw"] = json.dumps(fields)
    assert get_task("sim_arena_doc").parse_row(row).interaction_features == ()


def test_humanual_reads_prompt_as_text_or_a_json_message_list_and_completion():
    humanual = get_task("humanual-chat")
    task = humanual.parse_row(reference_row("humanual-chat"))
    assert task.context == "A chat post: the bus is late again."
    assert task.reference == "Third time this week. I'm buying a bike."
    messages = json.dumps([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    assert flatten_context(messages) == "a\nb"
    assert flatten_context('{"k": 1}') == '{"k": 1}' and flatten_context("plain") == "plain"
    assert flatten_context({"k": 1}) == "{'k': 1}"


def test_humanual_reads_the_row_itself_without_extra_info():
    row = reference_row("humanual-book")
    fields = row.pop("extra_info")
    row.update(fields)
    assert get_task("humanual-book").parse_row(row).reference == "Third time this week. I'm buying a bike."


def test_humanual_without_completion_is_a_row_error(tmp_path):
    row = reference_row("humanual-news")
    del row["extra_info"]["completion"]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(RowError, match=r"rows\.jsonl:row0: extra_info needs field 'completion'"):
        read_task_rows([str(path)])


def test_humanual_takes_the_first_response_tag_in_any_case():
    assert extract_response("<RESPONSE>one</Response> <response>two</response>") == ("one", True)
    assert extract_response("  no tags  ") == ("no tags", False)


def test_humanual_runs_the_reference_row(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: "<response>late again, ugh</response>", enable_think=False)
    result = asyncio.run(
        get_task("humanual-email").run(reference_row("humanual-email"), ctx, group_id="g", gen_uid="0")
    )
    assert result.status == "ok", result.error
    assert "A commuter who writes short, dry replies." in ctx.policy.engine.prompts[0]
