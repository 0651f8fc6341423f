"""Read one ``POST /v1/chat/completions`` body into a :class:`ChatRequest`, or a 400 naming the field."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..chat.validate import ROLES, validate_messages


class BadRequest(ValueError):
    """A request the server refuses: ``param`` names the field, ``status`` is the HTTP status."""

    def __init__(self, message: str, param: str | None, *, status: int = 400, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.kind = kind


@dataclass(frozen=True)
class ChatRequest:
    """What the server generates for one request (validated; ``max_tokens`` ``None``: up to the context)."""

    messages: list[dict[str, Any]]
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    n: int = 1
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None
    ignore_eos: bool = False


# Fields whose effect the engine cannot give: refused unless they carry their neutral value (no silent drop).
_NEUTRAL = {
    "stream": (None, False),
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "echo": (None, False),
    "frequency_penalty": (None, 0, 0.0),
    "presence_penalty": (None, 0, 0.0),
    "repetition_penalty": (None, 1, 1.0),
    "min_tokens": (None, 0),
    "logit_bias": (None, {}),
    "response_format": (None, {"type": "text"}),
}


def parse_request(body: Any, *, model_name: str, default_thinking: bool | None) -> ChatRequest:
    """Validate ``body`` (parsed JSON) for the model served as ``model_name``.

    Raises :class:`BadRequest` (HTTP 400, or 404 for another model's name, as vLLM answers).
    """
    if not isinstance(body, Mapping):
        raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}", None)
    model = body.get("model")
    if model is not None and model != model_name:
        raise BadRequest(
            f"The model `{model}` does not exist; this server serves `{model_name}`",
            "model",
            status=404,
            kind="NotFoundError",
        )
    for name, neutral in _NEUTRAL.items():
        if body.get(name) not in neutral:
            raise BadRequest(f"{name}={body.get(name)!r} is not supported by mimesis-pl serve", name)
    return ChatRequest(
        messages=_messages(body.get("messages")),
        temperature=_number(body, "temperature", 1.0, lambda t: t >= 0, ">= 0 (0 = greedy)"),
        top_p=_number(body, "top_p", 1.0, lambda p: 0 < p <= 1, "in (0, 1]"),
        top_k=_top_k(body.get("top_k")),
        max_tokens=_max_tokens(body),
        stop=_stop(body.get("stop")),
        seed=_int(body, "seed", None),
        n=_int(body, "n", 1, low=1),
        template_kwargs=_template_kwargs(body.get("chat_template_kwargs"), default_thinking),
        tools=_tools(body.get("tools"), body.get("tool_choice")),
        ignore_eos=_flag(body, "ignore_eos"),
    )


def _number(body: Mapping, name: str, default: float, ok: Callable[[float], bool], wanted: str) -> float:
    """``body[name]`` as a float (``default`` when absent); a 400 unless it is a number with ``ok(value)``."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"{name} must be a number, got {type(value).__name__} {value!r}", name)
    if not ok(value):
        raise BadRequest(f"{name} must be {wanted}, got {value!r}", name)
    return float(value)


def _int(body: Mapping, name: str, default: int | None, *, low: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{name} must be an integer, got {type(value).__name__} {value!r}", name)
    if low is not None and value < low:
        raise BadRequest(f"{name} must be >= {low}, got {value}", name)
    return value


def _flag(body: Mapping, name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise BadRequest(f"{name} must be true or false, got {value!r}", name)
    return value


def _top_k(value: Any) -> int:
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, int) or (value != -1 and value < 1):
        raise BadRequest(f"top_k must be -1 (off) or an integer >= 1, got {value!r}", "top_k")
    return value


def _max_tokens(body: Mapping) -> int | None:
    # As vLLM: max_completion_tokens (the newer name) wins over max_tokens when both are given.
    newer = _int(body, "max_completion_tokens", None, low=1)
    older = _int(body, "max_tokens", None, low=1)
    return newer if newer is not None else older


def _stop(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise BadRequest(f"stop must be a non-empty string or a list of them, got {value!r}", "stop")
    return tuple(stops)


def _template_kwargs(value: Any, default_thinking: bool | None) -> dict[str, Any]:
    if value is not None and not isinstance(value, Mapping):
        raise BadRequest(f"chat_template_kwargs must be an object, got {type(value).__name__}", "chat_template_kwargs")
    kwargs = dict(value or {})
    thinking = kwargs.get("enable_thinking", default_thinking)
    if thinking not in (None, True, False):
        raise BadRequest(
            f"chat_template_kwargs.enable_thinking must be true, false or null, got {thinking!r}",
            "chat_template_kwargs.enable_thinking",
        )
    kwargs.pop("enable_thinking", None)
    if thinking is not None:
        kwargs["enable_thinking"] = thinking
    return kwargs


def _tools(tools: Any, tool_choice: Any) -> list[dict[str, Any]] | None:
    if tool_choice not in (None, "auto", "none"):
        raise BadRequest(f"tool_choice={tool_choice!r} is not supported; use 'auto' or 'none'", "tool_choice")
    if tools is None or tool_choice == "none":  # as vLLM: tool_choice none leaves the tools out of the prompt
        return None
    if not isinstance(tools, list) or not all(isinstance(t, Mapping) for t in tools):
        raise BadRequest(f"tools must be a list of objects, got {tools!r:.200}", "tools")
    for i, tool in enumerate(tools):
        fn = tool.get("function")
        if tool.get("type", "function") != "function" or not isinstance(fn, Mapping) or not fn.get("name"):
            raise BadRequest(f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}", f"tools[{i}]")
    return [dict(t) for t in tools] or None


def _messages(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise BadRequest(f"messages must be a non-empty list of message objects, got {value!r:.200}", "messages")
    messages = [_message(m, k) for k, m in enumerate(value)]
    try:
        validate_messages(messages, sample="request")
    except ValueError as err:
        raise BadRequest(str(err).replace("sample request: ", ""), "messages") from None
    return messages


def _message(message: Any, k: int) -> dict[str, Any]:
    at = f"messages[{k}]"
    if not isinstance(message, Mapping):
        raise BadRequest(f"{at} must be an object with role and content, got {type(message).__name__}", at)
    role = message.get("role")
    if role not in ROLES:
        raise BadRequest(f"{at}.role: unknown role {role!r}; expected one of {list(ROLES)}", f"{at}.role")
    out = dict(message)
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts: only text parts can be rendered
        if not all(
            isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content
        ):
            raise BadRequest(
                f"{at}.content: only text parts ({{'type': 'text', 'text': ...}}) are supported", f"{at}.content"
            )
        out["content"] = "".join(p["text"] for p in content)
    elif content is None and role == "assistant":
        out["content"] = "" if not message.get("tool_calls") else None
    elif not isinstance(content, str):
        raise BadRequest(f"{at}.content must be a string, got {type(content).__name__}", f"{at}.content")
    return out
