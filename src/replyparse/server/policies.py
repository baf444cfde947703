"""Output policies per request: the ``replyparse.policies`` field of a request body.

A request may choose other values of the output policies (``docs/recover.md``, Policies) than
the server's, in an extra body field every OpenAI and Anthropic SDK can send
(``extra_body={"replyparse": {"policies": {"citations": "text"}}}``). The server's template
under each combination is compiled once and kept: a request pays the compile only the first
time its combination is asked for, and the combinations are few (the product of each
policy's values). A problem is a 400 naming the policy and value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from replyparse.errors import TemplateError
from replyparse.server.errors import ApiError
from replyparse.template import ResponseTemplate
from replyparse.templates._policies import POLICIES

__all__ = ["EXTENSION_KEY", "PolicyTemplates", "read_policies"]

#: The request body's key for replyparse's own request options.
EXTENSION_KEY = "replyparse"
_PARAM = f"{EXTENSION_KEY}.policies"

#: Compiles the server's template under policy values (the server's own choice overridden
#: by the request's); raises ``TemplateError`` for a value the template cannot take.
Compile = Callable[[Mapping[str, str]], ResponseTemplate]


def read_policies(body: Mapping[str, Any]) -> dict[str, str]:
    """The request's policy values (empty without any), each name and value checked against
    the policies replyparse knows.

    Raises:
        ApiError: the field is not ``{"policies": {NAME: VALUE, ...}}``, or names an unknown
            policy or value (400, ``param`` the offending key).
    """
    options = body.get(EXTENSION_KEY)
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ApiError(
            f"'{EXTENSION_KEY}' must be an object such as "
            '{"policies": {"citations": "text"}}; got ' + type(options).__name__,
            param=EXTENSION_KEY,
        )
    unknown = sorted(key for key in options if key != "policies")
    if unknown:
        raise ApiError(
            f"'{EXTENSION_KEY}' has no option {unknown[0]!r}; it takes 'policies'",
            param=f"{EXTENSION_KEY}.{unknown[0]}",
        )
    policies = options.get("policies", {})
    if not isinstance(policies, Mapping):
        raise ApiError(
            f"'{_PARAM}' must be an object of policy name -> value; got " + type(policies).__name__,
            param=_PARAM,
        )
    chosen: dict[str, str] = {}
    for name, value in policies.items():
        policy = POLICIES.get(name)
        if policy is None:
            raise ApiError(
                f"unknown policy {name!r} in '{_PARAM}'; available: {', '.join(sorted(POLICIES))}",
                param=f"{_PARAM}.{name}",
                code="unknown_policy",
            )
        if value not in policy.values:
            raise ApiError(
                f"policy {name!r} takes one of {', '.join(policy.values)}; got {value!r}",
                param=f"{_PARAM}.{name}",
                code="invalid_policy_value",
            )
        chosen[name] = value
    return chosen


class PolicyTemplates:
    """The server's template, and its variants under the policy values requests choose.

    Args:
        template: the server's template (its own policy values), for requests that choose
            none.
        compile: builds the template under policy values; None when the server's template
            takes no per-request policies (a hand-written template, not a registry family).
    """

    def __init__(self, template: ResponseTemplate, compile: Compile | None) -> None:
        self._template = template
        self._compile = compile
        self._compiled: dict[tuple[tuple[str, str], ...], ResponseTemplate] = {}
        self._lock = threading.Lock()

    def template_for(self, policies: Mapping[str, str]) -> ResponseTemplate:
        """The template under ``policies`` (read by :func:`read_policies`).

        Raises:
            ApiError: the server's template takes no policies, or cannot take a value (400).
        """
        if not policies:
            return self._template
        if self._compile is None:
            raise ApiError(
                f"this server's response template is not a registry family, so '{_PARAM}' "
                "cannot change it; serve a family (--template NAME) to choose policies per "
                "request",
                param=_PARAM,
            )
        key = tuple(sorted(policies.items()))
        with self._lock:
            template = self._compiled.get(key)
            if template is None:
                try:
                    template = self._compile(policies)
                except TemplateError as error:
                    issue = error.issues[0]
                    name = issue.path[-1] if issue.path else next(iter(policies))
                    raise ApiError(
                        f"'{_PARAM}': {issue.message}",
                        param=f"{_PARAM}.{name}",
                        code="invalid_policy_value",
                    ) from None
                self._compiled[key] = template
        return template
