"""The one-shot entry points: a whole generation (or a batch of them) to its message.

``parse_response`` gives the message, ``parse_output`` everything learned (issues, trailing
and unclaimed text, the region a cut generation ended in), ``get_response_parser`` the
reference's way to a streaming parser. Each whole text is parsed from a primed state
(``PrimedParser``); nothing here reads the parser's own state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias, TypedDict, Unpack, overload

from replyparse._primed import PrimedParser
from replyparse.errors import ResponseParseError
from replyparse.parser import PREFIX_REQUIRED, ParseResult, ResponseParser
from replyparse.template import ResponseTemplate, load_template
from replyparse.tokens import TokenizerLike

__all__ = ["get_response_parser", "parse_output", "parse_response"]

_Template: TypeAlias = Mapping[str, Any] | ResponseTemplate | str | None
#: One generation's prompt, and a batch's prompts.
_Prefix: TypeAlias = str | Sequence[int] | None
_Prefixes: TypeAlias = Sequence[str] | Sequence[Sequence[int]] | None


class _Options(TypedDict, total=False):
    """The keyword arguments of ``parse_response`` and ``parse_output`` but ``prefix``."""

    tools: Iterable[Any] | None
    tokenizer: TokenizerLike | None
    recover: bool
    partial: bool


def get_response_parser(
    tokenizer: Any,
    prefix: str | Sequence[int] | None = None,
    *,
    tools: Iterable[Any] | None = None,
    template: Mapping[str, Any] | ResponseTemplate | None = None,
) -> ResponseParser:
    """A ResponseParser for this tokenizer's response template (the reference's method).

    ``prefix`` is required, as for ``ResponseParser``; the template is the one the tokenizer
    carries (``replyparse.model_folder.template_from_tokenizer``) unless given.
    """
    return ResponseParser(template, prefix, tools=tools, tokenizer=tokenizer)


@overload
def parse_response(
    text: str | Sequence[int],
    template: _Template = None,
    *,
    prefix: _Prefix,
    **options: Unpack[_Options],
) -> dict[str, Any]: ...


@overload
def parse_response(
    text: list[str] | list[list[int]],
    template: _Template = None,
    *,
    prefix: _Prefixes,
    **options: Unpack[_Options],
) -> list[dict[str, Any]]: ...


def parse_response(
    text: Any, template: _Template = None, *, prefix: Any, **options: Unpack[_Options]
) -> dict[str, Any] | list[dict[str, Any]]:
    """Parse a whole generation (or a batch of them) into message dicts.

    Args:
        text: the generated text; token ids with ``tokenizer``; or a list of either (a batch).
        template: the response template; None to use the tokenizer's own.
        prefix: the prompt (text or ids); for a batch, a list of the same length. Required;
            ``""`` opts out.
        tools: the request's tools, to type tool-call arguments from their schemas.
        tokenizer: decodes token ids; anything with ``decode``.
        recover: never raise for what the model wrote (see ``ResponseParser``); use
            ``parse_output`` to also get the issues.
        partial: the generation is known to be cut (see ``ResponseParser.finalize``).

    Returns:
        The message, or a list of messages for a batch.

    Raises:
        ResponseParseError: the output does not fit the template (``partial_message`` holds
            what was parsed; in a batch, ``index`` is the generation's position). Never
            with ``recover=True``.
        TemplateError: the template is malformed.
        ValueError: ``prefix`` is missing or does not match the batch.

    Example:
        >>> template = {"start_anchor": "A:", "fields": {
        ...     "reasoning_content": {"open": "<think>", "close": "</think>"},
        ...     "content": {"close": "<end>"}}}
        >>> parse_response("<think>hmm</think>Hi<end>", template, prefix="")
        {'reasoning_content': 'hmm', 'content': 'Hi'}
    """
    # Raise mode is this function's default (``parse_output``'s is recover mode).
    options.setdefault("recover", False)
    result: ParseResult | list[ParseResult] = parse_output(text, template, prefix=prefix, **options)
    if isinstance(result, list):
        return [item.message for item in result]
    return result.message


@overload
def parse_output(
    text: str | Sequence[int],
    template: _Template = None,
    *,
    prefix: _Prefix,
    **options: Unpack[_Options],
) -> ParseResult: ...


@overload
def parse_output(
    text: list[str] | list[list[int]],
    template: _Template = None,
    *,
    prefix: _Prefixes,
    **options: Unpack[_Options],
) -> list[ParseResult]: ...


def parse_output(
    text: Any,
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: Any,
    tools: Iterable[Any] | None = None,
    tokenizer: TokenizerLike | None = None,
    recover: bool = True,
    partial: bool = False,
) -> ParseResult | list[ParseResult]:
    """Parse a whole generation (or a batch) into a ``ParseResult``: the message and the
    issues, trailing and unclaimed text, and where a cut generation ended.

    Recover mode is the default here: the message is always built, and ``issues`` says what
    did not fit. In a batch, a malformed item never affects the others; with
    ``recover=False`` the first failure raises with its ``index``.

    Args: as for ``parse_response``.

    Example:
        >>> template = {"start_anchor": "A:", "fields": {
        ...     "answer": {"open": "<n>", "close": "</n>", "content": "int"},
        ...     "content": {"close": "<end>"}}}
        >>> result = parse_output("<n>forty</n><end>", template, prefix="")
        >>> result.message, [issue.kind.value for issue in result.issues]
        ({'answer': 'forty'}, ['unparsed_value'])
    """
    if template is not None:
        # The template first: a template with a problem reports it, prefix or not.
        template = load_template(template)
    if prefix is None:
        raise ValueError(PREFIX_REQUIRED)
    if _is_batch(text):
        if (
            isinstance(prefix, (str, bytes))
            or not isinstance(prefix, Sequence)
            or (prefix and isinstance(prefix[0], int))
        ):
            raise ValueError(
                "a batch of generations needs a list of prefixes, one per generation; "
                f"got {type(prefix).__name__}"
            )
        if len(prefix) != len(text):
            raise ValueError(
                f"a batch of {len(text)} generations needs {len(text)} prefixes; got {len(prefix)}"
            )
        results = []
        for index, (item, item_prefix) in enumerate(zip(text, prefix, strict=False)):
            try:
                results.append(
                    _parse_one(item, template, item_prefix, tools, tokenizer, recover, partial)
                )
            except ResponseParseError as error:
                error.at_index(index)
                raise
        return results
    return _parse_one(text, template, prefix, tools, tokenizer, recover, partial)


def _parse_one(
    text: Any,
    template: Mapping[str, Any] | ResponseTemplate | str | None,
    prefix: Any,
    tools: Iterable[Any] | None,
    tokenizer: TokenizerLike | None,
    recover: bool,
    partial: bool,
) -> ParseResult:
    # The prompt is held unscanned and read with the text (``PrimedParser``).
    parser = ResponseParser(template, "", tools=tools, tokenizer=tokenizer, recover=recover)
    return PrimedParser(parser, unscanned=prefix).parse(text, partial)


def _is_batch(text: Any) -> bool:
    if isinstance(text, str) or not isinstance(text, Sequence):
        return False
    return bool(text) and not isinstance(text[0], int)
