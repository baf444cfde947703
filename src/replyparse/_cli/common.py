"""What every subcommand shares: one-line errors, templates, prefixes, tools, input and JSON out.

Owns how a command-line value becomes a library value: ``--template NAME|PATH`` (a registry
family, or a JSON file holding a response template, a registry family file or a
``tokenizer_config.json``), the prefix options, ``--tools FILE`` and the input file or stdin,
and how a failure becomes one line on stderr (:class:`CliError`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from replyparse.errors import TemplateError, ToolDefinitionError, UnknownTemplateError
from replyparse.template import ResponseTemplate, load_template
from replyparse.templates import RegistryEntry, get_entry
from replyparse.templates._family import load_family
from replyparse.tools import normalize_tools

__all__ = [
    "CliError",
    "TemplateChoice",
    "add_policy_argument",
    "add_prefix_arguments",
    "add_when_argument",
    "decode_escapes",
    "dump_json",
    "is_jsonl",
    "jsonl_rows",
    "load_tools",
    "read_json_file",
    "read_policies",
    "resolve_prefix",
    "resolve_template",
    "when",
]

JSONL_SUFFIXES = (".jsonl", ".ndjson")


class CliError(Exception):
    """A failure to report as ``replyparse: error: <message>`` and exit with ``status``.

    ``lines`` are printed after the first line, one per problem (a template's issues).
    """

    def __init__(self, message: str, *, status: int = 1, lines: tuple[str, ...] = ()) -> None:
        """Record the message; see the class docstring."""
        super().__init__(message)
        self.status = status
        self.lines = lines


def template_error_lines(error: TemplateError) -> tuple[str, ...]:
    """One ``error[code] $.path: message`` line per issue (house style, section 8.10)."""
    return tuple(f"error[{issue.code}] {issue}" for issue in error.issues)


@dataclass(frozen=True)
class TemplateChoice:
    """A resolved ``--template``.

    Attributes:
        label: the registry family name, or the file name.
        template: the compiled response template.
        entry: the registry entry, when the template came from the registry.
        source: what worker processes reload it from (a family name or a JSON dict).
    """

    label: str
    template: ResponseTemplate
    entry: RegistryEntry | None
    source: str | dict[str, Any]  # JSON boundary


def read_json_file(path: Path, what: str) -> Any:
    """The decoded JSON of ``path``, or a one-line :class:`CliError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot read the {what}: {error.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise CliError(f"{path}: the {what} is not valid JSON: {error}") from None


def template_from_file(path: Path) -> tuple[dict[str, Any], ResponseTemplate]:
    """The response template in a JSON file: bare, or under ``response_template``.

    Raises:
        CliError: unreadable file, invalid JSON, or an invalid template (every issue listed).
    """
    data = read_json_file(path, "template file")
    if isinstance(data, dict) and isinstance(data.get("response_template"), dict):
        data = data["response_template"]
    if not isinstance(data, dict):
        raise CliError(f"{path}: expected a JSON object holding a response template")
    try:
        return data, load_template(data)
    except TemplateError as error:
        count = len(error.issues)
        raise CliError(
            f"{path}: invalid response template ({count} problem{'s' if count != 1 else ''})",
            lines=template_error_lines(error),
        ) from None


def _family_file(path: Path) -> RegistryEntry | None:
    """The entry of a family data file (``templates draft`` writes one: ``name``,
    ``prefixes``, ``response_template``...), so that its prefixes are the defaults as a
    registry family's are; None for a bare response template.

    Raises:
        CliError: a family file with problems (every one listed).
    """
    data = read_json_file(path, "template file")
    if not isinstance(data, dict) or "prefixes" not in data or "response_template" not in data:
        return None
    name = data.get("name")
    loaded = load_family(f"{name if isinstance(name, str) else path.stem}.json", json.dumps(data))
    if loaded.entry is None:
        raise CliError(
            f"{path}: invalid family file ({len(loaded.issues)} problems)",
            lines=tuple(f"error[{issue.code}] {issue}" for issue in loaded.issues),
        )
    return loaded.entry


def add_policy_argument(parser: argparse.ArgumentParser, family: str) -> None:
    """The ``--policy NAME=VALUE`` option (read by :func:`read_policies`); ``family`` names
    the option that chooses the family whose policies it sets."""
    parser.add_argument(
        "--policy",
        action="append",
        metavar="NAME=VALUE",
        help=f"an output policy of the {family} (calls_in_reasoning=reasoning...; "
        "repeatable; docs/recover.md)",
    )


def read_policies(values: Sequence[str] | None) -> dict[str, str]:
    """``--policy NAME=VALUE`` options as a dict (docs/recover.md, Policies)."""
    policies: dict[str, str] = {}
    for item in values or ():
        name, sign, value = item.partition("=")
        if not sign or not name or not value:
            raise CliError(f"--policy takes NAME=VALUE; got {item!r}", status=2)
        policies[name] = value
    return policies


def resolve_template(spec: str, policies: Mapping[str, str] | None = None) -> TemplateChoice:
    """A registry family name (or alias, or model name), or a path to a JSON file; with
    ``policies``, the family's template under those policy values."""
    if policies:
        choice = resolve_template(spec)
        if choice.entry is None:
            raise CliError(f"--policy needs a registry family or a family file; {spec} is neither")
        try:
            data = choice.entry.response_template_with(**policies)
        except TemplateError as error:
            raise CliError(
                f"--policy: {choice.label} cannot take it", lines=template_error_lines(error)
            ) from None
        return TemplateChoice(choice.label, load_template(data), choice.entry, data)
    path = Path(spec)
    if path.is_file():
        family = _family_file(path)
        if family is not None:
            return TemplateChoice(path.name, family.template, family, family.response_template)
        data, template = template_from_file(path)
        return TemplateChoice(path.name, template, None, data)
    try:
        entry = get_entry(spec)
    except UnknownTemplateError as error:
        hint = "no such file, and " if spec.endswith(".json") or "/" in spec else ""
        raise CliError(f"{spec!r}: {hint}{error}") from None
    except TemplateError as error:
        raise CliError(f"registry family {spec!r} is broken: {error}") from None
    return TemplateChoice(entry.name, entry.template, entry, entry.name)


def load_choice(source: str | dict[str, Any]) -> ResponseTemplate:
    """Reload a :attr:`TemplateChoice.source` (in a worker process)."""
    return get_entry(source).template if isinstance(source, str) else load_template(source)


def decode_escapes(text: str) -> str:
    r"""``\n``, ``\t``, ``\r`` and ``\\`` in a command-line prefix, as the shell can't type them."""
    replacements = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        following = text[position + 1] if position + 1 < len(text) else ""
        if char == "\\" and following in replacements:
            out.append(replacements[following])
            position += 2
        else:
            out.append(char)
            position += 1
    return "".join(out)


def add_prefix_arguments(parser: argparse.ArgumentParser, when: str = "") -> None:
    """The prefix options, at most one of them (read by :func:`resolve_prefix`); ``when``
    says when the command reads them, if not always."""
    prefix = parser.add_mutually_exclusive_group()
    continued = f"the end of the prompt the model continued{', ' + when if when else ''}"
    prefix.add_argument(
        "--prefix", metavar="TEXT", help=rf"{continued} (\n, \t escapes); '' to opt out"
    )
    prefix.add_argument(
        "--prefix-file", metavar="FILE", help="read the prefix from a file, exactly"
    )
    prefix.add_argument(
        "--prefix-name",
        metavar="NAME",
        help="a registry prefix (default, thinking, no_thinking...); registry default otherwise",
    )


def resolve_prefix(
    choice: TemplateChoice,
    *,
    prefix: str | None,
    prefix_file: str | None,
    prefix_name: str | None,
) -> str:
    """The prefix from ``--prefix``, ``--prefix-file``, ``--prefix-name`` or the registry.

    Raises:
        CliError: an unknown prefix name, an unreadable file, or no prefix at all for a
            template file (the library requires one; ``--prefix ''`` opts out).
    """
    if prefix is not None:
        return decode_escapes(prefix)
    if prefix_file is not None:
        try:
            return Path(prefix_file).read_text(encoding="utf-8")
        except OSError as error:
            raise CliError(f"{prefix_file}: cannot read the prefix: {error.strerror}") from None
    if choice.entry is not None:
        name = prefix_name or "default"
        prefixes: Mapping[str, str] = choice.entry.prefixes
        if name not in prefixes:
            raise CliError(
                f"the {choice.entry.name} family has no prefix {name!r}; "
                f"available: {sorted(prefixes)}"
            )
        return prefixes[name]
    if prefix_name is not None:
        raise CliError("--prefix-name needs a registry template; this one is a file")
    raise CliError(
        "a prefix is required with a template file: pass --prefix TEXT (the end of the "
        "prompt the model continued), --prefix-file FILE, or --prefix '' to parse the "
        "output alone"
    )


def load_tools(path: str | None) -> list[Any] | None:
    """The tools in a JSON file (a list, or ``{"tools": [...]}``), checked.

    Raises:
        CliError: unreadable file, invalid JSON, or a malformed tool (every problem listed).
    """
    if path is None:
        return None
    data = read_json_file(Path(path), "tools file")
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    if not isinstance(data, list):
        raise CliError(f'{path}: expected a JSON array of tools (or {{"tools": [...]}})')
    try:
        normalize_tools(data)
    except ToolDefinitionError as error:
        lines = str(error).splitlines()
        details = tuple(line.strip() for line in lines[1:])
        raise CliError(f"{path}: {lines[0]}", lines=details) from None
    return data


def is_jsonl(path: str, forced: str | None) -> bool:
    """Whether the input is JSONL: ``--input-format``, else the file extension."""
    if forced is not None:
        return forced == "jsonl"
    return Path(path).suffix.lower() in JSONL_SUFFIXES


def open_input(path: str) -> IO[str]:
    """The input file, or stdin for ``-``."""
    if path == "-":
        return sys.stdin
    try:
        return open(path, encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot read the input: {error.strerror}") from None


def jsonl_rows(lines: Iterator[str]) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """``(line number, record | error message)`` for each non-blank JSONL line; a record
    is an object with a string ``"text"``."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            yield number, f"not valid JSON: {error}"
            continue
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            yield number, 'expected an object with a string "text"'
            continue
        yield number, record


def jsonl_records(lines: Iterator[str], default_prefix: str | None) -> Iterator[tuple[int, Any]]:
    """``(line number, (text, prefix) | error message)`` for each non-blank JSONL line."""
    for number, record in jsonl_rows(lines):
        if isinstance(record, str):
            yield number, record
            continue
        prefix = record.get("prefix", default_prefix)
        if prefix is None:
            yield number, 'no "prefix" on this line and no --prefix given'
            continue
        if not isinstance(prefix, str):
            yield number, '"prefix" must be a string'
            continue
        yield number, (record["text"], prefix)


def _ascii_only(stream: IO[str]) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return encoding not in ("utf8", "utf16", "utf32")


def dump_json(value: Any, stream: IO[str], *, indent: int | None = None) -> None:
    """Write one JSON document and a newline (escaped to ASCII on a non-UTF terminal)."""
    stream.write(json.dumps(value, ensure_ascii=_ascii_only(stream), indent=indent) + "\n")


def add_when_argument(parser: argparse.ArgumentParser, option: str, help: str) -> None:
    """An ``auto|always|never`` option (default ``auto``) turning on a terminal feature;
    :func:`when` reads it."""
    parser.add_argument(option, choices=("auto", "always", "never"), default="auto", help=help)


def when(value: str, stream: IO[str], *, auto: bool = True) -> bool:
    """Whether an :func:`add_when_argument` option with ``value`` is on for output to
    ``stream``: ``auto`` when ``stream`` is a terminal and ``auto`` holds too."""
    return value == "always" or (value == "auto" and auto and stream.isatty())
