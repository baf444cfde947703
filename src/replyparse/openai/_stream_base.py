"""What both OpenAI streams share: the request, the parser, the tracker and their life cycle.

``ChatCompletionStream`` and ``ResponsesStream`` differ only in how they render tracker
updates (chunks or events); checking the request, feeding the parser, finishing it and
checking the calls against the request's rules are the same and live here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replyparse.errors import ParserStateError
from replyparse.openai._calls import ResolvedCall, ToolIndex, resolve_calls
from replyparse.openai._ids import IdFactory
from replyparse.openai._tracker import MessageTracker, Update
from replyparse.openai.errors import RuleViolation
from replyparse.openai.messages import _Request
from replyparse.openai.rules import check_calls, report
from replyparse.parser import ResponseParser
from replyparse.template import ResponseTemplate, load_template

__all__ = ["StreamBase"]


class StreamBase:
    """The request checks and parser plumbing of one streamed response."""

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        prefix: str | Sequence[int],
        tools: Any,
        tool_choice: Any,
        parallel_tool_calls: bool,
        ids: IdFactory,
    ) -> None:
        loaded = load_template(template)
        self._request = _Request(tools, tool_choice, parallel_tool_calls)
        self._parser = ResponseParser(
            loaded, prefix, tools=self._request.raw_tools, include_groups=True
        )
        self._tracker = MessageTracker(loaded, self._request.tools, ids)
        self._started = False
        self._done = False
        self._pending = self._tracker.handle(self._parser.initial_events)
        #: Rule violations found at ``finish()`` (also warned or raised there).
        self.violations: list[RuleViolation] = []
        #: The parsed message, once ``finish()`` returned.
        self.message: dict[str, Any] | None = None

    @property
    def tools(self) -> ToolIndex:
        """The request's tools, normalized."""
        return self._request.tools

    def _check_open(self, action: str) -> None:
        if self._done:
            raise ParserStateError(f"cannot {action}(): this stream already finished")

    def _take_pending(self, action: str) -> list[Update]:
        self._check_open(action)
        updates, self._pending = self._pending, []
        return updates

    def _feed_updates(self, text: str | Sequence[int]) -> list[Update]:
        updates = self._take_pending("feed")
        updates += self._tracker.handle(self._parser.feed(text))
        return updates

    def _finish_updates(self) -> tuple[dict[str, Any], list[Update]]:
        """Finalize the parser: the message and the last updates."""
        self._check_open("finish")
        message, events = self._parser.finalize()
        self._done = True
        self.message = message
        updates, self._pending = self._pending, []
        updates += self._tracker.handle(events)
        updates += self._tracker.finish(message)
        return message, updates

    def _resolve_calls(self, message: Mapping[str, Any]) -> list[ResolvedCall]:
        return resolve_calls(message, self._request.tools)

    def _check_rules(self, calls: list[ResolvedCall], output: list[dict[str, Any]]) -> None:
        """Check the calls against the request; report (warn, or raise with ``output``)."""
        tools = self._request.tools
        self.violations = check_calls(
            calls, tools, self._request.tool_choice, self._request.parallel_tool_calls
        )
        report(self.violations, tools, output)
