"""``TextAccumulator``: a text joined from many small pieces, with its length."""

from __future__ import annotations

from replyparse._accumulator import TextAccumulator


def test_many_small_pieces_give_the_text_and_its_size() -> None:
    # Feeds of four characters, well past the point where pieces are joined into blocks.
    pieces = [f"{index:03d}," for index in range(2_000)]
    accumulator = TextAccumulator()
    for piece in pieces:
        accumulator.append(piece)
    text = "".join(pieces)
    assert accumulator.size == len(text)
    assert accumulator.getvalue() == text
    assert accumulator.getvalue() == text  # reading leaves it as it was
    assert accumulator.take() == text
    assert (accumulator.size, accumulator.getvalue(), bool(accumulator)) == (0, "", False)


def test_a_copy_is_its_own() -> None:
    accumulator = TextAccumulator()
    for piece in ("Hello", ", ", "world"):
        accumulator.append(piece)
    copied = accumulator.copy()
    copied.append("!")
    assert (accumulator.getvalue(), accumulator.size) == ("Hello, world", 12)
    assert (copied.getvalue(), copied.size) == ("Hello, world!", 13)
