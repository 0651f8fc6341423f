"""An OpenAI user simulator's turn loses untagged prose reasoning when asked."""

from mimesis_pl.users.openai_user import _reply_from


def payload(content: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": content}}]}


def test_prose_reasoning_is_cut_and_kept_private():
    text = "<think>tagged</think>Thinking Process:\n1. sound annoyed\n\nMessage: where is my parcel?"
    reply = _reply_from(payload(text), "sim", strip_prose=True)
    assert reply.public == "where is my parcel?"
    assert reply.reasoning == "tagged\nThinking Process:\n1. sound annoyed\n\nMessage:"


def test_off_by_default_and_plain_turns_unchanged():
    text = "Thinking Process: x\nMessage: hi"
    assert _reply_from(payload(text), "sim").public == text
    reply = _reply_from(payload("<Think>r</Think> Hello"), "sim", strip_prose=True)
    assert (reply.public, reply.reasoning) == ("Hello", "r")
