"""Request-supplied regexes and grammars: custom tools' grammars, schemas' patterns.

Owns the request rule that a custom tool's ``regex`` grammar and a function schema's
``pattern`` / ``patternProperties`` can be checked safely (:func:`check_tool_patterns`), and
the output rule that a custom tool call's ``input`` follows the tool's grammar
(:func:`check_custom_input`). The bounded matching itself is :mod:`._patterns`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replyparse._schema_walk import SchemaPath, walk
from replyparse.errors import ToolDefinitionError
from replyparse.request._patterns import (
    PatternTimeout,
    compile_pattern,
    lark_accepts,
    lark_problem,
    pattern_problem,
    search,
)
from replyparse.request._validation import short_value
from replyparse.request.errors import RuleViolation
from replyparse.tools import CustomTool, FunctionTool, Tool

__all__ = ["check_custom_input", "check_tool_patterns"]

Path = tuple[str | int, ...]


def check_tool_patterns(tool: Tool) -> None:
    """Refuse a tool whose regexes cannot be checked safely (a request rule).

    Raises:
        ToolDefinitionError: a custom tool's ``regex`` or ``lark`` grammar, or a function
            schema's ``pattern`` / ``patternProperties`` key, that does not compile or is too
            large.
    """
    if isinstance(tool, CustomTool):
        _compile_grammar_or_raise(tool)
    elif isinstance(tool, FunctionTool):
        _check_schema_patterns(tool)


def _check_schema_patterns(tool: FunctionTool) -> None:
    """Refuse a ``pattern`` / ``patternProperties`` regex that cannot be checked safely.

    Raises:
        ToolDefinitionError: naming the schema path and the problem (``a{4294967294}``).
    """

    def visit(node: Mapping[str, Any], path: SchemaPath, depth: int) -> bool:
        patterns = [(".pattern", node.get("pattern"))]
        properties = node.get("patternProperties")
        if isinstance(properties, Mapping):
            patterns += [(".patternProperties", key) for key in properties]
        for place, pattern in patterns:
            problem = pattern_problem(pattern) if isinstance(pattern, str) else None
            if problem is not None:
                where = "".join(
                    f"[{step}]" if isinstance(step, int) else f".{step}" for step in path
                )
                raise ToolDefinitionError(
                    f"tool {tool.name!r}: parameters{where}{place} {pattern!r:.80} {problem}"
                )
        return True

    walk(tool.parameters, visit)


def _grammar_of(tool: CustomTool) -> tuple[str, str] | None:
    form = tool.format
    if isinstance(form, Mapping) and form.get("type") == "grammar":
        return str(form.get("syntax")), str(form.get("definition"))
    return None


def _compile_grammar_or_raise(tool: CustomTool) -> None:
    grammar = _grammar_of(tool)
    if grammar is None:
        return
    syntax, definition = grammar
    if syntax == "regex":
        problem = pattern_problem(definition)
        if problem is not None:
            raise ToolDefinitionError(f"custom tool {tool.name!r}: format.definition {problem}")
    elif syntax == "lark":
        # Compiled as OpenAI compiles it, with llguidance (which accepts some grammars Lark
        # itself refuses: the guide's own math_exp example has "colliding expansions").
        problem = lark_problem(definition)
        if problem is not None:
            raise ToolDefinitionError(
                f"custom tool {tool.name!r}: format.definition: the lark grammar does not "
                f"compile: {problem}"
            )


def check_custom_input(text: str, tool: CustomTool, *, path: Path = ()) -> list[RuleViolation]:
    """Check a custom tool call's ``input`` against the tool's grammar, if it has one.

    ``regex`` grammars must match the whole input; ``lark`` grammars must parse it from the
    ``start`` rule (Earley, so any context-free grammar Lark compiles works). Lark itself is
    optional: when it is not installed, or cannot compile the grammar, the input is reported
    as unchecked (``grammar_unchecked``, warned, never raised).

    Returns:
        A violation when the input does not match, else an empty list.
    """
    grammar = _grammar_of(tool)
    if grammar is None:
        return []
    syntax, definition = grammar
    if syntax == "regex":
        compiled = compile_pattern(definition)
        try:
            matched = compiled is None or search(compiled, text, full=True)
        except PatternTimeout as error:
            return [
                RuleViolation("grammar_unchecked", path, f"input not checked: {error}", tool.name)
            ]
        if not matched:
            return [
                RuleViolation(
                    "custom_grammar",
                    path,
                    f"input does not match the tool's regex {definition!r:.120}; "
                    f"got {short_value(text)}",
                    tool.name,
                )
            ]
        return []
    try:
        accepted = lark_accepts(definition, text)
    except ImportError:
        return [
            RuleViolation(
                "grammar_unchecked",
                path,
                "the tool's lark grammar was not checked: install llguidance "
                "(pip install -e '.[grammar]' in the replyparse checkout)",
                tool.name,
            )
        ]
    except (ValueError, PatternTimeout) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return [
            RuleViolation(
                "grammar_unchecked",
                path,
                f"input not checked: llguidance cannot check the tool's grammar ({first})",
                tool.name,
            )
        ]
    if not accepted:
        return [
            RuleViolation(
                "custom_grammar",
                path,
                f"input does not follow the tool's lark grammar; got {short_value(text)}",
                tool.name,
            )
        ]
    return []
