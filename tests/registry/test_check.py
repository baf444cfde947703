"""The corpus check (python scripts/corpus_check.py, outside the package): rules, table, docs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scripts.corpus_check import (
    DRAFT_TABLE_END,
    DRAFT_TABLE_START,
    EXCEPTIONS_FILE,
    TABLE_END,
    TABLE_START,
    CaseResult,
    check_case,
    compare_message,
    default_docs_path,
    exceptions_path,
    format_table,
    load_cases,
    main,
    names_read,
    normalize_text,
    prefix_for,
    tools_for,
    write_docs,
)

import replyparse
from replyparse.templates import get_entry
from tests.registry.helpers import SHARED, requires_shared


def _corpus() -> list[dict[str, object]]:
    return load_cases(SHARED / "corpus" / "cases.jsonl")


def test_text_is_compared_stripped_with_whitespace_runs_collapsed() -> None:
    assert normalize_text("  a\n\n b \t c ") == "a b c"
    expected = {"content": "Hello,  world!\n", "reasoning_content": None, "tool_calls": None}
    assert compare_message({"content": "Hello,\nworld!"}, expected) == []
    assert compare_message({"content": "Hello, world"}, expected) != []


def test_empty_string_means_empty_or_absent_and_null_is_unchecked() -> None:
    expected = {"content": "", "reasoning_content": "", "tool_calls": []}
    assert compare_message({"role": "assistant"}, expected) == []
    assert compare_message({"content": "  \n"}, expected) == []
    assert compare_message({"content": "x"}, expected) == ["content: expected '', got 'x'"]
    unchecked = {"content": None, "reasoning_content": None, "tool_calls": None}
    assert compare_message({"content": "x", "tool_calls": [1]}, unchecked) == []


def _call(name: str, arguments: object) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def test_tool_calls_compare_names_order_and_json_typed_arguments() -> None:
    expected = {
        "tool_calls": [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": None}]
    }
    assert (
        compare_message({"tool_calls": [_call("f", {"a": 1}), _call("g", {"x": 2})]}, expected)
        == []
    )
    assert compare_message({"tool_calls": [_call("g", {}), _call("f", {"a": 1})]}, expected) != []
    for wrong in (1.0, True, "1"):
        assert (
            compare_message({"tool_calls": [_call("f", {"a": wrong}), _call("g", {})]}, expected)
            != []
        )
    assert compare_message({"tool_calls": [_call("f", {"a": 1})]}, expected) != []
    assert compare_message({"tool_calls": [{"name": "f"}, _call("g", {})]}, expected) != []


def test_tools_give_each_expected_argument_its_json_type() -> None:
    case = {
        "expected": {
            "tool_calls": [
                {
                    "name": "f",
                    "arguments": {"n": 1, "b": True, "s": "x", "l": [1, 2], "o": {"k": 1.5}},
                },
                {"name": "Calendar.create_event", "arguments": {"t": "x"}},
                {"name": "g", "arguments": None},
            ]
        }
    }
    tools = tools_for(case)
    assert tools is not None
    assert [tool["function"]["name"] for tool in tools] == ["f", "Calendar.create_event", "g"]
    properties = tools[0]["function"]["parameters"]["properties"]
    assert properties == {
        "n": {"type": "integer"},
        "b": {"type": "boolean"},
        "s": {"type": "string"},
        "l": {"type": "array", "items": {"type": "integer"}},
        "o": {"type": "object", "properties": {"k": {"type": "number"}}},
    }
    assert tools_for({"expected": {"tool_calls": []}}) is None


@requires_shared
def test_a_call_whose_name_the_source_leaves_unasserted_is_typed_under_the_name_read() -> None:
    """glimmer-call-9 (ollama) asserts every argument of a call to the dotted tool tools.run
    but not its name: the schema-derived tool takes the name the family reads."""
    case = next(case for case in _corpus() if case["id"] == "glimmer-call-9")
    entry = get_entry("glimmer")
    names = names_read(case, entry, prefix_for(case, entry))
    assert names == ["tools.run"]
    assert tools_for(case) is None
    tools = tools_for(case, names)
    assert tools is not None
    assert tools[0]["function"]["name"] == "tools.run"
    assert tools[0]["function"]["parameters"]["properties"]["count"] == {"type": "integer"}
    message = replyparse.parse_response(
        case["text"], entry.template, prefix=prefix_for(case, entry), tools=tools
    )
    assert message["tool_calls"][0]["function"]["arguments"]["config"] == {"mode": "fast"}
    assert check_case(case, entry, {}).status == "pass"


def test_table() -> None:
    results = [
        CaseResult("a-1", "a", "pass", ()),
        CaseResult("a-2", "a", "known_wrong", ("x",), "a reason"),
        CaseResult("b-1", "b", "fail", ("y",)),
    ]
    table = format_table(results, {"zz": 2})
    assert "| a | 2 | 1 | 1 | 0 |" in table
    assert "| b | 1 | 0 | 0 | 1 |" in table
    assert "| **total** | **3** | **1** | **1** | **1** |" in table
    assert "zz (2)" in table


def test_write_docs_replaces_only_the_table(tmp_path: Path) -> None:
    docs = tmp_path / "registry.md"
    docs.write_text(f"intro\n{TABLE_START}\nold\n{TABLE_END}\nafter\n")
    write_docs("| new |", docs)
    assert docs.read_text() == f"intro\n{TABLE_START}\n| new |\n{TABLE_END}\nafter\n"
    docs.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        write_docs("| new |", docs)


def test_docs_have_the_table_markers() -> None:
    text = default_docs_path().read_text(encoding="utf-8")
    assert TABLE_START in text and TABLE_END in text
    draft_docs = default_docs_path().with_name("draft.md").read_text(encoding="utf-8")
    assert DRAFT_TABLE_START in draft_docs and DRAFT_TABLE_END in draft_docs


@requires_shared
def test_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--shared", str(SHARED), "--family", "qwen3", "--family", "lfm2", "--family", "hermes"]
    assert main([*argv, "-v"]) == 0
    output = capsys.readouterr().out
    # qwen3-reasoning-4 passes with the prefix its corpus_exceptions.json entry names.
    assert "| qwen3 | 12 | 12 | 0 | 0 |" in output
    assert "| lfm2 | 15 | 15 | 0 | 0 |" in output
    assert "KNOWN_WRONG hermes-no-call-edge-6" in output


def test_command_line_without_a_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--shared", str(tmp_path)]) == 2
    assert "no corpus" in capsys.readouterr().err


def test_the_package_holds_no_corpus_tooling() -> None:
    # The corpus check reads ../shared and writes docs/: a tool of the repository, not of
    # the installed package, which must never look outside itself.
    package = Path(replyparse.__file__).resolve().parent
    assert not (package / "templates" / "check.py").exists()
    assert not (package / "templates" / EXCEPTIONS_FILE).exists()
    assert exceptions_path().is_file()
    for module in sorted(package.rglob("*.py")):
        text = module.read_text(encoding="utf-8")
        assert "scripts" not in _imported_roots(text), module
        assert ".parents[" not in text, f"{module} builds paths outside the package"


def _imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots
