"""The code -> bad templates table (lark's GRAMMAR_ERRORS): drives tests and the error docs."""

from __future__ import annotations

from typing import Any

ANCHOR = {"start_anchor": "<|im_start|>assistant\n"}


def template(fields: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {**ANCHOR, "fields": fields, **top}


TEMPLATE_ERRORS: dict[str, list[tuple[dict[str, Any], str]]] = {
    # code: [(bad template, path of the issue)]
    "unknown_key": [
        (template({"content": {}}, colour="red"), "$.colour"),
        (template({"content": {"clsoe": "x"}}), "$.fields.content.clsoe"),
    ],
    "exclusive_keys": [
        (template({"r": {"open": "<a>", "open_pattern": "<a>"}}), "$.fields.r"),
        (template({"r": {"open": "<a>", "close": "</a>", "close_pattern": "</a>"}}), "$.fields.r"),
        ({"start_anchor": "a", "start_anchor_pattern": "a", "fields": {"c": {}}}, "$"),
    ],
    "multiple_implicit_fields": [(template({"a": {}, "b": {"close": "x"}}), "$.fields")],
    "missing_start_anchor": [({"fields": {"content": {}}}, "$")],
    "invalid_regex": [
        (template({"r": {"open_pattern": "<(a"}}), "$.fields.r.open_pattern"),
        (template({"r": {"open": "<a>", "close_pattern": "[z-a]"}}), "$.fields.r.close_pattern"),
        ({"start_anchor_pattern": "(", "fields": {"c": {}}}, "$.start_anchor_pattern"),
        (
            template(
                {
                    "r": {
                        "open": "<r>",
                        "content": "xml-inline",
                        "content_args": {"tag_pattern": "(?P<key>"},
                    }
                }
            ),
            "$.fields.r.content_args.tag_pattern",
        ),
    ],
    "groups_without_transform": [
        (template({"r": {"open_pattern": "<f=(?P<name>\\w+)>"}}), "$.fields.r.open_pattern"),
    ],
    "mixed_placeholder": [
        (
            template({"r": {"open": "<a>", "transform": {"x": "name: {content}"}}}),
            "$.fields.r.transform.x",
        ),
    ],
    "unknown_placeholder": [
        (template({"r": {"open": "<a>", "transform": {"x": "{name}"}}}), "$.fields.r.transform.x"),
    ],
    "join_without_repeats": [(template({"r": {"open": "<a>", "join": ""}}), "$.fields.r.join")],
    "join_requires_text": [
        (
            template({"r": {"open": "<a>", "repeats": True, "join": "", "content": "int"}}),
            "$.fields.r.join",
        ),
    ],
    "transform_each_without_transform": [
        (template({"r": {"open": "<a>", "transform_each": True}}), "$.fields.r.transform_each"),
    ],
    "unknown_content_parser": [
        (template({"r": {"open": "<a>", "content": "jsn"}}), "$.fields.r.content"),
        (
            template(
                {
                    "r": {
                        "open": "<a>",
                        "content": "kv-lines",
                        "content_args": {"value_parser": {"name": "integer"}},
                    }
                }
            ),
            "$.fields.r.content_args.value_parser",
        ),
    ],
    "invalid_content_arg": [
        (
            template(
                {"r": {"open": "<a>", "content": "json", "content_args": {"unquoted_keys": "yes"}}}
            ),
            "$.fields.r.content_args.unquoted_keys",
        ),
        (
            template(
                {
                    "r": {
                        "open": "<a>",
                        "content": "json",
                        "content_args": {"string_delims": [["<"]]},
                    }
                }
            ),
            "$.fields.r.content_args.string_delims",
        ),
        (
            template({"r": {"open": "<a>", "content_args": {"strip": 1}}}),
            "$.fields.r.content_args.strip",
        ),
        (
            template({"r": {"open": "<a>", "content": "kv-lines", "content_args": {"kv_sep": ""}}}),
            "$.fields.r.content_args.kv_sep",
        ),
        (
            template(
                {
                    "r": {
                        "open": "<a>",
                        "content": "xml-inline",
                        "content_args": {
                            "tag_pattern": "<(?P<key>\\w+)>(?P<value>.*?)</>",
                            "value_parser": "json",
                        },
                    }
                }
            ),
            "$.fields.r.content_args.value_parser",
        ),
        (
            template(
                {
                    "r": {
                        "open": "<a>",
                        "content": "xml-inline",
                        "content_args": {
                            "tag_pattern": '<(?P<key>\\w+)(?: s="(?P<s>\\w+)")?>(?P<value>.*?)</>',
                            "value_parser_by": {"group": "s", "parsers": {"false": "json"}},
                        },
                    }
                }
            ),
            "$.fields.r.content_args.value_parser_by.parsers.false",
        ),
    ],
    "unknown_content_arg": [
        (
            template(
                {"r": {"open": "<a>", "content": "json", "content_args": {"unquoted_key": True}}}
            ),
            "$.fields.r.content_args.unquoted_key",
        ),
        (
            template({"r": {"open": "<a>", "content": "int", "content_args": {"strip": True}}}),
            "$.fields.r.content_args.strip",
        ),
    ],
    "missing_content_arg": [
        (
            template({"r": {"open": "<a>", "content": "xml-inline"}}),
            "$.fields.r.content_args.tag_pattern",
        ),
    ],
    "missing_group": [
        (
            template(
                {
                    "r": {
                        "open": "<a>",
                        "content": "xml-inline",
                        "content_args": {"tag_pattern": "<(?P<key>\\w+)>"},
                    }
                }
            ),
            "$.fields.r.content_args.tag_pattern",
        ),
        (
            template(
                {
                    "r": {
                        "open": "<a>",
                        "content": "xml-inline",
                        "content_args": {
                            "tag_pattern": "<(?P<key>\\w+)>(?P<value>.*?)</>",
                            "value_parser_by": {"group": "string", "parsers": {}},
                        },
                    }
                }
            ),
            "$.fields.r.content_args.value_parser_by.group",
        ),
    ],
    "invalid_delimiter": [
        (template({"r": {"open": ""}}), "$.fields.r.open"),
        (template({"r": {"open": ["<a>", 3]}}), "$.fields.r.open"),
        (template({"r": {"open": "<a>", "close_pattern": 5}}), "$.fields.r.close_pattern"),
    ],
    "invalid_type": [
        (template({"r": {"open": "<a>", "repeats": "yes"}}), "$.fields.r.repeats"),
        (template({"r": {"open": "<a>", "optional": None}}), "$.fields.r.optional"),
        (template({"r": {"open": "<a>", "content_args": []}}), "$.fields.r.content_args"),
        (template({"r": "not a dict"}), "$.fields.r"),
        (template({"": {}}), "$.fields"),  # the reference writes the message key ""
        ({**ANCHOR, "fields": {}}, "$.fields"),
        ({**ANCHOR, "fields": {"c": {}}, "defaults": []}, "$.defaults"),
    ],
    "missing_fields": [(dict(ANCHOR), "$.fields")],
    "unsupported_version": [
        (template({"c": {}}, version=2), "$.version"),
        (template({"c": {}}, version=True), "$.version"),  # the reference: True == 1
    ],
    "invalid_transform": [
        # Not a JSON value (a number is a constant, null is no transform).
        (template({"r": {"open": "<a>", "transform": {"{content}"}}}), "$.fields.r.transform")
    ],
}
