"""The module vLLM loads: ``--tool-parser-plugin replyparse.integrations.vllm_plugin`` (and
``--reasoning-parser-plugin``, the same). Importing it registers the ``replyparse`` parsers."""

from replyparse.integrations.vllm import register

register()
