import pytest

from mimesis_pl.chat import (
    ToolCallParseError,
    format_tool_call,
    parse_tool_calls,
    render_with_mask,
)


def test_template_and_formatter_agree(tiny_tokenizer):
    """The text the policy must generate for a call is exactly what the template renders."""
    args = {"choice": "answer", "content": "violin — 🎻"}
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "interact_with_env", "arguments": args}}],
        },
    ]
    out = render_with_mask(tiny_tokenizer, messages)
    trained = tiny_tokenizer.decode([t for t, m in zip(out.input_ids, out.loss_mask) if m])
    assert trained == format_tool_call("interact_with_env", args) + "<|im_end|>"


def test_parse_several_calls_and_text():
    text = "Let me check.\n" + format_tool_call("a", {"x": 1}) + "\n" + format_tool_call("b", {})
    calls, rest = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [("a", {"x": 1}), ("b", {})]
    assert rest == "Let me check."


def test_arguments_as_json_string():
    calls, _ = parse_tool_calls('<tool_call>{"name": "f", "arguments": "{\\"k\\": 2}"}</tool_call>')
    assert calls[0].arguments == {"k": 2}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<tool_call>{not json}</tool_call>", "not JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', "'name'"),
        ('<tool_call>{"name": "f", "arguments": [1]}</tool_call>', "'arguments' must be an object"),
        ('<tool_call>{"name": "f"', "no closing"),
        ("<tool_call>[1, 2]</tool_call>", "JSON object"),
    ],
)
def test_malformed_calls_raise_named_errors(text, needle):
    with pytest.raises(ToolCallParseError, match=needle):
        parse_tool_calls(text)


def test_no_calls():
    assert parse_tool_calls("plain answer") == ([], "plain answer")


def test_qwen3_5_xml_tool_calls_parse():
    text = (
        "Let me ask.\n\n<tool_call>\n<function=interact_with_env>\n<parameter=choice>\naction\n</parameter>\n"
        '<parameter=content>\nIs it\nred?\n</parameter>\n<parameter=meta>\n{"k": [1]}\n</parameter>\n'
        "</function>\n</tool_call>"
    )
    calls, rest = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [
        ("interact_with_env", {"choice": "action", "content": "Is it\nred?", "meta": {"k": [1]}})
    ]
    assert rest == "Let me ask."
    with pytest.raises(ToolCallParseError, match="tool call 0: expected <function=NAME>"):
        parse_tool_calls("<tool_call>\n<function=f>\n</tool_call>")


def test_llama3_json_reply_is_one_tool_call():
    calls, rest = parse_tool_calls(
        '{"name": "interact_with_env", "parameters": {"choice": "answer", "content": "Kiwi"}}'
    )
    assert [(c.name, c.arguments) for c in calls] == [("interact_with_env", {"choice": "answer", "content": "Kiwi"})]
    assert rest == ""
    assert parse_tool_calls('<|python_tag|>{"name": "f", "parameters": {}}')[0][0].name == "f"
    # Other JSON replies are text, not calls.
    assert parse_tool_calls('{"name": "Bob", "age": 3}') == ([], '{"name": "Bob", "age": 3}')
    assert parse_tool_calls('{"name": "f", "parameters": "x"}')[0] == []
