"""Issue 33, item 11: a judge reply is read as the reference's parser reads it.

The reference, restated (``_parse_json_inner``): escape raw newlines inside strings, try the whole text as JSON,
else decode a JSON value at every position and keep the longest; each dimension is ``parsed[dim]["score"]``
(nested ``{reasoning, score}``), coerced to a number (a served judge often sends ``"7"``).
"""

from __future__ import annotations

import json

import pytest

from mimesis_pl.tasks.clients import parse_verdict
from mimesis_pl.tasks.coser import CoserVerdict
from mimesis_pl.tasks.sotopia import DIMENSIONS, SotopiaVerdict, sotopia_score


def ref_parse(text: str) -> dict | None:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    found, i = [], 0
    while i < len(text):
        try:
            obj, end = json.JSONDecoder().raw_decode(text[i:])
            found.append(obj)
            i += end
        except json.JSONDecodeError:
            i += 1
    return max(found, key=lambda x: len(json.dumps(x))) if found else None


RAW = {"believability": 8, "relationship": 2, "knowledge": 6, "secret": -1, "social_rules": 0}
RAW |= {"financial_and_material_benefits": 1, "goal": 7}
NESTED = {d: {"reasoning": f"why {d}", "score": v} for d, v in RAW.items()}


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(NESTED),  # the reference's nested shape
        json.dumps({d: str(v) for d, v in RAW.items()}),  # numbers sent as strings
        "Here is my evaluation of the episode:\n" + json.dumps(NESTED, indent=2) + "\nHope this helps.",  # prose
        "Scores {see below}: " + json.dumps(RAW),  # braces in the prose before it
    ],
)
def test_reference_shapes_are_read_with_the_references_numbers(reply):
    verdict = parse_verdict(reply, SotopiaVerdict)
    assert verdict is not None, reply
    parsed = ref_parse(reply)
    ref = {d: float(v["score"] if isinstance(v, dict) else v) for d, v in parsed.items()}
    assert sotopia_score(verdict) == pytest.approx(sotopia_score(SotopiaVerdict(**ref)))
    assert list(ref) == list(DIMENSIONS)


def test_coser_spaced_names_and_nested_scores():
    reply = json.dumps(
        {
            "Storyline Consistency": {"reasoning": "ok", "score": 7},
            "Anthropomorphism": {"reasoning": "ok", "score": "6"},
            "Character Fidelity": {"reasoning": "ok", "score": 8},
            "Storyline Quality": {"reasoning": "ok", "score": 5},
        }
    )
    assert parse_verdict(reply, CoserVerdict) == CoserVerdict(7.0, 6.0, 8.0, 5.0)


def test_what_the_reference_rejects_stays_a_failure():
    assert parse_verdict(json.dumps([RAW]), SotopiaVerdict) is None  # a JSON list, not an object
    assert parse_verdict("no verdict here", SotopiaVerdict) is None
    assert parse_verdict(json.dumps({d: "high" for d in RAW}), SotopiaVerdict) is None  # not a number
    assert parse_verdict(json.dumps({d: 99 for d in RAW}), SotopiaVerdict) is None  # out of range (S60)
