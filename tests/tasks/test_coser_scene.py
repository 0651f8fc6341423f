"""CoSER's next-speaker reading and what its judge sees, as the reference does it (docs/decisions.md S48)."""

from __future__ import annotations

import asyncio
import json

from reference_rows import COSER_CIRCUMSTANCE, reference_row
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.coser import (
    involved_profiles,
    next_speaker,
    parse_next_speaker,
    reference_scene,
    speaker_line,
)


def test_parse_next_speaker_takes_the_last_next_speaker_line_else_before_the_colon_else_all():
    assert parse_next_speaker("Next Speaker: Ida") == "Ida"
    assert parse_next_speaker("**Next Speaker:** Ida.") == "Ida"  # stars and trailing punctuation removed
    assert parse_next_speaker("I weigh it.\n### Next Speaker\nIda") == "Ida"
    assert parse_next_speaker("Next speaker is Nora!") == "Nora"
    assert parse_next_speaker("next speaker: Nora\nNext Speaker: Ida") == "Ida"  # the last one
    assert parse_next_speaker("Next Speaker: <END CHAT>") == "<END CHAT>"
    assert parse_next_speaker("Ida: she answers") == "Ida"
    assert parse_next_speaker("  Environment ") == "Environment"
    assert parse_next_speaker("The next speaker should be Ida.") == "should be Ida"


def test_next_speaker_must_be_exactly_another_listed_speaker():
    speakers = ["Nora", "Environment", "Ida"]
    assert next_speaker("Next Speaker: Ida", speakers, "Nora", 1) == "Ida"
    assert next_speaker("Environment", speakers, "Ida", 1) == "Environment"
    assert next_speaker("Ida should speak", speakers, "Nora", 1) == "Environment"  # not a name: next in order
    assert next_speaker("The next speaker should be Ida.", speakers, "Ida", 1) == "Nora"
    assert next_speaker("Next Speaker: Nora", speakers, "Nora", 1) == "Environment"  # not the current speaker
    assert next_speaker("Next Speaker: <END CHAT>", speakers, "Ida", 4) == "Nora"  # too early to end
    assert next_speaker("Next Speaker: <END CHAT>", speakers, "Ida", 5) is None
    assert next_speaker("<END CHAT> Ida", speakers, "Nora", 7) == "Environment"  # neither a name nor the end mark


def test_the_reference_scene_loses_inner_thoughts_except_the_environments():
    scene = (("Ida", "[She folds the letter.] Then we drown with it."), ("Environment", "[Thunder] The lamp dies."))
    assert reference_scene(scene) == "Ida: Then we drown with it.\nEnvironment: [Thunder] The lamp dies."


def test_the_judge_sees_the_scene_without_thoughts_and_the_replay_note(tiny_tokenizer):
    row = reference_row("coser")
    row["extra_info"]["continue_from"] = 1
    ctx = make_context(tiny_tokenizer, lambda p, k: "(sighs) We hold on.", enable_think=False)
    ctx.options = {"coser": {"max_rounds": 3}}
    result = asyncio.run(get_task("coser").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    judged = ctx.judge.requests[-1][-1]["content"]
    assert "Ida: Then we drown with it." in judged and "[She folds the letter.]" not in judged
    assert "The first 1 messages of the role-play repeat the original" in judged


def test_a_line_already_labelled_with_the_speaker_is_not_labelled_twice():
    assert speaker_line("Nora", "We hold on.") == "Nora: We hold on."
    assert speaker_line("Nora", "Nora: We hold on.") == "Nora: We hold on."
    assert speaker_line("Nora", "(sighs)\n Nora\uff1a We hold on.") == "(sighs)\n Nora\uff1a We hold on."
    assert speaker_line("Nora", "Ida: you hold on.") == "Nora: Ida: you hold on."


def test_the_other_character_sees_a_self_labelled_reply_once(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: "Nora: We hold on.", enable_think=False)
    ctx.partner.reply = "Next Speaker: Ida"
    ctx.options = {"coser": {"max_rounds": 2}}
    result = asyncio.run(get_task("coser").run(reference_row("coser"), ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    ida = tiny_tokenizer.decode(result.extra_trajectories[0].input_ids)
    assert "Nora: We hold on." in ida and "Nora: Nora:" not in ida


def _row_with_a_silent_character():
    circumstance = json.loads(json.dumps(COSER_CIRCUMSTANCE))
    circumstance["character_profiles"]["Tom"] = "The banker, never on stage."
    row = reference_row("coser")
    row["extra_info"]["circumstance"] = circumstance
    return row


def test_involved_profiles_are_the_speaking_characters_description_then_profile():
    task = get_task("coser").parse_row(_row_with_a_silent_character())
    assert involved_profiles(task) == {
        "Nora": "The elder sister, who runs the inn.\n\nPractical and stubborn.",
        "Ida": "Dreamy and restless.",
    }


def test_the_judge_sees_book_major_characters_and_profiles_and_prompts_only_speakers(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: "(sighs) We hold on.", enable_think=False)
    ctx.options = {"coser": {"max_rounds": 2}}
    result = asyncio.run(get_task("coser").run(_row_with_a_silent_character(), ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    judged = ctx.judge.requests[-1][-1]["content"]
    for part in ("Book: The Inn at Gull Point", "Major characters: Nora, Ida", "- Ida: Dreamy and restless."):
        assert part in judged, part
    assert "- Nora: The elder sister, who runs the inn.\n\nPractical and stubborn." in judged
    assert "The banker" not in judged
    assert "The banker" not in tiny_tokenizer.decode(result.trajectory.input_ids)  # Nora's prompt
