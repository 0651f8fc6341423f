"""Coach answer handling, the ScriptedCoach on real scripted-user reasoning, and OpenAICoach over HTTP."""

from __future__ import annotations

import asyncio
import re

import pytest
from csd_fixtures import (
    CoachServer,
    expert_episodes,
    make_trajectory,
    secret_fields,
    turn,
)

from mimesis_pl.csd.coach import (
    OpenAICoach,
    chat_completions_url,
    finish_note,
    is_none_answer,
)
from mimesis_pl.csd.evidence import TurnEvidence, assistant_turns, turn_evidence
from mimesis_pl.csd.leaks import find_leaks, hidden_values, is_specific, tokens
from mimesis_pl.csd.prompts import CoachRequest, build_request
from mimesis_pl.csd.scripted_coach import TEMPLATES, ScriptedCoach, classify_reply
from mimesis_pl.envs import PrivilegedTurn

SENTENCE = "Ask which part of the request is still open before you commit. "


# ------------------------------------------------------------------------------ finish_note
def test_empty_and_none_answers_are_skipped():
    assert finish_note(None).status == "empty"
    assert finish_note("   ").status == "empty"
    assert finish_note("<think>the budget ran out before the note</think>").status == "empty"
    assert finish_note("<think>long thought, never closed").status == "empty"
    for text in ("NONE", "none.", "**NONE**", '"NONE"', "NONE - nothing actionable here", "<think>x</think>\nNONE"):
        assert finish_note(text).status == "none", text
    kept = finish_note("None of the questions so far asked about timing; ask about it.")
    assert kept.status == "ok" and kept.note.startswith("None of")
    assert not is_none_answer("Nonetheless, ask about timing.")


def test_a_think_block_and_quotes_are_removed_from_the_note():
    result = finish_note('<think>They care about timing.</think>\n"Ask about timing first."')
    assert result.status == "ok" and result.note == "Ask about timing first." and "timing" in result.raw


def test_long_notes_are_cut_at_a_sentence_end_or_skipped():
    result = finish_note(SENTENCE * 12)
    assert result.status == "ok" and result.truncated
    assert len(result.note) <= 600 and result.note.endswith("commit.")
    assert result.note.count("commit.") == 600 // len(SENTENCE)
    assert finish_note("word " * 200).status == "too_long"  # no sentence end within the cap
    short = finish_note(SENTENCE * 2, max_chars=80)
    assert short.note == SENTENCE.strip() and short.truncated
    assert finish_note(SENTENCE.strip()).truncated is False


def test_a_note_with_a_hidden_value_is_dropped_as_leaked():
    result = finish_note("It is probably a violin, so ask about strings.", avoid=["Violin", "Amazon River"])
    assert result.status == "leaked" and result.note is None and result.leaks == ("Violin",)
    assert finish_note("Ask how it is played.", avoid=["Violin"]).status == "ok"


# ------------------------------------------------------------------------------ ScriptedCoach
def test_template_vocabulary_can_never_match_a_hidden_value():
    words = {w for text in TEMPLATES for w in re.findall(r"[A-Za-z]+", text)}
    assert [w for w in words if is_specific(w)] == []


def test_scripted_coach_on_the_violin_example():
    reasoning = "The entity is a violin; 'is it played with a bow' is true."
    steps = [(turn("action", "Is it played with a bow?"), "Yes."), (turn("answer", "A violin"), None)]
    traj = make_trajectory(steps, [PrivilegedTurn("Yes.", reasoning), PrivilegedTurn()], opening="An instrument.")
    avoid = hidden_values(
        {"title": "Violin", "ground_truth": "Violin - a bowed string instrument."},
        public_text="\n".join(m["content"] for m in traj.messages[:4]),
    )
    assert "Violin" in avoid
    for style in ("prospective", "corrective"):
        request = build_request(traj.messages, TurnEvidence(1, reasoning, ""), style, avoid=avoid)
        result = asyncio.run(ScriptedCoach().note(request))
        assert result.status == "ok", result
        assert "violin" not in result.note.lower()
        assert result.note.startswith("The user said yes to what was asked")  # the quoted echo is no anchor


def test_scripted_coach_needs_private_reasoning():
    traj = make_trajectory([(turn("action", "Is it red?"), "No.")], [PrivilegedTurn("No.", None)])
    request = build_request(traj.messages, TurnEvidence(0, "", "No."), "prospective")
    assert asyncio.run(ScriptedCoach().note(request)).status == "none"


def test_reply_classes():
    replies = (
        "Yes.",
        "No.",
        "Maybe, partly.",
        "I can only answer yes-or-no questions.",
        "I'm not persuaded by that. I still believe it, and you have not answered my point",
        "About the budget: Low.",
        "",
    )
    assert [classify_reply(t) for t in replies] == ["yes", "no", "partly", "unclear", "open", "statement", ""]


@pytest.mark.parametrize("style", ["prospective", "corrective"])
def test_scripted_coach_notes_on_expert_episodes_never_carry_hidden_values(style):
    """Every user-facing gym, real scripted-user reasoning: a note for each evidenced turn, no hidden
    value the agent has not seen, no private-only word at all, within the length cap."""
    coach = ScriptedCoach()
    made = {}
    for played in expert_episodes():
        traj, hidden = played.trajectory, secret_fields(played.task)
        positions = assistant_turns(traj.messages)
        for evidence in turn_evidence(traj):
            if not evidence.evidenced:
                continue
            before = traj.messages[: positions[evidence.turn]]
            public = "\n".join(str(m["content"]) for m in before)
            avoid = hidden_values(hidden, public_text=public)
            request = build_request(traj.messages, evidence, style, avoid=avoid)
            result = asyncio.run(coach.note(request))
            assert result.status == "ok", (played.task, evidence.turn, result)
            assert len(result.note) <= 600
            assert find_leaks(result.note, avoid) == [], (played.task, result.note)
            # Stronger: no word of the note comes from the private reasoning alone.
            private = set(tokens(evidence.reasoning_before)) - set(tokens(public))
            assert not {t for t in tokens(result.note) if t in private and is_specific(t)}, result.note
            made[played.task.env_name] = made.get(played.task.env_name, 0) + 1
    assert set(made) == {"TelepathyGym", "TurtleGym", "IntentionGym", "PersuadeGym"}, made


# ------------------------------------------------------------------------------ OpenAICoach
def test_chat_completions_url_normalisation():
    for suffix in ("", "/", "/v1", "/v1/"):
        base = "http://127.0.0.1:8711" + suffix
        assert chat_completions_url(base) == "http://127.0.0.1:8711/v1/chat/completions"
    assert chat_completions_url("https://host/prefix/v1") == "https://host/prefix/v1/chat/completions"
    with pytest.raises(ValueError, match="coach base_url"):
        chat_completions_url("127.0.0.1:8711")


def _request():
    traj = make_trajectory(
        [(turn("action", "Is it fuzzy?"), "Yes."), (turn("answer", "Kiwi"), None)],
        [PrivilegedTurn("Yes.", "It is a kiwi, a fuzzy fruit."), PrivilegedTurn()],
    )
    return build_request(
        traj.messages, TurnEvidence(1, "It is a kiwi, a fuzzy fruit.", ""), "prospective", avoid=["kiwi"], tag="ep:1"
    )


async def _ask(script, request=None, **kwargs):
    server = CoachServer(script)
    url = await server.start()
    coach = OpenAICoach(url, "coach-model", retry_backoff_s=0.01, **kwargs)
    try:
        return await coach.note(request or _request()), server
    finally:
        await coach.aclose()
        await server.stop()


def test_openai_coach_sends_the_prompt_and_returns_the_note(monkeypatch):
    monkeypatch.setenv("COACH_KEY_FOR_TEST", "sekret")
    result, server = asyncio.run(
        _ask([{"content": "<think>mm</think>Ask about the colour inside."}], api_key_env="COACH_KEY_FOR_TEST", seed=3)
    )
    assert result.status == "ok" and result.note == "Ask about the colour inside."
    (call,) = server.requests
    body = call["body"]
    assert call["path"] == "/v1/chat/completions" and call["auth"] == "Bearer sekret"
    assert body["model"] == "coach-model" and body["temperature"] == 0.7 and body["max_tokens"] == 300
    assert body["seed"] == 3
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "It is a kiwi, a fuzzy fruit." in body["messages"][1]["content"]


def test_openai_coach_answers_are_handled_like_any_coach():
    assert asyncio.run(_ask([{"content": "NONE"}]))[0].status == "none"
    assert asyncio.run(_ask([{"content": None}]))[0].status == "empty"
    assert asyncio.run(_ask([{"content": "word " * 300}]))[0].status == "too_long"
    leaked, _ = asyncio.run(_ask([{"content": "It is a Kiwi."}]))
    assert leaked.status == "leaked" and leaked.leaks == ("kiwi",)


def test_openai_coach_retries_server_errors_then_fails_without_raising():
    result, server = asyncio.run(_ask([{"status": 503}, {"content": "Ask about texture."}], max_retries=1))
    assert result.status == "ok" and len(server.requests) == 2
    result, server = asyncio.run(_ask([{"status": 500}], max_retries=2))
    assert result.status == "failed" and len(server.requests) == 3 and "HTTP 500" in result.error
    result, server = asyncio.run(_ask([{"status": 400}], max_retries=2))
    assert result.status == "failed" and len(server.requests) == 1  # a client error is not retried
    result, _ = asyncio.run(_ask([{"raw": "<html>gateway</html>"}]))
    assert result.status == "failed" and "non-JSON" in result.error
    result, _ = asyncio.run(_ask([{"delay": 1.0, "content": "late"}], timeout_s=0.2, max_retries=0))
    assert result.status == "failed"


def test_openai_coach_unreachable_is_a_failed_note():
    async def go():
        server = CoachServer([{"content": "x"}])
        url = await server.start()
        await server.stop()  # nothing listens there any more
        coach = OpenAICoach(url, "m", max_retries=1, retry_backoff_s=0.01, timeout_s=2)
        result = await coach.note(_request())
        await coach.aclose()
        return result

    result = asyncio.run(go())
    assert result.status == "failed" and "attempts" in result.error


def test_openai_coach_refuses_a_missing_key_variable(monkeypatch):
    monkeypatch.delenv("NO_SUCH_COACH_KEY", raising=False)
    with pytest.raises(ValueError, match="NO_SUCH_COACH_KEY"):
        OpenAICoach("http://127.0.0.1:1/v1", "m", api_key_env="NO_SUCH_COACH_KEY")


def test_coach_request_is_a_plain_value():
    request = CoachRequest(
        style="corrective", turn=2, history="<H>", reasoning="<R>", next_reply="<N>", agent_turn="<A>"
    )
    content = request.messages()[1]["content"]
    positions = [content.index(x) for x in ("<H>", "<A>", "<R>", "<N>")]
    assert positions == sorted(positions)
    with pytest.raises(ValueError, match="style"):
        CoachRequest(style="hindsight", turn=0, history="")
