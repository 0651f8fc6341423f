"""Incremental chat rendering: the single source of token ids and loss masks for SFT and RL.

Message ``k`` contributes the token *delta* ``render(messages[:k+1]) - render(messages[:k])``.
A message of a trained role is trained on everything after its role header up to and including
its end-of-turn token; the header and every other message are context. Once per sample the
concatenated deltas are checked against the tokenisation of the full render, so a template that
rewrites earlier turns (Qwen3 drops old ``<think>`` blocks) or a tokeniser that merges tokens across
a boundary is an error instead of a silent difference between what is trained and what is served.

RL uses the same deltas: :meth:`ChatRenderer.continuation_ids` appends the tokens of new messages
after a turn the policy generated, without re-tokenising the generated text.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateError
from transformers.utils.chat_template_utils import render_jinja_template

from .chat_templates import (
    available_templates,
    load_chat_template,
    suggest_training_template,
)
from .validate import ROLES, validate_messages

_PROBE = "\u2063mimesis-probe\u2063"


class RenderError(ValueError):
    """A conversation that cannot be rendered into a consistent token sequence."""


@dataclass(frozen=True)
class RenderedChat:
    """Token ids of one conversation and what is trained.

    ``input_ids`` and ``loss_mask`` have the same length; ``message_spans[k]`` is the half-open
    token range ``[start, end)`` of message ``k``'s delta and ``trained_spans`` the ranges with mask 1.
    """

    input_ids: list[int]
    loss_mask: list[int]
    message_spans: list[tuple[int, int]]
    trained_spans: list[tuple[int, int]]

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def num_trained(self) -> int:
        return sum(self.loss_mask)


class ChatRenderer:
    """Render conversations with a tokenizer's chat template, by deltas.

    Args:
        tokenizer: a transformers tokenizer with a ``chat_template``.
        train_roles: roles whose content (and end-of-turn token) get loss mask 1.
        tools: tool schemas passed to the template (rendered in the system block).
        eot_token: the end-of-turn token; defaults to the tokenizer's ``eos_token``.
        chat_template: a shipped template name (``"qwen3"``) or a ``.jinja`` path; ``None`` uses the
            tokenizer's own ``chat_template``.
        **template_kwargs: extra template variables, e.g. ``enable_thinking=True``, ``date_string=...``.
    """

    def __init__(
        self,
        tokenizer: Any,
        train_roles: Sequence[str] = ("assistant",),
        tools: list[dict] | None = None,
        eot_token: str | None = None,
        chat_template: str | None = None,
        **template_kwargs: Any,
    ) -> None:
        template = (
            load_chat_template(chat_template)
            if chat_template is not None
            else getattr(tokenizer, "chat_template", None)
        )
        if not template or not isinstance(template, str):
            raise RenderError(
                f"tokenizer {type(tokenizer).__name__} has no chat_template (or several, by name); set chat_template "
                f"to one of {available_templates()} or a .jinja path"
            )
        self.chat_template = template
        unknown = [r for r in train_roles if r not in ROLES]
        if unknown:
            raise ValueError(f"train_roles: unknown role(s) {unknown}; expected a subset of {ROLES}")
        self.tokenizer = tokenizer
        self.train_roles = tuple(train_roles)
        self.tools = tools
        self.template_kwargs = dict(template_kwargs)
        # Templates may print any special token (Llama's bos_token); a tokenizer without one renders "".
        specials = {k: "" for k in ("bos_token", "eos_token", "unk_token", "pad_token")}
        specials.update({k: v for k, v in tokenizer.special_tokens_map.items() if isinstance(v, str)})
        self._jinja_kwargs = {**specials, **template_kwargs}
        eot_token = eot_token or tokenizer.eos_token
        if eot_token is None:
            raise RenderError("no end-of-turn token: pass eot_token= or give the tokenizer an eos_token")
        self.eot_token = eot_token
        self.eot_id = tokenizer.convert_tokens_to_ids(eot_token)
        self._header_ids: dict[str, list[int]] = {}
        self._header_text: dict[str, str] = {}
        self.generation_prompt = self._find_generation_prompt()

    # -- text ---------------------------------------------------------------------------------

    def render_text(self, messages: Sequence[Mapping], add_generation_prompt: bool = False) -> str:
        """The template's text for ``messages`` (exactly what ``apply_chat_template`` renders)."""
        rendered, _ = render_jinja_template(
            conversations=[list(messages)],
            tools=self.tools,
            chat_template=self.chat_template,
            add_generation_prompt=add_generation_prompt,
            **self._jinja_kwargs,
        )
        return rendered[0]

    def _find_generation_prompt(self) -> str:
        probe = [{"role": "user", "content": "x"}]
        with_prompt = self.render_text(probe, add_generation_prompt=True)
        without = self.render_text(probe, add_generation_prompt=False)
        if not with_prompt.startswith(without) or len(with_prompt) == len(without):
            raise RenderError(
                "the chat template has no generation prompt: add_generation_prompt=True must append the "
                "assistant header (e.g. '<|im_start|>assistant\\n') to the rendered conversation"
            )
        return with_prompt[len(without) :]

    def header_text(self, role: str) -> str:
        """The text of the role header that precedes a message's trained content.

        For ``assistant`` it is the generation prompt — exactly what the model is conditioned on
        when it generates — so SFT trains the same tokens RL samples.
        """
        if role not in self._header_text:
            if role == "assistant":
                text = self.generation_prompt
            else:
                text = self._probe_header(role)
            self._header_text[role] = text
        return self._header_text[role]

    def _probe_header(self, role: str) -> str:
        # In context first: a lone message would also carry what a template puts before the first
        # message (Llama's system block, Qwen2.5's default system prompt).
        context = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
        problems: list[str] = []
        for before in (context, []):
            try:
                head = self.render_text(before) if before else ""
                delta = self.render_text([*before, {"role": role, "content": _PROBE}])
            except (TemplateError, TypeError, ValueError) as err:  # the template refuses this probe
                problems.append(f"{type(err).__name__}: {err}")
                delta, head = "", ""
            if delta.startswith(head) and _PROBE in delta[len(head) :]:
                delta = delta[len(head) :]
                return delta[: delta.index(_PROBE)]
        raise RenderError(
            f"the chat template does not render a {role} message's content as given ({problems}); "
            f"its header cannot be found, so {role} messages cannot be trained"
        )

    def header_ids(self, role: str) -> list[int]:
        """Token ids of :meth:`header_text` (tokenised alone, as a prompt ending in it is)."""
        if role not in self._header_ids:
            text = self.header_text(role)
            self._header_ids[role] = self._tokenize([text])[0] if text else []
        return self._header_ids[role]

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"]

    # -- SFT ----------------------------------------------------------------------------------

    def render(self, messages: Sequence[Mapping], sample: Any = None) -> RenderedChat:
        """Token ids and loss mask of a whole conversation; ``sample`` names it in errors.

        A trained message is tokenised as its header (the generation prompt) followed by the rest,
        because that is how the model meets it: a prompt ending in the header, then its own tokens.
        """
        validate_messages(messages, sample=sample)
        ends, texts = self._boundaries(messages, sample)
        deltas = [texts[0]] + [texts[g][len(texts[g - 1]) :] for g in range(1, len(texts))]
        pieces: list[str] = []
        for k, delta in zip(ends, deltas):
            role = messages[k]["role"]
            if role in self.train_roles:
                header = self.header_text(role)
                if not delta.startswith(header):
                    raise RenderError(
                        f"sample {sample}: message {k} ({role}): it renders as {delta[:60]!r}, which does not start "
                        f"with the {role} header {header!r} the model is prompted with. {self._fix_hint()}"
                    )
                pieces += [header, delta[len(header) :]]
            else:
                pieces.append(delta)
        piece_ids = iter(self._tokenize(pieces))

        input_ids: list[int] = []
        loss_mask: list[int] = []
        message_spans: list[tuple[int, int]] = []
        trained_spans: list[tuple[int, int]] = []
        for k in ends:
            start = len(input_ids)
            # Messages the template cannot render on their own share the next boundary's delta.
            message_spans += [(start, start)] * (k - len(message_spans))
            if messages[k]["role"] in self.train_roles:
                header, rest = next(piece_ids), next(piece_ids)
                hi = next((i + 1 for i in range(len(rest) - 1, -1, -1) if rest[i] == self.eot_id), len(rest))
                input_ids += header + rest
                loss_mask += [0] * len(header) + [1] * hi + [0] * (len(rest) - hi)
                if hi:
                    trained_spans.append((start + len(header), start + len(header) + hi))
            else:
                ids = next(piece_ids)
                input_ids += ids
                loss_mask += [0] * len(ids)
            message_spans.append((start, len(input_ids)))

        if "".join(deltas) != texts[-1]:  # holds by construction; cheap, so checked anyway
            raise RenderError(f"sample {sample}: the concatenated deltas differ from the full render")
        if not self._boundaries_are_safe(deltas):
            # What a server tokenises: the whole text, cut only where a generation starts.
            cuts = [""]
            for k, delta in zip(ends, deltas):
                if messages[k]["role"] in self.train_roles:
                    header = self.header_text(messages[k]["role"])
                    cuts[-1] += header
                    cuts.append(delta[len(header) :])
                else:
                    cuts[-1] += delta
            full_ids = [i for ids in self._tokenize(cuts) for i in ids]
            if full_ids != input_ids:
                raise RenderError(_token_mismatch_message(sample, input_ids, full_ids, message_spans, self.tokenizer))
        return RenderedChat(input_ids, loss_mask, message_spans, trained_spans)

    def _boundaries_are_safe(self, deltas: list[str]) -> bool:
        """True when tokenising the deltas one by one provably equals tokenising their concatenation.

        A fast tokenizer splits out added tokens (``<|im_start|>`` …) before normalising and merging,
        so text on either side of one is tokenised independently. If every delta after the first
        starts with such a token (not stripping neighbouring whitespace) and no added token can match
        across the boundary, the per-delta ids are the full render's ids and the second, full
        tokenisation is skipped. Anything else (slow tokenizers, other templates) takes the full check.
        """
        starters = self._safe_starters()
        if not starters:
            return False
        longest = max(len(tok) for tok in self._added_texts)
        for left, right in itertools.pairwise(deltas):
            if not right.startswith(starters):
                return False
            window = left[-longest:] + right[:longest]
            cut = len(left[-longest:])
            for tok in self._added_texts:  # an added token straddling the boundary would change the split
                at = window.find(tok)
                while at != -1:
                    if at < cut < at + len(tok):
                        return False
                    at = window.find(tok, at + 1)
        return True

    def _safe_starters(self) -> tuple[str, ...]:
        if not hasattr(self, "_starters"):
            backend = getattr(self.tokenizer, "_tokenizer", None)
            added = list(getattr(self.tokenizer, "added_tokens_decoder", {}).values())
            self._added_texts = [a.content for a in added]
            plain = [a for a in added if not (a.lstrip or a.rstrip or a.single_word)]
            self._starters = tuple(a.content for a in plain) if backend is not None and len(plain) == len(added) else ()
        return self._starters

    def _boundaries(self, messages: Sequence[Mapping], sample: Any) -> tuple[list[int], list[str]]:
        """Message indices ``k`` whose prefix ``messages[:k+1]`` is a token boundary, and their texts.

        Only the boundaries around trained messages (and the end) are required. A template may refuse
        other prefixes (Qwen3.5 raises on a system prompt alone) or rewrite them when the next message
        arrives (consecutive tool results share one turn); such a message joins the next one's delta.
        A required prefix that fails or is rewritten is an error naming the message and the fix.
        """
        n = len(messages)
        trained = [m["role"] in self.train_roles for m in messages]
        required = [k == n - 1 or trained[k] or trained[k + 1] for k in range(n)]
        stack: list[tuple[int, str]] = []
        for k in range(n):
            try:
                text = self.render_text(messages[: k + 1])
            except Exception as err:  # jinja raises many types; name the message instead
                if not required[k]:
                    continue
                raise RenderError(
                    f"sample {sample}: message {k} ({messages[k]['role']}): the chat template refuses the conversation "
                    f"up to this message: {type(err).__name__}: {err}. {self._fix_hint()}"
                ) from err
            while stack and not text.startswith(stack[-1][1]) and not required[stack[-1][0]]:
                stack.pop()
            if stack and not text.startswith(stack[-1][1]):
                j, before = stack[-1]
                at = _first_difference(before, text)
                raise RenderError(
                    f"sample {sample}: message {k} ({messages[k]['role']}): rendering it changed the text of earlier "
                    f"messages (up to message {j}) at char {at} "
                    f"({before[at : at + 40]!r} became {text[at : at + 40]!r}). "
                    "The template rewrites earlier turns (e.g. Qwen3 drops <think> blocks of old assistant turns), so "
                    f"training on deltas would differ from what the model is served. {self._fix_hint()}"
                )
            stack.append((k, text))
        return [k for k, _ in stack], [text for _, text in stack]

    def _fix_hint(self) -> str:
        name = suggest_training_template(self.chat_template) or "chatml"
        return (
            f"Train with a prefix-preserving template: set chat_template: {name} "
            f"(mimesis_pl/chat/templates/{name}.jinja "
            "renders the last turn as the model family's own template does and never rewrites earlier turns), "
            "or give the path of your own .jinja."
        )

    # -- RL -----------------------------------------------------------------------------------

    def prompt_ids(self, messages: Sequence[Mapping], sample: Any = None) -> list[int]:
        """Token ids of ``messages`` followed by the generation prompt (the start of a rollout)."""
        validate_messages(messages, sample=sample)
        return self._tokenize([self.render_text(messages, add_generation_prompt=True)])[0]

    def continuation_ids(
        self,
        messages: Sequence[Mapping],
        new_messages: Sequence[Mapping],
        add_generation_prompt: bool = True,
        sample: Any = None,
    ) -> list[int]:
        """Tokens to append after the ids of ``messages`` when ``new_messages`` arrive.

        ``messages`` is the conversation the existing ids stand for. When its last message is an
        assistant turn the policy generated, those ids end at the end-of-turn token, so the
        template's separator after it (``"\\n"`` in ChatML) is added here. The generated text itself
        is never re-tokenised.
        """
        validate_messages(list(messages) + list(new_messages), sample=sample)
        before = self.render_text(messages)
        after = self.render_text(list(messages) + list(new_messages), add_generation_prompt=add_generation_prompt)
        if not after.startswith(before):
            at = _first_difference(before, after)
            raise RenderError(
                f"sample {sample}: appending {len(new_messages)} message(s) changed the text of earlier ones at "
                f"char {at}; the template is not prefix-stable, so token-in/token-out rollouts are impossible. "
                f"{self._fix_hint()}"
            )
        tail = ""
        if messages and messages[-1]["role"] == "assistant":
            cut = before.rfind(self.eot_token)
            if cut == -1:
                raise RenderError(f"sample {sample}: the last assistant turn renders without {self.eot_token!r}")
            tail = before[cut + len(self.eot_token) :]
        return self._tokenize([tail + after[len(before) :]])[0]

    def message_delta_ids(self, history: Sequence[Mapping], message: Mapping) -> list[int]:
        """Token ids one complete ``message`` adds after ``history`` (e.g. a coaching note)."""
        return self.continuation_ids(history, [message], add_generation_prompt=False)


def render_with_mask(
    tokenizer: Any,
    messages: Sequence[Mapping],
    train_roles: Sequence[str] = ("assistant",),
    tools: list[dict] | None = None,
    sample: Any = None,
    **template_kwargs: Any,
) -> RenderedChat:
    """Functional form of :meth:`ChatRenderer.render` (builds a renderer per call; reuse one in loops)."""
    return ChatRenderer(tokenizer, train_roles=train_roles, tools=tools, **template_kwargs).render(messages, sample)


def _first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _token_mismatch_message(sample, ids, full, spans, tokenizer) -> str:
    at = _first_difference(ids, full)  # works on lists too
    k = next((i for i, (s, e) in enumerate(spans) if s <= at < e), len(spans) - 1)
    got = tokenizer.convert_ids_to_tokens(ids[max(0, at - 2) : at + 3])
    want = tokenizer.convert_ids_to_tokens(full[max(0, at - 2) : at + 3])
    return (
        f"sample {sample}: tokens of the per-message deltas differ from the tokens of the full render at "
        f"position {at} (message {k}): deltas give {got}, the full render gives {want}. The tokenizer merges "
        "characters across a message boundary, so the trained sequence would differ from what is served."
    )
