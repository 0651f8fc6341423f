"""Code cites design decisions by their ID in docs/decisions.md, never documents outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DECISIONS = REPO / "docs" / "decisions.md"
SOURCES = [
    *sorted((REPO / "mimesis_pl").rglob("*.py")),
    *sorted((REPO / "tests").rglob("*.py")),
    *sorted((REPO / "bench").glob("*.py")),
    *sorted((REPO / "configs").rglob("*.yaml")),
    REPO / "README.md",
]
ENTRY = re.compile(r"^- \*\*([SAED]\d+[a-z]?) — ", re.MULTILINE)
# "docs/decisions.md S3, S5", "decisions A1", "(S19 in docs/decisions.md)".
CITATION = re.compile(r"decisions(?:\.md)?\b[^)\n]*|[^(\n]*\bin docs/decisions\.md")
ID = re.compile(r"\b([SAED]\d+[a-z]?)\b")
OUTSIDE = re.compile(r"spec §|shared/spec|spec/(?:agent|simulator|eval|gyms)\.md")


def test_every_cited_decision_is_written_down():
    known = set(ENTRY.findall(DECISIONS.read_text()))
    assert {"S3", "A1", "E4"} <= known
    unknown = [
        f"{path.relative_to(REPO)}:{n}: {decision}"
        for path in SOURCES
        if path.name != "test_decisions.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for cited in CITATION.findall(line)
        for decision in ID.findall(cited)
        if decision not in known
    ]
    assert unknown == [], "cited but missing from docs/decisions.md:\n" + "\n".join(unknown)


def test_no_pointer_to_documents_outside_the_repository():
    pointers = [
        f"{path.relative_to(REPO)}:{n}"
        for path in SOURCES
        if path.name != "test_decisions.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert pointers == [], "point to docs/decisions.md instead:\n" + "\n".join(pointers)
