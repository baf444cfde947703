"""Draft a response template from a chat template: render probe conversations, diff, round-trip.

The chat template is rendered (with :class:`replyparse.chat_template.ChatTemplate`, the
server's renderer, as transformers' ``apply_chat_template`` does) for a few probe conversations: the prompt with
and without the generation prompt (and with the thinking switch on and off), a plain answer,
an answer with reasoning, one tool call and two parallel calls. Diffing the renderings gives
the assistant-turn start, the end of turn, the reasoning delimiters, the call delimiters (the
section wrapper and the per-call ones) and the argument encoding (a JSON object holding the
name, JSON arguments after a name, XML-style parameters, Python-style calls). The result is a
family data file (``name``, ``prefixes``, ``chat_template_markers``, ``notes``,
``response_template``) to review, never installed silently.

Every draft is validated by round trip: the probe assistant turns are rendered and parsed back
with the drafted template after their real prompt; :attr:`Draft.problems` names each field
whose value did not come back, with the text.

Besides the rendered history, the drafter reads what else the template shows, and notes where
each piece came from: reasoning in a content chunk, the delimiters the source strips from
history, the wrapper it writes around a markup value, the id its tool-result turn names a
call by, a recipient its prompt pre-writes. What a chat template does not show (formats that
only appear in model output, e.g. how the model opens reasoning when history drops it and
nothing else writes the opener) is written in the notes, not guessed.

The drafter is a pipeline (:data:`RULES`): named rules, each a function that reads what the
rules before it found in one :class:`Drafting` state and adds its part (the role header, the
reasoning field, the call format, the call delimiters, the id, the end of turn...). Modules:
``_probe`` renders the probe conversations, ``_calls`` and ``_reasoning`` read what they
render, ``_pipeline`` holds the state, the rules and the round trip.
"""

from replyparse.templates._draft._pipeline import (
    RULES,
    Draft,
    Drafting,
    DraftProblem,
    Rule,
    draft,
    draft_from_path,
)
from replyparse.templates._draft._probe import ANSWER, TOOLS, USER

__all__ = [
    "ANSWER",
    "RULES",
    "TOOLS",
    "USER",
    "Draft",
    "DraftProblem",
    "Drafting",
    "Rule",
    "draft",
    "draft_from_path",
]
