"""PersuadeGym: change the user's mind about a claim it holds.

The agent sees only the claim; the user also holds a private argument for it
(``create_kwargs.argument``). Each agent ``answer`` is an argument; the user simulator replies and
ends its reply with a line ``Stance: <label>`` on the seven-point scale below. The stance line stays
in the observation (the agent is told where the user stands); a reply without a readable stance
leaves the stance unchanged and is counted in ``info["stance_unparsed"]``.

Reward (``reward_rule``; docs/decisions.md A51): stances are indexed 0 (Strongly Agree, the start) to 6
(Strongly Disagree).

- ``"userrl"`` (default, UserRL's rule): a step earns ``max(0, index - previous_index) / 6``. A user whose
  stance oscillates pays again for ground it regains; the base class caps the episode sum at 1.
- ``"progress"`` (ours): ``max(0, index - best_index_so_far) / 6``: only progress beyond the furthest
  stance reached pays, and the episode score is ``best_index / 6``.

The episode ends at Strongly Disagree. With ``judge=`` (a served endpoint, :mod:`.judging`) the stance is
not read from the user's reply but judged as UserRL's persuadee states it: the judge sees the claim, the
user's private argument, the previous stance, the exchanges so far and the latest argument (what UserRL's
persuadee sees) and returns one of the seven labels; the user simulator still writes the reply.

Scripted user (:func:`scripted_reply`): the private argument is cut into up to four points of five
specific keywords each; an argument naming three keywords of a point answers it. The stance moves from
Strongly Agree towards Strongly Disagree in proportion to the points answered, and each reply names
the keywords of the next open point ("you have not answered my point about …") and ends with
``Stance: <label>``. Expert (:class:`PersuadeExpert`): answers the point the user says is still open.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from mimesis_pl.envs.base import Action, Gym, StepResult, require
from mimesis_pl.envs.expert import Expert, ExpertMove, Turn
from mimesis_pl.envs.gyms.judging import VerdictReading, chat, check_reading, make_judge, verdict_label
from mimesis_pl.envs.gyms.rules import persona_field
from mimesis_pl.envs.spec import GymSpec, UserRLPackage
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.text import content_words, is_vague, sentences, stem, surface_forms, words
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator

if TYPE_CHECKING:
    from mimesis_pl.llm import ChatModelSettings

STANCES: tuple[str, ...] = (
    "Strongly Agree",
    "Agree",
    "Partly Agree",
    "Neutral",
    "Partly Disagree",
    "Disagree",
    "Strongly Disagree",
)
_STANCE_LINE = re.compile(r"stance\s*[:\-]\s*\**\s*([a-z ]+)", re.IGNORECASE)

PERSONA_TEMPLATE = """\
You hold the claim below, for the reasons given in "argument". Someone will argue against it.
- Reply to their latest argument in at most four sentences, speaking to them directly ("you").
- Change your position only as far as their arguments really answer your reasons; you may also hold firm.
- End every reply with a final line of the form "Stance: <label>", where <label> is exactly one of: {labels}.
- Your current stance before their first argument is "Strongly Agree".
<persona>
{persona}
</persona>"""


def parse_stance(reply: str) -> str | None:
    """The label of the last ``Stance: ...`` line of a reply, or ``None`` if there is none."""
    found = None
    for match in _STANCE_LINE.finditer(reply):
        text = " ".join(match.group(1).split()).lower()
        # Longest label first so that "strongly disagree" is not read as "disagree".
        for label in sorted(STANCES, key=len, reverse=True):
            if text.startswith(label.lower()):
                found = label
                break
    return found


def stance_line(label: str) -> str:
    return f"Stance: {label}"


class PersuadeGym(Gym):
    """Argue against the user's claim until it changes its stance."""

    env_name = "PersuadeGym"
    data_sources = ("interact_persuade",)
    choices = ("answer",)

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        reward_rule: Literal["userrl", "progress"] = "userrl",
        judge: ChatModelSettings | Mapping[str, Any] | None = None,
        off_prompt_choices: Literal["userrl", "refuse"] = "userrl",
        verdicts: VerdictReading = "userrl",
    ) -> None:
        super().__init__(user=user)
        if reward_rule not in ("userrl", "progress"):
            raise ValueError(f"reward_rule must be 'userrl' or 'progress', got {reward_rule!r}")
        self.reward_rule = reward_rule
        self.judge = make_judge(judge, gym=self.env_name)
        if off_prompt_choices not in ("userrl", "refuse"):
            raise ValueError(f"off_prompt_choices must be 'userrl' or 'refuse', got {off_prompt_choices!r}")
        # UserRL reads any choice as a argument; ``refuse`` takes only the offered one (A87)
        self.also_accepts = ("action", "search") if off_prompt_choices == "userrl" else ()
        self.verdicts = check_reading(verdicts, where=self.env_name)

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()

    async def _reset(self, task: GymTask) -> None:
        self._claim = str(require(task.hidden, "claim", where=task.source))
        self._argument = str(require(task.hidden, "argument", where=task.source))
        self._stance = 0
        self._best = 0
        self._stance_lost = False  # UserRL kept a label it cannot place as the stance (A86)

    def _persona_prompt(self) -> str:
        persona: dict[str, Any] = {"gym": self.env_name, "claim": self._claim, "argument": self._argument}
        return PERSONA_TEMPLATE.format(
            labels=", ".join(STANCES), persona=json.dumps(persona, ensure_ascii=False, indent=1)
        )

    async def _step(self, action: Action) -> StepResult:
        earlier = list(self._dialogue)
        reply = await self._ask_user(action.content)
        info: dict[str, Any] = {"user": reply}
        if self.judge is not None:
            messages = judge_stance_messages(
                self._claim, self._argument, STANCES[self._stance], earlier, action.content
            )
            raw = await self.judge.ask(messages, lambda data: stance_label(data, self.verdicts))
            label = raw if raw in STANCES else None
            info["grader"] = "judge"
        else:
            label = parse_stance(reply.public)
        previous, lost = self._stance, self._stance_lost
        if label is None:
            info["stance_unparsed"] = 1
        else:
            self._stance = STANCES.index(label)
        # UserRL stores a judged label outside its scale as the stance: no change is measured from or to it
        self._stance_lost = label is None and self.judge is not None
        unplaced = lost or self._stance_lost
        reward = 0.0 if unplaced else stance_reward(previous, self._best, self._stance, self.reward_rule)
        self._best = max(self._best, self._stance)
        info["stance"] = STANCES[self._stance]
        done = self._stance == len(STANCES) - 1
        return self._result(reply.public, reward, done=done, **info)


def stance_label(data: Mapping[str, Any], reading: VerdictReading = "userrl") -> str:
    """The judged stance as written (``userrl``) or matched to a label case-insensitively (``lenient``), A86."""
    return verdict_label(data, "stance", STANCES, reading=reading)


def stance_reward(previous: int, best: int, new: int, rule: str) -> float:
    """One step's reward from stance indices: against the previous stance (``userrl``) or the best (``progress``)."""
    base = previous if rule == "userrl" else best
    return max(0, new - base) / (len(STANCES) - 1)


JUDGE_SYSTEM = (
    "You are the person described below, holding a claim for the reasons given, in a debate with someone "
    "arguing against it. Judge honestly how far their latest argument moves you; you may change your mind "
    "or hold firm.\n"
    'Reply with a JSON object: {"thought": "<your reasoning>", "stance": "<one of: ' + ", ".join(STANCES) + '>"}'
)


def judge_stance_messages(
    claim: str, argument: str, previous: str, exchanges: Sequence[tuple[str, str]], latest: str
) -> list[dict[str, str]]:
    """What UserRL's persuadee sees: claim, its own argument, previous stance, the history, the latest argument."""
    history = "\n".join(f"They said: {said}\nYou replied: {heard}" for said, heard in exchanges) or "(none)"
    user = (
        f"Your claim:\n{claim}\n\nYour reasons:\n{argument}\n\nYour stance so far: {previous}\n\n"
        f"Conversation so far:\n{history}\n\nTheir latest argument:\n{latest.strip()}"
    )
    return chat(JUDGE_SYSTEM, user)


# Scripted user: how many points an argument is cut into, and how a point counts as answered.
MAX_POINTS = 4
KEYWORDS_PER_POINT = 5
HITS_TO_ANSWER = 3


def persuasion_points(claim: str, argument: str) -> list[list[str]]:
    """The argument cut into at most four points, each as its ordered keyword stems (claim words excluded)."""
    parts = sentences(argument)
    if not parts:
        return []
    n = min(MAX_POINTS, len(parts))
    size, extra = divmod(len(parts), n)
    groups, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        groups.append(" ".join(parts[start:end]))
        start = end
    used = set(content_words(claim))
    points = []
    for text in groups:
        allowed = content_words(text) - used
        # Long, specific words make the point recognisable; each stem belongs to one point only.
        first: dict[str, tuple[int, int]] = {}
        for i, w in enumerate(words(text)):
            s = stem(w)
            if len(w) >= 4 and w.isalpha() and s in allowed and not is_vague(w) and s not in first:
                first[s] = (-len(w), i)
        ranked = sorted(first, key=first.__getitem__)[:KEYWORDS_PER_POINT]
        used.update(ranked)
        points.append(ranked)
    return [p for p in points if p]


def _answers_point(argument: str, point: Sequence[str]) -> bool:
    return len(content_words(argument) & set(point)) >= min(HITS_TO_ANSWER, len(point))


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The user's reply to the last argument: which point it answered, the next open one, the stance line."""
    claim, argument = str(persona_field(persona, "claim")), str(persona_field(persona, "argument"))
    points = persuasion_points(claim, argument)
    forms = surface_forms(argument)
    answered: list[int] = []
    new: list[int] = []
    for turn, text in enumerate(utterances):
        for i, point in enumerate(points):
            if i not in answered and _answers_point(text, point):
                answered.append(i)
                if turn == len(utterances) - 1:
                    new.append(i)
    # Stance index 0 (Strongly Agree) .. 6 (Strongly Disagree) in proportion to the points answered;
    # an argument with no usable reasons has nothing left to defend.
    top = len(STANCES) - 1
    index = min(top, int(top * len(answered) / len(points) + 0.5)) if points else top
    label = STANCES[index]
    lines = []
    if new:
        hit = sorted(content_words(utterances[-1]) & set().union(*(points[i] for i in new)))
        lines.append(f"You make a fair point about {_listing([forms.get(s, s) for s in hit[:3]])}.")
    else:
        lines.append("I'm not persuaded by that.")
    remaining = [i for i in range(len(points)) if i not in answered]
    if remaining:
        nxt = [forms.get(s, s) for s in points[remaining[0]][:HITS_TO_ANSWER]]
        lines.append(
            f"I still believe that {_lower_first(claim)}, and you have not answered my point about {_listing(nxt)}."
        )
    else:
        lines.append(f"You have convinced me: I no longer believe that {_lower_first(claim)}.")
    lines.append(stance_line(label))
    reasoning = (
        f"My position: {claim}. My reasons: {argument} Points answered so far: {len(answered)} of {len(points)}"
        f"{' (new this turn: ' + ', '.join(str(i + 1) for i in new) + ')' if new else ''}, so my stance is {label}."
    )
    return UserReply(" ".join(lines[:-1]) + "\n" + lines[-1], reasoning)


def _listing(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _lower_first(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


_OPEN_POINT = re.compile(r"my point about (.+?)\.(?:\s|$)")
# Short, fixed wording: a small agent trained on these traces spends its capacity on the one real skill,
# repeating the open point's words. Each copy follows "point about", as in the user's own "my point about
# X, Y and Z", so the copy is a plain look-back to the latest "about".
_OPENING = "I disagree with this claim: it does more harm than good."
_REBUTTALS = (
    "the evidence is weaker than it looks.",
    "gentler means reach the same aims.",
    "the costs outweigh the gains.",
    "that assumes the best case.",
)


class PersuadeExpert(Expert):
    """Opens against the claim, then answers, each turn, the point the user says is still open.

    Knows nothing beyond the conversation.
    """

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        if not history:
            return ExpertMove(Action("answer", _OPENING), "I state my case and wait for the reasons.")
        point = _OPEN_POINT.search(history[-1][1])
        rebuttal = _REBUTTALS[len(history) % len(_REBUTTALS)]
        if point is None:
            return ExpertMove(Action("answer", f"Consider the whole picture: {rebuttal}"), "No point is left open.")
        terms = point.group(1)
        return ExpertMove(
            Action("answer", f"On your point about {terms}: {rebuttal}"), f"The open point is about {terms}."
        )


SPEC = GymSpec(
    gym=PersuadeGym,
    user_rule=scripted_reply,
    expert=lambda task, same_gym: PersuadeExpert(),
    compact_prompt=(
        "You argue against a claim that the environment holds. Call the tool `interact_with_env` with choice "
        "`answer` and your argument as content. The environment says which of its points you have not answered "
        "yet: answer that point. Think first, between <think> and </think>."
    ),
    userrl=UserRLPackage("persuadegym", "PersuadeEnv"),
)
