"""``replyparse templates list | show | check | draft | detect | lint | export``: browse the
registry, validate files, name a model's family, check and export templates for the engines.

``detect PATH`` (a ``.jinja``, a ``tokenizer_config.json`` or a model folder) prints the
registry family whose response template reads that model's output, as ``serve`` detects it;
exit status 1, naming the evidence, when none (or several) fit.

``draft PATH`` (a ``.jinja``, a ``tokenizer_config.json`` or a model folder) drafts a family
data file from the chat template, prints it as JSON on stdout and the round-trip verdict on
stderr; exit status 1 when the round trip fails (each failing field and its text named), 2
when the chat template cannot be read.

``check FILE`` reports every load-time problem of a template file, one
``error[code] $.path: message`` line each, then parses each ``--sample`` (plain text, or
JSONL with ``text``/``prefix``) and prints the message or the error. Without FILE it checks
every registry data file bundled in the package (nothing outside it: the corpus check over
the shared model outputs is the repository's ``scripts/corpus_check.py``). Exit status 1
when anything failed.

``lint NAME|FILE [--target ENGINE]...`` says whether each engine's response-template mode
(transformers, vLLM ``--tool-call-parser hf``, SGLang's ``response_template`` detector)
loads the template, and every reason it does not, one ``error|warning[code] $.path:
message`` line each; exit status 1 when a target does not load it. ``export NAME|FILE
MODEL_DIR`` writes the template as the ``response_template`` key of the folder's
``tokenizer_config.json`` (other keys kept) and warns for each target that cannot load it;
``--reasoning-field thinking`` writes the reasoning field under the name vLLM's and SGLang's
serving adapters route (the registry names it ``reasoning_content``, as transformers does).
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from replyparse._cli.common import (
    CliError,
    TemplateChoice,
    dump_json,
    is_jsonl,
    jsonl_records,
    load_tools,
    resolve_prefix,
    resolve_template,
    template_from_file,
)
from replyparse._oneshot import parse_response
from replyparse.content import ENGINES, Engine
from replyparse.errors import (
    ModelFolderError,
    ResponseParseError,
    TemplateError,
    UnknownTemplateError,
)
from replyparse.model_folder import read_model_folder, save_response_template
from replyparse.openai.messages import REASONING_KEY
from replyparse.templates import (
    LintReport,
    detect_entry,
    draft_from_path,
    get_entry,
    lint_template,
    list_templates,
    validate_registry,
)

__all__ = ["add_templates_arguments", "run_templates"]


def add_templates_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``templates`` subcommands and their options."""
    commands = parser.add_subparsers(dest="templates_command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="list the registry's model families")
    listing.add_argument("--json", action="store_true", help="one JSON array with the metadata")
    show = commands.add_parser("show", help="print a family's response template")
    show.add_argument("name", metavar="NAME|PATH", help="a family, alias or model name, or a file")
    show.add_argument(
        "--entry",
        action="store_true",
        help="the whole registry entry (aliases, prefixes, notes...) around the template",
    )
    check = commands.add_parser("check", help="validate a template file and parse samples")
    check.add_argument(
        "file", nargs="?", metavar="FILE", help="a template JSON file; none: the registry"
    )
    check.add_argument(
        "--sample",
        action="append",
        default=[],
        metavar="FILE",
        help="model output to parse with it (text, or JSONL with text/prefix); repeatable",
    )
    prefix = check.add_mutually_exclusive_group()
    prefix.add_argument("--prefix", metavar="TEXT", help=r"prefix of the samples (\n escapes)")
    prefix.add_argument(
        "--prefix-file", metavar="FILE", help="read the samples' prefix from a file"
    )
    check.add_argument("--tools", metavar="FILE", help="a JSON array of tools for the samples")
    _add_draft_arguments(commands)
    detect = commands.add_parser(
        "detect", help="name the registry family of a chat template or model folder"
    )
    detect.add_argument(
        "path", metavar="PATH", help="a .jinja file, a tokenizer_config.json or a model folder"
    )
    _add_portability_arguments(commands)


def _add_portability_arguments(commands: Any) -> None:
    lint = commands.add_parser(
        "lint", help="whether transformers, vLLM and SGLang load a template, and why not"
    )
    lint.add_argument("name", metavar="NAME|FILE", help="a family, alias or model name, or a file")
    export = commands.add_parser(
        "export", help="write a template into a model folder's tokenizer_config.json"
    )
    export.add_argument(
        "name", metavar="NAME|FILE", help="a family, alias or model name, or a file"
    )
    export.add_argument(
        "model_dir", metavar="MODEL_DIR", help="the model folder (created if absent)"
    )
    export.add_argument(
        "--reasoning-field",
        metavar="NAME",
        default=None,
        help="write the reasoning field (reasoning_content) under NAME: vLLM and SGLang route "
        "only 'thinking'",
    )
    for command in (lint, export):
        command.add_argument(
            "--target",
            action="append",
            choices=ENGINES,
            default=None,
            help="an engine to check (repeatable; default: all)",
        )
    lint.add_argument("--json", action="store_true", help="the findings as one JSON object")


def _lint_choice(args: argparse.Namespace) -> tuple[str, dict[str, Any], LintReport]:
    """The template named on the command line (its label and JSON form), linted."""
    choice = resolve_template(args.name)
    data = choice.entry.engine_template if choice.entry is not None else choice.source
    assert isinstance(data, dict)
    targets: list[Engine] = args.target or list(ENGINES)
    return choice.label, data, lint_template(data, targets)


def _lint(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    label, _data, report = _lint_choice(args)
    if args.json:
        dump_json(
            {
                "template": label,
                "engines": {
                    engine: {
                        "verdict": report.verdict(engine),
                        "findings": [
                            {
                                "severity": finding.severity,
                                "code": finding.code,
                                "path": finding.location,
                                "message": finding.message,
                            }
                            for finding in report.for_engine(engine)
                        ],
                    }
                    for engine in report.engines
                },
            },
            stdout,
            indent=2,
        )
    else:
        for engine in report.engines:
            stdout.write(f"{engine}: {report.verdict(engine)}\n")
            for finding in report.for_engine(engine):
                stdout.write(f"  {finding}\n")
    return 0 if all(report.loads(engine) for engine in report.engines) else 1


def _renamed_reasoning(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """`data` with its ``reasoning_content`` field renamed `name`, in the same place (a field's
    order is its matching order)."""
    fields = data.get("fields")
    if not isinstance(fields, Mapping) or REASONING_KEY not in fields:
        raise CliError(f"--reasoning-field: the template has no field {REASONING_KEY!r}")
    if name in fields:
        raise CliError(f"--reasoning-field: the template already has a field {name!r}")
    renamed = {(name if key == REASONING_KEY else key): value for key, value in fields.items()}
    return {**data, "fields": renamed}


def _export(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    label, data, report = _lint_choice(args)
    if args.reasoning_field is not None:
        data = _renamed_reasoning(data, args.reasoning_field)
        report = lint_template(data, args.target or list(ENGINES))
    try:
        path = save_response_template(args.model_dir, data)
    except (ModelFolderError, OSError) as error:
        raise CliError(f"{args.model_dir}: cannot write the template: {error}") from None
    stdout.write(f"wrote {label}'s response_template to {path}\n")
    for engine in report.engines:
        if report.loads(engine):
            continue
        errors = [finding for finding in report.for_engine(engine) if finding.severity == "error"]
        count = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
        stderr.write(
            f"warning: {engine} cannot load it ({count}; first: {errors[0].location}: "
            f"{errors[0].message}) See `replyparse templates lint {args.name} "
            f"--target {engine}`.\n"
        )
    return 0


def _detect(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    path = Path(args.path)
    try:
        folder = read_model_folder(path)
        if path.suffix == ".json" or path.is_dir():
            if folder.response_template is not None:
                stdout.write(f"{path}: its own response template (tokenizer_config.json)\n")
                return 0
            entry = detect_entry(tokenizer_config=path)
        else:
            entry = detect_entry(chat_template=folder.chat_template)
    except ModelFolderError as error:
        raise CliError(" ".join(str(error).split())) from None
    except UnknownTemplateError as error:
        raise CliError(
            f"{path}: {' '.join(str(error).split())} Draft one: `replyparse templates draft "
            f"{path}` (docs/draft.md)."
        ) from None
    stdout.write(f"{entry.name}\n")
    return 0


def _add_draft_arguments(commands: Any) -> None:
    draft = commands.add_parser(
        "draft", help="draft a response template from a chat template, checked by round trip"
    )
    draft.add_argument(
        "path", metavar="PATH", help="a .jinja file, a tokenizer_config.json or a model folder"
    )
    draft.add_argument("--name", default=None, help="the family id to write (default: file name)")
    draft.add_argument("--output", default=None, metavar="FILE", help="write the JSON here")


def _draft(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:

    try:
        result = draft_from_path(args.path, name=args.name)
    except ImportError as error:
        # Rendering the probe conversations needs Jinja2 (the server extra).
        raise CliError(
            f"templates draft renders the chat template with Jinja2, which is not installed "
            f"({error.name or error}): pip install -e '.[server]' in the replyparse checkout "
            "(or pip install jinja2)",
            status=2,
        ) from None
    except TemplateError as error:
        message = error.issues[0].message if error.issues else str(error)
        print(f"error: cannot draft from {args.path}: {message}", file=stderr)
        return 2
    if args.output is not None:
        text = json.dumps(result.entry, indent=2, ensure_ascii=False)
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        dump_json(result.entry, stdout, indent=2)
    for note in result.notes:
        print(f"note: {note}", file=stderr)
    if result.ok:
        print("round trip: ok (every probe turn parses back to its message)", file=stderr)
        return 0
    for problem in result.problems:
        print(f"round trip FAILED: {problem}", file=stderr)
    return 1


def _entry_json(name: str) -> dict[str, Any]:
    entry = get_entry(name)
    return {
        "name": entry.name,
        "description": entry.description,
        "aliases": list(entry.aliases),
        "model_types": list(entry.model_types),
        "chat_templates": list(entry.chat_templates),
        "chat_template_markers": list(entry.chat_template_markers),
        "prefixes": dict(entry.prefixes),
        "notes": entry.notes,
        "response_template": entry.response_template,
    }


def _list(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    names = list_templates()
    if args.json:
        records = [
            {key: value for key, value in _entry_json(name).items() if key != "response_template"}
            for name in names
        ]
        dump_json(records, stdout, indent=2)
        return 0
    width = max(len(name) for name in names) if names else 0
    columns = shutil.get_terminal_size((100, 20)).columns if stdout.isatty() else 0
    for name in names:
        line = f"{name:<{width}}  {get_entry(name).description}"
        if columns and len(line) > columns:
            line = line[: max(columns - 1, width)] + "…"
        stdout.write(line.rstrip() + "\n")
    return 0


def _show(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    path = Path(args.name)
    if path.is_file():
        if args.entry:
            raise CliError("--entry applies to registry families, not files", status=2)
        data, _template = template_from_file(path)
        dump_json(data, stdout, indent=2)
        return 0
    choice = resolve_template(args.name)
    assert choice.entry is not None
    dump_json(
        _entry_json(choice.entry.name) if args.entry else choice.entry.response_template,
        stdout,
        indent=2,
    )
    return 0


def _check_registry(stdout: IO[str]) -> int:
    issues = validate_registry()
    for issue in issues:
        stdout.write(f"error[{issue.code}] {issue}\n")
    if issues:
        raise CliError(f"the registry has {len(issues)} problem{'s' if len(issues) != 1 else ''}")
    stdout.write(f"ok: {len(list_templates())} registry families\n")
    return 0


def _samples(path: str, prefix: str | None) -> list[tuple[str, Any]]:
    """``(label, (text, prefix) | error)`` for each generation in a sample file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot read the sample: {error.strerror}") from None
    if not is_jsonl(path, None):
        if prefix is None:
            raise CliError(
                f"{path}: a plain-text sample needs --prefix TEXT (or --prefix '' to opt out)"
            )
        return [(path, (text, prefix))]
    return [
        (f"{path}:{number}", record)
        for number, record in jsonl_records(iter(text.splitlines()), prefix)
    ]


def _check_file(args: argparse.Namespace, stdout: IO[str]) -> int:
    path = Path(args.file)
    _data, template = template_from_file(path)  # raises with every issue listed
    stdout.write(f"ok: {path}: fields {list(template.fields)}\n")
    if not args.sample:
        return 0
    choice = TemplateChoice(path.name, template, None, _data)
    prefix: str | None = None
    if args.prefix is not None or args.prefix_file is not None:
        prefix = resolve_prefix(
            choice, prefix=args.prefix, prefix_file=args.prefix_file, prefix_name=None
        )
    tools = load_tools(args.tools)
    failures = 0
    for sample in args.sample:
        for label, record in _samples(sample, prefix):
            if isinstance(record, str):
                failures += 1
                stdout.write(f"sample {label}: error: {record}\n")
                continue
            text, sample_prefix = record
            try:
                message = parse_response(text, template, prefix=sample_prefix, tools=tools)
            except ResponseParseError as error:
                failures += 1
                stdout.write(f"sample {label}: error: {' '.join(str(error).split())}\n")
                continue
            stdout.write(f"sample {label}: ok: ")
            dump_json(message, stdout)
    if failures:
        raise CliError(f"{failures} sample{'s' if failures != 1 else ''} failed to parse")
    return 0


def _check(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    if args.file is None:
        if args.sample:
            raise CliError("--sample needs a template FILE", status=2)
        return _check_registry(stdout)
    return _check_file(args, stdout)


#: Each ``templates`` subcommand's runner: ``(args, stdout, stderr) -> exit status``.
_COMMANDS: dict[str, Callable[[argparse.Namespace, IO[str], IO[str]], int]] = {
    "list": _list,
    "show": _show,
    "check": _check,
    "draft": _draft,
    "detect": _detect,
    "lint": _lint,
    "export": _export,
}


def run_templates(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run a ``templates`` subcommand; return the exit status."""
    return _COMMANDS[args.templates_command](args, stdout, stderr)
