import json

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.data import ThoughtTraceDataModule
from mimesis_pl.data.thoughttrace import DEFAULT_GREETING, build_messages, build_system_prompt

S, E = "<|im_start|>", "<|im_end|>"
RECORD = {
    "task_summary": "Plan a cheap Lisbon trip",
    "task_expectation": "A 3-day itinerary",
    "survey_answers": [{"age": "25-34", "occupation": "Nurse", "purposes": ["travel", "work"], "gender": ""}],
    "messages": [
        {
            "type": "user",
            "content": "need a cheap lisbon itinerary ",
            "reasons": [{"content": "I want a quick overview"}],
        },
        {"type": "assistant", "content": "Day 1: Alfama ...", "reactions": [{"content": "too touristy"}]},
        {"type": "user", "content": "less touristy pls", "reasons": [{"content": "the list feels generic"}]},
        {"type": "assistant", "content": "Try Marvila."},
    ],
}


def test_system_prompt_has_goal_expectation_and_profile():
    prompt = build_system_prompt(RECORD)
    assert "Your goal:\nPlan a cheap Lisbon trip" in prompt
    assert "What you expect from the assistant:\nA 3-day itinerary" in prompt
    assert "About you:\n- Age: 25-34\n- Occupation: Nurse\n- Typical uses: travel, work" in prompt
    assert "Gender" not in prompt  # empty values are left out


def test_messages_and_exact_trained_text(tiny_tokenizer):
    messages = build_messages(RECORD)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == DEFAULT_GREETING
    assert messages[2]["content"] == "<think>\nI want a quick overview\n</think>\n\nneed a cheap lisbon itinerary"
    out = ChatRenderer(tiny_tokenizer, enable_thinking=True).render(messages[:-1])
    runs, cur = [], []
    for t, m in zip(out.input_ids + [None], out.loss_mask + [0]):
        if m:
            cur.append(t)
        elif cur:
            runs.append(tiny_tokenizer.decode(cur))
            cur = []
    assert runs == [
        f"\nI want a quick overview\n</think>\n\nneed a cheap lisbon itinerary{E}",
        f"\nthe list feels generic\n</think>\n\nless touristy pls{E}",
    ]


def test_reactions_fold_into_the_next_thought():
    messages = build_messages(RECORD, include_reactions=True)
    assert messages[4]["content"].startswith("<think>\ntoo touristy\n\nthe list feels generic\n</think>")


def test_unannotated_turn_gets_an_empty_block():
    record = {"messages": [{"type": "user", "content": "hi"}]}
    assert build_messages(record, greeting=None)[1]["content"] == "<think>\n\n</think>\n\nhi"


def test_datamodule_drops_and_counts_bad_records(tmp_path, tiny_model_path):
    lines = [
        json.dumps(RECORD),
        json.dumps({"messages": [{"type": "assistant", "content": "AI first"}]}),
        json.dumps({"messages": [{"type": "user", "content": "a"}, {"type": "user", "content": "b"}]}),
        json.dumps({"messages": [{"type": "user", "content": "  "}]}),
        "[1, 2]",
        "{broken",
    ]
    path = tmp_path / "tt.jsonl"
    path.write_text("\n".join(lines) + "\n")
    dm = ThoughtTraceDataModule(files=[str(path)], tokenizer_path=str(tiny_model_path))
    dm.setup("fit")
    assert dm.stats["train_samples"] == 1
    assert dm.stats["skipped_not_alternating"] == 2
    assert dm.stats["skipped_empty_turn"] == 1
    assert dm.stats["skipped_bad_row"] == 2
    assert dm.stats["trailing_context_dropped"] == 1  # the final AI turn trains nothing
    text = tiny_tokenizer_decode = dm.tokenizer.decode(dm.train_samples[0]["input_ids"])
    assert text.endswith(f"less touristy pls{E}\n") and "Try Marvila" not in tiny_tokenizer_decode
