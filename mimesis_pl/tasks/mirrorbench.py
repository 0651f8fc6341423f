"""MirrorBench: replay a real conversation with the simulator as the user.

Rows: :class:`MirrorRow`. The rollout follows the first ``max_turns`` (10) real turns, a trailing assistant turn
dropped: on a real user turn the simulator writes the user's message; on a real assistant turn the partner, shown
the real conversation as a guide, answers as the assistant ("mirror assistant") and its reply comes back to the
simulator as context (mask 0); a real conversation that opens with the assistant starts with a mirror reply. A
mirror call that fails is a ``task_error`` (docs/decisions.md S40). The judge (one GTEval-style call) compares the
real conversation — the turns followed, not the whole file — with the simulated one, both rendered as
``ROLE: content`` lines (:func:`render_turns`), and rates how close the simulated user turns are to the real ones in
style, tone and realism: a number in [0, 1] that is the score (clamped by ``Rollout.finish``). A failed judge call
is ``judge_failed`` (the reference used 0.5; docs/decisions.md S3). How this follows the reference: S47 in
docs/decisions.md.

Logged only, never rewarded: the lexical-diversity gaps ``|proxy − human|`` of MATTR (window 50), HD-D (sample 42)
and Yule's K (:func:`lexical_gaps`) between the simulated user turns and every real user turn of the row, on the
policy tokenizer's tokens (the reference used tiktoken's ``gpt-4o`` encoding, so the values are not comparable
with its logs; docs/decisions.md S49).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

from .base import Rollout, RowError, TaskResult, decoded, expect, extra_info, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import JudgedTask, finish, partner_reply, said, transcript_text, verdict_score

PREFIX = "mirrorbench"
NEXT = "Write the user's next message."
FIRST = "Write the user's first message."


@dataclass(frozen=True)
class MirrorVerdict:
    """How much the simulated user turns resemble the real user's (style, tone, realism), in [0, 1]."""

    similarity: float


def mattr(tokens: Sequence[int], window: int = 50) -> float:
    """Moving-average type-token ratio: the mean share of distinct tokens over every ``window``-token span (the
    plain type-token ratio when the text is no longer than ``window``; 0 for no tokens)."""
    n = len(tokens)
    if n == 0:
        return 0.0
    if n <= window:
        return len(set(tokens)) / n
    counts = Counter(tokens[:window])
    total = len(counts)
    for i in range(window, n):
        out, new = tokens[i - window], tokens[i]
        counts[out] -= 1
        if counts[out] == 0:
            del counts[out]
        counts[new] += 1
        total += len(counts)
    return total / window / (n - window + 1)


def hdd(tokens: Sequence[int], sample: int = 42) -> float:
    """HD-D: for each type, the chance it appears in a random draw of ``min(sample, n)`` tokens without
    replacement (hypergeometric), summed and divided by the draw size (0 for no tokens)."""
    n = len(tokens)
    if n == 0:
        return 0.0
    k = min(sample, n)
    return sum(1.0 - comb(n - f, k) / comb(n, k) for f in Counter(tokens).values()) / k


def yules_k(tokens: Sequence[int]) -> float:
    """Yule's K: ``10⁴ · (Σ f² − N) / N²`` over the type frequencies ``f`` of ``N`` tokens (0 for no tokens)."""
    n = len(tokens)
    if n == 0:
        return 0.0
    return 10_000.0 * (sum(f * f for f in Counter(tokens).values()) - n) / (n * n)


def lexical_gaps(proxy: Sequence[int], human: Sequence[int]) -> dict[str, float]:
    """``|proxy − human|`` of each diversity measure, keyed as logged (``mattr_gap``, ``hdd_gap``,
    ``yules_k_gap``)."""
    return {
        f"{name}_gap": abs(measure(proxy) - measure(human))
        for name, measure in (("mattr", mattr), ("hdd", hdd), ("yules_k", yules_k))
    }


@dataclass(frozen=True)
class MirrorRow:
    """A MirrorBench row as the reference writes it: ``extra_info.turns``, a list of ``{role, content}`` dicts
    (a JSON string of it is decoded; ``conversation`` is a documented alias: docs/decisions.md S42), and
    ``task_description`` (optional). ``few_shot_user_examples`` is read by the reference but unused, so it is
    ignored here."""

    turns: tuple[dict[str, str], ...]
    task_description: str


def parse_mirror_row(row: Mapping[str, Any]) -> MirrorRow:
    info = extra_info(row)
    name = "turns" if info.get("turns") is not None or info.get("conversation") is None else "conversation"
    value = expect(decoded(require(info, row, name), row, f"extra_info.{name}"), (list,), row, f"extra_info.{name}")
    turns = []
    for i, m in enumerate(value):
        m = expect(m, (dict,), row, f"extra_info.{name}[{i}]")
        if not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise RowError(f"{row_name(row)}: field extra_info.{name}[{i}] needs string role and content")
        turns.append({"role": m["role"], "content": m["content"]})
    if not any(m["role"] == "user" for m in turns):
        raise RowError(f"{row_name(row)}: field extra_info.{name} has no user turn")
    return MirrorRow(tuple(turns), str(info.get("task_description") or ""))


def real_turns(turns: tuple[dict[str, str], ...], max_turns: int) -> list[dict[str, str]]:
    """The real turns the rollout follows: the first ``max_turns`` (10), a trailing assistant turn dropped."""
    real = list(turns[:max_turns])
    if real and real[-1]["role"] == "assistant":
        real.pop()
    return real


def strip_label(text: str) -> str:
    """Drop a leading ``user:`` label that small models like to add."""
    head, _, rest = text.partition(":")
    return rest.strip() if head.strip().lower() in ("user", "human") and rest else text.strip()


def system_prompt(task_description: str) -> str:
    about = f"What the user wants: {task_description}" if task_description else "No metadata about this user."
    return (
        "You stand in for a real person chatting with an AI assistant. Write only the user's next message, "
        "with the length, tone and care real users show (often brief, sometimes sloppy), and no label in front."
        f"\n\n{about}"
    )


def mirror_prompt(real: list[dict[str, str]]) -> str:
    return (
        "You are the assistant in a chat that is being re-enacted. The original chat, for guidance:\n"
        + transcript_text([(m["role"], m["content"]) for m in real if m["role"] in ("user", "assistant")])
        + "\n\nAnswer the user's latest message as that assistant would, in a similar length."
    )


def render_turns(turns: list[dict[str, str]]) -> str:
    """A conversation as the judge reads it: one ``ROLE: content`` line per turn (``USER: hi``)."""
    return "\n".join(f"{m['role'].upper()}: {m['content']}" for m in turns)


def judge_prompt(real: list[dict[str, str]], simulated: list[dict[str, str]]) -> list[dict[str, str]]:
    """Both whole conversations — the real turns the rollout followed and the simulated ones (the simulator's user
    turns and the mirror's replies) — compared on the user side only."""
    return [
        {"role": "system", "content": "You judge how human a simulated chat user sounds."},
        {
            "role": "user",
            "content": (
                f"Real conversation:\n{render_turns(real)}\n\n"
                f"Simulated conversation (its USER turns come from a user simulator):\n{render_turns(simulated)}\n\n"
                "Compare only the USER turns: how similar are the simulated ones to the real ones in style, tone, "
                "length and realism, given the conversation so far? Ignore the assistant's turns. "
                'Answer with JSON only: {"similarity": <number 0-1>}'
            ),
        },
    ]


async def play_mirror(
    real: list[dict[str, str]], task: MirrorRow, run: Rollout
) -> tuple[PolicyConversation, list[dict[str, str]], list[tuple[str, str]]]:
    """The replay of the ``real`` turns: the policy writes each user turn, the mirror answers each assistant turn.
    Ends early on an empty policy turn or the length budget. Returns the policy's conversation, the mirror's chat
    (its system prompt, then the simulated conversation) and the transcript lines."""
    mirror = [{"role": "system", "content": mirror_prompt(real)}]
    lines: list[tuple[str, str]] = []

    async def mirror_turn() -> str:  # a failed call raises PartnerUnavailable (S40)
        reply = await partner_reply(run.ctx, mirror, what="mirror assistant")
        mirror.append({"role": "assistant", "content": reply})
        lines.append(("assistant", reply))
        return reply

    opening, start = FIRST, 0
    if real and real[0]["role"] == "assistant":  # the real chat opens with the assistant, so does the replay
        opening, start = f"AI: {await mirror_turn()}\n\n{NEXT}", 1
    conv = run.conversation(
        [{"role": "system", "content": system_prompt(task.task_description)}, {"role": "user", "content": opening}]
    )
    for k, real_turn in enumerate(real[start:], start):
        if real_turn["role"] == "user":
            try:
                if k > start and lines and lines[-1][0] == "SIMULATED user":
                    conv.append([{"role": "user", "content": NEXT}])  # two real user turns in a row
                turn = await conv.step()
            except BudgetExhausted:
                break
            text = strip_label(said(conv, turn.text))
            if not text:
                break
            lines.append(("SIMULATED user", text))
            mirror.append({"role": "user", "content": text})
        elif real_turn["role"] == "assistant":
            reply = await mirror_turn()
            try:
                conv.append([{"role": "user", "content": f"AI: {reply}\n\n{NEXT}"}])
            except BudgetExhausted:
                break
    return conv, mirror, lines


async def mirror_rollout(task: MirrorRow, run: Rollout) -> TaskResult:
    """Replay the real turns, judge the similarity of the user turns, log the lexical gaps."""
    real = real_turns(task.turns, int(run.option("max_turns", 10)))
    conv, mirror, lines = await play_mirror(real, task, run)
    proxy = [text for who, text in lines if who == "SIMULATED user"]
    score: float | None = 0.0
    if proxy:
        request = JudgeRequest(judge_prompt(real, mirror[1:]), lines, task.task_description, "SIMULATED")
        score = verdict_score(await run.ctx.judge.judge(request, MirrorVerdict), lambda v: v.similarity)

    def tokens(texts: list[str]) -> list[int]:
        return run.ctx.policy.tokenizer(" ".join(texts), add_special_tokens=False)["input_ids"]

    human = [m["content"] for m in task.turns if m["role"] == "user"]  # every real user turn, as the reference
    return finish(run, conv, score=score, sub=lexical_gaps(tokens(proxy), tokens(human)), transcript=lines)


def mirrorbench(data_source: str) -> JudgedTask[MirrorRow]:
    return JudgedTask(data_source, PREFIX, parse_mirror_row, mirror_rollout)
