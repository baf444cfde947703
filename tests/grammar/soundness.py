"""An independent soundness checker for decoding grammars.

Two engines walk each grammar at random, token by token, the way a constrained model would:

* llguidance's ``LLMatcher`` over a byte vocabulary plus multi-byte tokens (the template's
  delimiters, tool and parameter names, enum values), with its own choice policy (not
  :func:`replyparse.grammar.sample.sample_texts`);
* xgrammar's ``GrammarMatcher`` over the same vocabulary, on the GBNF and structural-tag
  outputs (a second implementation of the grammar semantics).

Every finished walk is then checked against the request with the parser and ``jsonschema``
(:func:`violations`): allowed names, call counts, schema-valid strict arguments, custom-tool
inputs matching their regex, no content text under ``required`` or a forced tool.

The request matrix (:data:`TOOL_SETS` x :data:`CHOICES` x parallel x strict) is sampled per
family in CI; ``REPLYPARSE_SOUNDNESS=full`` runs all of it (see ``docs/grammar.md``).
"""

from __future__ import annotations

import copy
import json
import random
import re
import warnings
from collections.abc import Sequence
from typing import Any

import jsonschema

from replyparse import parse_response
from replyparse.errors import ResponseParseError
from replyparse.grammar import GrammarError
from replyparse.grammar import _regex as R
from replyparse.openai import to_chat_completion
from replyparse.openai.errors import MessageShapeError, ToolCallRuleError
from replyparse.template import ResponseTemplate
from tests.grammar.helpers import problems, vocabulary

# -- the request matrix ---------------------------------------------------------------------


def _function(name: str, properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
        **extra,
    }
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


SIMPLE = _function("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})
NESTED = _function(
    "book_trip",
    {
        "to": {"$ref": "#/$defs/place"},
        "stops": {"type": "array", "items": {"$ref": "#/$defs/place"}},
    },
    **{
        "$defs": {
            "place": {
                "type": "object",
                "additionalProperties": False,
                "required": ["city", "country"],
                "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
            }
        }
    },
)
ENUMS = _function(
    "set_mode",
    {"mode": {"type": "string", "enum": ["eco", "boost"]}, "level": {"enum": [1, 2, 3]}},
)
NULLABLE = _function(
    "find_user",
    {
        "email": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "age": {"type": ["integer", "null"]},
    },
)
PATTERN = _function(
    "ship",
    {
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "note": {"type": "string", "maxLength": 5},
        "count": {"type": "integer"},
    },
)
BOUNDS = _function(
    "set_volume",
    {"level": {"type": "integer", "minimum": 0, "maximum": 10}, "gain": {"type": "number"}},
)
TIME = _function("get_time", {"zone": {"type": "string"}})
CUSTOM_REGEX = {
    "type": "custom",
    "name": "set_date",
    "format": {"type": "grammar", "syntax": "regex", "definition": r"^\d{4}-\d{2}$"},
}
CUSTOM_LARK = {
    "type": "custom",
    "name": "calc",
    "format": {
        "type": "grammar",
        "syntax": "lark",
        "definition": 'start: NUM "+" NUM\nNUM: /[0-9]+/',
    },
}

#: Tool sets of the matrix (function tools get ``strict`` from the matrix's strict axis).
TOOL_SETS: dict[str, list[dict[str, Any]]] = {
    "simple": [SIMPLE],
    "nested": [NESTED],
    "enums": [ENUMS],
    "nullable": [NULLABLE],
    "pattern": [PATTERN],
    "bounds": [BOUNDS],
    "custom_regex": [CUSTOM_REGEX],
    "custom_lark": [CUSTOM_LARK],
    "two": [SIMPLE, TIME],
}
CHOICES = ("auto", "required", "named", "none")


def tools_for(tool_set: str, strict: bool) -> list[dict[str, Any]]:
    """The tool set, with ``strict`` set on its function tools."""
    tools = copy.deepcopy(TOOL_SETS[tool_set])
    for tool in tools:
        if tool["type"] == "function":
            tool["function"]["strict"] = strict
    return tools


def tool_choice_for(choice: str, tools: list[dict[str, Any]]) -> Any:
    """The ``tool_choice`` value: ``named`` forces the set's first tool."""
    if choice != "named":
        return choice
    first = tools[0]
    if first["type"] == "custom":
        return {"type": "custom", "custom": {"name": first["name"]}}
    return {"type": "function", "function": {"name": first["function"]["name"]}}


#: (tool_set, choice, parallel, strict) of the whole matrix.
SHAPES: list[tuple[str, str, bool, bool]] = [
    (tool_set, choice, parallel, strict)
    for tool_set in TOOL_SETS
    for choice in CHOICES
    for parallel in (True, False)
    for strict in (True, False)
    if not (strict and all(tool["type"] == "custom" for tool in TOOL_SETS[tool_set]))
]


def shape_id(shape: tuple[str, str, bool, bool]) -> str:
    tool_set, choice, parallel, strict = shape
    return (
        f"{tool_set}-{choice}-{'par' if parallel else 'single'}-{'strict' if strict else 'loose'}"
    )


def sampled_shapes(family: str, count: int | None) -> list[tuple[str, str, bool, bool]]:
    """``count`` shapes for ``family`` (all of them for None), chosen from its name.

    Different families get different shapes, so that the CI run covers the whole matrix
    across the registry while each family stays cheap.
    """
    if count is None or count >= len(SHAPES):
        return list(SHAPES)
    rng = random.Random(family)
    return rng.sample(SHAPES, count)


def walk_tokens(template: ResponseTemplate, tools: list[dict[str, Any]]) -> list[str]:
    """Multi-byte tokens for the walks: delimiters, names, parameter names, enum values."""
    functions = [tool for tool in tools if tool["type"] == "function"]
    tokens = vocabulary(template, functions)
    # Tags inside call bodies (xml-inline tag patterns), split into their tag texts.
    for spec in template.field_list:
        tag_pattern = (spec.content_args or {}).get("tag_pattern")
        if isinstance(tag_pattern, str):
            try:
                node = R.parse(tag_pattern, where=f"$.fields.{spec.name}", exact=False)
            except GrammarError:
                continue  # a tag the grammar cannot write (a backreference): no tag tokens
            for option in R.top_options(node):
                tokens += re.findall(r"<[^<>]*>?|\]\]>|<!\[CDATA\[", R.canonical(option))
    tokens += [piece for token in list(tokens) for piece in re.findall(r"<[^<>]+>", token)]
    # Canonical delimiters write "!" for a name group: the tools' names in its place.
    names = [
        tool["name"] if tool["type"] == "custom" else tool["function"]["name"] for tool in tools
    ]
    tokens += [token.replace("!", name) for token in list(tokens) if "!" in token for name in names]
    for tool in tools:
        if tool["type"] == "custom":
            tokens += [tool["name"], "input"]
    for tool in functions:
        text = json.dumps(tool["function"]["parameters"])
        tokens += [str(value) for value in re.findall(r'"enum": \[([^\]]*)\]', text)]
        tokens += ['"eco"', '"boost"', "null", "true", "Paris", "2024-05", "12"]
    return [token for token in dict.fromkeys(tokens) if len(token.encode()) > 1]


# -- the walks ------------------------------------------------------------------------------


class _Vocabulary:
    """Every byte, the extra tokens, then end of sequence (as llguidance and xgrammar see it)."""

    def __init__(self, extra: Sequence[str]) -> None:
        unique = [text.encode() for text in dict.fromkeys(extra) if len(text.encode()) > 1]
        self.tokens: list[bytes] = [bytes([value]) for value in range(256)] + unique
        self.eos = len(self.tokens)
        self.tokens.append(b"</s>")


def _bits(mask: bytes, size: int) -> list[int]:
    value = int.from_bytes(mask, "little")
    return [token for token in range(size) if value >> token & 1]


_CLOSERS = frozenset(b'")>]}')
_SPACES = frozenset(b" \t\n\r\x0b\x0c")
_TRICKY = frozenset(b'"\\{}[](),:<>=\n ')


def _choose(rng: random.Random, allowed: list[int], eos: int, length: int, limit: int) -> int:
    """The walk's policy: stop sometimes, prefer long tokens, and head for an end when long."""
    if eos in allowed and (length > limit or rng.random() < 0.04):
        return eos
    choices = [token for token in allowed if token != eos]
    if not choices:
        return eos
    long_tokens = [token for token in choices if token > 255]
    if length > limit:
        # Close what is open: quotes, brackets, angle brackets, newlines, delimiters.
        closing = [token for token in choices if token in _CLOSERS]
        solid = [token for token in choices if token not in _SPACES]
        if long_tokens and (rng.random() < 0.5 or not closing):
            choices = long_tokens
        else:
            choices = closing or solid or choices
    elif long_tokens and rng.random() < 0.4:
        choices = long_tokens
    elif rng.random() < 0.3:
        # Bytes that break structures: quotes, escapes, brackets, newlines, commas.
        tricky = [token for token in choices if token in _TRICKY]
        choices = tricky or choices
    return rng.choice(choices)


def _finish(data: bytes, texts: list[str], invalid: list[bytes]) -> None:
    try:
        texts.append(data.decode("utf-8"))
    except UnicodeDecodeError:
        invalid.append(data)


def walk_llguidance(
    grammar: str | dict[str, Any], tokens: Sequence[str], *, count: int, seed: int, limit: int = 160
) -> tuple[list[str], list[bytes]]:
    """Finished walks over llguidance's matcher: (texts, walks that are not UTF-8)."""
    import llguidance

    from replyparse.grammar._matcher import llguidance_grammar

    vocab = _Vocabulary(tokens)

    class _Wrapper:
        def __init__(self) -> None:
            self.tokens = vocab.tokens
            self.eos_token_id = vocab.eos
            self.bos_token_id = None
            self.special_token_ids = [vocab.eos]

        def __call__(self, text: str | bytes) -> list[int]:
            return list(text.encode() if isinstance(text, str) else text)

    ll_tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Wrapper()))
    ll_grammar = llguidance_grammar(grammar)
    rng = random.Random(seed)
    texts: list[str] = []
    invalid: list[bytes] = []
    for _ in range(count * 2):
        if len(texts) + len(invalid) >= count:
            break
        matcher = llguidance.LLMatcher(ll_tokenizer, ll_grammar, log_level=0)
        assert not matcher.is_error(), matcher.get_error()
        data = b""
        for _ in range(limit * 8):
            allowed = _bits(matcher.compute_bitmask(), len(vocab.tokens))
            if not allowed:
                break
            token = _choose(rng, allowed, vocab.eos, len(data), limit)
            if token == vocab.eos:
                _finish(data, texts, invalid)
                break
            assert matcher.consume_token(token), (data, vocab.tokens[token])
            data += vocab.tokens[token]
    return texts, invalid


def llguidance_acceptance(grammar: str | dict[str, Any], texts: Sequence[str]) -> list[bool]:
    """:func:`~replyparse.grammar.accepts` for many texts, with one compiled matcher."""
    from replyparse.grammar._matcher import text_matcher

    base = text_matcher(grammar).matcher
    results = []
    for text in texts:
        matcher = base.deep_copy()
        results.append(
            bool(matcher.consume_tokens(list(text.encode()))) and bool(matcher.is_accepting())
        )
    return results


def _tags(form: Any) -> list[dict[str, Any]]:
    if not isinstance(form, dict):
        return []
    found = [form] if form.get("type") == "tag" else []
    for key in ("tags", "elements"):
        for item in form.get(key, []):
            found += _tags(item)
    return found


def holds_json_excludes(tag: Any, text: str) -> bool:
    """Whether a JSON value that starts right after a tag's begin in ``text`` holds one of
    that tag's JSON ``excludes`` strings (which the Lark model of the tag cannot exclude)."""
    if not isinstance(tag, dict):
        return False
    decoder = json.JSONDecoder()
    for item in _tags(tag.get("format")):
        excludes = item.get("content", {}).get("excludes", [])
        begin = item.get("begin")
        if not excludes or not isinstance(begin, str) or not begin:
            continue
        start = text.find(begin)
        while start >= 0:
            at = start + len(begin)
            at += len(text[at:]) - len(text[at:].lstrip())
            try:
                _, end = decoder.raw_decode(text, at)
            except ValueError:
                end = at
            if any(excluded in text[at:end] for excluded in excludes):
                return True
            start = text.find(begin, start + 1)
    return False


#: Where llguidance's ``%json`` and xgrammar's JSON differ on valid JSON: llguidance refuses
#: the string escapes ``\/`` and ``\uXXXX`` beyond U+001F (it takes ``\u`` only for control
#: characters) and takes the integer ``-0``, which xgrammar does not write.
LLGUIDANCE_JSON_DIFFERENCE = re.compile(
    r"\\(?:/|u(?!00[01][0-9A-Fa-f]))|(?<![0-9.eE])-0(?![0-9.eE])"
)


def xgrammar_compiled(grammar: str | dict[str, Any], tokens: Sequence[str]) -> tuple[Any, Any]:
    """xgrammar's compiled grammar for a GBNF text or a structural tag, and the vocabulary."""
    import xgrammar

    vocab = _Vocabulary(tokens)
    info = xgrammar.TokenizerInfo(vocab.tokens, stop_token_ids=[vocab.eos])
    compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
    if isinstance(grammar, dict):
        compiled = compiler.compile_structural_tag(json.dumps(grammar))
    else:
        compiled = compiler.compile_grammar(grammar)
    return compiled, vocab


def xgrammar_accepts(compiled: Any, text: str) -> bool:
    """Whether xgrammar's matcher takes the whole text and may then stop."""
    import xgrammar

    matcher = xgrammar.GrammarMatcher(compiled, terminate_without_stop_token=True)
    if text and not matcher.accept_string(text):
        return False
    return bool(matcher.is_completed())


def walk_xgrammar(
    compiled: Any, vocab: Any, *, count: int, seed: int, limit: int = 160
) -> tuple[list[str], list[bytes]]:
    """Finished walks over xgrammar's matcher: (texts, walks that are not UTF-8)."""
    import xgrammar

    rng = random.Random(seed)
    size = len(vocab.tokens)
    bitmask = xgrammar.allocate_token_bitmask(1, size)
    texts: list[str] = []
    invalid: list[bytes] = []
    for _ in range(count * 2):
        if len(texts) + len(invalid) >= count:
            break
        matcher = xgrammar.GrammarMatcher(compiled)
        data = b""
        for _ in range(limit * 8):
            if matcher.is_terminated():
                _finish(data, texts, invalid)
                break
            matcher.fill_next_token_bitmask(bitmask)
            words = bitmask[0].tolist()
            # Single bytes of multi-byte characters are left out: xgrammar lets a byte-level
            # vocabulary write stray UTF-8 bytes in free text (its matcher is byte-based).
            allowed = [
                token
                for token in range(size)
                if (words[token // 32] >> (token % 32)) & 1 and not 0x80 <= token < 256
            ]
            if not allowed:
                break
            token = _choose(rng, allowed, vocab.eos, len(data), limit)
            assert matcher.accept_token(token), (data, vocab.tokens[token])
            if token == vocab.eos:
                _finish(data, texts, invalid)
                break
            data += vocab.tokens[token]
    return texts, invalid


# -- the check ------------------------------------------------------------------------------


def violations(
    text: str,
    template: ResponseTemplate,
    prefix: str,
    tools: list[dict[str, Any]],
    choice: str,
    parallel: bool,
) -> list[str]:
    """How ``text`` breaks the request (empty when the message satisfies it).

    The message is checked in its Chat Completions shape (what a client receives): custom
    calls carry their raw ``input``, function calls JSON ``arguments``.
    """
    tool_choice = tool_choice_for(choice, tools)
    try:
        parsed = parse_response(text, template, prefix=prefix, tools=tools)
    except ResponseParseError as error:
        return [f"does not parse: {error}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            completion = to_chat_completion(parsed, model="m", tools=tools)
        except (ToolCallRuleError, MessageShapeError) as error:
            return [f"no Chat Completions message: {error}"]
    message = completion["choices"][0]["message"]
    found: list[str] = []
    calls = message.get("tool_calls") or []
    by_name: dict[str, dict[str, Any]] = {}
    for tool in tools:
        by_name[tool["name"] if tool["type"] == "custom" else tool["function"]["name"]] = tool
    allowed = set(by_name)
    if choice == "named":
        allowed = {next(iter(by_name))}
    if choice == "none":
        allowed = set()
    if choice in ("required", "named") and not calls:
        found.append("no call under " + choice)
    if (choice == "named" or not parallel) and len(calls) > 1:
        found.append(f"{len(calls)} calls where one is allowed")
    if choice in ("required", "named"):
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            found.append(f"content text under {choice}: {content[:60]!r}")
    for call in calls:
        body = call.get(call["type"], {})
        name = body.get("name")
        if name not in allowed:
            found.append(f"call to {name!r}, not among {sorted(allowed)}")
            continue
        tool = by_name[name]
        if tool["type"] != call["type"]:
            found.append(f"call to {name!r} is a {call['type']} call; the tool is {tool['type']}")
            continue
        if tool["type"] == "custom":
            form = tool.get("format") or {}
            value = body.get("input")
            if form.get("syntax") == "regex" and not (
                isinstance(value, str) and re.fullmatch(form["definition"].strip("^$"), value)
            ):
                found.append(f"custom call {name!r}: input {value!r:.60} does not match the regex")
            continue
        try:
            arguments = json.loads(body.get("arguments"))
        except (TypeError, ValueError):
            found.append(f"arguments of {name!r} are not JSON: {body.get('arguments')!r:.60}")
            continue
        if not isinstance(arguments, dict):
            found.append(f"arguments of {name!r} are not an object: {arguments!r:.60}")
            continue
        if tool["function"].get("strict"):
            schema = tool["function"]["parameters"]
            validator = jsonschema.Draft202012Validator(schema)
            errors = [error.message for error in validator.iter_errors(arguments)]
            if errors:
                found.append(f"arguments of {name!r} break the schema: {errors[0][:100]}")
    if not found:
        found += problems(text, template, prefix, tools, tool_choice, parallel)
    return found
