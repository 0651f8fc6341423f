"""Our training templates against the chat templates model families ship (read from the pinned TRL
install), on tiny tokenizers that carry each family's special tokens.

For every family: the final assistant turn and the generation prompt render exactly as the shipped
template renders them; where the shipped template is itself prefix-stable the whole conversation,
ids and masks are identical; ours are prefix-stable on any conversation (property test) and masks
cover exactly each assistant turn after its header through the end-of-turn token.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimesis_pl.chat import ChatRenderer, RenderError, parse_tool_calls

from .families import (
    CONVERSATIONS,
    FAMILIES,
    FAMILY_IDS,
    TOOLS,
    call,
    family_tokenizer,
    shipped_template,
    without_reasoning,
)

SINGLE_TURN = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
]
ALL_CONVERSATIONS = {**CONVERSATIONS, "single-turn": SINGLE_TURN}
FAMILY = {f[0]: f[1:] for f in FAMILIES}


@pytest.fixture(scope="module")
def tokenizers(tiny_tokenizer):
    return {kind: family_tokenizer(tiny_tokenizer, kind) for kind in ("qwen", "qwen-nn", "llama")}


def renderers(tokenizers, family, tmp_path_factory, tools=None):
    ours, shipped, kwargs, kind = FAMILY[family]
    path = tmp_path_factory.mktemp("shipped") / f"{shipped}.jinja"
    path.write_text(shipped_template(shipped), encoding="utf-8")  # a path, as a user would pass one
    tok = tokenizers[kind]
    return (
        ChatRenderer(tok, tools=tools, chat_template=ours, **kwargs),
        ChatRenderer(tok, tools=tools, chat_template=str(path), **kwargs),
    )


def conversation(family, name):
    messages = ALL_CONVERSATIONS[name]
    return without_reasoning(messages) if "nothink" in family else messages


@pytest.mark.parametrize("with_tools", [False, True], ids=["no-tools", "tools"])
@pytest.mark.parametrize("name", sorted(ALL_CONVERSATIONS))
@pytest.mark.parametrize("family", FAMILY_IDS)
def test_last_turn_and_generation_prompt_match_the_shipped_template(
    tokenizers, tmp_path_factory, family, name, with_tools
):
    ours, shipped = renderers(tokenizers, family, tmp_path_factory, TOOLS if with_tools else None)
    messages = conversation(family, name)
    assert ours.generation_prompt == shipped.generation_prompt
    prompt_o, prompt_s = (r.render_text(messages[:-1], add_generation_prompt=True) for r in (ours, shipped))
    full_o, full_s = ours.render_text(messages), shipped.render_text(messages)
    assert full_o.startswith(prompt_o) and full_s.startswith(prompt_s)
    assert full_o[len(prompt_o) :] == full_s[len(prompt_s) :]  # the last turn, as served
    assert prompt_o.endswith(shipped.generation_prompt)


@pytest.mark.parametrize("with_tools", [False, True], ids=["no-tools", "tools"])
@pytest.mark.parametrize("family", FAMILY_IDS)
def test_identical_ids_and_masks_where_the_shipped_template_is_prefix_stable(
    tokenizers, tmp_path_factory, family, with_tools
):
    ours, shipped = renderers(tokenizers, family, tmp_path_factory, TOOLS if with_tools else None)
    stable = []
    for name in sorted(ALL_CONVERSATIONS):
        messages = conversation(family, name)
        try:
            want = shipped.render(messages, sample=name)
        except RenderError:
            continue  # the shipped template rewrites history on this one (Qwen3 drops old <think> blocks)
        got = ours.render(messages, sample=name)
        assert ours.render_text(messages) == shipped.render_text(messages)
        assert (got.input_ids, got.loss_mask) == (want.input_ids, want.loss_mask)
        stable.append(name)
    assert "single-turn" in stable
    if family.startswith(("qwen2.5", "llama")):  # history-preserving families: every conversation
        assert stable == sorted(ALL_CONVERSATIONS)


@pytest.mark.parametrize(
    ("family", "fix"), [("qwen3-think", "qwen3"), ("qwen3.5-think", "qwen3_5"), ("qwen3.6", "qwen3_5")]
)
def test_a_shipped_template_that_rewrites_history_is_an_error_naming_the_fix(tokenizers, tmp_path_factory, family, fix):
    _, shipped = renderers(tokenizers, family, tmp_path_factory)
    with pytest.raises(RenderError, match=rf"sample conv-9: message 2 .*changed the text.*chat_template: {fix} "):
        shipped.render(CONVERSATIONS["think-two-turns"], sample="conv-9")


def test_templates_that_refuse_partial_conversations_or_need_variables_render(tokenizers, tmp_path_factory):
    # Qwen3.5/3.8 raise "No user query found" on a system prompt alone; the system message joins the user's delta.
    for name in ("qwen3_5_think", "qwen3_8"):
        path = tmp_path_factory.mktemp(name) / "t.jinja"
        path.write_text(shipped_template(name), encoding="utf-8")
        out = ChatRenderer(tokenizers["qwen"], chat_template=str(path)).render(SINGLE_TURN)
        assert out.message_spans[0] == (0, 0) and out.num_trained > 0
    # Llama 3.1 prints bos_token and, with tools, refuses the system-only prefix.
    _, llama = renderers(tokenizers, "llama3.1", tmp_path_factory, TOOLS)
    out = llama.render(CONVERSATIONS["tool-call"])
    assert out.input_ids[0] == tokenizers["llama"].bos_token_id
    assert out.message_spans[0] == (0, 0)


def test_a_trained_message_the_template_refuses_is_an_error_naming_the_fix(tokenizers, tmp_path_factory):
    path = tmp_path_factory.mktemp("q35") / "t.jinja"
    path.write_text(shipped_template("qwen3_5_think"), encoding="utf-8")
    messages = [{"role": "system", "content": "s"}, {"role": "assistant", "content": "Hello, I need help."}]
    with pytest.raises(
        RenderError,
        match=r"sample 4: message 0 \(system\): the chat template refuses.*No user query.*chat_template: qwen3_5",
    ):
        ChatRenderer(tokenizers["qwen"], chat_template=str(path)).render(messages, sample=4)


@pytest.mark.parametrize("family", ["qwen3-think", "qwen3.5-think", "qwen2.5", "llama3.1"])
def test_each_family_tool_call_text_parses_back(tokenizers, tmp_path_factory, family):
    ours, _ = renderers(tokenizers, family, tmp_path_factory, TOOLS)
    history = CONVERSATIONS["tool-call"][:2]
    turn = {"role": "assistant", "content": "", "tool_calls": [call("Ask: what size?")]}
    text = ours.render_text([*history, turn])[len(ours.render_text(history, add_generation_prompt=True)) :]
    body = text[: text.rindex(ours.eot_token)]
    body = body.split("</think>")[-1]
    calls, rest = parse_tool_calls(body)
    assert [(c.name, c.arguments) for c in calls] == [
        ("interact_with_env", {"choice": "action", "content": "Ask: what size?"})
    ]
    assert rest == ""


# -- properties of our templates on any conversation ----------------------------------------------------

_text = st.text(alphabet="abcxyz ?!.\n", min_size=1, max_size=12).map(lambda s: s.strip() or "a")


@st.composite
def conversations(draw):
    messages = [{"role": "system", "content": draw(_text)}] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(_text)})
        for _ in range(draw(st.integers(0, 2))):  # tool rounds
            content = draw(st.sampled_from(["", "Let me check."]))
            if draw(st.booleans()):
                content = f"<think>\n{draw(_text)}\n</think>\n\n{content}"
            messages.append({"role": "assistant", "content": content, "tool_calls": [call(draw(_text))]})
            messages.append({"role": "tool", "content": draw(_text)})
        reply = draw(_text)
        if draw(st.booleans()):
            reply = f"<think>\n{draw(_text)}\n</think>\n\n{reply}"
        messages.append({"role": "assistant", "content": reply})
    return messages


@pytest.mark.parametrize("family", [f for f in FAMILY_IDS if f not in ("qwen3.6", "llama3.2")])  # same templates
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=conversations(), with_tools=st.booleans())
def test_prefix_stability_and_exact_masks(tokenizers, tmp_path_factory, family, messages, with_tools):
    ours_name, _, kwargs, kind = FAMILY[family]
    tok = tokenizers[kind]
    if "nothink" in family:
        messages = without_reasoning(messages)
    renderer = ChatRenderer(tok, tools=TOOLS if with_tools else None, chat_template=ours_name, **kwargs)
    texts = [renderer.render_text(messages[: k + 1]) for k in range(len(messages))]
    for k in range(1, len(messages)):
        if messages[k]["role"] == "tool" and messages[k - 1]["role"] == "tool":
            continue  # consecutive tool results share one turn (never generated here)
        assert texts[k].startswith(texts[k - 1]), f"message {k} rewrote history"
    out = renderer.render(messages)
    header = renderer.header_text("assistant")
    expected_spans = []
    for k, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt = renderer.render_text(messages[:k], add_generation_prompt=True)
        assert texts[k].startswith(prompt) and prompt.endswith(header)
        body = texts[k][len(prompt) : texts[k].rindex(renderer.eot_token) + len(renderer.eot_token)]
        expected_spans.append(tok(body, add_special_tokens=False)["input_ids"])
    got_spans = [out.input_ids[a:b] for a, b in out.trained_spans]
    assert got_spans == expected_spans
    assert out.num_trained == sum(len(s) for s in expected_spans)


@pytest.mark.parametrize("family", ["llama3.1", "qwen2.5", "qwen3-think"])
def test_user_turns_train_under_templates_with_a_preamble(tokenizers, tmp_path_factory, family):
    """A role-swapped simulator trained on user turns: the header is found in context, not with the
    system block or default system prompt a lone message would carry."""
    ours_name, _, kwargs, kind = FAMILY[family]
    tok = tokenizers[kind]
    renderer = ChatRenderer(tok, train_roles=("user",), chat_template=ours_name, **kwargs)
    messages = CONVERSATIONS["system-two-turns"]
    out = renderer.render(messages)
    texts = [tok.decode(out.input_ids[a:b]) for a, b in out.trained_spans]
    assert texts == [m["content"] + renderer.eot_token for m in messages if m["role"] == "user"]
