import pytest

from mimesis_pl.data.truncation import LengthLimits, SampleTooLong, TruncationStats, apply_length_limits

# prompt = 4 tokens (mask 0), response = 6 tokens (first trained token at index 4)
IDS = list(range(10))
MASK = [0, 0, 0, 0, 1, 1, 0, 1, 1, 1]


def test_within_limits_untouched():
    stats = TruncationStats()
    assert apply_length_limits(IDS, MASK, LengthLimits(4, 6, 10), stats) == (IDS, MASK)
    assert not stats.counts


def test_error_policy_names_sample_and_limit():
    with pytest.raises(SampleTooLong, match=r"sample row-3: prompt has 4 tokens > max_prompt_length=3"):
        apply_length_limits(IDS, MASK, LengthLimits(3, 6, 10, "error"), sample="row-3")


def test_prompt_keeps_its_last_tokens_and_response_its_first():
    stats = TruncationStats()
    ids, mask = apply_length_limits(IDS, MASK, LengthLimits(2, 3, 100, "right"), stats)
    # prompt [0,1,2,3] -> [2,3]; response [4..9] -> [4,5,6]
    assert ids == [2, 3, 4, 5, 6]
    assert mask == [0, 0, 1, 1, 0]
    assert stats.counts == {"prompt_truncated": 1, "response_truncated": 1, "samples_truncated": 1}


@pytest.mark.parametrize(("policy", "want"), [("left", [4, 5, 6, 7, 8, 9]), ("right", [0, 1, 2, 3, 4, 5])])
def test_total_limit_policy(policy, want):
    stats = TruncationStats()
    ids, mask = apply_length_limits(IDS, MASK, LengthLimits(None, None, 6, policy), stats)
    assert ids == want
    assert mask == [MASK[i] for i in want]
    assert stats.counts[f"total_truncated_{policy}"] == 1


def test_bad_policy():
    with pytest.raises(ValueError, match="truncation must be"):
        LengthLimits(truncation="middle")


def test_cut_cuts_prompt_and_response_even_under_error_and_error_then_guards_only_the_total():
    """#23 item 4: the reference always cuts an over-long prompt (keeps its end) and response (keeps its start);
    ``truncation`` then only governs ``max_length``. We used to drop such a sample under ``error`` (S63)."""
    stats = TruncationStats()
    ids, mask = apply_length_limits(IDS, MASK, LengthLimits(2, 3, 100, "error", over_long="cut"), stats)
    assert (ids, mask) == ([2, 3, 4, 5, 6], [0, 0, 1, 1, 0])
    assert stats.counts == {"prompt_truncated": 1, "response_truncated": 1, "samples_truncated": 1}
    with pytest.raises(SampleTooLong, match=r"sample has 5 tokens > max_length=4"):
        apply_length_limits(IDS, MASK, LengthLimits(2, 3, 4, "error", over_long="cut"))
    with pytest.raises(SampleTooLong, match="max_prompt_length=2"):  # dropping stays an option
        apply_length_limits(IDS, MASK, LengthLimits(2, 3, 100, "error", over_long="drop"))
    with pytest.raises(ValueError, match="over_long must be"):
        LengthLimits(over_long="shrink")
