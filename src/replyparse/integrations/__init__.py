"""replyparse inside serving engines: parser plugins that engines load.

Each engine's module imports the engine lazily (only when the engine loads the plugin), so
the package never requires an engine. ``replyparse.integrations.vllm``: vLLM's tool and
reasoning parser (``docs/vllm.md``).
"""
