"""The model folder: what replyparse reads from (and writes to) a Hugging Face model folder.

A location is a model folder, its ``tokenizer_config.json`` (any ``.json`` file is read as
one) or a chat template file (any other file, usually ``chat_template.jinja``). From it this
module reads the chat template(s), the special and added tokens the template renders with,
the stored ``response_template``, and the ``model_type`` of the folder's ``config.json``; it
writes the ``response_template`` key back without touching the other keys. A tokenizer
object is the loaded form of a model folder: ``template_from_tokenizer`` finds the response
template it carries.

As transformers does, a folder's ``chat_template.jinja`` is its chat template when present
(the ``chat_template`` key of ``tokenizer_config.json`` is then ignored); otherwise the key
holds one template or a list of named ones (``default``, ``tool_use``...).

Every problem is a :class:`~replyparse.errors.ModelFolderError` whose message starts with the
path and says what was missing or unreadable (a missing path or file is its subclass
:class:`~replyparse.errors.MissingModelFileError`, also a ``FileNotFoundError``). Knows
nothing of rendering (``replyparse.chat_template``), detection (``replyparse.templates``) or
parsing; transformers is never imported.
"""

from __future__ import annotations

import json
import os
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replyparse.errors import MissingModelFileError, ModelFolderError, TokenizerError
from replyparse.template import ResponseTemplate, load_template

__all__ = [
    "CHAT_TEMPLATE_FILE",
    "MODEL_CONFIG_FILE",
    "RESPONSE_TEMPLATE_KEY",
    "TOKENIZER_CONFIG_FILE",
    "ModelFolder",
    "folder_from_config",
    "load_response_template",
    "read_model_folder",
    "save_response_template",
    "template_from_tokenizer",
]

TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
MODEL_CONFIG_FILE = "config.json"
RESPONSE_TEMPLATE_KEY = "response_template"

#: Tokenizer config keys whose values chat templates read as variables (``bos_token``...).
SPECIAL_TOKEN_KEYS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)


@dataclass(frozen=True)
class ModelFolder:
    """What a model folder holds, as far as replyparse reads it.

    Attributes:
        path: the location read (a folder or a file), for messages.
        config: the ``tokenizer_config.json`` object (empty when there is none).
        chat_templates: chat template sources by name (``default``, ``tool_use``...), in the
            order found.
        chat_template_origin: the file the chat templates came from.
        model_type: ``model_type`` of the folder's ``config.json``, if it has one.
    """

    path: str
    config: Mapping[str, Any] = field(default_factory=dict)  # JSON boundary
    chat_templates: Mapping[str, str] = field(default_factory=dict)
    chat_template_origin: str = ""
    model_type: str | None = None

    @property
    def chat_template(self) -> str:
        """The chat template to render with: ``default``, else ``tool_use``.

        Raises:
            ModelFolderError: the location holds no chat template.
        """
        source = self.chat_templates.get("default", self.chat_templates.get("tool_use"))
        if source is None:
            raise ModelFolderError(
                self.path,
                f"no chat template: no {CHAT_TEMPLATE_FILE} and no 'chat_template' string "
                f"or named list in {TOKENIZER_CONFIG_FILE}",
            )
        return source

    @property
    def tool_chat_template(self) -> str | None:
        """The separate ``tool_use`` chat template, for requests with tools (or None)."""
        return self.chat_templates.get("tool_use")

    @property
    def special_tokens(self) -> dict[str, Any]:
        """``bos_token``, ``eos_token``... as chat templates see them (text), plus
        ``additional_special_tokens`` (a list), from the tokenizer config."""
        tokens: dict[str, Any] = {}
        for key in SPECIAL_TOKEN_KEYS:
            text = _token_text(self.config.get(key))
            if text is not None:
                tokens[key] = text
        extra = self.config.get("additional_special_tokens")
        if isinstance(extra, list):
            texts = [_token_text(item) for item in extra]
            # A list, as in transformers' special_tokens_map; templates rarely read it.
            tokens["additional_special_tokens"] = [text for text in texts if text is not None]
        return tokens

    @property
    def added_tokens(self) -> dict[int, str]:
        """Token id -> text of the config's ``added_tokens_decoder`` (empty when absent)."""
        decoder = self.config.get("added_tokens_decoder")
        if not isinstance(decoder, Mapping):
            return {}
        tokens: dict[int, str] = {}
        for key, value in decoder.items():
            text = _token_text(value)
            if text is not None and str(key).isdigit():
                tokens[int(key)] = text
        return tokens

    @property
    def response_template(self) -> Any:
        """The ``response_template`` the tokenizer config stores, as written (None when
        absent); ``load_template`` checks it."""
        return self.config.get(RESPONSE_TEMPLATE_KEY)


def _token_text(value: Any) -> str | None:
    """A token as written in ``tokenizer_config.json``: a string or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MissingModelFileError(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ModelFolderError(str(path), f"cannot be read ({error})") from None


def _read_json_object(path: Path, note: str = "") -> dict[str, Any]:
    text = _read_text(path)
    try:
        loaded = json.loads(text)
    except ValueError as error:
        raise ModelFolderError(str(path), f"not valid JSON ({error}){note}") from None
    if not isinstance(loaded, dict):
        raise ModelFolderError(
            str(path), f"expected a JSON object, got {type(loaded).__name__}{note}"
        )
    return loaded


def _config_chat_templates(config: Mapping[str, Any]) -> dict[str, str]:
    raw = config.get("chat_template")
    if isinstance(raw, str):
        return {"default": raw}
    templates: dict[str, str] = {}
    if isinstance(raw, list):
        for index, item in enumerate(raw):
            if isinstance(item, Mapping) and isinstance(item.get("template"), str):
                name = item.get("name")
                templates.setdefault(
                    name if isinstance(name, str) else f"#{index}", item["template"]
                )
    return templates


def folder_from_config(
    config: Mapping[str, Any], origin: str = "<tokenizer config>"
) -> ModelFolder:
    """A model folder of just a ``tokenizer_config.json`` given as a dict."""
    return ModelFolder(
        origin, types.MappingProxyType(dict(config)), _config_chat_templates(config), origin
    )


def read_model_folder(path: str | os.PathLike[str]) -> ModelFolder:
    """Read a model folder, a ``tokenizer_config.json`` (any ``.json``) or a chat template file.

    Raises:
        MissingModelFileError: the path does not exist, or a folder has neither a
            ``tokenizer_config.json`` nor a ``chat_template.jinja``.
        ModelFolderError: a file is unreadable, not valid JSON or not a JSON object.
    """
    location = Path(path)
    if location.is_dir():
        config_path = location / TOKENIZER_CONFIG_FILE
        jinja_path = location / CHAT_TEMPLATE_FILE
        has_config, has_jinja = config_path.is_file(), jinja_path.is_file()
        if not has_config and not has_jinja:
            raise MissingModelFileError(
                str(location), f"no {CHAT_TEMPLATE_FILE} or {TOKENIZER_CONFIG_FILE} in this folder"
            )
        config = _read_json_object(config_path) if has_config else {}
        model_config_path = location / MODEL_CONFIG_FILE
        model_config = _read_json_object(model_config_path) if model_config_path.is_file() else {}
        model_type = model_config.get("model_type")
        if has_jinja:
            templates, origin = {"default": _read_text(jinja_path)}, jinja_path
        else:
            templates, origin = _config_chat_templates(config), config_path
        return ModelFolder(
            str(location),
            types.MappingProxyType(config),
            templates,
            str(origin),
            model_type if isinstance(model_type, str) else None,
        )
    if not location.is_file():
        raise MissingModelFileError(str(location), "no such file or folder")
    if location.suffix == ".json":
        return folder_from_config(_read_json_object(location), str(location))
    return ModelFolder(str(location), {}, {"default": _read_text(location)}, str(location))


def _config_path(path: str | os.PathLike[str]) -> Path:
    location = Path(path)
    return (
        location / TOKENIZER_CONFIG_FILE if location.is_dir() or not location.suffix else location
    )


def load_response_template(path_or_dir: str | os.PathLike[str]) -> ResponseTemplate:
    """Read the ``response_template`` of a model folder's ``tokenizer_config.json``.

    Args:
        path_or_dir: the model folder, or the config file itself.

    Raises:
        MissingModelFileError: there is no such file (also a ``FileNotFoundError``).
        ModelFolderError: the file is not a JSON object or has no ``response_template``.
        TemplateError: the stored template is malformed.
    """
    path = _config_path(path_or_dir)
    config = _read_json_object(path)
    if config.get(RESPONSE_TEMPLATE_KEY) is None:
        raise ModelFolderError(str(path), f"has no {RESPONSE_TEMPLATE_KEY!r} key")
    return load_template(config[RESPONSE_TEMPLATE_KEY])


def save_response_template(
    path_or_dir: str | os.PathLike[str],
    template: Mapping[str, Any] | ResponseTemplate,
) -> Path:
    """Write ``template`` as the ``response_template`` key of ``tokenizer_config.json``.

    The template is validated first. Every other key of an existing file is kept, in order;
    a missing file (or folder) is created.

    Returns:
        The path written.

    Raises:
        ModelFolderError: an existing file is not a JSON object (it is left untouched).
        TemplateError: the template is malformed.
    """
    compiled = load_template(template)
    path = _config_path(path_or_dir)
    config: dict[str, Any] = {}
    if path.exists():
        config = _read_json_object(path, "; not overwriting it")
    config[RESPONSE_TEMPLATE_KEY] = compiled.to_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def template_from_tokenizer(tokenizer: Any) -> ResponseTemplate:
    """The response template a tokenizer carries (attribute, or its config).

    Raises:
        TokenizerError: no tokenizer, or it has no response template.
    """
    if tokenizer is None:
        raise TokenizerError(
            "no response template: pass a template, or a tokenizer= that carries one"
        )
    template = getattr(tokenizer, RESPONSE_TEMPLATE_KEY, None)
    if template is None:
        for attribute in ("init_kwargs", "config", "tokenizer_config"):
            container = getattr(tokenizer, attribute, None)
            if isinstance(container, Mapping) and container.get(RESPONSE_TEMPLATE_KEY) is not None:
                template = container[RESPONSE_TEMPLATE_KEY]
                break
    if template is None:
        name = getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__
        raise TokenizerError(
            f"the tokenizer {name!r} has no response template (no 'response_template' "
            "attribute or tokenizer_config.json key). Pass template= explicitly, or pick one "
            "from the registry: replyparse.get_template(<model family>)"
        )
    return load_template(template)
