"""The exact decision probe: P(correct decision | context) from logits, by teacher forcing, no sampling.

A probe context (one JSONL row) is a conversation up to a decision, the first words of the decision turn
(``prefix``) and the candidate continuations, one of them correct::

    {"id": "cue-test-3/1", "messages": [...], "tools": [...], "prefix": "<think>\\nThe user cares about the",
     "candidates": {"material": " material", "colour": " colour"}, "correct": "material"}

The context's ids are the ids a rollout would hold at that decision (:func:`rollout_context_ids`): the
opening prompt as :meth:`~mimesis_pl.chat.render.ChatRenderer.prompt_ids` renders it, each assistant turn as
the tokens the policy would have generated, every later message as
:meth:`~mimesis_pl.chat.render.ChatRenderer.continuation_ids` appends it, ending on the generation prompt.
The prefix follows as generated tokens (less what the generation prompt already ends with,
:func:`policy_written_prefix`), then each candidate. ``logp`` of a candidate is the sum of its tokens'
log-probabilities; a row reports them, ``p_correct = exp(logp[correct])`` and ``p_correct_norm``, the softmax
over the candidates at the correct one.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..causal_lm import eval_mode  # noqa: F401 - also this module's public name (mimesis_pl.eval.probe.eval_mode)
from ..chat import pad_id_of
from ..chat.render import ChatRenderer, RenderError
from ..rl.token_ops import model_token_logprobs


class ProbeContextError(ValueError):
    """A probe context that cannot be used; the message names the file, line and field."""


@dataclass(frozen=True)
class ProbeRow:
    """One decision context. ``source`` is ``"<file>:<line>"`` for errors."""

    id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    prefix: str
    candidates: dict[str, str]
    correct: str
    source: str = "<rows>"


@dataclass(frozen=True)
class RowProbe:
    """One context's result: each candidate's summed log-prob, P(correct) and P(correct) among the candidates."""

    id: str
    logp: dict[str, float]
    p_correct: float
    p_correct_norm: float


@dataclass(frozen=True)
class ProbeResult:
    """Every context's result and their means."""

    rows: tuple[RowProbe, ...]

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def p_correct(self) -> float:
        return sum(r.p_correct for r in self.rows) / self.n if self.rows else math.nan

    @property
    def p_correct_norm(self) -> float:
        return sum(r.p_correct_norm for r in self.rows) / self.n if self.rows else math.nan

    def summary(self) -> dict[str, float | int]:
        return {"p_correct": self.p_correct, "p_correct_norm": self.p_correct_norm, "n": self.n}

    def to_dict(self) -> dict[str, Any]:
        rows = [
            {"id": r.id, "logp": r.logp, "p_correct": r.p_correct, "p_correct_norm": r.p_correct_norm}
            for r in self.rows
        ]
        return {**self.summary(), "rows": rows}


# -- reading ------------------------------------------------------------------------------------------


def read_probe_contexts(path: str | Path) -> list[ProbeRow]:
    """The rows of a probe-contexts JSONL file (blank lines aside); a bad row is an error naming its line and field."""
    path = Path(path)
    if not path.is_file():
        raise ProbeContextError(f"probe contexts: {path} is not a file (a JSONL file of decision contexts)")
    rows: list[ProbeRow] = []
    seen: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ProbeContextError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from err
        row = parse_probe_row(record, where)
        if row.id in seen:
            raise ProbeContextError(f"{where}: field 'id': {row.id!r} is also the id of {seen[row.id]}; ids are unique")
        seen[row.id] = where
        rows.append(row)
    if not rows:
        raise ProbeContextError(f"{path}: no probe contexts (the file holds no rows)")
    return rows


def parse_probe_row(record: Any, where: str) -> ProbeRow:
    """A :class:`ProbeRow` from one decoded JSON row; ``where`` (``file:line``) names it in errors."""
    if not isinstance(record, Mapping):
        raise ProbeContextError(f"{where}: a row is a JSON object, got {type(record).__name__}")

    def field(name: str, kind: type, what: str) -> Any:
        if name not in record:
            raise ProbeContextError(f"{where}: field {name!r} is missing ({what})")
        if not isinstance(record[name], kind):
            raise ProbeContextError(f"{where}: field {name!r} must be {what}, got {type(record[name]).__name__}")
        return record[name]

    row_id = field("id", str, "the row's id, a string")
    messages = field("messages", list, "a non-empty list of chat messages")
    if not messages or not all(isinstance(m, Mapping) and "role" in m for m in messages):
        raise ProbeContextError(f"{where}: field 'messages' must be a non-empty list of messages with a 'role'")
    tools = record.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools)):
        raise ProbeContextError(f"{where}: field 'tools' must be a list of tool schemas (objects) or absent")
    prefix = field("prefix", str, "the start of the decision turn, a string")
    candidates = field("candidates", Mapping, "an object of name -> continuation text")
    if not candidates:
        raise ProbeContextError(f"{where}: field 'candidates' is empty; give at least one name -> continuation text")
    bad = [name for name, text in candidates.items() if not isinstance(text, str) or not text]
    if bad:
        raise ProbeContextError(f"{where}: field 'candidates': {bad} must map to non-empty continuation text")
    correct = field("correct", str, "the name of the correct candidate")
    if correct not in candidates:
        raise ProbeContextError(f"{where}: field 'correct': {correct!r} is not among the candidates {list(candidates)}")
    return ProbeRow(row_id, [dict(m) for m in messages], tools or None, prefix, dict(candidates), correct, where)


# -- token ids ------------------------------------------------------------------------------------------


def renderer_with_tools(renderer: ChatRenderer, tools: list[dict[str, Any]] | None) -> ChatRenderer:
    """``renderer`` with the tool schemas of one context (template, kwargs and tokenizer unchanged).

    A rollout's renderer differs from the policy's only in its tools; the role headers and the generation
    prompt it has cached do not depend on them (tools render in the system block before every message)."""
    if tools == renderer.tools:
        return renderer
    twin = copy.copy(renderer)
    twin.tools = tools
    return twin


def rollout_context_ids(renderer: ChatRenderer, messages: Sequence[Mapping], sample: Any = None) -> list[int]:
    """The ids a rollout holds after ``messages``, at the start of the next assistant turn.

    The messages before the first assistant turn are the prompt (:meth:`ChatRenderer.prompt_ids`); an assistant
    turn is the tokens the policy generated for it (its rendered text after the generation prompt, through the
    end-of-turn token, tokenised alone); the messages after it are appended with
    :meth:`ChatRenderer.continuation_ids`, the last time with the generation prompt.
    """
    turns = [k for k, m in enumerate(messages) if m["role"] == "assistant"]
    ids = renderer.prompt_ids(messages[: turns[0]] if turns else messages, sample=sample)
    for i, k in enumerate(turns):
        ids += generated_turn_ids(renderer, messages[:k], messages[k], sample)
        following = messages[k + 1 : turns[i + 1]] if i + 1 < len(turns) else messages[k + 1 :]
        ids += renderer.continuation_ids(messages[: k + 1], following, add_generation_prompt=True, sample=sample)
    return ids


def generated_turn_ids(renderer: ChatRenderer, history: Sequence[Mapping], message: Mapping, sample: Any) -> list[int]:
    """The tokens of assistant ``message`` after ``history`` as the policy generates them: after the generation
    prompt, through the end-of-turn token."""
    before = renderer.render_text(history)
    delta = renderer.render_text([*history, message])[len(before) :]
    header = renderer.generation_prompt
    end = delta.rfind(renderer.eot_token)
    if not delta.startswith(header) or end < len(header):
        raise RenderError(
            f"sample {sample}: assistant message {len(history)} renders as {delta[:60]!r}, not as the generation "
            f"prompt {header!r} followed by a turn ending in {renderer.eot_token!r}"
        )
    return tokens(renderer, delta[len(header) : end + len(renderer.eot_token)])


def tokens(renderer: ChatRenderer, text: str) -> list[int]:
    """``text`` tokenised alone, without special tokens added (as the renderer tokenises a piece)."""
    return list(renderer.tokenizer([text], add_special_tokens=False)["input_ids"][0])


def policy_written_prefix(generation_prompt: str, prefix: str) -> str:
    """The part of ``prefix`` the policy writes itself: ``prefix`` less the longest start of it that the
    generation prompt already ends with, counted only from the start of one of the prompt's lines and only when
    it holds more than whitespace (``"<think>\\nThe"`` after a prompt ending in ``"\\n<think>"`` is ``"\\nThe"``)."""
    for k in range(min(len(generation_prompt), len(prefix)), 0, -1):
        head = prefix[:k]
        starts_a_line = k == len(generation_prompt) or generation_prompt[-k - 1] == "\n"
        if head.strip() and starts_a_line and generation_prompt.endswith(head):
            return prefix[k:]
    return prefix


def decision_ids(renderer: ChatRenderer, row: ProbeRow) -> tuple[list[int], dict[str, list[int]]]:
    """The ids before the decision (context, then the prefix) and each candidate's ids after them."""
    own = renderer_with_tools(renderer, row.tools)
    try:
        context = rollout_context_ids(own, row.messages, sample=row.id)
    except (RenderError, ValueError) as err:
        raise ProbeContextError(f"{row.source}: field 'messages' (row {row.id!r}) cannot be rendered: {err}") from err
    written = policy_written_prefix(own.generation_prompt, row.prefix)
    prefix_ids = tokens(own, written) if written else []
    candidates = {}
    for name, text in row.candidates.items():
        joint = tokens(own, written + text)
        if joint[: len(prefix_ids)] != prefix_ids or len(joint) == len(prefix_ids):
            raise ProbeContextError(
                f"{row.source}: field 'candidates.{name}' (row {row.id!r}): {text!r} merges with the end of the "
                f"prefix {written[-20:]!r} into other tokens, so its log-prob is not a continuation's; end the "
                "prefix where a token ends (e.g. before the space that starts the candidate)"
            )
        candidates[name] = joint[len(prefix_ids) :]
    return context + prefix_ids, candidates


# -- the probe -------------------------------------------------------------------------------------------


@torch.no_grad()
def probe_decisions(
    model: torch.nn.Module, renderer: ChatRenderer, rows: Sequence[ProbeRow], *, batch_size: int = 8
) -> ProbeResult:
    """Each row's candidate log-probs under ``model`` (eval mode, no gradient), ``batch_size`` sequences a forward.

    One sequence per (row, candidate): the decision's ids then the candidate's, right-padded; the longest go
    first so a batch holds sequences of about one length. The result equals one full forward per sequence.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    sequences: list[tuple[int, str, list[int], int]] = []
    for i, row in enumerate(rows):
        before, candidates = decision_ids(renderer, row)
        sequences += [(i, name, before + ids, len(ids)) for name, ids in candidates.items()]
    order = sorted(range(len(sequences)), key=lambda s: -len(sequences[s][2]))
    pad = pad_id_of(renderer.tokenizer)
    device = next(model.parameters()).device
    logp: list[dict[str, float]] = [{} for _ in rows]
    with eval_mode(model):
        for start in range(0, len(order), batch_size):
            batch = [sequences[s] for s in order[start : start + batch_size]]
            for (i, name, _, _), value in zip(batch, _candidate_logps(model, batch, pad, device)):
                logp[i][name] = value
    return ProbeResult(tuple(_row_probe(row, logp[i]) for i, row in enumerate(rows)))


def _candidate_logps(model: torch.nn.Module, batch: list, pad: int, device: torch.device) -> list[float]:
    """The summed log-prob of each sequence's last ``n`` tokens (one right-padded forward)."""
    width = max(len(ids) for _, _, ids, _ in batch)
    input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    target = torch.zeros((len(batch), width - 1), dtype=torch.bool)
    for b, (_, _, ids, n) in enumerate(batch):
        input_ids[b, : len(ids)] = torch.tensor(ids)
        attention[b, : len(ids)] = 1
        target[b, len(ids) - 1 - n : len(ids) - 1] = True  # position p scores token p + 1
    out = model_token_logprobs(
        model, input_ids.to(device), attention_mask=attention.to(device), target_mask=target.to(device)
    )
    return out.logprobs.double().sum(-1).tolist()


def _row_probe(row: ProbeRow, logp: dict[str, float]) -> RowProbe:
    logp = {name: logp[name] for name in row.candidates}
    top = max(logp.values())
    norm = math.exp(logp[row.correct] - top) / sum(math.exp(v - top) for v in logp.values())
    return RowProbe(row.id, logp, math.exp(logp[row.correct]), norm)
