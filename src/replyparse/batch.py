"""Batch parsing: columns of finished generations to columns of parsed messages.

``BatchParser`` parses rows (text, and per row a prefix, tools and finish reason) with one
compiled template, in recover mode by default, and returns one result per row: the message,
its parse issues, an error for a row that could not be parsed at all, and on request the
OpenAI shape (``chat.completion`` or Responses ``response``). A bad row never stops a batch.

The same object is the function for ``datasets`` (``Dataset.map(parser, batched=True,
num_proc=N)``, ``IterableDataset.map``) and the callable class for Ray Data
(``ds.map_batches(BatchParser, fn_constructor_kwargs=..., concurrency=N)``): called with a
batch (a dict of columns, a ``pyarrow.Table`` or a ``pandas.DataFrame``), it returns the same
kind of batch with every input column kept and the output columns added.

What is hoisted out of the per-row loop: the compiled template (compiled once per process;
a pickled ``BatchParser`` carries the template's JSON and recompiles it through the
template memo), the tools (normalized and indexed once per distinct tools value, see
``PreparedTools``) and the prefix (read once by a ``PrimedParser`` kept per prefix and
tools). Each row is walked from that primed state without changing it; only a row that does
not fit the template as it is (something to recover, an error, a cut region) is parsed by a
copy of it on the general path.
Nothing here does I/O; ``datasets``, ``pyarrow``, ``pandas`` and ``ray`` are imported only
by the functions that need them (the ``datasets`` and ``ray`` extras).

Output columns (``output_columns(openai=...)``), each nullable:

* ``message``: the message as JSON text (tool arguments differ row by row, so no fixed
  columnar schema fits them); in raise mode, a failed row's partial message; None for a
  row that could not be read.
* ``content``, ``reasoning_content``: the strings (JSON text when a template makes them
  something else).
* ``tool_calls``: the calls as JSON text, None when there are none.
* ``issues``: a list of ``{kind, field, offset, raw, message}`` (``ParseIssue.to_dict()``).
* ``error``: why the row could not be parsed (a bad row, or an error in raise mode).
* ``in_progress``: the field still open when the generation was cut (finish reason
  ``length``).
* ``chat_completion`` or ``response`` (JSON text) and ``warnings`` (broken tool-calling
  rules), with ``openai="chat"`` / ``"responses"``.
"""

from __future__ import annotations

import json
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from replyparse._primed import PrimedParser
from replyparse.errors import ResponseParseError, ToolDefinitionError
from replyparse.openai import ToolCallRuleError, to_chat_completion, to_response
from replyparse.parser import PreparedTools, ResponseParser
from replyparse.template import ResponseTemplate, load_template

if TYPE_CHECKING:
    from replyparse.tokens import TokenizerLike

__all__ = [
    "BatchParser",
    "RowResult",
    "output_columns",
    "parse_dataset",
    "parse_ray_dataset",
]

OpenAIShape = Literal["chat", "responses"]

#: The columns every batch gets, in order.
BASE_COLUMNS = (
    "message",
    "content",
    "reasoning_content",
    "tool_calls",
    "issues",
    "error",
    "in_progress",
)
_OPENAI_COLUMN = {"chat": "chat_completion", "responses": "response"}
_FINISH_REASONS = frozenset(("stop", "length", "content_filter", "tool_calls"))
_TOOLS_CACHE_SIZE = 64
_PRIMED_CACHE_SIZE = 64


def output_columns(openai: OpenAIShape | None = None) -> tuple[str, ...]:
    """The names of the columns a batch gets, in order."""
    if openai is None:
        return BASE_COLUMNS
    return (*BASE_COLUMNS, _OPENAI_COLUMN[openai], "warnings")


@dataclass(slots=True)
class RowResult:
    """What one row gave.

    Attributes:
        message: the parsed message (in raise mode, for a failed row, the partial message);
            None when the row could not be parsed at all.
        issues: the parse issues (``ParseIssue.to_dict()`` dicts).
        error: why the row failed (a bad row; in raise mode, the parse error), or None.
        in_progress: the field still open when a cut generation ended, or None.
        output: the ``chat.completion`` / ``response`` dict, when asked for.
        warnings: broken tool-calling rules found while building ``output``.
    """

    message: dict[str, Any] | None
    issues: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    in_progress: str | None = None
    output: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


class _RowError(Exception):
    """A row whose inputs are unusable (not model output that does not fit)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _resolve_template(template: Mapping[str, Any] | ResponseTemplate | str) -> ResponseTemplate:
    """A compiled template from a template, a dict, JSON text or a registry family name."""
    if isinstance(template, str) and not template.lstrip().startswith("{"):
        from replyparse.templates import get_template

        return load_template(get_template(template))
    return load_template(template)


class RowColumns(TypedDict, total=False):
    """The per-row columns ``BatchParser.parse_rows`` and ``parse_columns`` take besides the
    generations."""

    prefixes: Sequence[Any] | None
    tools: Sequence[Any] | None
    finish_reasons: Sequence[str | None] | None


class BatchParser:
    """Parses batches of generations with one compiled template.

    Args:
        template: a response template (loaded, a dict, JSON text) or a registry family name.
        prefix: the prefix of rows that carry none (a prefix column wins); without it,
            every row needs its own.
        tools: the tools of rows that carry none (a tools column wins).
        tokenizer: decodes token-id texts and prefixes (must be picklable for processes).
        recover: recover mode (default): model output that does not fit is kept and
            reported in ``issues``; with False a row that does not fit gets ``error`` and
            its partial message.
        openai: also build the OpenAI shape of each message: ``"chat"`` or ``"responses"``.
        model: the ``model`` of OpenAI shapes.
        text_column, prefix_column, tools_column, finish_reason_column: the input column
            names (only ``text_column`` must exist).

    Example:
        >>> parser = BatchParser("qwen3", prefix="<|im_start|>assistant\\n")
        >>> columns = parser.parse_columns(["<think>hm</think>Hi.<|im_end|>"])
        >>> columns["content"], columns["reasoning_content"]
        (['Hi.'], ['hm'])
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        prefix: str | Sequence[int] | None = None,
        tools: Iterable[Any] | None = None,
        tokenizer: TokenizerLike | None = None,
        recover: bool = True,
        openai: OpenAIShape | None = None,
        model: str = "replyparse",
        text_column: str = "text",
        prefix_column: str = "prefix",
        tools_column: str = "tools",
        finish_reason_column: str = "finish_reason",
    ) -> None:
        if openai is not None and openai not in _OPENAI_COLUMN:
            raise ValueError(f"openai must be 'chat', 'responses' or None; got {openai!r}")
        self.template = _resolve_template(template)
        self.prefix = prefix
        self.tools = list(tools) if tools is not None else None
        self.tokenizer = tokenizer
        self.recover = recover
        self.openai: OpenAIShape | None = openai
        self.model = model
        self.text_column = text_column
        self.prefix_column = prefix_column
        self.tools_column = tools_column
        self.finish_reason_column = finish_reason_column
        self._setup()

    def _setup(self) -> None:
        self._prepared: PreparedTools | None = (
            PreparedTools(self.tools) if self.tools is not None else None
        )
        self._tools_cache: OrderedDict[str, tuple[list[Any], PreparedTools]] = OrderedDict()
        # Parsers that have read a prefix (and hold its tools), each row parsed from one.
        self._primed: OrderedDict[tuple[str, int], tuple[PreparedTools | None, PrimedParser]] = (
            OrderedDict()
        )

    # Pickled (to datasets' and Ray's workers) as the template's JSON: each process compiles
    # it once (through the template memo) and builds its own tool typers.
    def __getstate__(self) -> dict[str, Any]:
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("template", "_prepared", "_tools_cache", "_primed")
        }
        state["template"] = self.template.to_json()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        template = load_template(state.pop("template"))
        self.__dict__.update(state)
        self.template = template
        self._setup()

    @property
    def columns(self) -> tuple[str, ...]:
        """The output column names."""
        return output_columns(self.openai)

    # -- rows -------------------------------------------------------------------------------

    def parse_row(
        self,
        text: Any,
        *,
        prefix: Any = None,
        tools: Any = None,
        finish_reason: str | None = None,
    ) -> RowResult:
        """Parse one row; never raises for model output or for a bad row.

        Args:
            text: the generation (text, or token ids with a tokenizer).
            prefix: this row's prefix (None: the parser's).
            tools: this row's tools, a list or JSON text (None: the parser's).
            finish_reason: why generation stopped; ``"length"`` parses it as cut.
        """
        try:
            return self._parse_row(text, prefix, tools, finish_reason)
        except _RowError as error:
            return RowResult(None, error=str(error))

    def _parse_row(
        self, text: Any, prefix: Any, tools: Any, finish_reason: str | None
    ) -> RowResult:
        if prefix is None:
            prefix = self.prefix
        if prefix is None:
            raise _RowError(
                f"no prefix: the row has no {self.prefix_column!r} and the parser no default"
            )
        if not isinstance(text, str) and not (
            self.tokenizer is not None and isinstance(text, Sequence)
        ):
            raise _RowError(
                f"{self.text_column!r} must be a string (or token ids with a tokenizer); "
                f"got {type(text).__name__}"
            )
        raw_tools, prepared = self._row_tools(tools)
        partial = finish_reason == "length"
        result = self._parse_text(text, prefix, prepared, partial)
        if self.openai is not None and result.message is not None:
            self._add_openai(result, raw_tools, finish_reason)
        return result

    def _parse_text(
        self, text: Any, prefix: Any, tools: PreparedTools | None, partial: bool
    ) -> RowResult:
        """The one per-row parse: from the parser primed by the row's prefix and tools."""
        primed = self._primed_parser(prefix, tools)
        walked = primed.walk(text, partial) if isinstance(text, str) else None
        if walked is not None:  # the common row: read from the primed state, no copy
            return RowResult(walked[0])
        try:
            result = primed.parse(text, partial, walk=False)
        except ResponseParseError as error:  # raise mode: the row fails, its partial message kept
            return RowResult(error.partial_message, error=_one_line(str(error)))
        except (ValueError, TypeError) as error:  # token ids that do not decode
            raise _RowError(f"the text could not be read: {_one_line(str(error))}") from None
        in_progress = result.in_progress.field if result.in_progress is not None else None
        issues = [issue.to_dict() for issue in result.issues]
        return RowResult(result.message, issues=issues, in_progress=in_progress)

    def _primed_parser(self, prefix: Any, tools: PreparedTools | None) -> PrimedParser:
        """The parser primed by ``prefix`` with these tools: built once per text prefix and
        kept (at most ``_PRIMED_CACHE_SIZE``); for token ids, decoded per row, one per row."""
        if not isinstance(prefix, str):
            return self._new_primed(prefix, tools, reuse=False)
        key = (prefix, id(tools))
        primed = self._primed.get(key)
        if primed is None or primed[0] is not tools:
            primed = (tools, self._new_primed(prefix, tools, reuse=True))
            self._primed[key] = primed
            if len(self._primed) > _PRIMED_CACHE_SIZE:
                self._primed.popitem(last=False)
        return primed[1]

    def _new_primed(self, prefix: Any, tools: PreparedTools | None, reuse: bool) -> PrimedParser:
        try:
            # One text (``reuse=False``): the prompt held unscanned, read with the text.
            parser = ResponseParser(
                self.template,
                prefix if reuse else "",
                tools=tools,
                tokenizer=self.tokenizer,
                recover=self.recover,
            )
            return PrimedParser(parser, reuse=reuse, unscanned=None if reuse else prefix)
        except (ValueError, TypeError) as error:
            raise _RowError(f"the prefix could not be read: {_one_line(str(error))}") from None

    def _row_tools(self, tools: Any) -> tuple[list[Any] | None, PreparedTools | None]:
        if tools is None:
            return self.tools, self._prepared
        if isinstance(tools, str):
            key = tools
        else:
            try:
                key = json.dumps(tools, sort_keys=True)
            except (TypeError, ValueError):
                raise _RowError(f"{self.tools_column!r} is not JSON-serializable") from None
        cached = self._tools_cache.get(key)
        if cached is not None:
            self._tools_cache.move_to_end(key)
            return cached
        if isinstance(tools, str):
            try:
                tools = json.loads(tools)
            except ValueError as error:
                raise _RowError(f"{self.tools_column!r} is not valid JSON: {error}") from None
        if isinstance(tools, Mapping) and "tools" in tools:
            tools = tools["tools"]
        if not isinstance(tools, list):
            raise _RowError(
                f"{self.tools_column!r} must be a list of tools (or its JSON text); "
                f"got {type(tools).__name__}"
            )
        try:
            entry = (tools, PreparedTools(tools))
        except ToolDefinitionError as error:
            raise _RowError(f"{self.tools_column!r}: {_one_line(str(error))}") from None
        self._tools_cache[key] = entry
        if len(self._tools_cache) > _TOOLS_CACHE_SIZE:
            self._tools_cache.popitem(last=False)
        return entry

    def _add_openai(
        self, result: RowResult, tools: list[Any] | None, finish_reason: str | None
    ) -> None:
        assert result.message is not None
        reason: Any = finish_reason if finish_reason in _FINISH_REASONS else None
        convert = to_chat_completion if self.openai == "chat" else to_response
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result.output = convert(
                    result.message, model=self.model, tools=tools, finish_reason=reason
                )
            except ToolCallRuleError as error:
                result.output = error.result
                result.warnings.append(_one_line(str(error)))
        result.warnings.extend(_one_line(str(warning.message)) for warning in caught)

    # -- columns ----------------------------------------------------------------------------

    def parse_columns(
        self, texts: Sequence[Any], **columns: Unpack[RowColumns]
    ) -> dict[str, list[Any]]:
        """Parse columns of rows; return the output columns (see the module docstring).

        Args:
            texts: the generations.
            columns: ``prefixes``, ``tools``, ``finish_reasons``: per-row values (None
                entries: the defaults), each as long as ``texts`` (``RowColumns``).

        Raises:
            ValueError: a column whose length is not that of ``texts``.
        """
        return self.to_columns(self.parse_rows(texts, **columns))

    def parse_rows(
        self,
        texts: Sequence[Any],
        *,
        prefixes: Sequence[Any] | None = None,
        tools: Sequence[Any] | None = None,
        finish_reasons: Sequence[str | None] | None = None,
    ) -> list[RowResult]:
        """Parse rows as ``parse_columns`` does; return one ``RowResult`` per row (Python
        values, no JSON text)."""
        count = len(texts)
        for name, column in (
            (self.prefix_column, prefixes),
            (self.tools_column, tools),
            (self.finish_reason_column, finish_reasons),
        ):
            if column is not None and len(column) != count:
                raise ValueError(f"column {name!r} has {len(column)} rows; expected {count}")
        # Rows without their own prefix, tools or cut: walked from one primed parser here,
        # without the per-row steps of ``parse_row``, when they fit the template.
        walk = None
        if self.openai is None and isinstance(self.prefix, str):
            try:
                walk = self._primed_parser(self.prefix, self._prepared).walk
            except _RowError:  # every such row reports it (``parse_row``)
                walk = None
        results: list[RowResult] = []
        for index in range(count):
            text = texts[index]
            prefix = prefixes[index] if prefixes is not None else None
            row_tools = tools[index] if tools is not None else None
            reason = finish_reasons[index] if finish_reasons is not None else None
            if (
                walk is not None
                and prefix is None
                and row_tools is None
                and reason != "length"
                and isinstance(text, str)
            ):
                walked = walk(text, False)
                if walked is not None:
                    results.append(RowResult(walked[0]))
                    continue
            results.append(
                self.parse_row(text, prefix=prefix, tools=row_tools, finish_reason=reason)
            )
        return results

    def to_columns(self, results: Sequence[RowResult]) -> dict[str, list[Any]]:
        """Row results as the output columns (see the module docstring)."""
        messages: list[str | None] = []
        contents: list[str | None] = []
        reasonings: list[str | None] = []
        calls: list[str | None] = []
        for result in results:
            message = result.message
            if message is None:
                messages.append(None)
                contents.append(None)
                reasonings.append(None)
                calls.append(None)
                continue
            text, values = _message_json(message)
            messages.append(text)
            contents.append(values.get("content"))
            reasonings.append(values.get("reasoning_content"))
            calls.append(values.get("tool_calls") if message.get("tool_calls") else None)
        columns: dict[str, list[Any]] = {
            "message": messages,
            "content": contents,
            "reasoning_content": reasonings,
            "tool_calls": calls,
            "issues": [result.issues for result in results],
            "error": [result.error for result in results],
            "in_progress": [result.in_progress for result in results],
        }
        if self.openai is not None:
            columns[_OPENAI_COLUMN[self.openai]] = [_json(result.output) for result in results]
            columns["warnings"] = [result.warnings for result in results]
        return columns

    # -- batches of datasets, Ray Data, pyarrow and pandas ----------------------------------

    def __call__(self, batch: Any) -> Any:
        """Parse a batch; return it with the output columns added (see the class docstring).

        ``batch`` is a mapping of column name to values (``datasets``, Ray's ``numpy``
        format), a ``pyarrow.Table`` or a ``pandas.DataFrame``; the same kind is returned.
        """
        module = type(batch).__module__.split(".")[0]
        if module == "pyarrow":
            return self._call_arrow(batch)
        if module == "pandas":
            return self._call_pandas(batch)
        if not isinstance(batch, Mapping):
            raise TypeError(
                "a batch is a mapping of columns, a pyarrow.Table or a pandas.DataFrame; "
                f"got {type(batch).__name__}"
            )
        columns = self._parse_mapping({name: batch[name] for name in batch})
        return {**batch, **columns}

    def _column(self, batch: Mapping[str, Any], name: str, required: bool = False) -> Any:
        if name in batch:
            return _to_list(batch[name])
        if required:
            raise KeyError(f"the batch has no column {name!r}; columns: {sorted(batch)}")
        return None

    def _parse_mapping(self, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
        return self.parse_columns(
            self._column(batch, self.text_column, required=True),
            prefixes=self._column(batch, self.prefix_column),
            tools=self._column(batch, self.tools_column),
            finish_reasons=self._column(batch, self.finish_reason_column),
        )

    def _call_arrow(self, table: Any) -> Any:
        import pyarrow as pa

        wanted = (self.text_column, self.prefix_column, self.tools_column)
        inputs = {
            name: table.column(name).to_pylist()
            for name in (*wanted, self.finish_reason_column)
            if name in table.column_names
        }
        columns = self._parse_mapping(inputs)
        schema = self.arrow_schema()
        for name in self.columns:
            array = pa.array(columns[name], type=schema.field(name).type)
            if name in table.column_names:
                table = table.set_column(table.column_names.index(name), name, array)
            else:
                table = table.append_column(schema.field(name), array)
        return table

    def _call_pandas(self, frame: Any) -> Any:
        inputs = {name: frame[name].tolist() for name in frame.columns}
        columns = self._parse_mapping(inputs)
        frame = frame.copy()
        for name in self.columns:
            frame[name] = columns[name]
        return frame

    def arrow_schema(self) -> Any:
        """The ``pyarrow.Schema`` of the output columns."""
        import pyarrow as pa

        issue = pa.struct(
            [
                ("kind", pa.string()),
                ("field", pa.string()),
                ("offset", pa.int64()),
                ("raw", pa.string()),
                ("message", pa.string()),
            ]
        )
        types = {"issues": pa.list_(issue), "warnings": pa.list_(pa.string())}
        return pa.schema([(name, types.get(name, pa.string())) for name in self.columns])

    def datasets_features(self) -> Any:
        """The ``datasets.Features`` of the output columns."""
        import datasets

        issue = {
            "kind": datasets.Value("string"),
            "field": datasets.Value("string"),
            "offset": datasets.Value("int64"),
            "raw": datasets.Value("string"),
            "message": datasets.Value("string"),
        }
        features: dict[str, Any] = {}
        for name in self.columns:
            if name == "issues":
                features[name] = datasets.List(issue)
            elif name == "warnings":
                features[name] = datasets.List(datasets.Value("string"))
            else:
                features[name] = datasets.Value("string")
        return datasets.Features(features)


def _to_list(values: Any) -> list[Any]:
    """A column as a list of Python values (numpy arrays and Arrow arrays included)."""
    if isinstance(values, list):
        return values
    to_pylist = getattr(values, "to_pylist", None)
    if to_pylist is not None:
        return list(to_pylist())
    tolist = getattr(values, "tolist", None)
    if tolist is not None:
        return list(tolist())
    return list(values)


# One encoder for every cell: json.dumps with options builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_ENCODE = _ENCODER.encode
_encode_string: Any = json.encoder.encode_basestring  # the C one, where there is one


def _value_encoder() -> Any:
    """``_ENCODE`` for a value that is not a string: the standard library's C encoder built
    once (``JSONEncoder.encode`` builds one per call), where it has one. Without its check
    for circular values, which a parsed message never holds."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has it
        return _ENCODE
    chunks = make(None, _ENCODER.default, _encode_string, None, ": ", ", ", False, False, True)
    return lambda value: "".join(chunks(value, 0))


_encode_value = _value_encoder()
_KEYS: dict[str, str] = {}


def _message_json(message: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """``_ENCODE(message)``, and the JSON text of each of its values (strings as they are),
    so that the columns built from the message's values are not encoded again: the
    ``{key: value, ...}`` text the encoder writes, value by value."""
    parts: list[str] = []
    values: dict[str, str] = {}
    for key, value in message.items():
        if isinstance(value, str):
            values[key] = value
            text = _encode_string(value)
        else:
            text = values[key] = _encode_value(value)
        name = _KEYS.get(key)
        if name is None:
            name = _KEYS[key] = _encode_string(key) + ": "
            if len(_KEYS) > 4096:
                _KEYS.clear()
        parts.append(name + text)
    return "{" + ", ".join(parts) + "}", values


def _json(value: Any) -> str | None:
    return None if value is None else _ENCODE(value)


# -- pipelines -------------------------------------------------------------------------------


def parse_dataset(
    dataset: Any,
    template: Mapping[str, Any] | ResponseTemplate | str,
    *,
    num_proc: int | None = None,
    batch_size: int = 1000,
    **options: Any,
) -> Any:
    """Parse a ``datasets.Dataset`` (or ``IterableDataset``) column; keep every column.

    Args:
        dataset: the dataset, with a text column (and optional prefix, tools, finish reason).
        template: as for ``BatchParser``.
        num_proc: processes for ``Dataset.map`` (not used by an ``IterableDataset``).
        batch_size: rows per batch.
        **options: ``BatchParser`` options (``prefix``, ``tools``, ``openai``...).

    Returns:
        The mapped dataset, with the output columns typed (``BatchParser.datasets_features``).

    Raises:
        TemplateError, UnknownTemplateError: a bad template, before any row is parsed.
    """
    parser = BatchParser(template, **options)
    features = None
    if getattr(dataset, "features", None) is not None:
        import datasets

        features = datasets.Features({**dataset.features, **parser.datasets_features()})
    kwargs: dict[str, Any] = {"batched": True, "batch_size": batch_size, "features": features}
    if num_proc is not None and type(dataset).__name__ != "IterableDataset":
        kwargs["num_proc"] = num_proc
    return dataset.map(parser, **kwargs)


def parse_ray_dataset(
    dataset: Any,
    template: Mapping[str, Any] | ResponseTemplate | str,
    *,
    concurrency: int | None = None,
    batch_size: int | None = 1000,
    **options: Any,
) -> Any:
    """Add the output columns to a Ray Data ``Dataset`` (lazily, as Ray does).

    Each actor compiles the template once; batches are passed as ``pyarrow`` tables.

    Args:
        dataset: a ``ray.data.Dataset`` with a text column.
        template: as for ``BatchParser``; checked here, before Ray starts any actor.
        concurrency: the number of actors (Ray's default when None).
        batch_size: rows per batch.
        **options: ``BatchParser`` options.
    """
    BatchParser(template, **options)  # a bad template or option fails here, not in actors
    import ray.data

    constructor: dict[str, Any] = {"template": _template_source(template), **options}
    extra: dict[str, Any] = {}
    if concurrency is not None:
        extra["compute"] = ray.data.ActorPoolStrategy(size=concurrency)
    return dataset.map_batches(
        BatchParser,
        fn_constructor_kwargs=constructor,
        batch_format="pyarrow",
        batch_size=batch_size,
        **extra,
    )


def _template_source(template: Mapping[str, Any] | ResponseTemplate | str) -> Any:
    """What to send to actors: the JSON of a loaded template, else the value given."""
    return template.to_json() if isinstance(template, ResponseTemplate) else template
