"""The function-calling guide's rules, as the OpenAI layer offers them.

The rules belong to the request layer (:mod:`replyparse.request.rules`, which documents
them); this module re-exports every public name of it, under the names the OpenAI layer has
always offered.
"""

from __future__ import annotations

from replyparse.request.rules import *  # noqa: F403
from replyparse.request.rules import __all__ as __all__
