from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mimesis_pl.data.mixture import ParquetRows, mixture_index, parse_file_specs, sample_counts


def make(tmp_path, name, n, row_group_size=4):
    path = tmp_path / name
    pq.write_table(
        pa.Table.from_pylist([{"data_source": "x", "i": i} for i in range(n)]), path, row_group_size=row_group_size
    )
    return str(path)


def test_spec_grammar_and_sorted_globs(tmp_path):
    b, a = make(tmp_path, "b.parquet", 3), make(tmp_path, "a.parquet", 3)
    specs = parse_file_specs([f"{tmp_path}/*.parquet:2.5", f"{b}"])
    assert [(s.path, s.ratio) for s in specs] == [(a, 2.5), (b, 2.5), (b, 1.0)]
    assert parse_file_specs(f"{a}:0.5 {b}")[0].ratio == 0.5  # whitespace-separated string form


@pytest.mark.parametrize("bad", ["{d}/none-*.parquet", "{d}/missing.parquet", "{d}/a.parquet:-1"])
def test_spec_errors_name_the_token(tmp_path, bad):
    make(tmp_path, "a.parquet", 2)
    token = bad.format(d=tmp_path)
    with pytest.raises((FileNotFoundError, ValueError), match="file spec"):
        parse_file_specs([token])


@pytest.mark.parametrize(
    ("n", "ratio", "want"),
    [(10, 0.5, (0, 5)), (10, 1.0, (1, 0)), (10, 2.3, (2, 3)), (7, 2.0, (2, 0)), (10, 0.0, (0, 0)), (3, 1.5, (1, 1))],
)
def test_sample_counts(n, ratio, want):
    # e.g. 10 rows at 2.3: two full passes (20) + floor(0.3 × 10) = 3 more distinct rows = 23
    assert sample_counts(n, ratio) == want


def test_mixture_counts_are_exact_and_never_bootstrap():
    index = mixture_index([10, 4, 6], [2.5, 1.0, 0.5], seed=3)
    per_file = Counter(f for f, _ in index)
    assert per_file == {0: 25, 1: 4, 2: 3}
    rows0 = Counter(i for f, i in index if f == 0)
    assert set(rows0) == set(range(10))  # every row at least floor(2.5) = 2 times
    assert sorted(rows0.values()) == [2] * 5 + [3] * 5
    rows2 = Counter(i for f, i in index if f == 2)
    assert all(c == 1 for c in rows2.values())  # ratio < 1: without replacement


def test_mixture_is_seeded_and_shuffled_and_capped():
    a = mixture_index([50, 50], [1.0, 1.0], seed=1)
    assert a == mixture_index([50, 50], [1.0, 1.0], seed=1)
    assert a != mixture_index([50, 50], [1.0, 1.0], seed=2)
    assert a != sorted(a)
    assert mixture_index([50, 50], [1.0, 1.0], seed=1, max_samples=7) == a[:7]


def test_rows_are_read_lazily_by_row_group(tmp_path):
    path = make(tmp_path, "a.parquet", 10, row_group_size=4)
    rows = ParquetRows([path], cache_row_groups=1)
    assert rows.num_rows == [10] and rows.row_groups_read == 0  # only the footer so far
    assert rows.row(0, 5)["i"] == 5 and rows.row(0, 6)["i"] == 6
    assert rows.row_groups_read == 1
    assert rows.row(0, 9)["i"] == 9 and rows.row_groups_read == 2
    with pytest.raises(IndexError, match="row 10 out of range"):
        rows.row(0, 10)
