"""The one table writer of the evaluation reports (issue #27)."""

from __future__ import annotations

import pytest

from mimesis_pl.eval.tables import markdown_table


def test_markdown_table_by_hand():
    assert markdown_table(["gym", "n", "pass@1"], [["travel", 4, "0.500"], ["tau", 2, "—"]]) == (
        "| gym | n | pass@1 |\n|---|---:|---:|\n| travel | 4 | 0.500 |\n| tau | 2 | — |\n"
    )
    assert markdown_table(["model"], []) == "| model |\n|---|\n"


def test_a_row_of_the_wrong_width_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"table row 1 has 1 cells for 2 columns \(\['a', 'b'\]\): \['x'\]"):
        markdown_table(["a", "b"], [["1", "2"], ["x"]])
    with pytest.raises(ValueError, match="at least one column"):
        markdown_table([], [])


def test_every_report_writes_its_tables_with_it():
    from mimesis_pl.eval.gym_metrics import extra_metrics_markdown
    from mimesis_pl.eval.report import episode_markdown

    assert extra_metrics_markdown({"travel": {"all": {"tasks": 2.0, "micro_avg": 0.25}}}) == (
        "\n### travel: per-gym metrics\n\n| set | tasks | micro_avg |\n|---|---:|---:|\n| all | 2 | 0.250 |\n"
    )
    assert episode_markdown({}, [1]).startswith(
        "| gym | tasks | n | avg@n | pass@1 | pass^1 | scored | unscored | missing | reward mean ± std |\n|---|"
    )
