"""The one error of the grammar package.

``GrammarError`` is raised when a template, a tool or a schema uses a construct that cannot be
compiled into a grammar that admits exactly what the parser accepts for the request. Its
message names the construct (a ``$.path`` into the template, or the tool and the schema
keyword) so that the caller knows what to change. It is a ``ValueError`` so that servers map
it to an HTTP 400 like other request problems.
"""

from __future__ import annotations

from replyparse.errors import ResponseTemplateError

__all__ = ["GrammarError"]


class GrammarError(ResponseTemplateError, ValueError):
    """A template, tool or schema construct that cannot be compiled into a grammar."""
