import pytest

from mimesis_pl.chat import ToolCallParseError, format_tool_call, parse_tool_calls, render_with_mask


def test_template_and_formatter_agree(tiny_tokenizer):
    """The text the policy must generate for a call is exactly what the template renders."""
    args = {"choice": "answer", "content": "violin — 🎻"}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "interact_with_env", "arguments": args}}]},
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
