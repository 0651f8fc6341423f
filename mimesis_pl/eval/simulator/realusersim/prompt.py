"""Where RealUserSim's simulator prompt comes from (docs/decisions.md S77).

Published FI numbers need the benchmark's own prompt, character for character: the dataset card's
``build_user_prompt`` text and its primer message. That text is not ours to ship, so the package never
holds it: a user points ``simulator_prompt`` at a template file they made from the card. Without one, our
paraphrase (:func:`~.realusersim_protocol.build_user_prompt`) runs, and every report made with it says it
is **not comparable with published FI**.

Template file: plain UTF-8 text in sections, each opened by a line ``[name]`` (the section runs to the next
such line; one trailing newline is dropped):

- ``[correct_profile]`` (required): the card's prompt, with the placeholders ``{demographics}``,
  ``{linguistic_profile}``, ``{problem_desc}`` and ``{solution_conditions}`` where the card puts those
  fields. The shuffled-profile condition fills the first two from the donor case.
- ``[task_only]`` (optional): the task-only prompt (the harness's own derivation); without it our
  task-only paraphrase runs, and task-only numbers are marked as such.
- ``[primer]`` (optional): the first user message (default: ours).
- ``[demographic_line]`` (optional): one demographic line, with ``{label}`` and ``{value}``
  (default ``- {label}: {value}``); ``[no_demographics]`` (optional): the sentence used when no
  demographic value is left.

Only those placeholder names are replaced; every other brace of the card's text stays as written.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_pl.eval.simulator.realusersim.data import RealUserSimCase
from mimesis_pl.eval.simulator.rows import DataFormatError

#: The demographic fields in the card's order, with its labels.
DEMOGRAPHIC_LABELS: tuple[tuple[str, str], ...] = (
    ("age", "Age range"),
    ("gender", "Gender"),
    ("occupation", "Occupation"),
    ("education", "Education"),
    ("location", "Location/Nationality"),
    ("income", "Income level"),
    ("marital_status", "Marital status"),
)
SECTIONS = ("correct_profile", "task_only", "primer", "demographic_line", "no_demographics")
FIELDS = ("demographics", "linguistic_profile", "problem_desc", "solution_conditions")
_HEADER = re.compile(r"^\[([a-z_]+)\]\s*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{(" + "|".join(FIELDS) + r")\}")
NOT_COMPARABLE = "not comparable with published FI"


@dataclass(frozen=True)
class PromptTemplate:
    """The benchmark's simulator prompt as the user's template file gives it (see the module docstring)."""

    path: str
    sha256: str
    correct_profile: str
    task_only: str | None = None
    primer: str | None = None
    demographic_line: str = "- {label}: {value}"
    no_demographics: str = "No demographic information is available for this user."


def load_prompt_template(path: str | Path) -> PromptTemplate:
    """Read a template file; an unknown section, a missing ``[correct_profile]`` or a placeholder it lacks is an
    error naming the file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DataFormatError(f"{path}: cannot read the simulator prompt template ({err.strerror})") from None
    text = raw.decode("utf-8")
    heads = list(_HEADER.finditer(text))
    if not heads or text[: heads[0].start()].strip():
        raise DataFormatError(f"{path}: a prompt template starts with a section line such as [correct_profile]")
    sections: dict[str, str] = {}
    for i, head in enumerate(heads):
        name = head.group(1)
        if name not in SECTIONS:
            raise DataFormatError(f"{path}: unknown section [{name}] (sections: {', '.join(SECTIONS)})")
        if name in sections:
            raise DataFormatError(f"{path}: section [{name}] appears twice")
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[head.end() + 1 : end]
        sections[name] = body[:-1] if body.endswith("\n") else body
    if "correct_profile" not in sections:
        raise DataFormatError(f"{path}: section [correct_profile] is required")
    missing = [f for f in FIELDS if "{" + f + "}" not in sections["correct_profile"]]
    if missing:
        raise DataFormatError(f"{path}: [correct_profile] lacks the placeholder(s) {['{' + m + '}' for m in missing]}")
    return PromptTemplate(path=str(path), sha256=hashlib.sha256(raw).hexdigest(), **sections)


def demographic_block(demographics: Mapping[str, str], template: PromptTemplate) -> str:
    """The card's demographic block: the known fields in its order and labels, values already cleaned by the
    loader (empty / null / none / unknown dropped); the fallback sentence when none is left."""
    lines = [
        template.demographic_line.replace("{label}", label).replace("{value}", demographics[key])
        for key, label in DEMOGRAPHIC_LABELS
        if demographics.get(key)
    ]
    return "\n".join(lines) if lines else template.no_demographics


def render_prompt(template: PromptTemplate, case: RealUserSimCase, profile_from: RealUserSimCase | None) -> str:
    """The simulator's system prompt: ``[correct_profile]`` with ``profile_from``'s demographics and profile
    (the case's own or a donor's), or ``[task_only]`` when ``profile_from`` is None."""
    if profile_from is None and template.task_only is None:
        raise ValueError(f"{template.path}: no [task_only] section (the caller falls back to ours)")
    text = template.correct_profile if profile_from is not None else template.task_only
    values = {"problem_desc": case.problem_desc, "solution_conditions": case.solution_conditions}
    if profile_from is not None:
        values["demographics"] = demographic_block(profile_from.demographics, template)
        values["linguistic_profile"] = profile_from.linguistic_profile
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


#: The judge prompts bundled with the sample data: our own wording, not the dataset's ``judge_prompt.txt``.
SAMPLE_JUDGE_PROMPTS = Path(__file__).resolve().parents[4] / "assets/data/eval/realusersim/judge_prompt.txt"


def is_sample_judge_prompts(path: str | Path) -> bool:
    """Whether ``path`` holds the bundled sample judge prompts (same text), which are ours, not the dataset's."""
    sample = SAMPLE_JUDGE_PROMPTS
    return sample.is_file() and Path(path).read_text(encoding="utf-8") == sample.read_text(encoding="utf-8")


def prompt_source(
    template: PromptTemplate | None, conditions: Sequence[str], sample_judge: bool = False
) -> dict[str, Any]:
    """Which simulator prompt each condition ran with, and whether its FI is comparable with published FI: only
    with the benchmark's simulator prompt and a judge that is not our sample prompt (the judge's input is the
    reference's layout, S87)."""
    ours = {c: template is None or (c == "task_only" and template.task_only is None) for c in conditions}
    return {
        "template": None if template is None else {"path": template.path, "sha256": template.sha256},
        "judge_prompts": "our sample" if sample_judge else "given",
        "comparable_with_published_fi": {c: not v and not sample_judge for c, v in ours.items()},
        "conditions_on_our_paraphrase": [c for c, v in ours.items() if v],
    }


def prompt_note(source: dict[str, Any]) -> str:
    """The report's line on the simulator prompt: the benchmark's template, or our paraphrase (not comparable)."""
    ours = source["conditions_on_our_paraphrase"]
    template = source["template"]
    line = "" if template is None else f"Simulator prompt: the benchmark's text from {template['path']} "
    if template is not None:
        line += f"(sha256 {template['sha256'][:12]}).\n"
    if ours:
        line += f"**Simulator prompt of {', '.join(ours)}: our paraphrase — {NOT_COMPARABLE}.**\n"
    if source.get("judge_prompts") == "our sample":
        line += (
            f"**Judge prompts: the bundled sample (ours, not the dataset's judge_prompt.txt) — {NOT_COMPARABLE}.**\n"
        )
    return line + "\n"
