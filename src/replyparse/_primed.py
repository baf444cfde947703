"""``PrimedParser``: whole generations parsed from one primed state.

A whole generation is a complete text. It is read from the state a parser reached after the
prompt: by the collecting walk (``replyparse._walk``) when the text fits the template as it
is, which leaves that state unchanged, else by the parser's general path, on a copy of the
primed parser when many texts share it (a batch). Both are the one machine
(``replyparse._machine``) with different body sinks.
"""

from __future__ import annotations

from collections.abc import Sequence

from replyparse._walk import Fitting
from replyparse.parser import ParseResult, ResponseParser

__all__ = ["PrimedParser"]


class PrimedParser:
    """Parses whole generations from one primed state: the prompt read once, each text
    parsed from it (package-internal: ``parse_response``, ``parse_output`` and
    ``BatchParser`` use it). It asks the parser only its public API and the four methods
    of its "whole texts" section (``hold_prompt``, ``walker``, ``fork``, ``finish``).

    A text that fits the template as it is is walked from the primed state without
    changing it (``replyparse._walk``); any other text is parsed on the general path, by a
    copy of the primed parser (``reuse=True``) or by the primed parser itself (the one text
    of a one-shot parse, which then holds the prompt unscanned: the walk reads it with the
    text).

    Args:
        parser: a parser that has read the prompt and nothing else.
        reuse: many texts are parsed from this state (each on a copy of ``parser``).
        unscanned: the prompt, for a ``parser`` built with the prefix ``""``: held
            unscanned, and read with the one text parsed.
    """

    __slots__ = ("_parser", "_reuse", "_walk")

    def __init__(
        self,
        parser: ResponseParser,
        *,
        reuse: bool = False,
        unscanned: str | Sequence[int] | None = None,
    ) -> None:
        if unscanned is not None:
            parser.hold_prompt(unscanned)
        self._parser = parser
        self._reuse = reuse
        self._walk = parser.walker()

    def walk(self, text: str, partial: bool = False) -> Fitting | None:
        """The parse of a text that fits the template as it is (every body parses, no
        required field is missing, nothing to recover): ``(message, unclaimed text, trailing
        text or None, captures)``; None for any other text (then ``parse`` says what it
        gives). The primed state is left as it was."""
        walk = self._walk
        return None if walk is None else walk(text, partial)

    def parse(
        self, text: str | Sequence[int], partial: bool = False, *, walk: bool = True
    ) -> ParseResult:
        """Parse one whole generation (``walk=False``: ``walk`` already said it does not
        fit).

        Raises:
            ResponseParseError: as ``ResponseParser.finalize`` (never in recover mode).
        """
        primed = self._parser
        if walk and self._walk is not None and isinstance(text, str):
            walked = self._walk(text, partial)
            if walked is not None:
                message, unclaimed, trailing, _ = walked
                return ParseResult(
                    message,
                    tuple(primed.issues),
                    primed.trailing_text if trailing is None else trailing,
                    (*primed.unclaimed_text, *unclaimed),
                )
        parser = primed.fork() if self._reuse else primed
        message = parser.finish(text, partial)
        return ParseResult(
            message,
            tuple(parser.issues),
            parser.trailing_text,
            tuple(parser.unclaimed_text),
            parser.in_progress,
        )
