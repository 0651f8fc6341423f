"""Masks of the incremental renderer, checked against hand-built segment lists.

Each expected sequence is written as text segments with a trained flag; segments end at special
tokens, so tokenising them one by one gives the exact ids the renderer must produce.
"""

from __future__ import annotations

import pytest

from mimesis_pl.chat import ChatRenderer, RenderError, render_with_mask

S, E = "<|im_start|>", "<|im_end|>"


def expected(tok, segments):
    ids, mask = [], []
    for text, trained in segments:
        piece = tok(text, add_special_tokens=False)["input_ids"]
        ids += piece
        mask += [int(trained)] * len(piece)
    return ids, mask


def check(tok, messages, segments, **kwargs):
    out = render_with_mask(tok, messages, **kwargs)
    want_ids, want_mask = expected(tok, segments)
    assert out.input_ids == want_ids
    assert out.loss_mask == want_mask
    assert len(out.input_ids) == len(out.loss_mask)
    return out


def test_system_user_assistant(tiny_tokenizer):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello there."},
    ]
    out = check(
        tiny_tokenizer,
        messages,
        [
            (f"{S}system\nBe brief.{E}\n", False),
            (f"{S}user\nHi{E}\n", False),
            (f"{S}assistant\n", False),
            (f"Hello there.{E}", True),  # content + end-of-turn token
            ("\n", False),  # the separator after <|im_end|> is never generated
        ],
    )
    assert len(out.message_spans) == 3
    assert out.message_spans[0][0] == 0 and out.message_spans[-1][1] == len(out.input_ids)
    assert len(out.trained_spans) == 1


def test_consecutive_same_role_and_tool_messages(tiny_tokenizer):
    call = {
        "type": "function",
        "function": {"name": "interact_with_env", "arguments": {"choice": "action", "content": "look"}},
    }
    messages = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "You see a door."},
        {"role": "assistant", "content": "first"},
        {"role": "assistant", "content": "second"},
    ]
    payload = '{"name": "interact_with_env", "arguments": {"choice": "action", "content": "look"}}'
    check(
        tiny_tokenizer,
        messages,
        [
            (f"{S}user\na{E}\n", False),
            (f"{S}user\nb{E}\n", False),
            (f"{S}assistant\n", False),
            (f"<tool_call>\n{payload}\n</tool_call>{E}", True),
            ("\n", False),
            (f"{S}tool\nYou see a door.{E}\n", False),
            (f"{S}assistant\n", False),
            (f"first{E}", True),
            ("\n", False),
            (f"{S}assistant\n", False),
            (f"second{E}", True),
            ("\n", False),
        ],
    )


def test_think_modes(tiny_tokenizer):
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>why</think>answer"}]
    # Plain ChatML: the content is trained verbatim, tags included.
    check(
        tiny_tokenizer,
        messages,
        [
            (f"{S}user\nq{E}\n", False),
            (f"{S}assistant\n", False),
            (f"<think>why</think>answer{E}", True),
            ("\n", False),
        ],
    )
    # Thinking on: the header pre-fills "<think>"; reasoning, close tag and reply are trained.
    check(
        tiny_tokenizer,
        messages,
        [
            (f"{S}user\nq{E}\n", False),
            (f"{S}assistant\n<think>", False),
            (f"\nwhy\n</think>\n\nanswer{E}", True),
            ("\n", False),
        ],
        enable_thinking=True,
    )
    # Thinking off: reasoning is dropped and the empty block is part of the (untrained) header.
    check(
        tiny_tokenizer,
        messages,
        [
            (f"{S}user\nq{E}\n", False),
            (f"{S}assistant\n<think>\n\n</think>\n\n", False),
            (f"answer{E}", True),
            ("\n", False),
        ],
        enable_thinking=False,
    )


def test_reasoning_content_field_and_unicode(tiny_tokenizer):
    messages = [
        {"role": "user", "content": "Ça va? 東京 🙂"},
        {"role": "assistant", "content": "Très bien — 谢谢 🎻", "reasoning_content": "  polite  "},
    ]
    out = check(
        tiny_tokenizer,
        messages,
        [
            (f"{S}user\nÇa va? 東京 🙂{E}\n", False),
            (f"{S}assistant\n<think>", False),
            (f"\npolite\n</think>\n\nTrès bien — 谢谢 🎻{E}", True),
            ("\n", False),
        ],
        enable_thinking=True,
    )
    trained = [t for t, m in zip(out.input_ids, out.loss_mask) if m]
    assert tiny_tokenizer.decode(trained) == f"\npolite\n</think>\n\nTrès bien — 谢谢 🎻{E}"


def test_train_user_role(tiny_tokenizer):
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "assistant", "content": "AI"},
        {"role": "user", "content": "human"},
    ]
    check(
        tiny_tokenizer,
        messages,
        [
            (f"{S}system\nsys{E}\n", False),
            (f"{S}assistant\nAI{E}\n", False),
            (f"{S}user\n", False),
            (f"human{E}", True),
            ("\n", False),
        ],
        train_roles=("user",),
    )


def test_tools_block_is_context(tiny_tokenizer):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
    ]
    out = render_with_mask(tiny_tokenizer, messages, tools=tools)
    full = tiny_tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=False)
    assert out.input_ids == list(full)
    trained = [t for t, m in zip(out.input_ids, out.loss_mask) if m]
    assert tiny_tokenizer.decode(trained) == f"a{E}"


def test_render_equals_apply_chat_template(tiny_tokenizer):
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},
        {"role": "assistant", "content": "a2"},
    ]
    for kwargs in ({}, {"enable_thinking": True}, {"enable_thinking": False}):
        out = render_with_mask(tiny_tokenizer, messages, **kwargs)
        assert out.input_ids == list(
            tiny_tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False, **kwargs)
        )


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([], "empty"),
        ([{"role": "bot", "content": "x"}], "message 0: field 'role': unknown role 'bot'"),
        ([{"role": "user", "content": "x"}, {"role": "user", "content": 3}], "message 1 (user): field 'content'"),
        ([{"role": "user"}], "field 'content'"),
        (
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": None, "tool_calls": [{"function": {"arguments": {}}}]},
            ],
            "message 1: field 'tool_calls[0].function.name'",
        ),
        ([{"role": "user", "content": "x", "tool_calls": []}], "only assistant messages can call tools"),
        ("hello", "must be a list"),
    ],
)
def test_bad_input_names_sample_message_and_field(tiny_tokenizer, messages, needle):
    with pytest.raises(ValueError, match="sample 7") as err:
        render_with_mask(tiny_tokenizer, messages, sample=7)
    assert needle in str(err.value)


def test_template_without_generation_prompt_is_refused(tiny_tokenizer):
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    tok.chat_template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    with pytest.raises(RenderError, match="no generation prompt"):
        ChatRenderer(tok)


def test_template_that_rewrites_earlier_turns_is_detected(tiny_tokenizer):
    """A Qwen3-like template drops the <think> block of assistant turns before the last user turn."""
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    tok.chat_template = (
        "{%- set ns = namespace(last_user=-1) -%}"
        "{%- for m in messages %}{% if m.role == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}{% endfor -%}"
        "{%- for m in messages -%}"
        "{%- set c = m.content -%}"
        "{%- if m.role == 'assistant' and loop.index0 < ns.last_user and '</think>' in c -%}"
        "{%- set c = c.split('</think>')[-1] -%}{%- endif -%}"
        "{{- '<|im_start|>' + m.role + '\\n' + c + '<|im_end|>\\n' -}}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' -}}{% endif -%}"
    )
    messages = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "<think>r1</think>a1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "<think>r2</think>a2"},
    ]
    with pytest.raises(RenderError, match=r"sample conv-3: message 2 \(user\).*rewrites earlier turns"):
        render_with_mask(tok, messages, sample="conv-3")


def test_content_that_would_merge_with_the_header_is_tokenised_as_generated(tiny_tokenizer):
    """A header ending in ':' followed by content starting with a newline would tokenise as one ':\\n'
    token in the full text; the model, prompted with the header, generates '\\n' on its own, so the
    trained message is the header's ids followed by its own (Qwen3.5's '<think>\\n' + '\\n</think>' is this case)."""
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    tok.chat_template = (
        "{% for m in messages %}{{ '<|im_start|>' + m.role + ':' + m.content + '<|im_end|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant:' }}{% endif %}"
    )
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "\nhello"}]
    assert (
        tok(":\nhello", add_special_tokens=False)["input_ids"][0] not in tok(":", add_special_tokens=False)["input_ids"]
    )
    out = render_with_mask(tok, messages, sample=0)
    want_ids, want_mask = expected(tok, [(f"{S}user:q{E}", False), (f"{S}assistant:", False), (f"\nhello{E}", True)])
    assert (out.input_ids, out.loss_mask) == (want_ids, want_mask)


def test_header_the_message_does_not_start_with_is_an_error(tiny_tokenizer):
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    tok.chat_template = (
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>' }}{% endif %}"
    )
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "hello"}]
    with pytest.raises(
        RenderError, match=r"sample 7: message 1 \(assistant\).*does not start with the assistant header"
    ):
        render_with_mask(tok, messages, sample=7)


def test_rl_continuation_is_token_in_token_out(tiny_tokenizer):
    """prompt ids + sampled ids + continuation ids == the full render, and the sampled ids are kept."""
    tok = tiny_tokenizer
    renderer = ChatRenderer(tok, enable_thinking=True)
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    prompt = renderer.prompt_ids(history)
    assert tok.decode(prompt).endswith(f"{S}assistant\n<think>")
    sampled = tok("\nhm\n</think>\n\nok" + E, add_special_tokens=False)["input_ids"]
    history.append({"role": "assistant", "content": tok.decode(sampled, skip_special_tokens=True)})
    tail = renderer.continuation_ids(history, [{"role": "tool", "content": "obs"}])
    assert tok.decode(tail) == f"\n{S}tool\nobs{E}\n{S}assistant\n<think>"
    sequence = prompt + sampled + tail
    full = tok.apply_chat_template(
        history + [{"role": "tool", "content": "obs"}],
        tokenize=True,
        return_dict=False,
        add_generation_prompt=True,
        enable_thinking=True,
    )
    assert sequence == list(full)
    # SFT masks of the same conversation train exactly the sampled ids.
    sft = renderer.render(history)
    trained = [t for t, m in zip(sft.input_ids, sft.loss_mask) if m]
    assert trained == sampled


def test_note_delta_ids(tiny_tokenizer):
    renderer = ChatRenderer(tiny_tokenizer)
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    ids = renderer.message_delta_ids(history, {"role": "user", "content": "note"})
    assert tiny_tokenizer.decode(ids) == f"\n{S}user\nnote{E}\n"


def test_boundary_merge_between_messages_is_detected(tiny_tokenizer):
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    tok.chat_template = (
        "{% for m in messages %}{% if m.role == 'assistant' %}<|im_start|>{% endif %}{{ m.content }}{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>{% endif %}"
    )
    # The trained turn ends in "hel" and the next message starts with "lo": one token "hello" in the full text.
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "hel"},
        {"role": "user", "content": "lo world"},
    ]
    with pytest.raises(RenderError, match=r"sample s1: tokens of the per-message deltas differ .* \(message [12]\)"):
        render_with_mask(tok, messages, sample="s1")
