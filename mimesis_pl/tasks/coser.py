"""CoSER: multi-character role-play of a book scene (given-circumstance acting).

The simulator plays every speaking character, each in its own conversation (its own profile, plot,
scenario and motivation); the partner plays the environment and the next-speaker predictor. Each
utterance, inner thoughts (``[...]``) removed and labelled with its speaker, is shown to every other
character as context (mask 0). At most ``max_rounds`` utterances (10); the
predictor may end the scene (``<END CHAT>``) from round 5 on; an answer naming no valid speaker passes the
turn to the next speaker in the scene's order (the reference drew one at random).

The judge scores four dimensions 1–10; ``score = mean((clamp(s, 1, 10) − 1) / 9)`` (:func:`coser_score`).
Every character that spoke yields a trajectory with the same reward and ``gen_uid``
(``TaskResult.extra_trajectories``), so FoldGRPO counts the rollout once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from .base import RowError, TaskContext, TaskResult, extra_info, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import finish, option, partner_reply, said, transcript_text

PREFIX = "coser"
ENV = "Environment"
END_CHAT = "<END CHAT>"
_THOUGHT = re.compile(r"\[[^\]]*\]")


@dataclass(frozen=True)
class CoserVerdict:
    """The focal character's performance, each an integer 1–10."""

    #: a score outside 1–10 is a judge failure, not clamped (docs/decisions.md S60)
    SCORE_RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "storyline_consistency": (1, 10),
        "anthropomorphism": (1, 10),
        "character_fidelity": (1, 10),
        "storyline_quality": (1, 10),
    }

    storyline_consistency: float
    anthropomorphism: float
    character_fidelity: float
    storyline_quality: float


def coser_score(verdict: CoserVerdict) -> float:
    dims = [(getattr(verdict, f.name) - 1) / 9 for f in fields(verdict)]
    return sum(dims) / len(dims)


def strip_thoughts(text: str) -> str:
    return re.sub(r"\s{2,}", " ", _THOUGHT.sub("", text)).strip()


def next_speaker(answer: str | None, speakers: list[str], current: str, round_index: int) -> str | None:
    """The predictor's choice; ``None`` ends the scene (only from round 5); otherwise the next in order."""
    text = (answer or "").strip()
    if END_CHAT in text:
        if round_index >= 5:
            return None
        text = ""
    for name in sorted(speakers, key=len, reverse=True):
        if name != current and re.search(rf"\b{re.escape(name)}\b", text):
            return name
    return speakers[(speakers.index(current) + 1) % len(speakers)]


def _load(value: Any, row: Mapping[str, Any], name: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as err:
            raise RowError(f"{row_name(row)}: extra_info.{name} is not valid JSON ({err})") from None
    return value


def character_prompt(name: str, card: Mapping[str, Any], plot: str, scenario: str) -> str:
    return (
        f"You are {name} in a scene from a book. Plot so far: {plot}\nThe scene: {scenario}\nWho you are: "
        f"{card.get('profile', '')}\nWhat drives you now: {card.get('motivation', '')}\nSpeak and act only as {name}, "
        "in English, at most 60 words a turn; put unspoken thoughts in [brackets] and actions in (parentheses)."
    )


def judge_prompt(name: str, plot: str, scenario: str, transcript: str, reference: str) -> list[dict[str, str]]:
    keys = ", ".join(f'"{f.name}": <integer 1-10>' for f in fields(CoserVerdict))
    return [
        {"role": "system", "content": "You judge a role-play of a book scene."},
        {
            "role": "user",
            "content": (
                f"Plot: {plot}\nScene: {scenario}\nOriginal dialogue (for reference):\n{reference}\n\n"
                f"Role-play:\n{transcript}\n\n"
                f"Rate the performance of {name}: consistency with the storyline, human-likeness, fidelity to the "
                f"character, and the quality of the story it drives. JSON only: {{{keys}}}"
            ),
        },
    ]


class CoserTask:
    def __init__(self, data_source: str = "coser") -> None:
        self.data_source = data_source

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        info = extra_info(row)
        cards = _load(require(info, row, "characters"), row, "characters")
        speakers = [
            str(s) for s in _load(require(info, row, "speaking_characters_w_env"), row, "speaking_characters_w_env")
        ]
        if not isinstance(cards, Mapping) or not speakers:
            raise RowError(f"{row_name(row)}: extra_info.characters must map names to cards and speakers be non-empty")
        actors = [s for s in speakers if s != ENV]  # every speaking character is the policy, each in its own context
        if not actors:
            raise RowError(f"{row_name(row)}: extra_info.speaking_characters_w_env names no character")
        plot, scenario = str(info.get("plot_summary", "")), str(require(info, row, "scenario"))
        prompts = {s: character_prompt(s, cards.get(s, {}), plot, scenario) for s in actors}
        env_prompt = (
            f"You narrate the environment of this book scene: {scenario}\n"
            "Describe only events and surroundings, briefly."
        )
        convs: dict[str, PolicyConversation] = {}
        pending: dict[str, list[str]] = {s: [] for s in actors}  # lines each character has not seen yet
        lines: list[tuple[str, str]] = []
        current, partner_failures = speakers[0], 0
        for r in range(int(option(ctx, self.data_source, "max_rounds", 10))):
            if current != ENV:
                opening = "\n".join(pending[current]) or "The scene begins."
                try:
                    if current not in convs:
                        convs[current] = PolicyConversation(
                            ctx.policy,
                            [{"role": "system", "content": prompts[current]}, {"role": "user", "content": opening}],
                            ctx.enable_think,
                            sample=f"{row_name(row)} {gen_uid} {current}",
                        )
                    elif pending[current]:
                        convs[current].append([{"role": "user", "content": opening}])
                    turn = await convs[current].step()
                except BudgetExhausted:
                    break
                pending[current] = []
                text = strip_thoughts(said(convs[current], turn.text))
                if not text:
                    break
                lines.append((f"SIMULATED {current}", text))
            else:
                history = transcript_text([(w.removeprefix("SIMULATED "), t) for w, t in lines]) or "(nothing yet)"
                reply = await partner_reply(
                    ctx,
                    [
                        {"role": "system", "content": env_prompt},
                        {"role": "user", "content": f"The scene so far:\n{history}\n\nYour turn."},
                    ],
                )
                if reply is None:
                    partner_failures += 1
                    break
                text = strip_thoughts(reply)
                lines.append((ENV, text))
            for other in actors:
                if other != current:
                    pending[other].append(f"{current}: {text}")
            history = transcript_text([(w.removeprefix("SIMULATED "), t) for w, t in lines])
            answer = await partner_reply(
                ctx,
                [
                    {
                        "role": "user",
                        "content": (
                            f"Scene so far:\n{history}\n\n"
                            f"Who speaks next? Answer with one name from {speakers}, or {END_CHAT} "
                            "if the scene is over."
                        ),
                    }
                ],
            )
            nxt = next_speaker(answer, speakers, current, r)
            if nxt is None:
                break
            current = nxt
        played = [c for c in convs.values() if c.turns]
        if not played:  # no character got a turn: an empty conversation so the row reports no_turns
            played = [
                PolicyConversation(
                    ctx.policy,
                    [
                        {"role": "system", "content": prompts[actors[0]]},
                        {"role": "user", "content": "The scene begins."},
                    ],
                    ctx.enable_think,
                    sample=f"{row_name(row)} {gen_uid}",
                )
            ]
        score = 0.0
        if played[0].turns:
            reference = str(info.get("reference_dialogue") or "")
            request = JudgeRequest(
                judge_prompt(", ".join(convs), plot, scenario, transcript_text(lines), reference),
                lines,
                scenario,
                "SIMULATED",
            )
            verdict = await ctx.judge.judge(request, CoserVerdict)
            score = None if verdict is None else coser_score(verdict)
        return finish(
            played[0],
            ctx,
            row,
            data_source=self.data_source,
            prefix=PREFIX,
            group_id=group_id,
            gen_uid=gen_uid,
            score=score,
            sub={"partner_failures": float(partner_failures), "characters": float(len(convs))},
            transcript=lines,
            others=played[1:],
        )


def coser(data_source: str) -> CoserTask:
    return CoserTask(data_source)
