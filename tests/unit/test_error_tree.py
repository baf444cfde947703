"""Every public error of the library sits in one tree rooted at ``ReplyparseError``.

The classes are found by importing every module of the package, so an error class added
anywhere later is held to the same rule; the README's drawn tree must name each one.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import replyparse
from replyparse.errors import ReplyparseError

#: Exceptions that never leave their layer: the server turns them into HTTP answers and the
#: CLI into an exit status with a message; the regex reader's signal is caught by its two
#: callers (the scanner falls back, the grammar raises GrammarError). A user never sees them.
INTERNAL = {
    "replyparse._regex_syntax.UnreadablePattern",
    "replyparse.server.backends.BackendError",
    "replyparse.server.errors.ApiError",
    "replyparse._cli.common.CliError",
    "replyparse.request._patterns.PatternTimeout",
}

README = Path(__file__).resolve().parents[2] / "README.md"


def _public_errors() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(replyparse.__path__, "replyparse."):
        if info.name.endswith("__main__"):  # runs the command line when imported
            continue
        if info.name.endswith("_plugin"):  # registers into an engine (vLLM) when imported
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and not issubclass(value, Warning)  # warnings are reports, not errors
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


ERRORS = _public_errors()


def test_the_walk_finds_the_known_errors() -> None:
    names = {qualified.rsplit(".", 1)[1] for qualified in ERRORS}
    assert {"TemplateError", "GrammarError", "ChatTemplateError", "ModelFolderError"} <= names


@pytest.mark.parametrize("qualified", sorted(set(ERRORS) - INTERNAL))
def test_every_public_error_is_in_the_tree(qualified: str) -> None:
    error = ERRORS[qualified]
    assert issubclass(error, ReplyparseError), f"{qualified} is not a ReplyparseError"
    assert error.__name__ in README.read_text(encoding="utf-8"), (
        f"{qualified} is missing from the README's error tree"
    )
