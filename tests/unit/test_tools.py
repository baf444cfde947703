"""Tests for replyparse.tools: normalizing tool definitions and schemas from Python functions."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional, Union

import pytest

from replyparse.errors import ToolDefinitionError
from replyparse.tools import (
    CustomTool,
    FunctionTool,
    Tool,
    get_json_schema,
    normalize_tools,
    prompt_function,
    resolve_tool_name,
    responses_shapes,
    tools_by_name,
)

WEATHER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["city", "unit"],
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": ["string", "null"], "enum": ["C", "F", None]},
    },
}
WEATHER_CHAT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": WEATHER_PARAMETERS,
        "strict": True,
    },
}
WEATHER_RESPONSES: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": WEATHER_PARAMETERS,
    "strict": True,
}
WEATHER_TOOL = FunctionTool(
    name="get_weather",
    description="Current weather for a city.",
    parameters=WEATHER_PARAMETERS,
    strict=True,
)

CALC_GRAMMAR = 'start: expr\nexpr: NUMBER (OP NUMBER)*\nOP: "+" | "*"\n%import common.NUMBER'
CALC_CHAT: dict[str, Any] = {
    "type": "custom",
    "custom": {
        "name": "calc",
        "description": "Integer arithmetic.",
        "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": CALC_GRAMMAR}},
    },
}
CALC_RESPONSES: dict[str, Any] = {
    "type": "custom",
    "name": "calc",
    "description": "Integer arithmetic.",
    "format": {"type": "grammar", "syntax": "lark", "definition": CALC_GRAMMAR},
}

# The namespace example of the function-calling guide (seeds/001, "Como definir namespaces").
CRM_NAMESPACE: dict[str, Any] = {
    "type": "namespace",
    "name": "crm",
    "description": "CRM tools for customer lookup and order management.",
    "tools": [
        {
            "type": "function",
            "name": "get_customer_profile",
            "description": "Fetch a customer profile by customer ID.",
            "parameters": {
                "type": "object",
                "properties": {"customer_id": {"type": "string"}},
                "required": ["customer_id"],
                "additionalProperties": False,
            },
        },
        {
            "type": "function",
            "name": "list_open_orders",
            "description": "List open orders for a customer ID.",
            "defer_loading": True,
            "parameters": {
                "type": "object",
                "properties": {"customer_id": {"type": "string"}},
                "required": ["customer_id"],
                "additionalProperties": False,
            },
        },
        {"type": "custom", "name": "crm_query", "description": "Free-form CRM query"},
    ],
}


def error_lines(tools: Any) -> list[str]:
    with pytest.raises(ToolDefinitionError) as caught:
        normalize_tools(tools)
    return str(caught.value).splitlines()


# --- accepted shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "definition",
    [
        pytest.param(WEATHER_CHAT, id="chat-completions"),
        pytest.param(WEATHER_RESPONSES, id="responses"),
        pytest.param({k: v for k, v in WEATHER_RESPONSES.items() if k != "type"}, id="bare"),
        pytest.param({"function": WEATHER_CHAT["function"]}, id="wrapped-without-type"),
    ],
)
def test_every_function_shape_normalizes_to_the_same_tool(definition: dict[str, Any]) -> None:
    assert normalize_tools([definition]) == (WEATHER_TOOL,)


def test_function_tool_renders_exact_wire_shapes() -> None:
    assert WEATHER_TOOL.to_chat_completions() == WEATHER_CHAT
    assert WEATHER_TOOL.to_responses() == WEATHER_RESPONSES


def test_function_without_optional_keys_renders_minimal_shapes() -> None:
    (tool,) = normalize_tools([{"type": "function", "name": "ping"}])
    assert tool == FunctionTool("ping")
    assert tool.to_chat_completions() == {
        "type": "function",
        "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}},
    }
    # The Responses request type requires the "strict" key (it may be null).
    assert tool.to_responses() == {
        "type": "function",
        "name": "ping",
        "parameters": {"type": "object", "properties": {}},
        "strict": None,
    }


@pytest.mark.parametrize("parameters", [None, {}])
def test_missing_null_or_empty_parameters_mean_no_parameters(parameters: Any) -> None:
    (tool,) = normalize_tools([{"name": "ping", "parameters": parameters}])
    assert isinstance(tool, FunctionTool)
    assert tool.parameters == {"type": "object", "properties": {}}


def test_parameters_are_copied_from_the_caller() -> None:
    parameters: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    (tool,) = normalize_tools([{"name": "f", "parameters": parameters}])
    parameters["properties"]["a"]["type"] = "integer"
    assert isinstance(tool, FunctionTool)
    assert tool.parameters["properties"]["a"] == {"type": "string"}


@pytest.mark.parametrize(
    "definition",
    [pytest.param(CALC_CHAT, id="chat-completions"), pytest.param(CALC_RESPONSES, id="responses")],
)
def test_custom_grammar_tool_in_both_shapes(definition: dict[str, Any]) -> None:
    (tool,) = normalize_tools([definition])
    assert tool == CustomTool(
        "calc",
        "Integer arithmetic.",
        {"type": "grammar", "syntax": "lark", "definition": CALC_GRAMMAR},
    )
    assert tool.to_chat_completions() == CALC_CHAT
    assert tool.to_responses() == CALC_RESPONSES


def test_custom_text_and_formatless_tools() -> None:
    sql = {"type": "custom", "name": "run_sql", "format": {"type": "text"}}
    code = {"type": "custom", "custom": {"name": "code_exec"}}
    run_sql, code_exec = normalize_tools([sql, code])
    assert run_sql == CustomTool("run_sql", format={"type": "text"})
    assert run_sql.to_responses() == sql
    assert run_sql.to_chat_completions() == {
        "type": "custom",
        "custom": {"name": "run_sql", "format": {"type": "text"}},
    }
    assert code_exec == CustomTool("code_exec")
    assert code_exec.to_chat_completions() == code
    assert code_exec.to_responses() == {"type": "custom", "name": "code_exec"}


def test_regex_grammar_tool() -> None:
    definition = {
        "type": "custom",
        "name": "set_date",
        "format": {"type": "grammar", "syntax": "regex", "definition": r"^\d{4}-\d{2}-\d{2}$"},
    }
    (tool,) = normalize_tools([definition])
    assert tool.to_responses() == definition


def test_namespace_members_carry_the_namespace() -> None:
    profile, orders, query = normalize_tools([CRM_NAMESPACE])
    assert isinstance(profile, FunctionTool)
    assert (profile.namespace, profile.name) == ("crm", "get_customer_profile")
    assert profile.qualified_name == "crm.get_customer_profile"
    assert profile.parameters["required"] == ["customer_id"]
    assert orders.namespace == "crm"
    description = CRM_NAMESPACE["description"]
    assert query == CustomTool(
        "crm_query", "Free-form CRM query", namespace="crm", namespace_description=description
    )
    assert profile.namespace_description == description
    # The inner entry renders without the namespace, as inside the group on the wire.
    assert profile.to_responses() == {
        **CRM_NAMESPACE["tools"][0],
        "strict": None,
    }


def test_the_same_name_in_different_namespaces_is_allowed() -> None:
    billing = {
        "type": "namespace",
        "name": "billing",
        "description": "Billing.",
        "tools": [{"type": "function", "name": "get_customer_profile"}],
    }
    tools = normalize_tools([CRM_NAMESPACE, billing, WEATHER_CHAT])
    assert [tool.qualified_name for tool in tools] == [
        "crm.get_customer_profile",
        "crm.list_open_orders",
        "crm.crm_query",
        "billing.get_customer_profile",
        "get_weather",
    ]


def test_tools_by_name_indexes_bare_and_qualified_names() -> None:
    billing = {
        "type": "namespace",
        "name": "billing",
        "description": "Billing.",
        "tools": [{"type": "function", "name": "get_customer_profile"}],
    }
    shadow = {"type": "function", "name": "list_open_orders"}
    tools = normalize_tools([CRM_NAMESPACE, billing, shadow])
    index = tools_by_name(tools)
    assert sorted(index) == [
        "billing.get_customer_profile",
        "crm.crm_query",
        "crm.get_customer_profile",
        "crm.list_open_orders",
        "crm_query",
        "list_open_orders",
    ]
    # Ambiguous between two namespaces: no bare key. A top-level tool keeps its bare name.
    assert "get_customer_profile" not in index
    assert index["list_open_orders"].namespace is None
    assert index["crm.list_open_orders"].namespace == "crm"


def test_callables_and_dicts_mix() -> None:
    def get_time(zone: str) -> str:
        """Current time.

        Args:
            zone: An IANA zone name.
        """
        return zone

    tools = normalize_tools([WEATHER_CHAT, get_time])
    assert tools[1] == FunctionTool(
        "get_time",
        "Current time.",
        {
            "type": "object",
            "properties": {"zone": {"type": "string", "description": "An IANA zone name."}},
            "required": ["zone"],
        },
    )


def test_none_and_empty_lists() -> None:
    assert normalize_tools(None) == ()
    assert normalize_tools([]) == ()
    assert normalize_tools(iter([WEATHER_CHAT])) == (WEATHER_TOOL,)


# --- invalid definitions -----------------------------------------------------------------------


def test_error_message_lists_every_problem_one_line_each() -> None:
    assert error_lines(
        [
            {"type": "function", "function": {"description": "no name"}},
            {"type": "function", "name": "get weather"},
            {"type": "fuction", "name": "x"},
            {"name": "f", "parameters": {"type": "array"}},
            WEATHER_CHAT,
            WEATHER_RESPONSES,
        ]
    ) == [
        "invalid tool definitions (5 problems):",
        "  tools[0]: missing 'name'.",
        "  tools[1] 'get weather': 'name' must be ASCII letters, digits, '_' and '-', '.' inside"
        " a tool name, at most 64 characters; got 'get weather'.",
        "  tools[2] 'x': unknown tool type 'fuction'. Available: ['custom', 'function',"
        " 'namespace']. Did you mean 'function'?",
        "  tools[3] 'f': 'parameters' must be a JSON Schema with 'type': 'object'; got 'type':"
        " 'array'. Tool arguments are always an object.",
        "  tools[5] 'get_weather': duplicate tool name; tools[4] has the same name. Names must be"
        " unique within a namespace.",
    ]


def test_single_problem_header_is_singular() -> None:
    assert error_lines([{"name": "a b"}])[0] == "invalid tool definitions (1 problem):"


def test_dotted_tool_names_are_accepted() -> None:
    # Models and peers (vLLM, SGLang, llama.cpp) use dotted names; OpenAI alone refuses them.
    (tool,) = normalize_tools([{"name": "weather.get", "parameters": {"type": "object"}}])
    assert tool.name == "weather.get" and tool.namespace is None
    assert set(tools_by_name([tool])) == {"weather.get"}


@pytest.mark.parametrize("name", [".get", "weather.", "a" * 65])
def test_dots_only_inside_a_tool_name(name: str) -> None:
    (line,) = error_lines([{"name": name}])[1:]
    assert line.startswith(f"  tools[0] {name!r}: 'name' must be ASCII letters")


def test_namespace_names_take_no_dots() -> None:
    (line,) = error_lines(
        [{"type": "namespace", "name": "crm.v2", "tools": [{"type": "function", "name": "f"}]}]
    )[1:]
    assert (
        line.startswith("  tools[0] 'crm.v2': 'name' must be ASCII letters") and "'.'" not in line
    )


def test_a_dotted_name_that_spells_a_namespaced_tool_is_refused() -> None:
    lines = error_lines(
        [
            {"type": "namespace", "name": "crm", "tools": [{"type": "function", "name": "find"}]},
            {"type": "function", "name": "crm.find"},
        ]
    )
    assert lines[1] == (
        "  tools[1] 'crm.find': the tool's full name 'crm.find' is also the full name of "
        "tools[0].tools[0]; a model could not tell them apart."
    )


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("functions.get_weather", "get_weather"),  # harmony / Kimi qualifier
        ("default_api.get_weather", "get_weather"),  # Gemini qualifier
        ("get_weather.get_weather", "get_weather"),  # doubled
        ("functions.weather.get", "weather.get"),  # a qualified dotted tool
        ("get_weather", None),  # offered as written
        ("weather.get", None),
        ("functions.forecast", None),  # nothing offered is meant
        ("get_weather.", None),
    ],
)
def test_resolve_tool_name(written: str, meant: str | None) -> None:
    offered = tools_by_name(normalize_tools([{"name": "get_weather"}, {"name": "weather.get"}]))
    assert resolve_tool_name(written, offered) == meant


def test_resolve_tool_name_never_picks_between_namespaces() -> None:
    offered = tools_by_name(
        normalize_tools(
            [
                {"type": "namespace", "name": "crm", "tools": [{"type": "function", "name": "s"}]},
                {"type": "namespace", "name": "docs", "tools": [{"type": "function", "name": "s"}]},
            ]
        )
    )
    assert resolve_tool_name("functions.s", offered) is None
    assert resolve_tool_name("functions.crm.s", offered) == "crm.s"


def test_name_longer_than_64_characters() -> None:
    assert len(normalize_tools([{"name": "a" * 64}])) == 1
    assert "at most 64 characters" in error_lines([{"name": "a" * 65}])[1]


def test_custom_format_errors() -> None:
    assert error_lines(
        [
            {"type": "custom", "name": "a", "format": {"type": "grammar", "syntax": "ebnf"}},
            {
                "type": "custom",
                "custom": {
                    "name": "b",
                    "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": 3}},
                },
            },
            {"type": "custom", "name": "c", "format": {"type": "txt"}},
            {"type": "custom", "name": "d", "format": "text"},
        ]
    ) == [
        "invalid tool definitions (5 problems):",
        "  tools[0] 'a': unknown grammar syntax 'ebnf'. Available: ['lark', 'regex'].",
        "  tools[0] 'a': grammar 'definition' must be a string (the grammar source); got None.",
        "  tools[1] 'b': grammar 'definition' must be a string (the grammar source); got 3.",
        "  tools[2] 'c': unknown custom format type 'txt'. Available: ['grammar', 'text']."
        " Did you mean 'text'?",
        "  tools[3] 'd': 'format' must be a dict; got 'text'.",
    ]


def test_namespace_errors_are_located_inside_the_group() -> None:
    namespace = {
        "type": "namespace",
        "name": "crm",
        "description": "CRM.",
        "tools": [
            {"type": "function", "name": "lookup"},
            {"type": "function", "name": "lookup"},
            {"type": "web_search", "name": "search"},
            {"type": "namespace", "name": "inner", "tools": []},
            {"type": "function", "name": "bad", "strict": "yes"},
        ],
    }
    assert error_lines([namespace, {"type": "namespace", "name": "empty"}]) == [
        "invalid tool definitions (5 problems):",
        "  tools[0].tools[2] 'search': a namespace may hold only 'function' and 'custom' tools;"
        " got type 'web_search'.",
        "  tools[0].tools[3] 'inner': a namespace may hold only 'function' and 'custom' tools;"
        " got type 'namespace'.",
        "  tools[0].tools[4] 'bad': 'strict' must be true, false or null; got 'yes'.",
        "  tools[1] 'empty': a namespace needs 'tools', a list of function or custom tools;"
        " got None.",
        "  tools[0].tools[1] 'lookup': duplicate tool name in namespace 'crm'; tools[0].tools[0]"
        " has the same name. Names must be unique within a namespace.",
    ]


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        (3, "tools[0]: expected a tool dict or a callable; got 3."),
        ({"description": "x"}, "tools[0]: missing 'type' and 'name'; got keys ['description']."),
        ({"type": "function", "function": "get_weather"}, "tools[0]: 'function' must be a dict"),
        ({"type": "custom", "custom": ["calc"]}, "tools[0]: 'custom' must be a dict"),
        ({"name": 7}, "tools[0]: 'name' must be a string; got 7."),
        ({"name": "f", "description": 1}, "tools[0] 'f': 'description' must be a string"),
        ({"name": "f", "parameters": "{}"}, "tools[0] 'f': 'parameters' must be a JSON Schema"),
        (
            {"type": "function", "function": {"name": "f", "parameters": {"properties": {}}}},
            "tools[0] 'f': 'function.parameters' must be a JSON Schema with 'type': 'object';"
            " got 'type': None.",
        ),
        (
            {"name": "f", "parameters": {"type": "object", "properties": []}},
            "tools[0] 'f': 'parameters'.properties must be a dict of JSON Schemas",
        ),
        (
            {"name": "f", "parameters": {"type": "object", "properties": {"a": 1}}},
            "tools[0] 'f': 'parameters'.properties.a must be a JSON Schema (a dict); got 1.",
        ),
        (
            {"name": "f", "parameters": {"type": "object", "required": "a"}},
            "tools[0] 'f': 'parameters'.required must be a list of property names; got 'a'.",
        ),
        ({"type": 5, "name": "f"}, "tools[0] 'f': unknown tool type 5."),
        ({"type": "web_search"}, "tools[0]: unknown tool type 'web_search'."),
        (
            {
                "type": "custom",
                "custom": {"name": "q", "format": {"type": "grammar", "grammar": 1}},
            },
            "tools[0] 'q': 'format.grammar' must be a dict; got 1.",
        ),
    ],
)
def test_invalid_definition_messages(definition: object, message: str) -> None:
    lines = error_lines([definition])
    assert len(lines) == 2
    assert lines[1].startswith(f"  {message}")


@pytest.mark.parametrize("tools", [WEATHER_CHAT, "get_weather"])
def test_a_single_tool_instead_of_a_list(tools: Any) -> None:
    assert error_lines(tools)[1].startswith("  tools: expected a list of tool definitions; got ")


def test_invalid_callable_is_reported_with_its_index() -> None:
    def add(a: int, b) -> int:  # type: ignore[no-untyped-def]
        """Add."""
        return a + int(b)

    assert error_lines([WEATHER_CHAT, add]) == [
        "invalid tool definitions (1 problem):",
        "  tools[1] 'add': parameter 'b' has no type hint. Add one, e.g. 'b: str'.",
    ]


def test_tool_definition_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="missing 'name'"):
        normalize_tools([{"type": "function"}])


# --- get_json_schema ---------------------------------------------------------------------------


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


def get_weather(city: str, unit: Unit = Unit.CELSIUS, days: int = 1) -> dict[str, float]:
    """Get the weather forecast for a city.

    Looks the city up in the forecast service
    and returns one entry per day.

    Args:
        city: The city name, e.g. "Lisbon". Ambiguous names
            resolve to the largest city.
        unit: Temperature unit.
        days: How many days to forecast (choices: [1, 3, 7])

    Returns:
        A mapping from ISO date to temperature.

    Raises:
        LookupError: unknown city.
    """
    return {}


def test_weather_function_schema() -> None:
    assert get_json_schema(get_weather) == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast for a city.\n\n"
            "Looks the city up in the forecast service\nand returns one entry per day.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {
                        "type": "string",
                        "description": 'The city name, e.g. "Lisbon". Ambiguous names resolve to'
                        " the largest city.",
                    },
                    "unit": {
                        "type": "string",
                        "enum": ["celsius", "fahrenheit"],
                        "description": "Temperature unit.",
                    },
                    "days": {
                        "type": "integer",
                        "enum": [1, 3, 7],
                        "description": "How many days to forecast",
                    },
                },
                "required": ["city"],
            },
            "return": {
                "type": "object",
                "additionalProperties": {"type": "number"},
                "description": "A mapping from ISO date to temperature.",
            },
        },
    }


def create_event(
    title: str,
    attendees: list[dict[str, str]],
    slot: tuple[str, int],
    tags: tuple[str, ...] = (),
    priority: Priority = Priority.LOW,
    visibility: Literal["public", "private"] = "private",
    reminder: Optional[int] = None,  # noqa: UP045 - the spelling under test
    location: str | dict[str, float] | None = None,
    extra: Any = None,
    notes: Annotated[str, "free text"] = "",
    repeat: Union[int, bool] = False,  # noqa: UP007 - the spelling under test
) -> None:
    """Create a calendar event.

    Args:
        title: Event title.
        attendees: People, each a mapping with "email" and "name".
        slot: Start time (ISO 8601) and duration in minutes.
        tags: Free-form labels.
        priority: How important the event is.
        visibility: Who can see the event.
        reminder: Minutes before the start, or none.
        location: An address, or coordinates {"lat", "lon"}.
        extra: Anything else.
        notes: Notes.
        repeat: Number of repetitions, or true for forever.
    """


def test_nested_typing_schema() -> None:
    properties = get_json_schema(create_event)["function"]["parameters"]["properties"]
    assert {
        name: {k: v for k, v in p.items() if k != "description"} for name, p in properties.items()
    } == {
        "title": {"type": "string"},
        "attendees": {
            "type": "array",
            "items": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "slot": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "priority": {"type": "integer", "enum": [1, 2]},
        "visibility": {"type": "string", "enum": ["public", "private"]},
        "reminder": {"type": ["integer", "null"]},
        "location": {
            "anyOf": [
                {"type": "string"},
                {"type": "object", "additionalProperties": {"type": "number"}},
                {"type": "null"},
            ]
        },
        "extra": {},
        "notes": {"type": "string"},
        "repeat": {"type": ["integer", "boolean"]},
    }
    parameters = get_json_schema(create_event)["function"]["parameters"]
    assert parameters["required"] == ["title", "attendees", "slot"]
    assert "return" in get_json_schema(create_event)["function"]


def test_optional_literal_and_choices_keep_null_in_the_enum() -> None:
    def pick(
        mode: Optional[Literal["fast", "slow"]] = None,  # noqa: UP045 - under test
        size: str | None = None,
    ) -> None:
        """Pick.

        Args:
            mode: Mode.
            size: Size (choices: ["s", "m"])
        """

    properties = get_json_schema(pick)["function"]["parameters"]["properties"]
    assert properties["mode"] == {
        "type": ["string", "null"],
        "enum": ["fast", "slow", None],
        "description": "Mode.",
    }
    assert properties["size"] == {
        "type": ["string", "null"],
        "enum": ["s", "m", None],
        "description": "Size",
    }


def test_docstring_variants() -> None:
    def lookup(query: str, limit: int = 5) -> list[str]:
        """Search the index.

        Arguments:
            Both are matched case-insensitively.
            query (str): What to search
            for, in plain words.
            limit: At most this many results.
        Returns:
            str: the matches,
            best first.
        """
        return []

    function = get_json_schema(lookup)["function"]
    assert function["description"] == "Search the index."
    assert function["parameters"]["properties"]["query"]["description"] == (
        "What to search for, in plain words."
    )
    assert function["return"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "str: the matches, best first.",
    }


def test_no_docstring_and_unsupported_return_are_tolerated() -> None:
    class Report:
        pass

    def run(n: int) -> Report:
        return Report()

    assert get_json_schema(run) == {
        "type": "function",
        "function": {
            "name": "run",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
            },
        },
    }


def test_string_annotations_are_resolved() -> None:
    namespace: dict[str, Any] = {}
    exec(  # builds a function whose annotations are strings
        "def f(a: 'list[int]', b: 'Optional[str]' = None) -> 'int':\n    return 0\n",
        {"Optional": Optional},
        namespace,
    )
    properties = get_json_schema(namespace["f"])["function"]["parameters"]["properties"]
    assert properties == {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": ["string", "null"]},
    }


def missing_hints(a, b: int, *rest: int, c: Undefined, d: dict[int, str], e: bytes, **options: str):  # type: ignore[no-untyped-def,name-defined]  # noqa: F821
    """Nothing good here."""


def test_schema_errors_name_the_function_and_each_parameter() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        get_json_schema(missing_hints)
    assert str(caught.value).splitlines() == [
        "cannot build a JSON schema for function 'missing_hints':",
        "  parameter 'a' has no type hint. Add one, e.g. 'a: str'.",
        "  parameter '*rest' is variadic, which a JSON schema cannot describe. Use named"
        " parameters.",
        "  parameter 'c': cannot resolve the type hint 'Undefined' from the function's module."
        " Names defined inside another function are not visible there; move them to module"
        " level.",
        "  parameter 'd': dict[int, str]: JSON object keys are strings; use dict[str, ...].",
        "  parameter 'e': type hint bytes has no JSON schema. Supported: int, float, str, bool,"
        " None, Any, list[...], dict[str, ...], tuple[...], Literal[...], Enum subclasses and"
        " unions of these. Pass a JSON tool dict for anything else.",
        "  parameter '**options' is variadic, which a JSON schema cannot describe. Use named"
        " parameters.",
    ]


@pytest.mark.parametrize(
    ("func", "message"),
    [
        (lambda x: x, "function name '<lambda>' is not a valid tool name"),
        (iter, "cannot read the signature of 'iter': no signature found for builtin"),
    ],
)
def test_unnamable_callables(func: Callable[..., Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message.replace("(", r"\(")):
        get_json_schema(func)


def test_callable_without_name() -> None:
    class Adder:
        def __call__(self, a: int) -> int:
            return a

    with pytest.raises(ToolDefinitionError, match="has no __name__"):
        get_json_schema(Adder())


class Shape(enum.Enum):
    POINT = (0, 0)


def test_enum_with_non_json_values_is_rejected() -> None:
    def draw(shape: Shape) -> None:
        """Draw."""

    with pytest.raises(ToolDefinitionError, match=r"enum Shape has a value \(0, 0\)"):
        get_json_schema(draw)


# --- compatibility with transformers.utils.get_json_schema (black box) ------------------------


def reference_get_json_schema() -> Callable[[Callable[..., Any]], dict[str, Any]]:
    utils = pytest.importorskip("transformers.utils")
    reference: Callable[[Callable[..., Any]], dict[str, Any]] = utils.get_json_schema
    return reference


def with_reference_nulls(schema: Any) -> Any:
    """Rewrite our ``"type": [..., "null"]`` in transformers' ``"nullable": true`` form."""
    if isinstance(schema, list):
        return [with_reference_nulls(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rewritten = {key: with_reference_nulls(item) for key, item in schema.items()}
    declared = rewritten.get("type")
    if isinstance(declared, list) and "null" in declared and len(declared) > 1:
        rest = [name for name in declared if name != "null"]
        rewritten["type"] = rest[0] if len(rest) == 1 else rest
        if "enum" in rewritten:
            rewritten["enum"] = [value for value in rewritten["enum"] if value is not None]
        rewritten["nullable"] = True
    return rewritten


def shipping_quote(
    weight_kg: float,
    destination: str,
    express: bool = False,
    boxes: list[int] | None = None,
    dimensions: tuple[float, float, float] = (0, 0, 0),
    carrier: Literal["ups", "dhl"] = "ups",
    priority: Priority = Priority.LOW,
    insurance: Optional[float] = None,  # noqa: UP045 - the spelling under test
    labels: dict[str, list[str]] | None = None,
) -> float:
    """Quote a shipment.

    Args:
        weight_kg: Total weight
            in kilograms.
        destination: ISO country code (choices: ["PT", "BR", "AO"])
        express: Next-day delivery.
        boxes: Box counts per size.
        dimensions: Length, width and height in cm.
        carrier: Carrier.
        priority: Priority.
        insurance: Insured value, if any.
        labels: Labels per box.

    Returns:
        The price in euros.
    """
    return 0.0


@pytest.mark.differential
@pytest.mark.parametrize("func", [get_weather, shipping_quote])
def test_matches_transformers_get_json_schema(func: Callable[..., Any]) -> None:
    # Known, intended difference: optional values use a JSON Schema type list, not OpenAPI's
    # "nullable" (normalized away by with_reference_nulls).
    reference = reference_get_json_schema()
    assert with_reference_nulls(get_json_schema(func)) == reference(func)


@pytest.mark.differential
def test_transformers_rejects_what_we_accept() -> None:
    reference = reference_get_json_schema()

    def take(items: tuple[int, ...], one: tuple[str]) -> None:
        """Take.

        Args:
            items: Any number of integers.
            one: Exactly one string.
        """

    with pytest.raises(Exception, match="not supported in Tuple"):  # the reference is a black box
        reference(take)
    assert get_json_schema(take)["function"]["parameters"]["properties"] == {
        "items": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "Any number of integers.",
        },
        "one": {
            "type": "array",
            "prefixItems": [{"type": "string"}],
            "description": "Exactly one string.",
        },
    }


def test_with_reference_nulls_helper() -> None:
    assert with_reference_nulls({"type": ["integer", "null"], "description": "d"}) == {
        "type": "integer",
        "nullable": True,
        "description": "d",
    }
    assert with_reference_nulls({"type": ["string", "null"], "enum": ["a", None]}) == {
        "type": "string",
        "enum": ["a"],
        "nullable": True,
    }


def test_tool_type_alias_covers_both_classes() -> None:
    tools: list[Tool] = [FunctionTool("a"), CustomTool("b")]
    assert [tool.qualified_name for tool in tools] == ["a", "b"]


class Ratio(enum.Enum):
    HALF = 0.5
    ONE_AND_A_HALF = 1.5


def test_less_common_hints() -> None:
    def odd(
        bare_list: list,  # type: ignore[type-arg]
        bare_dict: dict,  # type: ignore[type-arg]
        empty: tuple[()],
        arrays: Union[list, tuple],  # type: ignore[type-arg]  # noqa: UP007 - under test
        literal: Literal[None, True, "x"],
        ratio: Ratio,
        maybe_none: Optional[Literal[None, "a"]],  # noqa: UP045 - under test
        anything: Optional[Any],  # noqa: UP045 - under test
    ) -> None:
        """Odd.

        Args:
            bare_list:
                A list, described on the next line.
        """

    properties = get_json_schema(odd)["function"]["parameters"]["properties"]
    assert properties == {
        "bare_list": {"type": "array", "description": "A list, described on the next line."},
        "bare_dict": {"type": "object"},
        "empty": {"type": "array"},
        "arrays": {"type": "array"},
        "literal": {"type": ["null", "boolean", "string"], "enum": [None, True, "x"]},
        "ratio": {"type": "number", "enum": [0.5, 1.5]},
        "maybe_none": {"type": ["null", "string"], "enum": [None, "a"]},
        "anything": {},
    }


def test_unhashable_annotation() -> None:
    def bad(x: [int]) -> None:  # type: ignore[valid-type,misc]
        """Bad."""

    with pytest.raises(
        ToolDefinitionError, match=r"parameter 'x': \[<class 'int'>\] is not a type hint"
    ):
        get_json_schema(bad)


@pytest.mark.parametrize(
    ("doc_line", "expected"),
    [
        ("x: Size (choices: ['s', 'm'])", {"enum": ["s", "m"], "description": "Size"}),
        ("x: (choices: [1, 2])", {"enum": [1, 2]}),
        ("x: Size (choices: see the docs)", {"description": "Size (choices: see the docs)"}),
        ("x: Size (choices: 3)", {"description": "Size (choices: 3)"}),
    ],
)
def test_choices_suffix(doc_line: str, expected: dict[str, Any]) -> None:
    def pick(x: str):  # type: ignore[no-untyped-def]  # no return hint: no "return" key
        pass

    pick.__doc__ = f"Pick.\n\nArgs:\n    {doc_line}\n"
    function = get_json_schema(pick)["function"]
    assert "return" not in function
    assert function["parameters"]["properties"]["x"] == {"type": "string", **expected}


def test_annotation_quoted_too_many_times_is_reported() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": repr(repr(repr("int")))}
    with pytest.raises(ToolDefinitionError, match="cannot resolve the type hint 'int'"):
        get_json_schema(f)


def test_normalized_tools_pass_through() -> None:
    tools = normalize_tools([WEATHER_CHAT, CALC_RESPONSES])
    assert normalize_tools(tools) == tools
    grouped = {"type": "namespace", "name": "ops", "description": "Ops.", "tools": list(tools)}
    assert [tool.qualified_name for tool in normalize_tools([grouped])] == [
        "ops.get_weather",
        "ops.calc",
    ]


def test_defer_loading_is_kept_and_echoed() -> None:
    (tool,) = normalize_tools([{"type": "function", "name": "ping", "defer_loading": True}])
    assert isinstance(tool, FunctionTool) and tool.defer_loading
    assert tool.to_responses()["defer_loading"] is True
    (plain,) = normalize_tools([{"type": "function", "name": "ping"}])
    assert "defer_loading" not in plain.to_responses()


def test_a_deferred_custom_tool_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match=r"tools\[0\] 'raw': 'defer_loading' applies"):
        normalize_tools([{"type": "custom", "name": "raw", "defer_loading": True}])


def test_a_namespace_declared_twice_is_refused() -> None:
    again = {**CRM_NAMESPACE, "tools": [{"type": "function", "name": "other"}]}
    with pytest.raises(ToolDefinitionError, match=r"tools\[1\] 'crm': duplicate namespace name"):
        normalize_tools([CRM_NAMESPACE, again])


def test_a_namespace_named_like_a_tool_is_refused() -> None:
    clash = {"type": "function", "name": "crm"}
    with pytest.raises(ToolDefinitionError, match=r"'crm': the namespace has the name of the tool"):
        normalize_tools([clash, CRM_NAMESPACE])


def test_prompt_function_folds_the_namespace_description() -> None:
    profile = normalize_tools([CRM_NAMESPACE])[0]
    assert isinstance(profile, FunctionTool)
    shown = prompt_function(profile)["function"]
    assert shown["name"] == "crm.get_customer_profile"
    assert shown["description"] == (
        f"{profile.description}\n\nPart of crm: {CRM_NAMESPACE['description']}"
    )
    assert prompt_function(profile, with_parameters=False)["function"]["parameters"] == {
        "type": "object",
        "properties": {},
    }


def test_responses_shapes_regroup_namespaces_with_their_description() -> None:
    (group,) = responses_shapes(normalize_tools([CRM_NAMESPACE]))
    assert group["description"] == CRM_NAMESPACE["description"]
    assert [tool["name"] for tool in group["tools"]] == [
        tool["name"] for tool in CRM_NAMESPACE["tools"]
    ]
