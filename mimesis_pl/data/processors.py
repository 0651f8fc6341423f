"""Per-``data_source`` processors for role-swap SFT: which side of a conversation is trained.

``swap``: the human side becomes the trained ``assistant`` role and the AI side becomes ``user``
context (the model learns to play the human). ``no_swap``: the assistant stays the target, and a
conversation that does not open with a system message gains an empty one, as in the reference.
``fold_swap``: like ``swap`` but turns before the last ``keep_turns`` are folded into one context
message (long psychology-experiment transcripts).

Routing is the reference's: an exact key, else the first key of the table, in the reference's order,
that is a substring of the ``data_source`` (so ``tom_from_coser_v2`` is swapped by ``coser``);
``fallback="exact"`` turns the substring step off (docs/decisions.md S16, S63). ``strip_system`` is
honoured by every processor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..checks import check_choice

Messages = list[dict[str, Any]]
Fallback = Literal["substring", "exact"]

_SWAP = {"assistant": "user", "user": "assistant"}

_CONVOKIT = (
    "IDEA-NTHU-unintended-offense-tweets",
    "casino-corpus",
    "chromium-corpus",
    "conversations-gone-awry-cmv-corpus",
    "conversations-gone-awry-cmv-corpus-large",
    "conversations-gone-awry-corpus",
    "emotional-support",
    "friends-corpus",
    "mediasum-corpus",
    "npr-2p-corpus",
    "parliament-corpus",
    "persuasionforgood-corpus",
    "reddit-coarse-discourse-corpus",
    "reddit-corpus-small",
    "small-pool",
    "supreme-corpus",
    "switchboard-corpus",
    "tennis-corpus",
    "wiki-articles-for-deletion-corpus",
    "wiki-corpus",
    "wikiconv-2018",
    "winning-args-corpus",
)
_HUMANUAL = ("humanual", *(f"humanual_{k}" for k in ("book", "chat", "email", "news", "opinion", "politics")))
_TOM_SOC = (
    "tom_from_coser",
    "tom_socialiqa",
    "tom_mindgames",
    "tom_moralstories",
    "tom_fantom",
    "tom_hitom",
    "tom_paratomi",
    "tom_mmtom",
    "tom_sotopia",
    "soc_sotopia_tom_silver",
    "soc_haico",
    "soc_persona_conflicts",
    "soc_cornell",
    "soc_sotopia_pi_bc",
)

#: The reference's routing table, in its insertion order (the order decides the substring fallback); the
#: convokit corpora are listed under both bare and ``convokit_`` names.
DEFAULT_ROUTING: dict[str, str] = {
    "coser": "swap",
    **dict.fromkeys(
        ("wildchat", "wildchat_v1", "lmsys", "oasst1", "oasst2", "prism", "alignx", "nectar", "hh_rlhf"), "swap"
    ),
    **dict.fromkeys(("dialogue", "dailydialog", "cornell_movie", "empathetic"), "swap"),
    **dict.fromkeys(_HUMANUAL, "swap"),
    "experiment": "swap",
    "psych101": "fold_swap",
    "socsci210": "swap",
    "human_llm": "no_swap",
    **dict.fromkeys(_TOM_SOC, "no_swap"),
    "rm_r1_sft": "no_swap",
    **dict.fromkeys(("tom_characterllm", "tom_grimulkan", "tom_tominli"), "no_swap"),
    **dict.fromkeys(("education_dialogue", "mathdial", "studychat"), "swap"),
    **dict.fromkeys(_CONVOKIT, "swap"),
    **{f"convokit_{s}": "swap" for s in _CONVOKIT},
    **dict.fromkeys(("sotopia", "chat", "step35_flash_sft"), "no_swap"),
}


def _strip(messages: Messages, strip_system: bool) -> Messages:
    return [dict(m) for m in messages if not (strip_system and m.get("role") == "system")]


def swap(messages: Messages, strip_system: bool = False) -> Messages:
    """Human turns → ``assistant`` (trained), AI turns → ``user`` (context); other roles unchanged."""
    out = _strip(messages, strip_system)
    for m in out:
        m["role"] = _SWAP.get(m.get("role"), m.get("role"))
    return out


EMPTY_SYSTEM = {"role": "system", "content": ""}


def no_swap(messages: Messages, strip_system: bool = False) -> Messages:
    """Keep roles: the assistant is the target; an empty system message leads when none does (as the reference)."""
    out = _strip(messages, strip_system)
    return out if out and out[0].get("role") == "system" else [dict(EMPTY_SYSTEM), *out]


def fold_swap(messages: Messages, strip_system: bool = False, keep_turns: int = 20) -> Messages:
    """Swap, keeping system messages and the last ``keep_turns`` other turns.

    Earlier turns become one *separate* context message (role ``user`` after the swap) placed before
    the kept turns, so no kept turn changes its role (the reference overwrote one, S16).
    """
    swapped = swap(messages, strip_system)
    systems = [m for m in swapped if m.get("role") == "system"]
    turns = [m for m in swapped if m.get("role") != "system"]
    if len(turns) <= keep_turns:
        return systems + turns
    earlier, kept = turns[:-keep_turns], turns[-keep_turns:]
    # Name the speakers by who they were in the source conversation.
    speaker = {"assistant": "human", "user": "assistant"}
    lines = [f"{speaker.get(m['role'], m['role'])}: {m.get('content', '')}" for m in earlier]
    summary = {"role": "user", "content": "[Earlier conversation]\n" + "\n\n".join(lines)}
    return systems + [summary] + kept


PROCESSORS: dict[str, Callable[..., Messages]] = {"swap": swap, "no_swap": no_swap, "fold_swap": fold_swap}


class ProcessorRouter:
    """Map a row's ``data_source`` to a processor.

    Args:
        routing: extra or overriding ``data_source → processor name`` entries (merged over
            :data:`DEFAULT_ROUTING` unless ``replace_defaults``).
        default_processor: used for unknown sources; ``None`` makes them an error.
        strip_system: drop system messages in every processor.
        fold_keep_turns: turns kept verbatim by ``fold_swap``.
        fallback: ``substring`` (the reference): a source with no exact entry takes the processor of the first
            table key it contains; ``exact``: only exact entries (then ``default_processor``).
    """

    def __init__(
        self,
        routing: Mapping[str, str] | None = None,
        default_processor: str | None = None,
        strip_system: bool = False,
        fold_keep_turns: int = 20,
        replace_defaults: bool = False,
        fallback: Fallback = "substring",
    ) -> None:
        check_choice("fallback", fallback, ("substring", "exact"))
        table = {} if replace_defaults else dict(DEFAULT_ROUTING)
        table.update(routing or {})
        for source, name in table.items():
            if name not in PROCESSORS:
                raise ValueError(f"routing[{source!r}] = {name!r}: unknown processor; known: {sorted(PROCESSORS)}")
        if default_processor is not None and default_processor not in PROCESSORS:
            raise ValueError(f"default_processor {default_processor!r}: unknown; known: {sorted(PROCESSORS)}")
        self.table = table
        self.default_processor = default_processor
        self.strip_system = strip_system
        self.fold_keep_turns = fold_keep_turns
        self.fallback = fallback

    def processor_name(self, data_source: str) -> str:
        name = self.table.get(data_source)
        if name is None and self.fallback == "substring":
            name = next((self.table[key] for key in self.table if key in data_source), None)
        if name is None:
            name = self.default_processor
        if name is None:
            raise KeyError(
                f"unknown data_source {data_source!r}: add it to `routing` or set `default_processor`; "
                f"known sources: {sorted(self.table)}"
            )
        return name

    def __call__(self, data_source: str, messages: Messages) -> Messages:
        name = self.processor_name(data_source)
        if name == "fold_swap":
            return fold_swap(messages, self.strip_system, self.fold_keep_turns)
        return PROCESSORS[name](messages, self.strip_system)
