from mimesis_pl.chat import join_think, split_think


def test_no_tags():
    assert split_think("  just text ") == (None, "just text")


def test_one_block():
    assert split_think("<think>\nwhy\n</think>\n\nYes.") == ("why", "Yes.")


def test_prefilled_opener_missing():
    assert split_think("the reason</think>\n\nNo.") == ("the reason", "No.")


def test_unclosed_block_is_all_reasoning():
    assert split_think("Hi <think>cut short") == ("cut short", "Hi")


def test_several_blocks_and_stray_whitespace():
    text = "A <think> r1 </think>  B\t<think>r2</think>C"
    assert split_think(text) == ("r1\nr2", "A B C")


def test_stray_close_tag_after_blocks():
    assert split_think("<think>r</think>x</think> y") == ("r", "x y")


def test_empty_reasoning_is_not_none():
    assert split_think("<think></think>hello") == ("", "hello")


def test_public_text_spacing_kept_away_from_blocks():
    assert split_think("a  b\n\nc <think>r</think>") == ("r", "a  b\n\nc")


def test_join_round_trip():
    assert split_think(join_think("because", "Sure.")) == ("because", "Sure.")
    assert join_think(None, "x") == "x"
