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


_TOPICS = ("a trip to Lisbon", "a birthday cake", "learning the violin", "a job interview", "a broken bike", "a tax form")
_HUMAN_OPENERS = ("hey can you help me with {t}", "i need ideas for {t}", "quick question about {t}", "help with {t} pls")
_HUMAN_FOLLOWUPS = ("shorter please", "that is too generic", "ok and what about the cost", "thanks, one more thing", "hmm not sure")
_AI_REPLIES = (
    "Sure! Here are three ideas for {t}.",
    "Happy to help with {t}. First, tell me your budget.",
    "Here is a short plan for {t}: start small and keep notes.",
)


def _chat(rng: random.Random, turns: int) -> list[dict]:
    topic = rng.choice(_TOPICS)
    messages = []
    for k in range(turns):
        human = (rng.choice(_HUMAN_OPENERS) if k == 0 else rng.choice(_HUMAN_FOLLOWUPS)).format(t=topic)
        messages.append({"role": "user", "content": human})
        messages.append({"role": "assistant", "content": rng.choice(_AI_REPLIES).format(t=topic)})
    return messages


def roleswap_tables(seed: int = 0) -> dict[str, list[dict]]:
    """Rows ``{data_source, messages}`` per file: human–AI chats of several sources."""
    rng = random.Random(seed)
    files: dict[str, list[dict]] = {}
    files["wildchat.parquet"] = [{"data_source": "wildchat", "messages": _chat(rng, rng.randint(1, 3))} for _ in range(16)]
    files["lmsys.parquet"] = [{"data_source": "lmsys", "messages": _chat(rng, rng.randint(1, 2))} for _ in range(8)]
    files["human_llm.parquet"] = [
        {"data_source": "human_llm", "messages": [{"role": "system", "content": "You are a helpful assistant."}] + _chat(rng, 1)}
        for _ in range(8)
    ]
    files["psych101.parquet"] = [{"data_source": "psych101", "messages": _chat(rng, rng.randint(10, 14))} for _ in range(4)]
    return files


def thoughttrace_records(n: int = 24, seed: int = 0) -> list[dict]:
    """ThoughtTrace-format records: human turns with ``reasons``, AI turns with ``reactions``."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        topic = rng.choice(_TOPICS)
        messages = []
        for k in range(rng.randint(1, 3)):
            human = (rng.choice(_HUMAN_OPENERS) if k == 0 else rng.choice(_HUMAN_FOLLOWUPS)).format(t=topic)
            reasons = [] if rng.random() < 0.2 else [{"content": f"I care about {topic} and want a quick answer"}]
            messages.append({"type": "user", "content": human, "reasons": reasons})
            messages.append(
                {"type": "assistant", "content": rng.choice(_AI_REPLIES).format(t=topic), "reactions": [{"content": "too long"}]}
            )
        records.append(
            {
                "id": f"tt-{i:03d}",
                "task_summary": f"Get help with {topic}.",
                "task_expectation": "Short, concrete suggestions.",
                "survey_answers": [{"age": rng.choice(["18-24", "25-34", "35-44"]), "occupation": rng.choice(["nurse", "student", "chef"]), "purposes": ["planning", "writing"]}],
                "messages": messages,
            }
        )
    return records


def write_parquet(rows: list[dict], path: Path, row_group_size: int = 8) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def write_jsonl(records: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def write_samples(out: Path) -> list[Path]:
    """Write every sample data set under ``out/data``; return the files."""
    data = out / "data"
    written = [write_jsonl(chat_sft_records(), data / "chat_sft" / "train.jsonl")]
    written += [write_parquet(rows, data / "roleswap" / name) for name, rows in roleswap_tables().items()]
    written.append(write_jsonl(thoughttrace_records(), data / "thoughttrace" / "train.jsonl"))
    return written
