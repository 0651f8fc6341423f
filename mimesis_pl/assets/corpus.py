"""Deterministic synthetic text for training the tiny tokenizer.

The tiny model only has to exercise real code paths (chat markup, tool calls, reasoning blocks,
numbers, non-ASCII text), so the corpus mixes those shapes from fixed word lists and a seeded RNG.
"""

from __future__ import annotations

import json
import random

_WORDS = (
    "the a an is are was were be been have has had do does did will would can could should may might "
    "i you he she it we they me him her us them my your his its our their this that these those what "
    "which who whom whose when where why how yes no not and or but if then because so than too very "
    "just also only still already again ever never always often sometimes here there now today "
    "tomorrow yesterday please thanks thank sorry hello hi okay sure maybe really actually exactly "
    "think know want need like feel see look find give tell ask say said try help make take get go "
    "come use work call play read write learn answer question guess choose book hotel flight car "
    "price cheap expensive time day night morning evening week month year number one two three four "
    "five six seven eight nine ten hundred thousand first second last next previous more less most "
    "least good bad better best great small large big little long short old new right wrong true false "
    "animal plant object person place food music instrument violin piano guitar river mountain city "
    "country story soup turtle man woman child doctor teacher friend mother father water fire stone "
    "function rule input output result value sum product difference equal greater smaller even odd "
    "user assistant system tool agent simulator reward policy turn episode task goal plan reason "
    "because therefore however although while until before after during about around between into"
).split()

_UNICODE = (
    "café naïve résumé über straße façade jalapeño año señor crème brûlée",
    "東京 北京 你好 谢谢 こんにちは ありがとう 안녕하세요",
    "Привет спасибо мир γειά σου κόσμε שלום مرحبا",
    "emoji 🙂 👍 🎻 🐢 ✅ — “quotes” ‘single’ … € £ ¥ ° ± × ÷",
)

_PUNCT = (".", ".", ".", "?", "!", ",", ";", ":")


def _sentence(rng: random.Random) -> str:
    n = rng.randint(3, 14)
    words = [rng.choice(_WORDS) for _ in range(n)]
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), str(rng.randint(0, 10_000)))
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    return text + rng.choice(_PUNCT)


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(1, 5)))


def _tool_call(rng: random.Random) -> str:
    args = {"choice": rng.choice(["action", "answer", "search"]), "content": _sentence(rng)}
    payload = json.dumps({"name": "interact_with_env", "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def _chat(rng: random.Random) -> str:
    parts = [f"<|im_start|>system\n{_paragraph(rng)}<|im_end|>\n"]
    for _ in range(rng.randint(1, 4)):
        parts.append(f"<|im_start|>user\n{_paragraph(rng)}<|im_end|>\n")
        body = _paragraph(rng)
        if rng.random() < 0.5:
            body = f"<think>\n{_paragraph(rng)}\n</think>\n\n{body}"
        if rng.random() < 0.3:
            body = f"{body}\n{_tool_call(rng)}"
        parts.append(f"<|im_start|>assistant\n{body}<|im_end|>\n")
        if rng.random() < 0.3:
            parts.append(f"<|im_start|>tool\nObservation: {_sentence(rng)}<|im_end|>\n")
    return "".join(parts)


def generate_corpus(n_docs: int = 4000, seed: int = 0) -> list[str]:
    """Return ``n_docs`` deterministic documents (chats, prose, JSON, numbers, unicode)."""
    rng = random.Random(seed)
    docs: list[str] = []
    for i in range(n_docs):
        kind = i % 5
        if kind in (0, 1):
            docs.append(_chat(rng))
        elif kind == 2:
            docs.append("\n\n".join(_paragraph(rng) for _ in range(rng.randint(1, 3))))
        elif kind == 3:
            record = {"question": _sentence(rng), "answer": rng.randint(-999, 999), "ok": rng.random() < 0.5}
            docs.append(json.dumps(record, ensure_ascii=False, indent=rng.choice([None, 2])))
        else:
            docs.append(f"{_UNICODE[i // 5 % len(_UNICODE)]} {_sentence(rng)}")
    return docs
