"""Response templates: load a JSON template once into an immutable, compiled object.

``load_template`` validates every key, compiles every delimiter and content parser, and
collects every problem into one ``TemplateError``. The result, a ``ResponseTemplate``, is
frozen and shared by any number of parsers.
"""

from __future__ import annotations

from replyparse.template._loader import FieldSpec, ResponseTemplate, load_template
from replyparse.template._schema import RECOVER_ONLY_KEYS, engine_copy

__all__ = ["RECOVER_ONLY_KEYS", "FieldSpec", "ResponseTemplate", "engine_copy", "load_template"]
