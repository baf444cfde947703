"""Errors and warnings of the OpenAI layer.

The request's errors and the violation record live with the request
(:mod:`replyparse.request.errors`) and are re-exported here under their public names; this
module adds the one warning of the OpenAI streams::

    StreamConsistencyWarning(RuntimeWarning)  streamed fragments did not extend to the final
                                              value; a bug, please report it

Knows nothing of parsing or streaming; it only formats what it is given.
"""

from __future__ import annotations

from replyparse.request import errors as _request_errors
from replyparse.request.errors import *  # noqa: F403

__all__ = sorted([*_request_errors.__all__, "StreamConsistencyWarning"])


class StreamConsistencyWarning(RuntimeWarning):
    """Fragments already streamed are not a prefix of the final value (a bug: report it)."""
