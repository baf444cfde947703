"""``replyparse parse`` and ``replyparse stream``: model output files (or stdin) to JSON.

``parse`` reads one generation (plain text) or many (JSONL, ``{"text", "prefix"?}`` per
line) and writes the parsed message, or its ``chat.completion`` / Responses ``response``
form; JSONL in gives JSONL out, one line per input line, in order, with a progress bar on a
terminal and ``--workers`` processes. A line that fails is reported on stderr with its line
number and written as ``{"line", "error", "partial_message"}``; every other line is still
written, and the exit status is 1.

``stream`` feeds one generation to a parser as it arrives (or in ``--chunk-size`` pieces)
and prints each event, chunk or Responses event as a JSON line (or SSE) as it is produced.
"""

from __future__ import annotations

import argparse
import codecs
import concurrent.futures
import itertools
import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import IO, Any

from replyparse._cli.common import (
    CliError,
    TemplateChoice,
    dump_json,
    is_jsonl,
    jsonl_records,
    load_choice,
    load_tools,
    open_input,
    resolve_prefix,
    resolve_template,
)
from replyparse._cli.progress import Progress
from replyparse.errors import ResponseParseError
from replyparse.openai import (
    ChatCompletionStream,
    ResponsesStream,
    ToolCallRuleError,
    chat_sse,
    responses_sse,
    to_chat_completion,
    to_response,
)
from replyparse.parser import ResponseParser, parse_response
from replyparse.template import ResponseTemplate

__all__ = ["add_parse_arguments", "add_stream_arguments", "run_parse", "run_stream"]

FORMATS = ("message", "chat", "responses")


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input", nargs="?", default="-", help="a file of model output; - or none: stdin"
    )
    parser.add_argument(
        "-t",
        "--template",
        required=True,
        metavar="NAME|PATH",
        help="a registry family (see 'replyparse templates list') or a template JSON file",
    )
    prefix = parser.add_mutually_exclusive_group()
    prefix.add_argument(
        "--prefix",
        metavar="TEXT",
        help=r"the end of the prompt the model continued (\n, \t escapes); '' to opt out",
    )
    prefix.add_argument(
        "--prefix-file", metavar="FILE", help="read the prefix from a file, exactly"
    )
    prefix.add_argument(
        "--prefix-name",
        metavar="NAME",
        help="a registry prefix (default, thinking, no_thinking...); registry default otherwise",
    )
    parser.add_argument("--tools", metavar="FILE", help="a JSON array of tools: types arguments")
    parser.add_argument(
        "--input-format",
        choices=("text", "jsonl"),
        help="default: jsonl for .jsonl/.ndjson files, else text",
    )
    parser.add_argument("--model", default=None, help="the model name in chat/responses output")


def add_parse_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``parse`` options."""
    _add_common(parser)
    parser.add_argument(
        "-f",
        "--format",
        choices=FORMATS,
        default="message",
        help="message (default), chat (a chat.completion) or responses (a response object)",
    )
    parser.add_argument(
        "--workers", type=int, default=1, metavar="N", help="processes for JSONL input"
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="a progress bar on stderr for JSONL input (auto: when stderr is a terminal)",
    )
    parser.add_argument(
        "--indent", type=int, default=2, metavar="N", help="JSON indent of text input output"
    )


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``stream`` options."""
    _add_common(parser)
    parser.add_argument(
        "-f",
        "--format",
        choices=("events", "chat", "responses"),
        default="events",
        help="parser events (default), chat.completion.chunk objects or Responses events",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=0,
        metavar="N",
        help="feed the parser N characters at a time (default: as the input arrives)",
    )
    parser.add_argument(
        "--sse", action="store_true", help="frame chunks/events as server-sent events"
    )
    parser.add_argument(
        "--with-message",
        action="store_true",
        help='end with {"type": "message", "message": ...} (events format)',
    )


# -- parse ----------------------------------------------------------------------------------


class _Job:
    """What a worker needs to turn one generation into an output object."""

    def __init__(
        self, template: ResponseTemplate, tools: list[Any] | None, fmt: str, model: str
    ) -> None:
        self.template = template
        self.tools = tools
        self.format = fmt
        self.model = model

    def convert(self, text: str, prefix: str) -> tuple[Any, list[str]]:
        """``(output object, warnings)``; raises ResponseParseError.

        Broken tool-calling rules are warnings here: the output is written all the same.
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            output, notes = self._convert(text, prefix)
        return output, notes + [" ".join(str(warning.message).split()) for warning in caught]

    def _convert(self, text: str, prefix: str) -> tuple[Any, list[str]]:
        message = parse_response(text, self.template, prefix=prefix, tools=self.tools)
        if self.format == "message":
            return message, []
        try:
            if self.format == "chat":
                return to_chat_completion(message, model=self.model, tools=self.tools), []
            return to_response(message, model=self.model, tools=self.tools), []
        except ToolCallRuleError as error:
            return error.result, [" ".join(str(error).split())]


_WORKER_JOB: _Job | None = None


def _init_worker(
    source: str | dict[str, Any], tools: list[Any] | None, fmt: str, model: str
) -> None:
    global _WORKER_JOB
    _WORKER_JOB = _Job(load_choice(source), tools, fmt, model)


def _work(item: tuple[int, Any]) -> tuple[int, str, Any, list[str]]:
    assert _WORKER_JOB is not None
    return _process(_WORKER_JOB, item)


def _process(job: _Job, item: tuple[int, Any]) -> tuple[int, str, Any, list[str]]:
    """``(line, "ok" | "error", output or (message, partial), warnings)`` for one record."""
    number, record = item
    if isinstance(record, str):
        return number, "error", (record, None), []
    text, prefix = record
    try:
        output, notes = job.convert(text, prefix)
    except ResponseParseError as error:
        return number, "error", (" ".join(str(error).split()), error.partial_message), []
    return number, "ok", output, notes


def _results(
    job: _Job,
    choice: TemplateChoice,
    records: Iterable[tuple[int, Any]],
    workers: int,
) -> Iterator[tuple[int, str, Any, list[str]]]:
    if workers <= 1:
        for item in records:
            yield _process(job, item)
        return
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=workers,
        initializer=_init_worker,
        initargs=(choice.source, job.tools, job.format, job.model),
    ) as pool:
        # Bounded batches: the executor submits a whole map() at once.
        iterator = iter(records)
        while batch := list(itertools.islice(iterator, workers * 256)):
            yield from pool.map(_work, batch, chunksize=32)


def _count_lines(path: str) -> int | None:
    if path == "-":
        return None
    try:
        with open(path, "rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return None


def run_parse(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``parse``; return the exit status."""
    if args.workers < 1:
        raise CliError(f"--workers must be at least 1; got {args.workers}", status=2)
    choice = resolve_template(args.template)
    tools = load_tools(args.tools)
    job = _Job(choice.template, tools, args.format, args.model or choice.label)
    jsonl = is_jsonl(args.input, args.input_format)
    default_prefix: str | None
    try:
        default_prefix = resolve_prefix(
            choice, prefix=args.prefix, prefix_file=args.prefix_file, prefix_name=args.prefix_name
        )
    except CliError:
        if not jsonl:
            raise
        default_prefix = None  # each line must then carry its own "prefix"
    handle = open_input(args.input)
    try:
        if not jsonl:
            assert default_prefix is not None
            _number, status, output, notes = _process(job, (0, (handle.read(), default_prefix)))
            for note in notes:
                stderr.write(f"replyparse: warning: {note}\n")
            if status == "error":
                raise CliError(output[0])
            dump_json(output, stdout, indent=args.indent if args.indent > 0 else None)
            return 0
        return _parse_jsonl(args, choice, job, handle, default_prefix, stdout, stderr)
    finally:
        if handle is not sys.stdin:
            handle.close()


def _parse_jsonl(
    args: argparse.Namespace,
    choice: TemplateChoice,
    job: _Job,
    handle: IO[str],
    default_prefix: str | None,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    show = args.progress == "always" or (args.progress == "auto" and stderr.isatty())
    progress = Progress(stderr, total=_count_lines(args.input), enabled=show)
    failures = 0
    for number, status, output, notes in _results(
        job, choice, jsonl_records(iter(handle), default_prefix), args.workers
    ):
        for note in notes:
            progress.message(f"replyparse: warning: line {number}: {note}\n")
        if status == "error":
            failures += 1
            error, partial = output
            progress.message(f"replyparse: line {number}: error: {error}\n")
            record: dict[str, Any] = {"line": number, "error": error}
            if partial is not None:
                record["partial_message"] = partial
            dump_json(record, stdout)
        else:
            dump_json(output, stdout)
        progress.advance(number)
    progress.close()
    if failures:
        stderr.write(f"replyparse: {failures} line{'s' if failures != 1 else ''} failed\n")
    return 1 if failures else 0


# -- stream ---------------------------------------------------------------------------------


def _pieces(handle: IO[str], chunk_size: int) -> Iterator[str]:
    """The input as it arrives (``os.read`` on its descriptor), re-cut to ``chunk_size``."""
    try:
        descriptor = handle.fileno()
    except (AttributeError, OSError, ValueError):
        descriptor = -1
    if descriptor >= 0:
        decoder = codecs.getincrementaldecoder("utf-8")()

        def reads() -> Iterator[str]:
            while True:
                data = os.read(descriptor, 1 << 16)
                text = decoder.decode(data, final=not data)
                if text:
                    yield text
                if not data:
                    return

        source: Iterator[str] = reads()
    else:
        source = iter([handle.read()])
    if chunk_size <= 0:
        yield from source
        return
    pending = ""
    for text in source:
        pending += text
        while len(pending) >= chunk_size:
            yield pending[:chunk_size]
            pending = pending[chunk_size:]
    if pending:
        yield pending


class _Printer:
    def __init__(self, stdout: IO[str], fmt: str, sse: bool) -> None:
        self.stdout = stdout
        self.format = fmt
        self.sse = sse

    def write(self, items: Iterable[Any], *, done: bool = False) -> None:
        if self.sse and self.format == "chat":
            self.stdout.writelines(chat_sse(items, done=done))
        elif self.sse and self.format == "responses":
            self.stdout.writelines(responses_sse(items))
        else:
            for item in items:
                dump_json(item, self.stdout)
        self.stdout.flush()


def run_stream(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``stream``; return the exit status."""
    if args.input_format == "jsonl" or (args.input_format is None and is_jsonl(args.input, None)):
        raise CliError("stream reads one generation as plain text; use 'parse' for JSONL", status=2)
    if args.sse and args.format == "events":
        raise CliError(
            "--sse frames chat or responses output; pass --format chat|responses", status=2
        )
    choice = resolve_template(args.template)
    tools = load_tools(args.tools)
    prefix = resolve_prefix(
        choice, prefix=args.prefix, prefix_file=args.prefix_file, prefix_name=args.prefix_name
    )
    model = args.model or choice.label
    printer = _Printer(stdout, args.format, args.sse)
    handle = open_input(args.input)
    try:
        if args.format == "events":
            return _stream_events(choice, prefix, tools, handle, args, printer)
        return _stream_openai(choice, prefix, tools, model, handle, args, printer, stderr)
    finally:
        if handle is not sys.stdin:
            handle.close()


def _stream_events(
    choice: TemplateChoice,
    prefix: str,
    tools: list[Any] | None,
    handle: IO[str],
    args: argparse.Namespace,
    printer: _Printer,
) -> int:
    parser = ResponseParser(choice.template, prefix, tools=tools)
    printer.write(parser.initial_events)
    try:
        for piece in _pieces(handle, args.chunk_size):
            printer.write(parser.feed(piece))
        message, events = parser.finalize()
    except ResponseParseError as error:
        raise CliError(" ".join(str(error).split())) from None
    printer.write(events)
    if args.with_message:
        printer.write([{"type": "message", "message": message}])
    return 0


def _stream_openai(
    choice: TemplateChoice,
    prefix: str,
    tools: list[Any] | None,
    model: str,
    handle: IO[str],
    args: argparse.Namespace,
    printer: _Printer,
    stderr: IO[str],
) -> int:
    stream: ChatCompletionStream | ResponsesStream
    if args.format == "chat":
        stream = ChatCompletionStream(choice.template, prefix=prefix, model=model, tools=tools)
    else:
        stream = ResponsesStream(choice.template, prefix=prefix, model=model, tools=tools)
    printer.write(stream.start())
    try:
        for piece in _pieces(handle, args.chunk_size):
            printer.write(stream.feed(piece))
        try:
            final = stream.finish()
        except ToolCallRuleError as error:
            final = list(error.result)
    except ResponseParseError as error:
        printer.write(stream.fail(error), done=True)
        raise CliError(" ".join(str(error).split())) from None
    printer.write(final, done=True)
    for issue in stream.issues:  # recover mode: the stream is answered, the issue reported
        stderr.write(f"replyparse: warning: {' '.join(issue.summary().split())}\n")
    return 0
