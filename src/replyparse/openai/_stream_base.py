"""What the streams share: the request, the parser, the tracker and their life cycle.

``ChatCompletionStream``, ``ResponsesStream`` and the Anthropic ``MessagesStream`` differ only
in how they render tracker updates (chunks or events); the request options
(:class:`StreamRequest`), checking the request, feeding the parser, finishing it and checking
the calls against the request's rules are the same and live here.

The parser runs in recover mode by default: a stream never fails because of what the model
wrote (a malformed call keeps its ``arguments`` as a string, as OpenAI passes them: what the
stream sent of them, then the rest as written), and ``issues`` lists what did not fit. A generation cut by the token limit
(``finish_reason="length"``) is parsed as partial: the call it was cut in is returned with
its arguments so far.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Required, TypedDict

from replyparse.errors import ParserStateError, ResponseParseError
from replyparse.issues import ParseIssue
from replyparse.openai._ids import IdFactory, random_id
from replyparse.openai._tracker import MessageTracker, Update
from replyparse.openai.errors import RuleViolation
from replyparse.openai.messages import TOOL_CALLS_KEY, _Request
from replyparse.openai.rules import report
from replyparse.parser import ResponseParser
from replyparse.request._calls import ResolvedCall, ToolIndex
from replyparse.template import ResponseTemplate, load_template

__all__ = ["StreamBase", "StreamRequest"]


class StreamRequest(TypedDict, total=False):
    """The keyword arguments every stream takes (``ChatCompletionStream``,
    ``ResponsesStream``, ``MessagesStream``), besides its own.

    Attributes:
        prefix: the prompt sent to the model (see ``ResponseParser``); ``""`` opts out.
            Required.
        model: the ``model`` the stream reports. Required.
        tools: the request's tools; they type arguments and tell custom tools apart.
        tool_choice: the request's ``tool_choice`` (either OpenAI API's shape).
        parallel_tool_calls: the request's ``parallel_tool_calls`` (default True).
        ids: the identifier factory (inject :class:`~._ids.SequentialIds` in tests).
        recover: parse in recover mode (the default): what the model wrote never fails
            the stream; ``issues`` lists what did not fit. False raises
            ``ResponseParseError`` as the parser does.
    """

    prefix: Required[str | Sequence[int]]
    model: Required[str]
    tools: Any
    tool_choice: Any
    parallel_tool_calls: bool
    ids: IdFactory
    recover: bool


class StreamBase:
    """The request checks and parser plumbing of one streamed response.

    Raises:
        StrictSchemaError, ToolDefinitionError, ToolChoiceError: the request is invalid.
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        prefix: str | Sequence[int],
        model: str,
        tools: Any = None,
        tool_choice: Any = None,
        parallel_tool_calls: bool = True,
        ids: IdFactory = random_id,
        recover: bool = True,
    ) -> None:
        """Check the request and start a parser (:class:`StreamRequest` says each argument)."""
        loaded = load_template(template)
        self._model = model
        self._ids = ids
        self._request = _Request(tools, tool_choice, parallel_tool_calls)
        #: The request's tools, normalized.
        self.tools: ToolIndex = self._request.tools
        self._parser = ResponseParser(
            loaded, prefix, tools=self._request.raw_tools, include_groups=True, recover=recover
        )
        self._tracker = MessageTracker(loaded, self._request.tools, ids)
        self._clean_text = self._tracker.clean_text  # bound once: called on most deltas
        self._parser_feed = self._parser.feed  # bound once: looked up on every delta
        self._started = False
        self._done = False
        # Started and not done: ``feed`` may take its fast path (nothing is pending then).
        self._live = False
        self._pending = self._tracker.handle(self._parser.initial_events)
        #: Rule violations found at ``finish()`` (also warned or raised there).
        self.violations: list[RuleViolation] = []
        #: The parsed message, once ``finish()`` returned.
        self.message: dict[str, Any] | None = None

    @property
    def issues(self) -> list[ParseIssue]:
        """What recover mode did about output that did not fit, so far (see ``ParseIssue``)."""
        return self._parser.issues

    def _check_open(self, action: str) -> None:
        if self._done:
            raise ParserStateError(f"cannot {action}(): this stream already finished")

    def _mark_started(self) -> None:
        """The opening was rendered (each adapter, once)."""
        self._started = True
        self._live = not self._done

    def _mark_done(self) -> None:
        self._done = True
        self._live = False

    def _end_failed(self, error: ResponseParseError | str) -> str:
        """End the stream after a failure (each adapter's ``fail``); the message to send:
        a parse error's detail, or ``error`` itself."""
        self._mark_done()
        return error.detail if isinstance(error, ResponseParseError) else error

    def _take_pending(self, action: str) -> list[Update]:
        self._check_open(action)
        updates, self._pending = self._pending, []
        return updates

    def feed(self, text: str | Sequence[int]) -> list[dict[str, Any]]:
        """Parse more model output; return what it completes, in the adapter's shape
        (chunks or events; possibly none).

        Raises:
            ResponseParseError: the output does not fit the template (the parser is spent;
                end the stream with ``fail``).
            ParserStateError: the stream already finished.
        """
        if self._live:
            # Every event goes through the tracker. A delta that is one chunk (most are) is
            # read by the tracker's per-chunk readers, which build no update: clean text
            # within a capture (``clean_text``: the update is ``TextDelta``, rendered by
            # :meth:`_render_text`) or more of the body of a call whose name is known
            # (``open_arguments``: ``CallDelta``, rendered by :meth:`_render_arguments`).
            events = self._parser_feed(text)
            if len(events) == 1:
                event = events[0]
                if event["type"] == "region_chunk":
                    field = event["field"]
                    chunk = event["text"]
                    if not event["dirty"] and self._clean_text(field, chunk):
                        return self._render_text(field, chunk)
                    if field == TOOL_CALLS_KEY:
                        open_arguments = self._tracker.open_arguments
                        if open_arguments is not None:
                            fragment = open_arguments(chunk)
                            if not fragment:
                                return []
                            return self._render_arguments(self._tracker.open_position, fragment)
            elif not events:
                return []
            return self._render_updates(self._tracker.handle(events))
        self._check_open("feed")
        updates = self._tracker.handle(self._parser.feed(text))
        if self._pending:
            updates[:0], self._pending = self._pending, []
        return self._render_updates(updates)

    def _render_text(self, key: str, text: str) -> list[dict[str, Any]]:
        """Render more text of ``key`` within its capture (``TextDelta(key, text)``)."""
        raise NotImplementedError  # pragma: no cover - each adapter renders

    def _render_arguments(self, position: int, text: str) -> list[dict[str, Any]]:
        """Render more arguments (or input) of the open call (``CallDelta(position, text)``,
        ``text`` not empty)."""
        raise NotImplementedError  # pragma: no cover - each adapter renders

    def _render_updates(self, updates: list[Update]) -> list[dict[str, Any]]:
        """Render the updates of one ``feed``."""
        raise NotImplementedError  # pragma: no cover - each adapter renders

    def _finish_updates(
        self, partial: bool = False
    ) -> tuple[dict[str, Any], list[Update], list[ResolvedCall]]:
        """Finalize the parser (``partial``: the generation was cut): the message, the last
        updates and the message's calls, resolved (once: the tracker and the rules read
        them)."""
        self._check_open("finish")
        message, events = self._parser.finalize(partial=partial)
        self._mark_done()
        updates, self._pending = self._pending, []
        updates += self._tracker.handle(events)
        message, calls, last = self._tracker.finish(message)
        self.message = message
        updates += last
        return message, updates, calls

    def _check_rules(self, calls: list[ResolvedCall], output: list[dict[str, Any]]) -> None:
        """Check the calls against the request; report (warn, or raise with ``output``)."""
        self.violations = self._request.violations(calls)
        report(self.violations, self.tools, output)
