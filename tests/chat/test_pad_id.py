from types import SimpleNamespace

import pytest

from mimesis_pl.chat import pad_id_of


def test_pad_id_prefers_pad_token_then_eos_and_passes_ints_through(tiny_tokenizer):
    assert pad_id_of(tiny_tokenizer) == tiny_tokenizer.pad_token_id
    assert pad_id_of(SimpleNamespace(pad_token_id=None, eos_token_id=5)) == 5
    assert pad_id_of(SimpleNamespace(pad_token_id=0, eos_token_id=5)) == 0  # 0 is a real id, not "unset"
    assert pad_id_of(7) == 7


def test_pad_id_without_pad_or_eos_says_what_to_pass():
    with pytest.raises(ValueError, match="SimpleNamespace has neither pad_token_id nor eos_token_id; pass a pad id"):
        pad_id_of(SimpleNamespace(pad_token_id=None, eos_token_id=None))
