"""The call shape: one reading of a tool-call transform, and one placeholder syntax."""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import load_template
from replyparse.openai._arguments import analyze_tool_call_field
from replyparse.template._call_shape import CallShape, call_shape_of
from replyparse.transform import placeholder_path


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("{content}", ("content",)),
        ("{content.arguments}", ("content", "arguments")),
        ("{tool-name}", ("tool-name",)),
        ("{content.calls.0}", ("content", "calls", "0")),
        ("get {name}", None),
        ("{}", None),
        ("{a b}", None),
        ("{content.}", None),
        ("{0abc}", None),
        (3, None),
    ],
)
def test_placeholder_path_is_the_one_placeholder_syntax(text: Any, path: Any) -> None:
    assert placeholder_path(text) == path


@pytest.mark.parametrize(
    ("transform", "each", "shape"),
    [
        (
            {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            False,
            CallShape(("name",), ("content",)),
        ),
        (
            {"type": "function", "function": "{content}"},
            False,
            CallShape(("content", "name"), ("content", "arguments")),
        ),
        (
            {"function": {"name": "{content.name}", "arguments": "{content.parameters}"}},
            False,
            CallShape(("content", "name"), ("content", "parameters")),
        ),
        (
            {"function": {"name": "{name}", "arguments": "{content}"}, "id": "{id}"},
            False,
            CallShape(("name",), ("content",), id_source=("id",)),
        ),
        (
            {"function": {"name": "{tool_name}", "arguments": "{parameters}"}},
            True,
            CallShape(("tool_name",), ("parameters",), each=True),
        ),
        ({"name": "{name}", "arguments": "{content}"}, False, CallShape(("name",), ("content",))),
        (
            {"function": {"name": "python", "arguments": "{content}"}},
            False,
            CallShape(None, ("content",), name_literal="python"),
        ),
        (
            {"function": {"name": "{name}", "arguments": {"command": "{content}"}}},
            False,
            CallShape(("name",), None),
        ),
        # A group holds text, not keys: the name cannot be followed, the arguments can.
        (
            {"function": {"name": "{name.first}", "arguments": "{content}"}},
            False,
            CallShape(None, ("content",)),
        ),
        ({"input": "{content}", "recipient": "{recipient}"}, False, None),
        ("{content}", False, None),
    ],
)
def test_call_shape_of_reads_where_name_and_arguments_come_from(
    transform: Any, each: bool, shape: CallShape | None
) -> None:
    assert call_shape_of(transform, each) == shape


def test_only_a_shape_with_both_sources_rebuilds_calls() -> None:
    assert CallShape(("name",), ("content",)).rebuilds_calls
    assert not CallShape(None, ("content",), name_literal="python").rebuilds_calls
    assert not CallShape(("name",), None).rebuilds_calls


def test_the_argument_streamer_reads_the_field_call_shape() -> None:
    field = load_template(
        {
            "start_anchor": "A:",
            "fields": {
                "tool_calls": {
                    "open_pattern": r"<call (?P<name>\w+) (?P<id>\w+)>",
                    "close": "</call>",
                    "repeats": True,
                    "content": "json",
                    "transform": {
                        "type": "function",
                        "id": "{id}",
                        "function": {"name": "{name}", "arguments": "{content}"},
                    },
                },
                "content": {},
            },
        }
    ).fields["tool_calls"]
    assert field.call_shape == CallShape(("name",), ("content",), id_source=("id",))
    shape = analyze_tool_call_field(field)
    assert (shape.name_group, shape.id_group, shape.name_path, shape.arguments_path) == (
        "name",
        "id",
        None,
        (),
    )
    assert shape.streams_arguments
