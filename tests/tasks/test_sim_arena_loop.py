"""SimulatorArena's loop as the spec lists it (docs/decisions.md S46): which label gives the message, the task header
around the first message the assistant receives, the closing turn neither sent nor judged, and a feature term with
no target features scored 0."""

from __future__ import annotations

import asyncio
import json

import pytest
from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.sim_arena import DocVerdict, MathVerdict, arena_score, empty_terms, extract_message


def _run(tokenizer, source: str, respond, max_user_turns=3):
    ctx = make_context(tokenizer, respond, enable_think=False, max_new_tokens=64)
    ctx.options = {source: {"max_user_turns": max_user_turns}}
    result = asyncio.run(get_task(source).run(reference_row(source), ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    return result, ctx


def test_the_message_is_after_the_first_response_else_query_else_the_whole_turn():
    assert extract_message("Query: what is a gcd?\nResponse: so it is 6?", "math") == "so it is 6?"
    assert extract_message("Response: is it 2/3? Response: I think so", "math") == "is it 2/3? Response: I think so"
    assert extract_message("thinking aloud. Query: what is a gcd?", "math") == "what is a gcd?"
    assert extract_message("no label here", "math") == "no label here"
    assert extract_message("Message: first Message: second", "doc") == "first Message: second"
    assert extract_message("Query: not a doc label", "doc") == "Query: not a doc label"


def test_a_feature_term_without_target_features_counts_zero():
    assert arena_score(MathVerdict(writing=5, interaction=5, fulfilment=1), ("fulfilment",)) == pytest.approx(2 / 3)
    doc = DocVerdict(document=10, writing=5, interaction=5, writing_features=1, interaction_features=1)
    assert arena_score(doc, ("interaction_features",)) == pytest.approx(4 / 5)
    assert arena_score(doc) == 1.0


def test_empty_terms_follow_the_rows_feature_lists():
    math = get_task("sim_arena_math").parse_row(reference_row("sim_arena_math"))
    doc = get_task("sim_arena_doc").parse_row(reference_row("sim_arena_doc"))
    assert empty_terms(math) == ()  # one interaction feature
    assert empty_terms(doc) == ("interaction_features",)  # writing features only


def test_doc_without_interaction_features_scores_that_term_zero(tiny_tokenizer):
    # the scripted judge gives every term the top of its scale here (each simulated message has more than 3
    # words; S60): document 10/10, writing 5/5, interaction 5/5, writing features 1, interaction features -> 0
    # (no targets)
    result, _ = _run(tiny_tokenizer, "sim_arena_doc", lambda p, k: "Message: it is for a cafe job", max_user_turns=1)
    assert result.score == pytest.approx((1 + 1 + 1 + 1 + 0) / 5)


def test_the_assistants_first_message_wraps_the_query_in_the_task_header(tiny_tokenizer):
    _, ctx = _run(tiny_tokenizer, "sim_arena_doc", lambda p, k: "Message: it is for a cafe job", max_user_turns=2)
    system, first = ctx.partner.requests[0][0]["content"], ctx.partner.requests[0][1]["content"]
    assert "writing assistant" in system and "100 and 500 words" in system
    for part in ("Document type: cover letter", "What it is for: Apply for a barista job.", "2 years at a cafe"):
        assert part in first, part
    assert first.endswith("\n\nit is for a cafe job")
    assert ctx.partner.requests[1][3]["content"] == "it is for a cafe job"  # later messages go as they are
    _, ctx = _run(tiny_tokenizer, "sim_arena_math", lambda p, k: "Query: how do i start", max_user_turns=1)
    system, first = ctx.partner.requests[0][0]["content"], ctx.partner.requests[0][1]["content"]
    assert "tutor" in system
    assert first == "The problem I need help with:\nSimplify 12/18.\n\nhow do i start"


def test_the_closing_turn_is_neither_sent_nor_judged(tiny_tokenizer):
    replies = ["Query: what is a gcd?", "Response: got it, thanks. terminate conversation"]
    result, ctx = _run(tiny_tokenizer, "sim_arena_math", lambda p, k: replies[min(k, 1)], max_user_turns=4)
    assert len(ctx.partner.requests) == 1 and result.metrics["sim_arena_math/ended_by_user"] == 1.0
    assert result.metrics["sim_arena_math/turns"] == 2.0  # both turns are the policy's, and trained
    judged = ctx.judge.requests[-1][-1]["content"]
    assert "what is a gcd?" in judged and "got it" not in judged
    assert "got it" not in json.dumps(result.transcript[-1])
