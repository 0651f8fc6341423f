"""Moved to :mod:`mimesis_pl.eval.simulator.realusersim.prompt` (one folder per suite); this old path re-exports it."""

from mimesis_pl.eval.simulator.realusersim.prompt import (
    DEMOGRAPHIC_LABELS,
    FIELDS,
    NOT_COMPARABLE,
    SECTIONS,
    PromptTemplate,
    demographic_block,
    load_prompt_template,
    prompt_note,
    prompt_source,
    render_prompt,
)

__all__ = [
    "DEMOGRAPHIC_LABELS",
    "FIELDS",
    "NOT_COMPARABLE",
    "PromptTemplate",
    "SECTIONS",
    "demographic_block",
    "load_prompt_template",
    "prompt_note",
    "prompt_source",
    "render_prompt",
]
