import pytest

from mimesis_pl.checks import check_choice


def test_check_choice_accepts_an_allowed_value():
    check_choice("agg", "token-mean", ("token-mean", "seq-mean-token-sum"))
    check_choice("sleep_level", 2, (1, 2))


def test_check_choice_names_field_value_and_every_choice():
    with pytest.raises(ValueError) as info:
        check_choice("agg", "mean", ("token-mean", "seq-mean-token-sum"))
    assert str(info.value) == "agg='mean' is not supported; agg must be one of: token-mean, seq-mean-token-sum"


def test_check_choice_prefixes_where_and_takes_any_iterable():
    with pytest.raises(ValueError, match=r"^trial t#0: status='done' is not supported; status must be one of: a, b$"):
        check_choice("status", "done", iter(["a", "b"]), where="trial t#0")
