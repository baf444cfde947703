"""The families of the third gathering pass (``../shared/corpus/FORMATS.md``): DeepSeek V4.1,
Ling 3, Spark2.5, IQuest Q1 and Hunyuan HY v4, beyond their corpus cases.

Every output is parsed in raise, recover and partial mode, whole and in every chunking
(``_modes.every_way``), on outputs written the way each family's wire format says: reasoning,
content around calls, several calls, nested JSON values. Malformed and truncated outputs get
the outcome each family's ``notes`` document.
"""

from __future__ import annotations

from typing import Any

import pytest
from scripts.corpus_check import compare_message

from replyparse.templates import get_entry
from tests.registry.behaviour._modes import Outcome, all_modes, every_way
from tests.registry.helpers import corpus, requires_shared

A = {"role": "assistant"}


def call(name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def tool(name: str, **properties: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
            },
        },
    }


TOOLS = [
    tool("get_weather", city="string", days="integer"),
    tool("book_trip", city="string", travellers="array", options="object", nights="integer"),
    tool("now"),
]

NESTED_OPTIONS = {"seat": {"window": True, "row": 12}, "meals": ["veg", None], "price": 199.5}
TRAVELLERS = [{"name": "Ana", "age": 34}, {"name": "Bo", "age": None}]


def _case(case_id: str) -> dict[str, Any]:
    for case in corpus():
        if case["id"] == case_id:
            return case
    pytest.skip(f"corpus case {case_id} not available")


def assert_clean(outcomes: dict[str, Outcome], message: dict[str, Any]) -> None:
    """A well-formed output: the same message in every mode, no issue, nothing in progress."""
    for mode, outcome in outcomes.items():
        assert outcome.error is None, mode
        assert outcome.message == message, mode
        assert outcome.issues == (), mode
        assert outcome.in_progress is None, mode


# -- DeepSeek V4.1: spaced DSML -----------------------------------------------------------------

DSML_CALLS = (
    "\n\n<｜DSML｜ calls>\n"
    '<｜DSML｜ invoke name="get_weather">\n'
    '<｜DSML｜ parameter name="city" string="true">Paris</｜DSML｜ parameter>\n'
    '<｜DSML｜ parameter name="days" string="false">3</｜DSML｜ parameter>\n'
    "</｜DSML｜ invoke>\n"
    '<｜DSML｜ invoke name="book_trip">\n'
    '<｜DSML｜ parameter name="city" string="true">{"not": "json here"}</｜DSML｜ parameter>\n'
    '<｜DSML｜ parameter name="travellers" string="false">'
    '[{"name": "Ana", "age": 34}, {"name": "Bo", "age": null}]</｜DSML｜ parameter>\n'
    '<｜DSML｜ parameter name="options">'
    '{"seat": {"window": true, "row": 12}, "meals": ["veg", null], "price": 199.5}'
    "</｜DSML｜ parameter>\n"
    "</｜DSML｜ invoke>\n"
    '<｜DSML｜ invoke name="now">\n</｜DSML｜ invoke>\n'
    "</｜DSML｜ calls>"
)
DSML_MESSAGE_CALLS = [
    call("get_weather", {"city": "Paris", "days": 3}),
    call(
        "book_trip",
        {"city": '{"not": "json here"}', "travellers": TRAVELLERS, "options": NESTED_OPTIONS},
    ),
    call("now", {}),
]


def test_deepseek_v41_reasoning_content_and_three_calls() -> None:
    text = "The user wants weather and a booking.</think>Let me check." + DSML_CALLS
    text += "<｜end▁of▁sentence｜>"
    assert_clean(
        all_modes("deepseek-v4.1", text),
        {
            **A,
            "reasoning_content": "The user wants weather and a booking.",
            "content": "Let me check.",
            "tool_calls": DSML_MESSAGE_CALLS,
        },
    )


def test_deepseek_v41_thinking_off_prompt_and_a_repeated_think() -> None:
    assert_clean(
        all_modes("deepseek-v4.1", "Answer: 12.<｜end▁of▁sentence｜>", prefix_key="no_thinking"),
        {**A, "content": "Answer: 12."},
    )
    assert_clean(
        all_modes("deepseek-v4.1", "\n<think>Short.</think>Done."),
        {**A, "reasoning_content": "Short.", "content": "Done."},
    )


def test_deepseek_v41_a_block_inside_unclosed_reasoning_ends_it() -> None:
    text = "I should call the tool now." + DSML_CALLS
    assert_clean(
        all_modes("deepseek-v4.1", text),
        {**A, "reasoning_content": "I should call the tool now.", "tool_calls": DSML_MESSAGE_CALLS},
    )


def test_deepseek_v41_reads_v4s_block_name_with_the_new_spacing() -> None:
    text = DSML_CALLS.replace("｜DSML｜ calls>", "｜DSML｜ tool_calls>")
    outcome = every_way("deepseek-v4.1", text, prefix_key="no_thinking")
    assert outcome.message == {**A, "tool_calls": DSML_MESSAGE_CALLS}


def test_deepseek_v41_a_call_cut_inside_a_parameter() -> None:
    text = (
        "Plan.</think>Checking.\n\n<｜DSML｜ calls>\n"
        '<｜DSML｜ invoke name="get_weather">\n'
        '<｜DSML｜ parameter name="city" string="true">Par'
    )
    outcomes = all_modes("deepseek-v4.1", text)
    before = {**A, "reasoning_content": "Plan.", "content": "Checking."}
    assert outcomes["raise"].error == ("ContentParseError", "tool_calls", before)
    raw = '<｜DSML｜ parameter name="city" string="true">Par'
    recovered = {**before, "tool_calls": [call("get_weather", raw)]}
    assert outcomes["recover"].message == recovered
    assert outcomes["recover"].issues == ("unclosed_region", "malformed_call")
    assert outcomes["partial"].message == recovered
    assert outcomes["partial"].in_progress == "tool_calls"


# -- Ling 3: GLM-4.7 XML, thinking on by default --------------------------------------------------


def _glm_call(name: str, pairs: dict[str, str], *, newline: bool = False) -> str:
    separator = "\n" if newline else ""
    body = "".join(
        f"<arg_key>{key}</arg_key>{separator}<arg_value>{value}</arg_value>{separator}"
        for key, value in pairs.items()
    )
    return f"<tool_call>{name}{separator}{body}</tool_call>"


BOOKING_PAIRS = {
    "city": "Lisbon",
    "travellers": '[{"name": "Ana", "age": 34}, {"name": "Bo", "age": null}]',
    "options": '{"seat": {"window": true, "row": 12}, "meals": ["veg", null], "price": 199.5}',
    "nights": "4",
}
BOOKING = call(
    "book_trip",
    {"city": "Lisbon", "travellers": TRAVELLERS, "options": NESTED_OPTIONS, "nights": 4},
)


def test_ling3_reasoning_content_and_calls_typed_by_schema() -> None:
    text = (
        "<think>Weather first, then the booking.</think>Working on it.\n"
        + _glm_call("get_weather", {"city": "Lisbon", "days": "2"}, newline=True)
        + "\n"
        + _glm_call("book_trip", BOOKING_PAIRS)
        + _glm_call("now", {})
        + "<|role_end|>"
    )
    assert_clean(
        all_modes("ling3", text, tools=TOOLS),
        {
            **A,
            "reasoning_content": "Weather first, then the booking.",
            "content": "Working on it.",
            "tool_calls": [
                call("get_weather", {"city": "Lisbon", "days": 2}),
                BOOKING,
                call("now", {}),
            ],
        },
    )


def test_ling3_a_call_ends_unclosed_reasoning() -> None:
    text = "I need the weather." + _glm_call("get_weather", {"city": "Oslo"})
    assert_clean(
        all_modes("ling3", text, tools=TOOLS),
        {
            **A,
            "reasoning_content": "I need the weather.",
            "tool_calls": [call("get_weather", {"city": "Oslo"})],
        },
    )


def test_ling3_thinking_off_is_all_content() -> None:
    assert_clean(
        all_modes("ling3", "Hello there.<|role_end|>", prefix_key="no_thinking"),
        {**A, "content": "Hello there."},
    )


def test_ling3_a_call_cut_inside_a_value() -> None:
    text = "<think>Go.</think>" + "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Os"
    outcomes = all_modes("ling3", text, tools=TOOLS)
    assert outcomes["raise"].error == (
        "ContentParseError",
        "tool_calls",
        {**A, "reasoning_content": "Go."},
    )
    expected = {
        **A,
        "reasoning_content": "Go.",
        "tool_calls": [call("get_weather", "<arg_key>city</arg_key><arg_value>Os")],
    }
    assert outcomes["recover"].message == expected
    assert outcomes["partial"].message == expected
    assert outcomes["partial"].in_progress == "tool_calls"


# -- Spark2.5: calls with text around and between them --------------------------------------------


def test_spark25_text_around_and_between_back_to_back_calls() -> None:
    text = (
        "Sure."
        + _glm_call("get_weather", {"city": "上海", "days": "5"})
        + _glm_call("book_trip", BOOKING_PAIRS)
        + "Then the time:"
        + _glm_call("now", {})
        + "Done.<|im_end|>"
    )
    assert_clean(
        all_modes("spark2.5", text, tools=TOOLS),
        {
            **A,
            "content": "Sure.\n\nThen the time:\n\nDone.",
            "tool_calls": [
                call("get_weather", {"city": "上海", "days": 5}),
                BOOKING,
                call("now", {}),
            ],
        },
    )


def test_spark25_a_block_without_a_name_is_content() -> None:
    outcomes = all_modes("spark2.5", "x<tool_call></tool_call>y")
    for outcome in outcomes.values():
        assert outcome.message == {**A, "content": "x<tool_call></tool_call>y"}
    # Recover mode reports the call's closer in content: no call opened before it.
    assert outcomes["recover"].issues == ("stray_close",)


@requires_shared
def test_spark25_a_call_cut_by_the_end_of_the_output() -> None:
    """spark2.5-no-call-5 (corpus_exceptions.json): SGLang drops the cut call."""
    outcomes = all_modes("spark2.5", _case("spark2.5-no-call-5")["text"])
    assert outcomes["raise"].error == ("ContentParseError", "tool_calls", {**A, "content": "plain"})
    cut = {**A, "content": "plain", "tool_calls": [call("set_state", "<arg_key>count</arg_key>")]}
    assert outcomes["recover"].message == cut
    assert outcomes["recover"].issues == ("unclosed_region", "malformed_call")
    assert outcomes["partial"].message == cut
    assert outcomes["partial"].in_progress == "tool_calls"


# -- IQuest Q1 ------------------------------------------------------------------------------------

RUN_TOOL = [tool("run", code="string", count="integer", enabled="boolean", items="array")]


def test_iquest_reasoning_then_calls_string_values_keep_their_text() -> None:
    text = (
        "The user wants code run twice.</think>Running now. "
        '<iquest_tool_call>run\n<arg_key>code</arg_key><arg_value>  print("hi")\n</arg_value>'
        "<arg_key>count</arg_key> <arg_value>2</arg_value>\n"
        "<arg_key>enabled</arg_key><arg_value>true</arg_value>"
        '<arg_key>items</arg_key><arg_value>[1, null, {"k": [true]}]</arg_value></iquest_tool_call>'
        "<iquest_tool_call>run</iquest_tool_call><|iquest_end|>"
    )
    assert_clean(
        all_modes("iquest-q1", text, tools=RUN_TOOL),
        {
            **A,
            "reasoning_content": "The user wants code run twice.",
            "content": "Running now.",
            "tool_calls": [
                call(
                    "run",
                    {
                        "code": '  print("hi")\n',
                        "count": 2,
                        "enabled": True,
                        "items": [1, None, {"k": [True]}],
                    },
                ),
                call("run", {}),
            ],
        },
    )


def test_iquest_a_later_think_close_in_the_answer_is_content() -> None:
    text = "<think>Hm.</think>Use </think> to close reasoning.<|iquest_end|>"
    outcomes = all_modes("iquest-q1", text)
    expected = {**A, "reasoning_content": "Hm.", "content": "Use </think> to close reasoning."}
    for outcome in outcomes.values():
        assert outcome.message == expected
    assert outcomes["recover"].issues == ("stray_close",)


@requires_shared
@pytest.mark.parametrize(
    "case_id", ["iquest-q1-call-2", "iquest-q1-call-3", "iquest-q1-call-4", "iquest-q1-call-5"]
)
def test_iquest_cases_without_recorded_names_pass_with_the_tests_tool(case_id: str) -> None:
    """The corpus records no names for these calls; the source test's tool types the values."""
    case = _case(case_id)
    outcome = every_way("iquest-q1", case["text"], prefix_key="bare", tools=RUN_TOOL)
    assert outcome.message is not None
    assert [item["function"]["name"] for item in outcome.message["tool_calls"]] == ["run"] * len(
        case["expected"]["tool_calls"]
    )
    # Content is left out: SGLang joins the text around calls with nothing (the exception).
    assert compare_message(outcome.message, {**case["expected"], "content": None}) == []


@requires_shared
@pytest.mark.parametrize(
    ("case_id", "before"),
    [
        ("iquest-q1-call-6", A),
        ("iquest-q1-no-call-10", A),
        ("iquest-q1-no-call-11", {**A, "content": "before"}),
    ],
)
def test_iquest_a_malformed_block_raises_or_is_kept_with_its_raw_text(
    case_id: str, before: dict[str, Any]
) -> None:
    """SGLang keeps such a block as text (corpus_exceptions.json)."""
    outcomes = all_modes("iquest-q1", _case(case_id)["text"], prefix_key="bare", tools=RUN_TOOL)
    assert outcomes["raise"].error is not None
    assert outcomes["raise"].error[:2] == ("ContentParseError", "tool_calls")
    assert outcomes["raise"].error[2] == before
    recovered = outcomes["recover"].message
    assert recovered is not None
    assert recovered["tool_calls"][0]["function"]["name"] == "run"
    assert isinstance(recovered["tool_calls"][0]["function"]["arguments"], str)
    assert "malformed_call" in outcomes["recover"].issues


# -- Hunyuan HY v4: per-checkpoint token suffixes --------------------------------------------------


def _hy4(suffix: str) -> str:
    s = suffix
    return (
        f"Checking both.<tool_calls{s}>\n"
        f"<tool_call{s}>get_weather<arg_key{s}>city</arg_key{s}><arg_value{s}>北京</arg_value{s}>"
        f"<arg_key{s}>days</arg_key{s}><arg_value{s}>3</arg_value{s}></tool_call{s}>"
        f"<tool_call{s}>book_trip<arg_key{s}>travellers</arg_key{s}>"
        f'<arg_value{s}>[{{"name": "Ana", "age": 34}}, {{"name": "Bo", "age": null}}]</arg_value{s}>'
        f"</tool_call{s}><tool_call{s}>now</tool_call{s}></tool_calls{s}>"
    )


@pytest.mark.parametrize("suffix", [":opensource", "", ":a+b(c", ":v4.1|x*"])
def test_hunyuan_hy4_any_token_suffix(suffix: str) -> None:
    text = f"The user wants two things.</think{suffix}>" + _hy4(suffix)
    assert_clean(
        all_modes("hunyuan-hy4", text, tools=TOOLS),
        {
            **A,
            "reasoning_content": "The user wants two things.",
            "content": "Checking both.",
            "tool_calls": [
                call("get_weather", {"city": "北京", "days": 3}),
                call("book_trip", {"travellers": TRAVELLERS}),
                call("now", {}),
            ],
        },
    )


@requires_shared
def test_hunyuan_hy4_stray_text_after_the_arguments() -> None:
    """hunyuan-hy4-no-call-13 (corpus_exceptions.json): vLLM's strict mode keeps it as text."""
    outcomes = all_modes("hunyuan-hy4", _case("hunyuan-hy4-no-call-13")["text"], prefix_key="bare")
    assert outcomes["raise"].error == ("ContentParseError", "tool_calls", A)
    recovered = outcomes["recover"].message
    assert recovered == {
        **A,
        "content": "JUNK",
        "tool_calls": [call("get_weather", {"city": "X"})],
    }
    assert outcomes["recover"].issues == ("stray_text",)


def test_hunyuan_hy4_prompts() -> None:
    entry = get_entry("hunyuan-hy4")
    assert entry.prefixes["default"].endswith("<think:opensource>")
    outcome = every_way("hunyuan-hy4", "Plain answer.", prefix_key="no_thinking")
    assert outcome.message == {**A, "content": "Plain answer."}


# -- Inkling: TMLv0 content blocks -----------------------------------------------------------------

INKLING_TURN = (
    "<|content_thinking|>The user wants weather and a booking.<|end_message|>"
    "<|message_model|><|content_text|>Let me look both up.<|end_message|>"
    '<|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", '
    '"args": {"city": "Paris", "days": 3}}<|end_message|>'
    '<|message_model|>book_trip<|content_invoke_tool_json|>{"name": "book_trip", "args": '
    '{"city": "Lisbon", "travellers": [{"name": "Ana", "age": 34}, {"name": "Bo", "age": null}], '
    '"options": {"seat": {"window": true, "row": 12}, "meals": ["veg", null], "price": 199.5}, '
    '"nights": 4}}<|end_message|>'
    "<|message_model|><|content_thinking|>\nBoth are needed.<|end_message|>"
    "<|content_model_end_sampling|>"
)


def test_inkling_thinking_text_and_calls_with_author_headers() -> None:
    assert_clean(
        all_modes("inkling", INKLING_TURN),
        {
            **A,
            "reasoning_content": "The user wants weather and a booking.Both are needed.",
            "content": "Let me look both up.",
            "tool_calls": [call("get_weather", {"city": "Paris", "days": 3}), BOOKING],
        },
    )


def test_inkling_visible_text_kinds_and_a_kind_token_inside_text() -> None:
    text = (
        "<|content_text|>Use <|content_text|> carefully.<|end_message|>"
        "<|message_model|><|content_tool_error|>The tool failed.<|end_message|>"
        "<|message_model|><|content_invoke_tool_text|>run it again<|end_message|>"
    )
    outcomes = all_modes("inkling", text)
    assert_clean(
        outcomes,
        {**A, "content": "Use\n\ncarefully.\n\nThe tool failed.\n\nrun it again"},
    )


def test_inkling_bare_text_after_the_prompt_is_content() -> None:
    assert_clean(
        all_modes("inkling", "Just an answer.<|end_message|>"), {**A, "content": "Just an answer."}
    )


def test_inkling_a_call_cut_inside_its_json() -> None:
    text = (
        "<|content_text|>Booking.<|end_message|><|message_model|><|content_invoke_tool_json|>"
        '{"name": "book_trip", "args": {"city": "Lis'
    )
    outcomes = all_modes("inkling", text)
    assert outcomes["raise"].error == (
        "ContentParseError",
        "tool_calls",
        {**A, "content": "Booking."},
    )
    cut = {**A, "content": "Booking.", "tool_calls": [call("book_trip", '{"city": "Lis')]}
    assert outcomes["recover"].message == cut
    assert outcomes["recover"].issues == ("unclosed_region", "malformed_call")
    assert outcomes["partial"].message == cut
    assert outcomes["partial"].in_progress == "tool_calls"


# -- From the parsers' descriptions: Zaya, Ripple, Step-5, Beam, Muse Spark -------------------------

QWEN_XML_BOOKING = (
    "<function=book_trip>\n<parameter=city>\nLisbon\n</parameter>\n"
    '<parameter=travellers>\n[{"name": "Ana", "age": 34}, {"name": "Bo", "age": null}]\n</parameter>\n'
    '<parameter=options>\n{"seat": {"window": true, "row": 12}, "meals": ["veg", null], '
    '"price": 199.5}\n</parameter>\n<parameter=nights>\n4\n</parameter>\n</function>'
)
QWEN_XML_WEATHER = (
    "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>"
)


def test_zaya_reasoning_content_and_wrapped_xml_calls() -> None:
    text = (
        "<think>\nTwo tools are needed.\n</think>\n\nOn it.\n"
        f"<zyphra_tool_call>\n{QWEN_XML_WEATHER}\n</zyphra_tool_call>\n"
        f"<zyphra_tool_call>\n{QWEN_XML_BOOKING}\n</zyphra_tool_call><|im_end|>"
    )
    assert_clean(
        all_modes("zaya", text, tools=TOOLS),
        {
            **A,
            "reasoning_content": "Two tools are needed.",
            "content": "On it.",
            "tool_calls": [call("get_weather", {"city": "Paris", "days": 3}), BOOKING],
        },
    )


def test_zaya_a_call_inside_unclosed_reasoning_ends_it() -> None:
    text = f"<think>\nI will call it.\n<zyphra_tool_call>\n{QWEN_XML_WEATHER}\n</zyphra_tool_call>"
    assert_clean(
        all_modes("zaya", text, tools=TOOLS),
        {
            **A,
            "reasoning_content": "I will call it.",
            "tool_calls": [call("get_weather", {"city": "Paris", "days": 3})],
        },
    )


def test_zaya_a_json_body_is_not_a_call() -> None:
    text = '<zyphra_tool_call>{"name": "now", "arguments": {}}</zyphra_tool_call>'
    for outcome in all_modes("zaya", text).values():
        assert outcome.message == {**A, "content": text}


RIPPLE_CALLS = (
    '\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
    '\n<tool_call>\n{"name": "book_trip", "arguments": {"city": "Lisbon", "travellers": '
    '[{"name": "Ana", "age": 34}, {"name": "Bo", "age": null}], "options": {"seat": '
    '{"window": true, "row": 12}, "meals": ["veg", null], "price": 199.5}, "nights": 4}}\n'
    "</tool_call>"
)


def test_ripple_reasoning_content_and_hermes_calls() -> None:
    text = "<think>\nBoth tools.\n</think>\nSure, checking." + RIPPLE_CALLS + "<|im_end|>"
    assert_clean(
        all_modes("ripple", text),
        {
            **A,
            "reasoning_content": "Both tools.",
            "content": "Sure, checking.",
            "tool_calls": [call("get_weather", {"city": "Paris", "days": 3}), BOOKING],
        },
    )


def test_ripple_a_call_ends_reasoning_and_a_stray_think_close_is_dropped() -> None:
    text = "<think>\nCalling now." + RIPPLE_CALLS + "\nDone.</think>"
    assert_clean(
        all_modes("ripple", text),
        {
            **A,
            "reasoning_content": "Calling now.",
            "content": "Done.",
            "tool_calls": [call("get_weather", {"city": "Paris", "days": 3}), BOOKING],
        },
    )


def test_ripple_a_call_cut_inside_its_json() -> None:
    text = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    outcomes = all_modes("ripple", text)
    assert outcomes["raise"].error == (
        "ContentParseError",
        "tool_calls",
        {**A, "content": "Checking."},
    )
    recovered = outcomes["recover"].message
    assert recovered is not None
    assert recovered["tool_calls"][0]["function"]["name"] == "get_weather"
    assert outcomes["partial"].in_progress == "tool_calls"


def test_step5_content_around_xml_calls() -> None:
    text = (
        f"Let me check.\n<tool_call>\n{QWEN_XML_WEATHER}\n</tool_call>\n"
        f"<tool_call>\n{QWEN_XML_BOOKING}\n</tool_call>\nBoth requested.<|im_end|>"
    )
    assert_clean(
        all_modes("step5", text, tools=TOOLS),
        {
            **A,
            "content": "Let me check.\n\nBoth requested.",
            "tool_calls": [call("get_weather", {"city": "Paris", "days": 3}), BOOKING],
        },
    )


BEAM_OUTPUT = (
    "<|channel|>analysis<|message|>Weather first, then the booking.<|end|><|start|>assistant"
    " to=get_weather<|channel|>analysis <|constrain|>xml<|message|>"
    '<rfl:parameter name="city">\nParis\n</rfl:parameter>'
    '<rfl:parameter name="days">\n3\n</rfl:parameter><|end|><|start|>assistant'
    " to=book_trip<|channel|>analysis <|constrain|>xml<|message|>"
    '<rfl:parameter name="city">\n  Lisbon, Portugal \n</rfl:parameter>'
    '<rfl:parameter name="nights">\n4\n<rfl:parameter name="travellers">\n'
    '[{"name": "Ana", "age": 34}, {"name": "Bo", "age": null}]\n</rfl:parameter><|call|>'
)
BEAM_CALLS = [
    call("get_weather", {"city": "Paris", "days": 3}),
    call(
        "book_trip",
        {"city": "  Lisbon, Portugal ", "nights": 4, "travellers": TRAVELLERS},
    ),
]


def _beam_as_shipped() -> dict[str, Any]:
    """SGLang's fallback copy of Beam's response template, read verbatim from FORMATS.md."""
    import ast

    from tests.registry.helpers import SHARED

    text = (SHARED / "corpus" / "FORMATS.md").read_text(encoding="utf-8")
    start = text.index("BEAM_RESPONSE_TEMPLATE: dict[str, Any] = ")
    block = text[start : text.index("```", start)]
    assignment = ast.parse(block).body[0]
    assert isinstance(assignment, ast.AnnAssign) and assignment.value is not None
    template: dict[str, Any] = ast.literal_eval(assignment.value)
    return template


def test_beam_reasoning_and_calls_with_raw_values() -> None:
    assert_clean(
        all_modes("beam", BEAM_OUTPUT, tools=TOOLS),
        {**A, "reasoning_content": "Weather first, then the booking.", "tool_calls": BEAM_CALLS},
    )


def test_beam_answer_after_reasoning() -> None:
    text = (
        "<|channel|>analysis<|message|>Simple.<|end|><|start|>assistant"
        "<|channel|>final<|message|>It is 21 C in Paris.<|return|>"
    )
    assert_clean(
        all_modes("beam", text),
        {**A, "reasoning_content": "Simple.", "content": "It is 21 C in Paris."},
    )


@requires_shared
def test_beam_loads_as_shipped_and_reads_outputs_as_the_family_does() -> None:
    from replyparse import load_template, parse_response

    shipped = _beam_as_shipped()
    assert shipped["fields"]["tool_calls"]["content"] == "xml-inline"
    template = load_template(shipped)
    entry = get_entry("beam")
    message = parse_response(BEAM_OUTPUT, template, prefix=entry.prefixes["default"], tools=TOOLS)
    family = parse_response(
        BEAM_OUTPUT, entry.template, prefix=entry.prefixes["default"], tools=TOOLS
    )
    family["thinking"] = family.pop("reasoning_content")
    assert message == family


MUSE_CALL = (
    "<|start|>assistant to=functions.get_weather<|message|><atem:function_calls>"
    '<atem:invoke name="get_weather"><atem:parameter name="city">Paris</atem:parameter>'
    '<atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls><|eom|>'
)


def test_muse_spark_commentary_is_content() -> None:
    text = (
        " to=self<|message|>Check the weather.<|eom|>"
        "<|start|>assistant to=commentary<|message|>Looking it up.<|eom|>" + MUSE_CALL
    )
    assert_clean(
        all_modes("muse-spark", text, tools=TOOLS),
        {
            **A,
            "reasoning_content": "Check the weather.",
            "content": "Looking it up.",
            "tool_calls": [call("get_weather", {"city": "Paris", "days": 3})],
        },
    )


# -- HY v4: the template for one checkpoint's vocabulary --------------------------------------------

HY4_VOCABULARY = {
    ":opensource": ["<think:opensource>", "<tool_calls:opensource>", "<tool_call:opensource>"],
    ":a+b(c": ["<tool_calls:a+b(c>", "<tool_call:a+b(c>", "</tool_call:a+b(c>"],
    "": ["<tool_calls>", "<tool_call>", "</tool_call>", "<arg_key>"],
}


@pytest.mark.parametrize("suffix", sorted(HY4_VOCABULARY))
def test_hunyuan_hy4_template_for_a_vocabulary_reads_its_suffix_only(suffix: str) -> None:
    from replyparse import parse_response

    template = get_entry("hunyuan-hy4").template_for_vocabulary(HY4_VOCABULARY[suffix])
    text = "The user wants two things.</think" + suffix + ">" + _hy4(suffix)
    message = parse_response(text, template, prefix="<think" + suffix + ">", tools=TOOLS)
    assert message["reasoning_content"] == "The user wants two things."
    assert [item["function"]["name"] for item in message["tool_calls"]] == [
        "get_weather",
        "book_trip",
        "now",
    ]
    # Another checkpoint's suffix is not this one's structure: it stays content.
    other = _hy4(":other")
    assert parse_response(other, template, prefix="") == {**A, "content": other}


def test_hunyuan_hy4_detected_from_a_tokenizer_config_gets_its_suffix() -> None:
    from replyparse import parse_response
    from replyparse.templates import detect_template

    config = {
        "added_tokens_decoder": {
            str(index): {"content": token, "special": True}
            for index, token in enumerate(HY4_VOCABULARY[":a+b(c"], start=120000)
        }
    }
    template = detect_template(tokenizer_config=config, model_type="hy_v4")
    text = _hy4(":a+b(c")
    message = parse_response(text, template, prefix="", tools=TOOLS)
    assert message["content"] == "Checking both."
    assert len(message["tool_calls"]) == 3
    opensource = _hy4(":opensource")
    assert parse_response(opensource, template, prefix="") == {**A, "content": opensource}


def test_a_token_suffix_pattern_must_appear_in_the_template(tmp_path: Any) -> None:
    import json

    from replyparse.templates import validate_family_file

    raw = json.loads(json.dumps(get_entry("hunyuan-hy4").response_template))
    family = {
        "name": "suffixed",
        "description": "a family whose token_suffix names a pattern the template lacks",
        "prefixes": {"default": ""},
        "token_suffix": {"stem": "<tool_call", "pattern": "(?::[^>]*)?"},
        "response_template": raw,
    }
    path = tmp_path / "suffixed.json"
    path.write_text(json.dumps(family), encoding="utf-8")
    issues = validate_family_file(path)
    assert [(issue.code, issue.path) for issue in issues] == [
        ("invalid_value", ("suffixed.json", "token_suffix", "pattern"))
    ]
    family["token_suffix"] = {"stem": "<tool_call"}
    path.write_text(json.dumps(family), encoding="utf-8")
    assert [issue.code for issue in validate_family_file(path)] == ["invalid_type"]


# -- Cohere Command 3 (command-r7b framing) and Command 4 (cohere2-moe framing) ---------------------

COHERE_ACTION = (
    '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
    '{"city": "Paris", "days": 3}}, {"tool_call_id": "1", "tool_name": "book_trip", "parameters": '
    '{"city": "Lisbon", "travellers": [{"name": "Ana", "age": 34}, {"name": "Bo", "age": null}], '
    '"options": {"seat": {"window": true, "row": 12}, "meals": ["veg", null], "price": 199.5}, '
    '"nights": 4}}]<|END_ACTION|>'
)
COHERE_CALLS = [
    {"id": "0", **call("get_weather", {"city": "Paris", "days": 3})},
    {"id": "1", **BOOKING},
]


@pytest.mark.parametrize(
    ("family", "prefix_key"), [("command-r7b", "thinking"), ("cohere2-moe", "default")]
)
def test_cohere_command_thinking_then_parallel_actions(family: str, prefix_key: str) -> None:
    # Command 4 repeats the <|START_THINKING|> its prompt pre-opened; the opener absorbs it.
    text = "<|START_THINKING|>Weather first, then the booking.<|END_THINKING|>" + COHERE_ACTION
    assert_clean(
        all_modes(family, text + "<|END_OF_TURN_TOKEN|>", prefix_key=prefix_key),
        {**A, "reasoning_content": "Weather first, then the booking.", "tool_calls": COHERE_CALLS},
    )


@pytest.mark.parametrize(
    ("family", "prefix_key", "framing"),
    [
        ("command-r7b", "thinking", ("<|START_RESPONSE|>", "<|END_RESPONSE|>")),
        ("cohere2-moe", "default", ("<|START_TEXT|>", "<|END_TEXT|>")),
    ],
)
def test_cohere_command_citations_reduce_to_the_cited_text(
    family: str, prefix_key: str, framing: tuple[str, str]
) -> None:
    """Policy citations = reduce, as vLLM's cohere_melody parser (tests/registry/test_cohere.py)."""
    answer = "It is <co>sunny and 21 C</co: 0:[0,1]> in Paris."
    text = f"<|START_THINKING|>Doc 0 has it.<|END_THINKING|>{framing[0]}{answer}{framing[1]}"
    assert_clean(
        all_modes(family, text, prefix_key=prefix_key),
        {**A, "reasoning_content": "Doc 0 has it.", "content": "It is sunny and 21 C in Paris."},
    )


@pytest.mark.parametrize(
    ("family", "prefix_key"), [("command-r7b", "thinking"), ("cohere2-moe", "default")]
)
def test_cohere_command_a_truncated_action_list(family: str, prefix_key: str) -> None:
    text = "<|START_THINKING|>Go.<|END_THINKING|>" + COHERE_ACTION[:120]
    outcomes = all_modes(family, text, prefix_key=prefix_key)
    assert outcomes["raise"].error == (
        "ContentParseError",
        "tool_calls",
        {**A, "reasoning_content": "Go."},
    )
    # The first call closed before the cut: recover reads it, and the cut call's text is
    # unclaimed (malformed_calls = unclaimed; tests/registry/test_cohere.py).
    assert outcomes["recover"].message == {
        **A,
        "reasoning_content": "Go.",
        "tool_calls": COHERE_CALLS[:1],
    }
    assert outcomes["recover"].issues == ("unclosed_region", "stray_text")
    assert outcomes["partial"].message == {**A, "reasoning_content": "Go."}
    assert outcomes["partial"].in_progress == "tool_calls"


@pytest.mark.parametrize(
    ("family", "prefix_key"), [("command-r7b", "thinking"), ("cohere2-moe", "default")]
)
def test_cohere_command_a_non_json_action_block(family: str, prefix_key: str) -> None:
    block = '<|START_ACTION|>get_weather(city="Paris")<|END_ACTION|>'
    text = "<|START_THINKING|>Go.<|END_THINKING|>" + block
    outcomes = all_modes(family, text, prefix_key=prefix_key)
    assert outcomes["raise"].error == (
        "ContentParseError",
        "tool_calls",
        {**A, "reasoning_content": "Go."},
    )
    # As SGLang drops the block: none of it is content (malformed_calls = unclaimed).
    assert outcomes["recover"].message == {**A, "reasoning_content": "Go."}
    assert outcomes["recover"].issues == ("unreadable_call",)
