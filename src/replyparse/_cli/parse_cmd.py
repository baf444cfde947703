"""``replyparse parse`` and ``replyparse stream``: model output files (or stdin) to JSON.

``parse`` reads one generation (plain text) or many (JSONL, ``{"text", "prefix"?, "tools"?,
"finish_reason"?}`` per line, or a Parquet file with those columns) and writes the parsed
message, or its ``chat.completion`` / Responses ``response`` form. Many rows in give one
output row per input row, in order, as JSONL (stdout or ``-o``) or Parquet (``-o
out.parquet``: every input column kept, the ``replyparse.batch`` columns added), with a
progress bar on a terminal, ``--workers`` processes, or ``--engine ray``. A row that fails
is reported on stderr with its line number (JSONL) or row index (Parquet) and written as
``{"line"|"row", "error", "partial_message"}`` (Parquet: its ``error`` cell); every other
row is still written, and the exit status is 1. The rows go through
``replyparse.batch.BatchParser``: one compiled template per worker.

``stream`` feeds one generation to a parser as it arrives (or in ``--chunk-size`` pieces)
and prints each event, chunk or Responses event as a JSON line (or SSE) as it is produced.
"""

from __future__ import annotations

import argparse
import codecs
import concurrent.futures
import contextlib
import itertools
import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from replyparse._cli.common import (
    CliError,
    TemplateChoice,
    add_policy_argument,
    add_prefix_arguments,
    add_when_argument,
    dump_json,
    is_jsonl,
    jsonl_rows,
    load_choice,
    load_tools,
    open_input,
    read_policies,
    resolve_prefix,
    resolve_template,
    when,
)
from replyparse._cli.progress import Progress
from replyparse.batch import BatchParser, OpenAIShape, output_columns
from replyparse.errors import ResponseParseError
from replyparse.issues import IssueKind, ParseIssue
from replyparse.openai import (
    ChatCompletionStream,
    ResponsesStream,
    ToolCallRuleError,
    chat_sse,
    responses_sse,
)
from replyparse.parser import ResponseParser

__all__ = ["add_parse_arguments", "add_stream_arguments", "run_parse", "run_stream"]

FORMATS = ("message", "chat", "responses")
_OPENAI_COLUMNS = {"chat": "chat_completion", "responses": "response"}


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
    add_prefix_arguments(parser)
    parser.add_argument("--tools", metavar="FILE", help="a JSON array of tools: types arguments")
    add_policy_argument(parser, "--template family")
    parser.add_argument(
        "--input-format",
        choices=("text", "jsonl", "parquet"),
        help="default: jsonl for .jsonl/.ndjson files, parquet for .parquet, else text",
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
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes for JSONL/Parquet input (with --engine ray: actors)",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local processes (default) or Ray Data (needs replyparse[ray])",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="a Ray cluster to run on (default: a local Ray instance with --workers CPUs)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write here instead of stdout; a .parquet file is written as Parquet",
    )
    parser.add_argument(
        "--output-format",
        choices=("jsonl", "parquet"),
        help="default: parquet for a .parquet --output, else jsonl",
    )
    parser.add_argument(
        "--text-column",
        default="text",
        metavar="NAME",
        help="the Parquet column holding the generations (default: text)",
    )
    parser.add_argument(
        "--recover",
        action="store_true",
        help="recover mode: output that does not fit is kept and reported as warnings "
        "(Parquet: the issues column) instead of failing the row",
    )
    add_when_argument(
        parser,
        "--progress",
        "a progress bar on stderr for JSONL/Parquet input (auto: when stderr is a terminal)",
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

#: Rows per chunk: what a worker process gets at a time, and a Parquet write.
CHUNK_ROWS = 512


@dataclass
class _Chunk:
    """Input rows, in order: ``numbers`` are JSONL line numbers or Parquet row indices."""

    numbers: list[int]
    #: number -> why the row could not be read (it is not sent to the parser).
    errors: dict[int, str]
    #: The columns of the rows that were read, in order.
    inputs: dict[str, list[Any]]


@dataclass
class _Options:
    """What every worker needs to build its BatchParser (picklable)."""

    source: str | dict[str, Any]
    prefix: str | None
    tools: list[Any] | None
    recover: bool
    openai: OpenAIShape | None
    model: str
    text_column: str

    def parser(self) -> BatchParser:
        return BatchParser(load_choice(self.source), **self.parser_kwargs())

    def parser_kwargs(self) -> dict[str, Any]:
        """BatchParser's keyword arguments (a Ray actor builds its own from them)."""
        return {
            "prefix": self.prefix,
            "tools": self.tools,
            "recover": self.recover,
            "openai": self.openai,
            "model": self.model,
            "text_column": self.text_column,
        }


_WORKER_PARSER: BatchParser | None = None


def _init_worker(options: _Options) -> None:
    global _WORKER_PARSER
    _WORKER_PARSER = options.parser()


def _parse_inputs(parser: BatchParser, inputs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The output columns of one chunk's rows."""
    if not inputs or not inputs.get(parser.text_column):
        return {name: [] for name in parser.columns}
    parsed = parser(inputs)
    return {name: parsed[name] for name in parser.columns}


def _work(inputs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    assert _WORKER_PARSER is not None
    return _parse_inputs(_WORKER_PARSER, inputs)


def _outputs(
    options: _Options, chunks: Iterable[_Chunk], workers: int, engine: str, ray_address: str | None
) -> Iterator[tuple[_Chunk, dict[str, list[Any]]]]:
    """Each chunk with the output columns of its rows, in input order."""
    if engine == "ray":
        yield from _ray_outputs(options, chunks, workers, ray_address)
        return
    if workers <= 1:
        parser = options.parser()
        for chunk in chunks:
            yield chunk, _parse_inputs(parser, chunk.inputs)
        return
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, initializer=_init_worker, initargs=(options,)
    ) as pool:
        # Bounded: the executor submits a whole map() at once.
        iterator = iter(chunks)
        while batch := list(itertools.islice(iterator, workers * 4)):
            yield from zip(batch, pool.map(_work, [chunk.inputs for chunk in batch]), strict=True)


def _ray_outputs(
    options: _Options, chunks: Iterable[_Chunk], workers: int, address: str | None
) -> Iterator[tuple[_Chunk, dict[str, list[Any]]]]:
    """The same job on Ray Data: local by default (``ray.init()``), or ``address``."""
    try:
        import pyarrow as pa
        import ray
        import ray.data
    except ImportError:
        raise CliError(
            "--engine ray needs Ray Data: pip install -e '.[ray]' in the replyparse checkout",
            status=2,
        ) from None
    from replyparse.batch import parse_ray_dataset

    chunks = list(chunks)
    tables = [pa.Table.from_pydict(chunk.inputs) for chunk in chunks if _row_count(chunk)]
    columns = output_columns(options.openai)
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(
                address=address,
                num_cpus=None if address else workers,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
        except (ConnectionError, RuntimeError, ValueError) as error:
            # No cluster at the address (``auto`` with none running), or one Ray refuses.
            where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
            raise CliError(
                f"--engine ray: cannot start or join {where}: {' '.join(str(error).split())} "
                "(start one with `ray start --head`, or leave out --ray-address for a local one)"
            ) from None
    # Our progress bar and messages only: Ray Data logs every stage at INFO.
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    try:
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        rows: Iterator[dict[str, Any]] = iter(())
        if tables:
            dataset = parse_ray_dataset(
                ray.data.from_arrow(tables),
                options.source,
                concurrency=min(workers, len(tables)),  # more actors than blocks idle
                batch_size=CHUNK_ROWS,
                **options.parser_kwargs(),
            )
            rows = iter(dataset.iter_rows())
        for chunk in chunks:
            outputs: dict[str, list[Any]] = {name: [] for name in columns}
            for _ in range(_row_count(chunk)):
                row = next(rows)
                for name in columns:
                    outputs[name].append(row[name])
            yield chunk, outputs
        for _ in rows:  # end Ray's iteration before the shutdown (there is no row left)
            pass
    finally:
        if started:
            ray.shutdown()


def _row_count(chunk: _Chunk) -> int:
    return len(chunk.numbers) - len(chunk.errors)


def _jsonl_chunks(handle: IO[str]) -> Iterator[_Chunk]:
    rows = jsonl_rows(iter(handle))
    while batch := list(itertools.islice(rows, CHUNK_ROWS)):
        chunk = _Chunk([], {}, {name: [] for name in _JSONL_KEYS})
        for number, record in batch:
            chunk.numbers.append(number)
            if isinstance(record, str):
                chunk.errors[number] = record
                continue
            chunk.inputs["line"].append(number)
            for name in _JSONL_KEYS[1:]:
                chunk.inputs[name].append(record.get(name))
        yield chunk


#: The JSONL keys a line may carry (and the columns of Parquet output from JSONL input).
_JSONL_KEYS = ("line", "text", "prefix", "tools", "finish_reason")


def _parquet_chunks(path: str, text_column: str) -> Iterator[_Chunk]:
    parquet = _import_parquet()
    try:
        source = parquet.ParquetFile(path)
    except (OSError, ValueError) as error:
        raise CliError(f"{path}: cannot read the Parquet input: {error}") from None
    if text_column not in source.schema_arrow.names:
        raise CliError(
            f"{path}: no column {text_column!r}; columns: {source.schema_arrow.names}"
            " (--text-column NAME)"
        )
    index = 0
    for batch in source.iter_batches(batch_size=CHUNK_ROWS):
        inputs = batch.to_pydict()
        numbers = list(range(index, index + batch.num_rows))
        index += batch.num_rows
        yield _Chunk(numbers, {}, inputs)


def _import_parquet() -> Any:
    try:
        import pyarrow.parquet
    except ImportError:
        raise CliError(
            "Parquet needs pyarrow: pip install -e '.[datasets]' in the replyparse checkout (or pyarrow)",
            status=2,
        ) from None
    return pyarrow.parquet


class _JsonlWriter:
    """One JSON line per row: the output object, or ``{"line"|"row", "error", ...}``."""

    def __init__(self, stream: IO[str], fmt: str, key: str) -> None:
        self.stream = stream
        self.column = "message" if fmt == "message" else _OPENAI_COLUMNS[fmt]
        self.key = key

    def write(self, number: int, error: str | None, values: dict[str, Any] | None) -> None:
        if values is None:
            dump_json({self.key: number, "error": error}, self.stream)
        elif error is not None:
            record: dict[str, Any] = {self.key: number, "error": error}
            if values["message"] is not None:
                record["partial_message"] = json.loads(values["message"])
            dump_json(record, self.stream)
        else:
            _write_json_text(values[self.column], self.stream)

    def close(self) -> None:
        self.stream.flush()


def _write_json_text(text: str, stream: IO[str]) -> None:
    """JSON text as ``dump_json`` writes it (ASCII-escaped on a non-UTF stream)."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    if text.isascii() or encoding in ("utf8", "utf16", "utf32"):
        stream.write(text + "\n")
    else:
        dump_json(json.loads(text), stream)


class _ParquetWriter:
    """The input columns and the output columns, a row group per chunk."""

    def __init__(self, path: str, input_schema: Any, output_schema: Any) -> None:
        import pyarrow as pa

        self.pa = pa
        self.parquet = _import_parquet()
        outputs = set(output_schema.names)
        fields = [field for field in input_schema if field.name not in outputs]
        self.schema = pa.schema([*fields, *output_schema])
        self.input_names = [field.name for field in fields]
        self.path = path
        try:
            self.writer = self.parquet.ParquetWriter(path, self.schema)
        except OSError as error:
            raise CliError(f"{path}: cannot write the output: {error}") from None
        self.rows: dict[str, list[Any]] = {name: [] for name in self.schema.names}

    def add(
        self,
        number: int,
        inputs: dict[str, Any] | None,
        error: str | None,
        values: dict[str, Any] | None,
    ) -> None:
        for name in self.input_names:
            self.rows[name].append(inputs.get(name) if inputs is not None else None)
        for name in self.schema.names[len(self.input_names) :]:
            if values is not None:
                self.rows[name].append(values[name])
            elif name == "error":
                self.rows[name].append(error)
            elif name in ("issues", "warnings"):
                self.rows[name].append([])
            else:
                self.rows[name].append(None)

    def flush(self) -> None:
        if self.rows[self.schema.names[0]]:
            table = self.pa.Table.from_pydict(self.rows, schema=self.schema)
            self.writer.write_table(table)
            self.rows = {name: [] for name in self.schema.names}

    def close(self) -> None:
        self.flush()
        self.writer.close()


def run_parse(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``parse``; return the exit status."""
    if args.workers < 1:
        raise CliError(f"--workers must be at least 1; got {args.workers}", status=2)
    choice = resolve_template(args.template, read_policies(args.policy))
    tools = load_tools(args.tools)
    input_format = _input_format(args)
    default_prefix: str | None
    try:
        default_prefix = resolve_prefix(
            choice, prefix=args.prefix, prefix_file=args.prefix_file, prefix_name=args.prefix_name
        )
    except CliError:
        if input_format == "text" or args.prefix_name is not None or args.prefix_file is not None:
            raise  # a prefix asked for and not found: one error, not one per row
        default_prefix = None  # each row must then carry its own "prefix"
    options = _Options(
        source=choice.source,
        prefix=default_prefix,
        tools=tools,
        recover=args.recover,
        openai=None
        if args.format == "message"
        else ("chat" if args.format == "chat" else "responses"),
        model=args.model or choice.label,
        text_column=args.text_column,
    )
    if input_format == "text":
        return _parse_text(args, options, stdout, stderr)
    return _parse_rows(args, options, input_format, stdout, stderr)


def _input_format(args: argparse.Namespace) -> str:
    if args.input_format is not None:
        return str(args.input_format)
    suffix = Path(args.input).suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    return "jsonl" if is_jsonl(args.input, None) else "text"


def _parse_text(
    args: argparse.Namespace,
    options: _Options,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    handle = open_input(args.input)
    try:
        text = handle.read()
    finally:
        if handle is not sys.stdin:
            handle.close()
    parser = options.parser()
    result = parser.parse_row(text)
    for issue in result.issues:
        stderr.write(f"replyparse: warning: {_issue_line(issue)}\n")
    for note in result.warnings:
        stderr.write(f"replyparse: warning: {note}\n")
    if result.error is not None:
        raise CliError(result.error)
    output = result.output if options.openai is not None else result.message
    dump_json(output, stdout, indent=args.indent if args.indent > 0 else None)
    return 0


def _parse_rows(
    args: argparse.Namespace,
    options: _Options,
    input_format: str,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    parquet_out = args.output_format == "parquet" or (
        args.output_format is None
        and args.output is not None
        and Path(args.output).suffix.lower() in (".parquet", ".pq")
    )
    if parquet_out and args.output is None:
        raise CliError("Parquet output needs a file: -o/--output FILE.parquet", status=2)
    key = "line" if input_format == "jsonl" else "row"
    with contextlib.ExitStack() as stack:
        input_schema: Any = None
        if input_format == "parquet":
            if args.input == "-":
                raise CliError("Parquet input must be a file, not stdin", status=2)
            chunks: Iterator[_Chunk] = _parquet_chunks(args.input, args.text_column)
            total = _parquet_rows(args.input)
            input_schema = _import_parquet().ParquetFile(args.input).schema_arrow
        else:
            handle = open_input(args.input)
            if handle is not sys.stdin:
                stack.callback(handle.close)
            chunks = _jsonl_chunks(handle)
            total = _count_lines(args.input)
        writer: _JsonlWriter | _ParquetWriter
        if parquet_out:
            import pyarrow as pa

            schema = input_schema if input_schema is not None else _jsonl_schema(pa)
            writer = _ParquetWriter(args.output, schema, options.parser().arrow_schema())
        else:
            stream = stdout
            if args.output is not None:
                stream = stack.enter_context(_open_output(args.output))
            writer = _JsonlWriter(stream, args.format, key)
        progress = Progress(
            stderr, total=total, enabled=when(args.progress, stderr), unit=f"{key}s"
        )
        stack.callback(progress.close)
        failures = _write_rows(
            _outputs(options, chunks, args.workers, args.engine, args.ray_address),
            writer,
            key,
            input_format,
            options,
            progress,
        )
        writer.close()
    if failures:
        unit = key if failures == 1 else f"{key}s"
        stderr.write(f"replyparse: {failures} {unit} failed\n")
    return 1 if failures else 0


def _open_output(path: str) -> IO[str]:
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot write the output: {error.strerror}") from None


def _issue_line(issue: dict[str, Any]) -> str:
    """An issue column's dict as one line, as ``ParseIssue`` prints itself."""
    parsed = ParseIssue(
        IssueKind(issue["kind"]), issue["field"], issue["offset"], issue["raw"], issue["message"]
    )
    return " ".join(str(parsed).split())


def _jsonl_schema(pa: Any) -> Any:
    return pa.schema(
        [
            ("line", pa.int64()),
            ("text", pa.string()),
            ("prefix", pa.string()),
            ("tools", pa.string()),
            ("finish_reason", pa.string()),
        ]
    )


def _write_rows(
    outputs: Iterator[tuple[_Chunk, dict[str, list[Any]]]],
    writer: _JsonlWriter | _ParquetWriter,
    key: str,
    input_format: str,
    options: _Options,
    progress: Progress,
) -> int:
    failures = 0
    columns = output_columns(options.openai)
    for chunk, values in outputs:
        position = 0
        for number in chunk.numbers:
            where = f"{key} {number}"
            row_inputs: dict[str, Any] | None = None
            row_values: dict[str, Any] | None = None
            error = chunk.errors.get(number)
            if error is None:
                row_values = {name: values[name][position] for name in columns}
                row_inputs = {name: column[position] for name, column in chunk.inputs.items()}
                error = row_values["error"]
                position += 1
                for issue in row_values["issues"]:
                    progress.message(f"replyparse: warning: {where}: {_issue_line(issue)}\n")
                for note in row_values.get("warnings") or ():
                    progress.message(f"replyparse: warning: {where}: {note}\n")
            if error is not None:
                failures += 1
                progress.message(f"replyparse: {where}: error: {error}\n")
            if isinstance(writer, _ParquetWriter):
                if input_format == "jsonl":
                    row_inputs = _jsonl_cells(row_inputs) if row_inputs else {"line": number}
                writer.add(number, row_inputs, error, row_values)
            else:
                writer.write(number, error, row_values)
            progress.advance(number + 1 if input_format == "parquet" else number)
        if isinstance(writer, _ParquetWriter):
            writer.flush()
    return failures


def _jsonl_cells(inputs: dict[str, Any]) -> dict[str, Any]:
    """JSONL values as Parquet cells: tools (and any non-string) as JSON text."""
    cells = dict(inputs)
    for name in ("prefix", "tools", "finish_reason"):
        value = cells.get(name)
        if value is not None and not isinstance(value, str):
            cells[name] = json.dumps(value, ensure_ascii=False)
    return cells


def _parquet_rows(path: str) -> int | None:
    try:
        return int(_import_parquet().ParquetFile(path).metadata.num_rows)
    except (OSError, ValueError):
        return None


def _count_lines(path: str) -> int | None:
    if path == "-":
        return None
    try:
        with open(path, "rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return None


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
    choice = resolve_template(args.template, read_policies(args.policy))
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
