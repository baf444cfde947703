"""``replyparse demo``: stream bundled generations through the parser, rendered live.

No network and no model: each bundled generation (``replyparse.demo``) is fed a few
characters at a time to a :class:`~replyparse.openai.ChatCompletionStream` built from its
family's registry template, and the chunks are drawn as they arrive: reasoning, content, and
each tool call's name then its arguments. The raw generation is shown first, above its
parse, so the two can be compared. Then the final message and its Responses output items are
printed as JSON, once, after the live view (``--json``, the default when piped); on a terminal
a one-line summary takes their place, so that no dump scrolls the live view away.

On a terminal the sections are coloured and the text arrives at reading speed; piped (or
with ``--color never``), the output is plain text with ``[label]`` markers and no delay.
``NO_COLOR`` is honoured.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import IO, Any

from replyparse._cli.common import CliError, add_when_argument, dump_json, when
from replyparse.demo import DemoGeneration, load_generations
from replyparse.openai import ChatCompletionStream, SequentialIds, to_response_output
from replyparse.templates import get_entry

__all__ = ["add_demo_arguments", "run_demo"]

_STYLES = {
    "title": "1",
    "muted": "2",
    "label": "1;36",
    "reasoning": "2;3",
    "content": "",
    "tool": "1;33",
    "arguments": "33",
    "heading": "1;32",
    "raw": "2",
}
_LABEL_WIDTH = 11


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``demo`` options."""
    parser.add_argument(
        "--family",
        action="append",
        metavar="NAME",
        help="only this family's generation (repeatable); see --list",
    )
    parser.add_argument("--list", action="store_true", help="list the bundled generations")
    add_when_argument(
        parser,
        "--color",
        "colours and live pacing (auto: when stdout is a terminal and NO_COLOR is unset)",
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=None,
        metavar="SECONDS",
        help="pause between chunks (default: 0.015 on a terminal, 0 when piped)",
    )
    parser.add_argument(
        "--chunk-size", type=int, default=3, metavar="N", help="characters per chunk"
    )
    parser.add_argument(
        "--json",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="print the final message and Responses output items as JSON after each live view "
        "(default: when piped; on a terminal a one-line summary)",
    )


class _Painter:
    """Writes styled text: ANSI colours on a terminal, plain text otherwise."""

    def __init__(self, stream: IO[str], color: bool) -> None:
        self.stream = stream
        self.color = color

    def paint(self, text: str, style: str) -> str:
        code = _STYLES[style]
        if not self.color or not code or not text:
            return text
        return f"\x1b[{code}m{text}\x1b[0m"

    def write(self, text: str, style: str = "content") -> None:
        self.stream.write(self.paint(text, style))
        self.stream.flush()


class _LiveView:
    """Draws chat-completion chunks as they arrive, one labelled section per part."""

    def __init__(self, painter: _Painter) -> None:
        self.painter = painter
        self.section: str | None = None
        self.calls: dict[int, str] = {}

    def _open(self, section: str, label: str, style: str) -> None:
        self._close()
        self.section = section
        shown = f"{label:<{_LABEL_WIDTH}}" if self.painter.color else f"[{label}] "
        self.painter.write(shown, style)

    def _close(self) -> None:
        if self.section is None:
            return
        if self.section.startswith("call"):
            self.painter.write(")", "tool")
        self.painter.write("\n")
        self.section = None

    def _text(self, section: str, label: str, style: str, text: str) -> None:
        if self.section != section:
            self._open(section, label, "label")
            text = text.lstrip("\n")
        indent = " " * (_LABEL_WIDTH if self.painter.color else len(label) + 3)
        self.painter.write(text.replace("\n", "\n" + indent), style)

    def chunk(self, chunk: dict[str, Any]) -> None:
        for choice in chunk.get("choices", []):
            delta = choice.get("delta", {})
            if delta.get("reasoning_content"):
                self._text("reasoning", "reasoning", "reasoning", delta["reasoning_content"])
            if delta.get("content"):
                self._text("content", "content", "content", delta["content"])
            for call in delta.get("tool_calls") or []:
                self._call(call)

    def _call(self, call: dict[str, Any]) -> None:
        index = call["index"]
        body = call.get("function") or call.get("custom") or {}
        section = f"call{index}"
        if self.section != section:
            name = body.get("name") or self.calls.get(index, "?")
            self.calls[index] = name
            self._open(
                section, f"tool call {index}" if not self.painter.color else "tool call", "label"
            )
            self.painter.write(f"{name}(", "tool")
        fragment = body.get("arguments", body.get("input", ""))
        if fragment:
            self.painter.write(fragment, "arguments")

    def finish(self) -> None:
        self._close()


def _describe(generation: DemoGeneration, painter: _Painter, prefix: str) -> None:
    painter.write(f"== {generation.family}: {generation.title}\n", "title")
    for message in generation.messages:
        painter.write(f"{message['role']}: {message['content']}\n", "muted")
    names = ", ".join(tool["function"]["name"] for tool in generation.tools)
    painter.write(f"tools: {names}\n", "muted")
    painter.write(f"prompt ends with: {json.dumps(prefix, ensure_ascii=False)}\n\n", "muted")
    _raw(generation.text, painter)


def _raw(text: str, painter: _Painter) -> None:
    """The generation as the model wrote it, special tokens and all, above its parse."""
    painter.write(f"raw generation ({len(text)} characters)\n", "heading")
    for line in text.splitlines() or [""]:
        painter.write("  | ", "muted")
        painter.write(line, "raw")
        painter.write("\n")
    painter.write("\nparsed, as it streams\n", "heading")


def _summary(message: dict[str, Any], items: list[dict[str, Any]]) -> str:
    """One line in place of the JSON dumps: which fields the message has, which items."""
    fields = ", ".join(
        f"{key} ({len(value)})" if isinstance(value, list) else key
        for key, value in message.items()
        if key != "role" and value
    )
    kinds = ", ".join(item["type"] for item in items)
    return f"final message: {fields}; Responses output items: {kinds} (--json to print both)\n"


def _play(
    generation: DemoGeneration,
    painter: _Painter,
    *,
    delay: float,
    chunk_size: int,
    as_json: bool,
) -> None:
    entry = get_entry(generation.family)
    prefix = entry.prefixes[generation.prefix]
    tools = list(generation.tools)
    _describe(generation, painter, prefix)
    ids = SequentialIds()
    stream = ChatCompletionStream(
        entry.template, prefix=prefix, model=entry.name, tools=tools, ids=ids, created=0
    )
    view = _LiveView(painter)
    text = generation.text
    for start in range(0, len(text), chunk_size):
        for chunk in stream.feed(text[start : start + chunk_size]):
            view.chunk(chunk)
        if delay:
            time.sleep(delay)
    for chunk in stream.finish():
        view.chunk(chunk)
    view.finish()
    message = stream.message or {}
    items = to_response_output(message, tools=tools, ids=ids)
    if not as_json:
        painter.write("\n" + _summary(message, items) + "\n", "muted")
        return
    painter.write("\nfinal message\n", "heading")
    dump_json(message, painter.stream, indent=2)
    painter.write("\nResponses output items\n", "heading")
    dump_json(items, painter.stream, indent=2)
    painter.write("\n")


def run_demo(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``demo``; return the exit status."""
    generations = load_generations()
    if args.list:
        for generation in generations:
            stdout.write(f"{generation.family:<10}  {generation.title}\n")
        return 0
    if args.chunk_size < 1:
        raise CliError(f"--chunk-size must be at least 1; got {args.chunk_size}", status=2)
    if args.family:
        known = {generation.family for generation in generations}
        unknown = [name for name in args.family if name not in known]
        if unknown:
            raise CliError(f"no bundled generation for {unknown}; available: {sorted(known)}")
        generations = [generation for generation in generations if generation.family in args.family]
    terminal = stdout.isatty()
    color = when(args.color, stdout, auto=not os.environ.get("NO_COLOR"))
    delay = args.delay if args.delay is not None else (0.015 if terminal else 0.0)
    as_json = args.json if args.json is not None else not terminal
    painter = _Painter(stdout, color)
    for generation in generations:
        _play(
            generation,
            painter,
            delay=max(delay, 0.0),
            chunk_size=args.chunk_size,
            as_json=as_json,
        )
    return 0
