"""Chat templates by name or path, and tokenizers loaded with the template a job trains with.

The templates shipped in ``mimesis_pl/chat/templates/`` are ours, written for training on deltas:
each keeps earlier turns unchanged when a message is appended (prefix-preserving) and renders the
final assistant turn and the generation prompt exactly as the model family's own template does,
so a checkpoint exported with it serves the format it was trained on.

========== =====================================================================================
name       for
========== =====================================================================================
chatml     the tiny models and any ChatML model (``enable_thinking`` unset / true / false)
qwen3      Qwen3 hybrid-thinking checkpoints (thinking on by default; ``enable_thinking: false``)
qwen3_5    Qwen3.5 / Qwen3.6-style checkpoints (XML tool calls; thinking on by default)
qwen2_5    Qwen2.5 instruct checkpoints
llama3     Llama 3.1 / 3.2 instruct checkpoints (pin ``date_string``)
========== =====================================================================================
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

TEMPLATE_SUFFIX = ".jinja"

# vLLM's --tool-call-parser for the tool-call text each of our templates writes.
TOOL_CALL_PARSERS = {
    "chatml": "hermes",
    "qwen3": "hermes",
    "qwen2_5": "hermes",
    "qwen3_5": "qwen3_coder",
    "llama3": "llama3_json",
}


def available_templates() -> list[str]:
    """Names of the templates shipped in ``mimesis_pl/chat/templates/``."""
    folder = resources.files("mimesis_pl.chat").joinpath("templates")
    return sorted(p.name[: -len(TEMPLATE_SUFFIX)] for p in folder.iterdir() if p.name.endswith(TEMPLATE_SUFFIX))


def load_chat_template(name_or_path: str) -> str:
    """The Jinja text of a shipped template (``"qwen3"``) or of a ``.jinja`` file (a path).

    A name that is neither a shipped template nor an existing file is an error listing the names.
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ValueError(f"chat_template: expected a template name or a .jinja path, got {name_or_path!r}")
    names = available_templates()
    if name_or_path in names:
        folder = resources.files("mimesis_pl.chat").joinpath("templates")
        return folder.joinpath(name_or_path + TEMPLATE_SUFFIX).read_text(encoding="utf-8")
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path.read_text(encoding="utf-8")
    raise ValueError(
        f"chat_template: {name_or_path!r} is neither a shipped template ({', '.join(names)}) nor an existing "
        "file; give one of those names or the path of a .jinja file"
    )


def template_name(name_or_path: str | None) -> str | None:
    """The shipped-template name a setting refers to (``None`` for a path or no setting)."""
    return name_or_path if name_or_path in available_templates() else None


def suggest_training_template(template_text: str | None) -> str | None:
    """The shipped training template for the family a model's own template belongs to, if recognisable
    (one of ours is recognised as itself)."""
    text = template_text or ""
    for name in available_templates():
        if text == load_chat_template(name):
            return name
    if "<|start_header_id|>" in text:
        return "llama3"
    if "<function=" in text and "<|im_start|>" in text:
        return "qwen3_5"
    if "last_query_index" in text and "<think>" in text:
        return "qwen3"
    if "You are Qwen, created by Alibaba Cloud" in text:
        return "qwen2_5"
    if "<|im_start|>" in text:
        return "chatml"
    return None


def use_chat_template(tokenizer: Any, chat_template: str | None) -> Any:
    """Set ``tokenizer.chat_template`` from a name or path (``None`` keeps the tokenizer's own).

    Everything that renders or saves through the tokenizer (the renderer, rollouts, the HF export)
    then uses the same template.
    """
    if chat_template is not None:
        tokenizer.chat_template = load_chat_template(chat_template)
    return tokenizer


def load_tokenizer(path: str, chat_template: str | None = None, trust_remote_code: bool = False) -> Any:
    """``AutoTokenizer.from_pretrained(path)`` with ``chat_template`` (a name or path) applied."""
    from transformers import AutoTokenizer

    return use_chat_template(AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code), chat_template)


def pad_id_of(tokenizer_or_pad_id: Any) -> int:
    """The id to pad with: an ``int`` as given, else the tokenizer's ``pad_token_id``, else its ``eos_token_id``.

    Chat tokenizers often have no pad token; padding with end-of-sequence is safe because padded
    positions are masked out of attention and of every loss.
    """
    if isinstance(tokenizer_or_pad_id, int):
        return tokenizer_or_pad_id
    pad = getattr(tokenizer_or_pad_id, "pad_token_id", None)
    if pad is None:
        pad = getattr(tokenizer_or_pad_id, "eos_token_id", None)
    if pad is None:
        raise ValueError(
            f"{type(tokenizer_or_pad_id).__name__} has neither pad_token_id nor eos_token_id; pass a pad id"
        )
    return int(pad)
