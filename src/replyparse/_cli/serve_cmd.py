"""``replyparse serve``: the OpenAI-compatible server, configured from the command line.

Turns the flags into a :class:`replyparse.server.ServerConfig`: the response template
(``--template``, else detected from the chat template), the chat template, the backend
(``--upstream`` or ``--replay``, exactly one, and ``--upstream-engine`` for constrained
decoding upstream), and the model name. The server modules are
imported only here, so the rest of the CLI needs no extra; without the ``server`` extra this
command says how to install it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from replyparse._cli.common import (
    CliError,
    TemplateChoice,
    add_policy_argument,
    add_prefix_arguments,
    read_policies,
    resolve_prefix,
    resolve_template,
)
from replyparse.errors import ModelFolderError, TemplateError, UnknownTemplateError
from replyparse.template import load_template
from replyparse.templates import detect_entry, detect_template, draft

__all__ = ["add_serve_arguments", "run_serve"]

_SERVER_MODULES = ("starlette", "uvicorn", "jinja2", "httpx2")
#: ``replyparse.grammar.ENGINES``, spelled out so the CLI starts without the grammar package
#: (a test keeps the two equal).
UPSTREAM_ENGINES = ("llama.cpp", "vllm", "vllm-xgrammar", "vllm-legacy", "sglang", "llguidance")


#: The ``server.Limits`` flags: ``(option, Limits field, type, metavar, help)``. An option
#: not given leaves the field's default (``Limits`` holds the defaults; the help says them).
_LIMIT_OPTIONS: tuple[tuple[str, str, type, str, str], ...] = (
    (
        "--max-body-bytes",
        "max_body_bytes",
        int,
        "N",
        "the largest request body (default 16 MiB; larger: 413)",
    ),
    (
        "--max-json-depth",
        "max_depth",
        int,
        "N",
        "the deepest JSON nesting of a request body, tool schemas included (default 64)",
    ),
    (
        "--render-timeout",
        "render_timeout",
        float,
        "SECONDS",
        "the longest the chat template may take to render one prompt (default 10)",
    ),
    (
        "--max-prompt-chars",
        "max_prompt_chars",
        int,
        "N",
        "the longest prompt the chat template may write (default 4 Mi characters)",
    ),
)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` options."""
    backend = parser.add_mutually_exclusive_group(required=True)
    backend.add_argument(
        "--upstream",
        metavar="URL",
        help="an OpenAI-compatible /v1/completions server (vLLM, SGLang, llama.cpp, TGI)",
    )
    backend.add_argument(
        "--replay",
        metavar="FILE",
        help='recorded generations, JSONL {"text": ...} per line, served in order, cycling',
    )
    template = parser.add_mutually_exclusive_group()
    template.add_argument(
        "-t",
        "--template",
        metavar="NAME|PATH",
        help="the response template: a registry family or a JSON file (default: detected "
        "from the chat template)",
    )
    template.add_argument("--response-template", metavar="FILE", help="a response template file")
    add_policy_argument(parser, "--template family")
    parser.add_argument(
        "--chat-template",
        metavar="PATH",
        help="a .jinja file, a tokenizer_config.json or a model directory (needed upstream)",
    )
    parser.add_argument(
        "--chat-template-kwargs",
        metavar="JSON",
        default=None,
        help="extra chat-template variables for every request, e.g. '{\"enable_thinking\": false}'",
    )
    parser.add_argument("--model-name", metavar="NAME", help="the model /v1/models lists")
    parser.add_argument(
        "--call-id-form",
        choices=("openai", "alphanumeric9"),
        default=None,
        help="the form of the tool-call ids the server makes, the one the chat template "
        "accepts back (default: the registry family's; openai otherwise)",
    )
    parser.add_argument(
        "--upstream-model",
        metavar="NAME",
        help="the model name sent upstream (default: the first of the upstream's /v1/models)",
    )
    parser.add_argument(
        "--upstream-max-tokens",
        type=int,
        metavar="N",
        help="max_tokens of a request that sets none (default 4096, cut to the context "
        "length the upstream's /v1/models reports)",
    )
    parser.add_argument(
        "--upstream-api-key",
        metavar="KEY",
        help="bearer token for the upstream (default: $REPLYPARSE_UPSTREAM_API_KEY)",
    )
    parser.add_argument("--upstream-timeout", type=float, default=600.0, metavar="SECONDS")
    parser.add_argument(
        "--upstream-max-connections",
        type=int,
        default=None,
        metavar="N",
        help="the most connections open to the upstream at once (default: no limit)",
    )
    limits = parser.add_argument_group("request limits")
    for option, field, kind, metavar, help in _LIMIT_OPTIONS:
        limits.add_argument(option, type=kind, dest=field, metavar=metavar, help=help)
    parser.add_argument(
        "--upstream-engine",
        choices=("none", *UPSTREAM_ENGINES),
        default="none",
        help="the upstream's engine, to send it each request's decoding grammar so strict "
        "tools, tool_choice and parallel_tool_calls hold (default none: no grammar)",
    )
    add_prefix_arguments(parser, "without --chat-template")
    parser.add_argument(
        "--custom-tool-deltas",
        choices=("custom", "function"),
        default="custom",
        help="how custom tool calls stream in Chat Completions: OpenAI's custom deltas "
        '(default), or function deltas with arguments {"input": ...} for SDK stream helpers',
    )
    parser.add_argument(
        "--no-template-check",
        action="store_true",
        help="serve even when the response template does not read what the chat template "
        "writes (checked at startup by parsing a probe answer after its prompt)",
    )
    parser.add_argument("--replay-chunk-size", type=int, default=4, metavar="N")
    parser.add_argument("--replay-delay", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8000, help="port (default 8000; 0: any free port)"
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug"),
    )


def _given_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The ``Limits`` fields the command line sets (:data:`_LIMIT_OPTIONS`)."""
    values = {field: getattr(args, field) for _, field, *_ in _LIMIT_OPTIONS}
    return {field: value for field, value in values.items() if value is not None}


def _require_server_extra() -> None:
    import importlib.util

    missing = [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise CliError(
            f"the server needs the 'server' extra (missing: {', '.join(missing)}): "
            "pip install -e '.[server]' in the replyparse checkout"
        )


def _template_kwargs(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise CliError(f"--chat-template-kwargs is not valid JSON: {error}", status=2) from None
    if not isinstance(value, dict):
        raise CliError("--chat-template-kwargs must be a JSON object", status=2)
    return value


def _policy_compiler(choice: TemplateChoice, served: dict[str, str]) -> Any:
    """How the server compiles a request's policies (``replyparse.policies``): the family's
    template under the values ``--policy`` chose, overridden by the request's; None for a
    template that is no registry family."""
    entry = choice.entry
    if entry is None:
        return None
    return lambda chosen: entry.template_with(**{**served, **chosen})


def _detected(
    chat_template_path: str,
    source: str,
    special_tokens: dict[str, Any] | None = None,
    stderr: IO[str] | None = None,
) -> TemplateChoice:
    """The template for a chat template: the config's own, else the registry family's, else
    a draft that passes its round trip (with a warning naming what it guessed)."""
    location = Path(chat_template_path)
    evidence: dict[str, Any] = (
        {"tokenizer_config": location}
        if location.suffix == ".json" or location.is_dir()
        else {"chat_template": source}
    )
    try:
        template = detect_template(**evidence)
    except (UnknownTemplateError, TemplateError) as error:
        unmatched = isinstance(error, UnknownTemplateError) and not error.suggestions
        if unmatched and str(error).startswith("no registry template matches"):
            return _drafted(chat_template_path, source, special_tokens, stderr)
        raise CliError(
            f"cannot pick a response template for {chat_template_path}: "
            f"{' '.join(str(error).split())} Pass --template NAME|PATH."
        ) from None
    try:
        entry = detect_entry(**evidence)
    except UnknownTemplateError:
        entry = None
    if entry is not None and entry.template is template:
        return TemplateChoice(entry.name, template, entry, entry.name)
    return TemplateChoice(location.name, template, None, {})


def _drafted(
    chat_template_path: str,
    source: str,
    special_tokens: dict[str, Any] | None,
    stderr: IO[str] | None,
) -> TemplateChoice:
    """No registry family matches: a drafted template, only when its round trip passes."""
    how = (
        f"Write one: `replyparse templates draft {chat_template_path} --output template.json`, "
        "fix the fields it names (docs/draft.md), then pass --template template.json."
    )
    try:
        result = draft(source, name=Path(chat_template_path).stem, special_tokens=special_tokens)
    except TemplateError as error:
        raise CliError(
            f"no registry family matches {chat_template_path}, and no response template can "
            f"be drafted from it: {error.issues[0].message if error.issues else error}. {how}"
        ) from None
    if not result.ok:
        failures = "; ".join(str(problem) for problem in result.problems)
        raise CliError(
            f"no registry family matches {chat_template_path}, and the drafted response "
            f"template fails its round trip ({failures}). {how}"
        )
    guessed = " ".join(result.notes) or "the delimiters shown by the rendered turns"
    print(
        f"warning: no registry family matches {chat_template_path}; serving a response "
        f"template drafted from it (round trip passed). Guessed: {guessed}. Review it with "
        f"`replyparse templates draft {chat_template_path}`.",
        file=stderr if stderr is not None else sys.stderr,
    )
    spec = result.response_template
    return TemplateChoice(Path(chat_template_path).name, load_template(spec), None, spec)


def _with_default_tokens(chat_template: Any, choice: TemplateChoice, stderr: IO[str]) -> Any:
    """A bare ``.jinja`` carries no tokenizer config, so ``bos_token`` / ``eos_token`` would
    be undefined and every template that writes them would fail to render: ``eos_token`` is
    the response template's end of turn (the text the model ends its turn with), and
    ``bos_token`` empty (the upstream adds its own BOS to a prompt that does not start with
    one). Said on stderr, with how to give the real ones."""
    end = choice.template.end_of_turn
    if end is None:
        texts: tuple[str, ...] = ()
    elif end.pattern is None:  # the template's first literal (``literals`` is longest first)
        texts = (end.source,) if isinstance(end.source, str) else end.source
    else:
        texts = end.finite or ()
    eos = texts[0] if texts else ""
    stderr.write(
        f"replyparse serve: note: {chat_template.origin} has no tokenizer config: rendering with "
        f"bos_token '' and eos_token {eos!r} (the response template's end of turn); pass the "
        "model folder or its tokenizer_config.json as --chat-template for its own tokens\n"
    )
    return dataclasses.replace(chat_template, special_tokens={"bos_token": "", "eos_token": eos})


def run_serve(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``serve`` until interrupted; return the exit status."""
    _require_server_extra()
    from replyparse.server import (
        Backend,
        BackendError,
        ChatTemplate,
        Limits,
        ReplayBackend,
        ServerConfig,
        UpstreamBackend,
        run,
    )

    chat_template = None
    if args.chat_template is not None:
        try:
            chat_template = ChatTemplate.from_path(args.chat_template)
        except ModelFolderError as error:
            raise CliError(str(error)) from None
    spec = args.template or args.response_template
    if args.policy and spec is None:
        raise CliError("--policy needs --template NAME|PATH", status=2)
    if spec is not None:
        choice = resolve_template(spec, read_policies(args.policy))
    elif chat_template is not None:
        choice = _detected(
            args.chat_template, chat_template.source, dict(chat_template.special_tokens), stderr
        )
    else:
        raise CliError("pass --template NAME|PATH (or --chat-template to detect it)", status=2)
    if chat_template is not None and not chat_template.special_tokens:
        chat_template = _with_default_tokens(chat_template, choice, stderr)
    if args.upstream is not None and chat_template is None:
        raise CliError(
            "--upstream needs --chat-template (a .jinja file, tokenizer_config.json or model "
            "directory): the server renders the prompt itself",
            status=2,
        )
    if args.replay is not None and args.upstream_engine != "none":
        raise CliError("--upstream-engine needs --upstream", status=2)
    template_kwargs = _template_kwargs(args.chat_template_kwargs)
    if chat_template is not None and not args.no_template_check:
        from replyparse.server.fit import template_mismatch

        mismatch = template_mismatch(chat_template, choice.template, template_kwargs)
        if mismatch is not None:
            raise CliError(
                f"the response template {choice.label} does not fit the chat template: "
                f"{mismatch}. Pass this model's response template (--template NAME|PATH; "
                f"`replyparse templates detect {args.chat_template}` names the registry "
                "family), or --no-template-check to serve anyway",
                status=2,
            )
    prefix = ""
    if chat_template is None:
        prefix = resolve_prefix(
            choice, prefix=args.prefix, prefix_file=args.prefix_file, prefix_name=args.prefix_name
        )
    model_name = args.model_name or (choice.entry.name if choice.entry else Path(choice.label).stem)
    backend: Backend
    try:
        if args.replay is not None:
            backend = ReplayBackend(
                args.replay, chunk_size=args.replay_chunk_size, delay=args.replay_delay
            )
        else:
            backend = UpstreamBackend(
                args.upstream,
                model=args.upstream_model,
                api_key=args.upstream_api_key or os.environ.get("REPLYPARSE_UPSTREAM_API_KEY"),
                timeout=args.upstream_timeout,
                max_connections=args.upstream_max_connections,
                max_tokens=args.upstream_max_tokens,
            )
    except BackendError as error:
        raise CliError(str(error)) from None
    config = ServerConfig(
        model_name=model_name,
        template=choice.template,
        backend=backend,
        chat_template=chat_template,
        prefix=prefix,
        template_kwargs=template_kwargs,
        custom_tool_deltas=args.custom_tool_deltas,
        upstream_engine=None if args.upstream_engine == "none" else args.upstream_engine,
        call_id_form=args.call_id_form or (choice.entry.call_id_form if choice.entry else "openai"),
        policies=_policy_compiler(choice, read_policies(args.policy)),
        limits=Limits(**_given_limits(args)),
    )

    def announce(url: str) -> None:
        prompt = f"chat template {chat_template.origin}" if chat_template else "no chat template"
        grammar = "" if config.upstream_engine is None else f"  grammar: {config.upstream_engine}"
        stderr.write(
            f"replyparse serve: {url}  model {model_name!r}  template {choice.label}  "
            f"{prompt}  backend: {backend.description}{grammar}\n"
        )
        stderr.flush()

    try:
        run(config, host=args.host, port=args.port, log_level=args.log_level, announce=announce)
    except OSError as error:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
    return 0
