"""Small synthetic data sets we write ourselves (no downloads): used by tiny configs and tests.

The conversations follow simple, learnable patterns (arithmetic, echoing, tool calls) so that a
tiny model's loss visibly falls within a few dozen steps.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

_NUMBER_WORDS = "zero one two three four five six seven eight nine ten".split()
_COLOURS = "red green blue yellow black white purple orange".split()
_SYSTEMS = (
    "You are a helpful assistant.",
    "You answer briefly.",
    "You are a careful assistant who shows the arithmetic.",
)


def _arith(rng: random.Random) -> list[dict]:
    a, b = rng.randint(0, 9), rng.randint(0, 9)
    messages = [{"role": "system", "content": rng.choice(_SYSTEMS)}] if rng.random() < 0.7 else []
    messages.append({"role": "user", "content": f"What is {a} plus {b}?"})
    reply = f"{a} plus {b} is {a + b}."
    if rng.random() < 0.4:
        reply = f"<think>\nI add {a} and {b}.\n</think>\n\n{reply}"
    messages.append({"role": "assistant", "content": reply})
    if rng.random() < 0.5:
        c = rng.randint(0, 9)
        messages.append({"role": "user", "content": f"And {a + b} plus {c}?"})
        messages.append({"role": "assistant", "content": f"{a + b} plus {c} is {a + b + c}."})
    return messages


def _colour(rng: random.Random) -> list[dict]:
    colour = rng.choice(_COLOURS)
    return [
        {"role": "user", "content": f"My favourite colour is {colour}. Repeat it."},
        {"role": "assistant", "content": f"Your favourite colour is {colour}."},
    ]


def _tool(rng: random.Random) -> list[dict]:
    n = rng.randint(0, 10)
    guess = _NUMBER_WORDS[n]
    return [
        {"role": "system", "content": "You can use the interact_with_env tool."},
        {"role": "user", "content": f"Guess the number; the hint is {guess}."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "interact_with_env", "arguments": {"choice": "answer", "content": str(n)}}}
            ],
        },
        {"role": "tool", "content": "Correct."},
        {"role": "assistant", "content": f"The number is {n}."},
    ]


def chat_sft_records(n: int = 48, seed: int = 0) -> list[dict]:
    """``{"messages": [...]}`` records mixing arithmetic, echo and tool-call conversations."""
    rng = random.Random(seed)
    makers = (_arith, _arith, _colour, _tool)
    return [{"messages": makers[i % len(makers)](rng)} for i in range(n)]


def write_jsonl(records: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def write_samples(out: Path) -> list[Path]:
    """Write every sample data set under ``out/data``; return the files."""
    return [write_jsonl(chat_sft_records(), out / "data" / "chat_sft" / "train.jsonl")]
