"""The ``replyparse`` command line: ``demo``, ``parse``, ``stream``, ``templates``, ``serve``.

Stdlib ``argparse`` only; each subcommand lives in ``replyparse._cli`` and the server's
dependencies are imported by ``serve`` alone. Output is JSON so it can be piped. Every
failure caused by input (a bad file, template, prefix, tool or model output) is one line on
stderr, ``replyparse: error: <message>``, followed by one line per problem when there are
several, and a non-zero exit: 1 for bad input, 2 for a bad command line. Never a traceback.

Example:
    $ replyparse demo
    $ replyparse parse out.txt --template qwen3 --format responses
    $ replyparse serve --upstream http://127.0.0.1:8001 --chat-template model/ --template qwen3
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import IO

from replyparse import __version__
from replyparse._cli.common import CliError
from replyparse._cli.demo_cmd import add_demo_arguments, run_demo
from replyparse._cli.parse_cmd import (
    add_parse_arguments,
    add_stream_arguments,
    run_parse,
    run_stream,
)
from replyparse._cli.serve_cmd import add_serve_arguments, run_serve
from replyparse._cli.templates_cmd import add_templates_arguments, run_templates

__all__ = ["build_parser", "main"]

Runner = Callable[[argparse.Namespace, IO[str], IO[str]], int]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="replyparse",
        description="Turn raw chat-model output into structured assistant messages and "
        "OpenAI function-calling shapes, whole or streaming.",
    )
    parser.add_argument("--version", action="version", version=f"replyparse {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    table: list[tuple[str, str, Callable[[argparse.ArgumentParser], None], Runner]] = [
        (
            "demo",
            "stream bundled model generations through the parser, live",
            add_demo_arguments,
            run_demo,
        ),
        (
            "parse",
            "parse model output (text or JSONL) into messages",
            add_parse_arguments,
            run_parse,
        ),
        (
            "stream",
            "print the event stream of one generation as JSON lines",
            add_stream_arguments,
            run_stream,
        ),
        (
            "templates",
            "list, show and check response templates",
            add_templates_arguments,
            run_templates,
        ),
        (
            "serve",
            "run an OpenAI- and Anthropic-compatible server with function calling",
            add_serve_arguments,
            run_serve,
        ),
    ]
    for name, summary, add_arguments, runner in table:
        command = commands.add_parser(name, help=summary, description=summary)
        add_arguments(command)
        command.set_defaults(runner=runner)
    return parser


def _tolerant(stream: IO[str]) -> IO[str]:
    """``stream``, escaping what its encoding can't write (an ASCII terminal) instead of failing."""
    reconfigure = getattr(stream, "reconfigure", None)
    if callable(reconfigure):
        reconfigure(errors="backslashreplace")
    return stream


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run the command line; return the exit status (the console script exits with it)."""
    out = stdout if stdout is not None else _tolerant(sys.stdout)
    err = stderr if stderr is not None else _tolerant(sys.stderr)
    args = build_parser().parse_args(argv)
    runner: Runner = args.runner
    try:
        return runner(args, out, err)
    except CliError as error:
        err.write(f"replyparse: error: {error}\n")
        for line in error.lines:
            err.write(f"  {line}\n")
        return error.status
    except KeyboardInterrupt:
        err.write("replyparse: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (| head): not an error of ours.
        sys.stderr = None  # silence the flush-at-exit message
        return 0
