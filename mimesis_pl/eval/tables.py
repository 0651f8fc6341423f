"""The one table writer of the evaluation reports (``results.md`` of the agent evaluation, the replay and every
simulator-fidelity suite): GitHub markdown, the first column left-aligned, the others right-aligned (numbers);
docs/decisions.md D9."""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """``head`` and one line per row (cells as ``str``), each line ending in a newline.

    A row with another number of cells than ``head`` is an error: it would shift every later column.
    """
    if not head:
        raise ValueError("a table needs at least one column")
    for i, row in enumerate(rows):
        if len(row) != len(head):
            raise ValueError(f"table row {i} has {len(row)} cells for {len(head)} columns ({list(head)}): {list(row)}")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
