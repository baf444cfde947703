"""What the scanner reads from a delimiter pattern's syntax, once, when its template compiles.

The scanner (``replyparse._scanner``) asks these questions of a pattern, each answered from
its tree as read by the one regex reader (``replyparse._regex_syntax``, exact reading). The
answers that search a buffer (``RunLeads``, ``LiteralRun``, ``TokenLoop``, ``Anchors``) are
built here and run per feed from :mod:`replyparse._regex_search`:

* ``possessive_source``: the pattern with greedy runs made possessive where that finds the
  same matches (and ``RunLeads``, ``LiteralRun``: starts a failed start rules out);
* ``find_token_loop``: a loop over header tokens, and the starts a failed one rules out;
* ``all_required_literals`` (``replyparse._regex_tree``, on ``exact_tree``): literals every
  match contains, after its start;
* ``find_anchors``: the literals every match begins with (after a run); ``start_literals``
  the same, longer and not merged;
* ``end_literal``: a literal every match ends with, past which no way through it reads;
* ``whitespace_only_as_lead``: whether whitespace begins a match only as a leading run;
* ``finite_texts``: every text a pattern of a few literals matches (searched as literals);
  ``consuming_texts`` the same per option, leaving out lookaheads (the template loader's
  and SGLang's literal delimiters).

Three more answer questions of portability (``replyparse.templates``' lint):
``can_match_empty`` (a zero-width delimiter), ``may_both_match_empty`` (two delimiters that
may both match empty at one position) and ``optional_groups`` (named groups a match
may leave out).

Every answer is one-sided: what the reader cannot read, or an analysis cannot bound, gives
the pattern as written and no shortcut, never a different match. Trees are read once per
pattern source (``exact_tree``). Nothing here runs per feed; this module knows nothing of
buffers' hold-back, fields or events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import regex

from replyparse._charset import CharSet, whitespace
from replyparse._regex_search import Anchors, LiteralRun, RunLeads, TokenLoop
from replyparse._regex_syntax import (
    REGEX_FLAGS,
    Alt,
    Anchor,
    Backref,
    Chars,
    Group,
    Look,
    Node,
    Repeat,
    Seq,
    base_name,
    exact_tree,
    write,
)
from replyparse._regex_tree import first_chars

__all__ = [
    "analyse",
    "can_match_empty",
    "end_literal",
    "find_anchors",
    "find_token_loop",
    "may_both_match_empty",
    "optional_groups",
    "possessive_source",
    "start_literals",
    "whitespace_only_as_lead",
]


def _items(node: Node) -> tuple[Node, ...]:
    """A sequence's items; any other node as a sequence of one."""
    return node.items if isinstance(node, Seq) else (node,)


def _is_boundary(node: Node) -> bool:
    """Whether the inside of ``node`` is matched on its own: nothing after it backtracks
    into it (lookarounds, atomic groups)."""
    return isinstance(node, Look) or (isinstance(node, Group) and node.atomic)


def _single(node: Node) -> str | None:
    """The one character a class node matches, or None."""
    if isinstance(node, Chars) and node.finite is not None and len(node.finite) == 1:
        return next(iter(node.finite))
    return None


# -- possessive runs -----------------------------------------------------------------------
#
# A backtracking engine gives back the characters of a greedy run one by one when what
# follows fails: ``\s*(?:<a>)?\s*X`` over n spaces tries every split of the run between the
# two ``\s*``, n squared steps per attempt. When giving back can never help, the run may be
# made possessive (``\s*+``), which finds the same first match. It never helps when what
# follows the run (its continuation, to the end of the pattern) cannot begin with a character
# of the run's class: after giving some back, the continuation would have to begin with
# one. Two refinements make the rule cover real delimiters: a later greedy run of a class
# that contains this one (``\s*`` again) absorbs the given-back characters and is skipped
# over, and a continuation that can match empty must do so without assertions (an empty
# continuation then also succeeds where the run ends, so the engine never backtracks).
# A pattern the reader (``_regex_syntax``) cannot read is left as written.


#: A continuation frame: ``(sequence, index of its next item)``, or ``(repeat, -1)`` for a
#: loop that may go round again.
_Frame = tuple[Node, int]


def _possessive_runs(node: Node, after: list[_Frame], found: list[Repeat]) -> None:
    """Collect into ``found`` the greedy single-class runs of ``node`` that may be made
    possessive. ``after`` is the continuation, innermost frame first."""
    if isinstance(node, Seq):
        for position, item in enumerate(node.items):
            _possessive_runs(item, [(node, position + 1), *after], found)
    elif isinstance(node, Alt):
        for option in node.options:
            _possessive_runs(option, after, found)
    elif isinstance(node, (Group, Look)):
        # Lookarounds and atomic groups are matched on their own: nothing after them can
        # backtrack into them, so their continuation ends with them.
        _possessive_runs(node.item, [] if _is_boundary(node) else after, found)
    elif isinstance(node, Repeat):
        body = node.item
        if isinstance(body, Chars):
            if (
                node.greedy
                and not node.possessive
                and node.high != node.low
                and _continuation_disjoint(body, after)
            ):
                found.append(node)
        else:
            # A possessive loop is an atomic group around a greedy one: inside it, only
            # the loop itself comes next.
            _possessive_runs(body, [(node, -1), *([] if node.possessive else after)], found)


def _continuation_disjoint(run: Chars, after: list[_Frame]) -> bool:
    chars: list[Chars] = []
    asserts = False
    for frame, start in after:
        # A loop's body may come next, or what follows the loop; a sequence's rest.
        if start < 0:
            assert isinstance(frame, Repeat)
            rest = frame.item
        else:
            rest = Seq(_items(frame)[start:])
        found = first_chars(rest, lookahead=True, absorbs=run)
        chars += found.chars
        asserts = asserts or found.asserts
        if start >= 0 and not found.nullable:
            return all(run.disjoint(other) for other in chars)
    # The continuation can match empty: only safe when that needs no assertion.
    return not asserts and all(run.disjoint(other) for other in chars)


def _make_possessive(node: Node, runs: set[int]) -> Node:
    """``node`` with the repeats whose ids are in ``runs`` possessive."""
    if isinstance(node, Seq):
        return Seq(tuple(_make_possessive(item, runs) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_make_possessive(option, runs) for option in node.options))
    if isinstance(node, Repeat):
        item = _make_possessive(node.item, runs)
        possessive = node.possessive or id(node) in runs
        return Repeat(item, node.low, node.high, node.greedy, possessive)
    if isinstance(node, Group):
        return Group(_make_possessive(node.item, runs), node.name, node.capture, node.atomic)
    if isinstance(node, Look):
        return Look(_make_possessive(node.item, runs), node.ahead, node.negative)
    return node


class _Lead(NamedTuple):
    runs: list[Chars]  # classes of possessive unbounded runs a match can begin with
    others: list[Chars]  # everything else a match can begin with
    nullable: bool


class _Unknown(Exception):
    """An assertion before the first character a match consumes."""


def _lead(node: Node) -> _Lead:
    """What a match of the (possessive) tree ``node`` can begin with."""
    if isinstance(node, Chars):
        return _Lead([], [node], False)
    if isinstance(node, (Anchor, Look, Backref)):
        raise _Unknown
    if isinstance(node, Group):
        return _lead(node.item)
    if isinstance(node, Repeat):
        body = node.item
        if node.possessive and node.high is None and isinstance(body, Chars):
            return _Lead([body], [], node.low == 0)
        found = _lead(body)
        return _Lead(found.runs, found.others, found.nullable or node.low == 0)
    runs: list[Chars] = []
    others: list[Chars] = []
    if isinstance(node, Alt):
        nullable = False
        for option in node.options:
            found = _lead(option)
            runs += found.runs
            others += found.others
            nullable = nullable or found.nullable
        return _Lead(runs, others, nullable)
    for item in node.items:
        found = _lead(item)
        runs += found.runs
        others += found.others
        if not found.nullable:
            return _Lead(runs, others, False)
    return _Lead(runs, others, True)


def possessive_source(source: str) -> str:
    """``source`` with greedy runs made possessive where giving back characters can never
    lead to a match (see above): the same matches, without quadratic backtracking over
    long runs. ``source`` unchanged when nothing is made possessive, or it uses syntax the
    reader does not read."""
    return analyse(source)[0]


def _literal_run(tree: Node) -> LiteralRun | None:
    items = tree.items if isinstance(tree, Seq) else ()
    literal = ""
    index = 0
    while index < len(items):
        char = _single(items[index])
        if char is None:
            break
        literal += char
        index += 1
    if not literal or index == len(items):
        return None
    if any(literal[shift:] == literal[: len(literal) - shift] for shift in range(1, len(literal))):
        return None  # the literal can overlap itself
    node = items[index]
    if isinstance(node, Group) and not node.atomic and isinstance(node.item, Seq):
        node = node.item.items[0] if node.item.items else node
    elif isinstance(node, Group) and not node.atomic:
        node = node.item
    if not (
        isinstance(node, Repeat)
        and node.possessive
        and node.high is None
        and isinstance(node.item, Chars)
    ):
        return None
    return LiteralRun(literal, regex.compile(f"(?:{node.item.source})*+", REGEX_FLAGS))


def _leading_literal(node: Node) -> str:
    """The literal every match of ``node`` begins with ("" when none)."""
    literal = ""
    for item in _items(node):
        if isinstance(item, Group) and not literal:
            return _leading_literal(item.item)
        char = _single(item)
        if char is None:
            break
        literal += char
    return literal


def _leading_run(node: Node) -> Chars | None:
    """The class of the unbounded greedy run every match of ``node`` begins with."""
    items = _items(node)
    if not items:
        return None
    first = items[0]
    if isinstance(first, Group):
        return _leading_run(first.item) if len(items) == 1 else None
    if (
        not isinstance(first, Repeat)
        or not isinstance(first.item, Chars)
        or not first.greedy
        or first.high is not None
    ):
        return None
    return first.item


def end_literal(source: str) -> str | None:
    """A literal ``L`` that every match of ``source`` ends with (or ends looking ahead at),
    such that no way through the pattern reads past the first occurrence of ``L`` after its
    start: gpt-oss's headers end with ``<\\|message\\|>``. Then a match at a start is the
    same in a text cut after that occurrence as in the whole text. None when the pattern
    does not end so (or uses syntax the reader does not know).

    What comes before ``L`` (``rest``) reads past an occurrence of ``L`` only by consuming
    its first character. So every class in ``rest`` (lookarounds included) that matches
    ``L[0]`` must be one character of a literal run that, laid over ``L`` from there,
    differs from it within ``L``: a way through ``rest`` that reaches an occurrence dies
    inside it, and the way through ``L`` itself ends the match."""
    tree = exact_tree(source)
    if tree is None:
        return None
    items = _items(tree)
    if not items:
        return None
    last = items[-1]
    if isinstance(last, Look) and last.ahead and not last.negative:
        body = _items(last.item)
        chars = [_single(item) for item in body]
        if not body or None in chars:
            return None
        text = "".join(char for char in chars if char is not None)
        rest = items[:-1]
    else:
        count = 0
        while count < len(items) and _single(items[len(items) - 1 - count]) is not None:
            count += 1
        if not count:
            return None
        text = "".join(_single(item) or "" for item in items[len(items) - count :])
        rest = items[: len(items) - count]
    return text if _dies_in(Seq(tuple(rest)), text) else None


def _dies_in(node: Node, text: str) -> bool:
    """Whether every class of ``node`` that matches ``text[0]`` is one character of a
    literal run (in its sequence) that differs from ``text`` laid over it from there."""
    if isinstance(node, Chars):
        return not _may_match(node, text[0])
    if isinstance(node, Backref):
        return False
    if isinstance(node, Anchor):
        return True
    if isinstance(node, (Group, Look, Repeat)):
        return _dies_in(node.item, text)
    if isinstance(node, Alt):
        return all(_dies_in(option, text) for option in node.options)
    items = node.items
    for index, item in enumerate(items):
        if not isinstance(item, Chars):
            if not _dies_in(item, text):
                return False
            continue
        if not _may_match(item, text[0]):
            continue
        if _single(item) is None:
            return False
        runs = _literal_runs(items[index:])
        if runs is None or any(
            all(run[offset] == text[offset] for offset in range(min(len(run), len(text))))
            for run in runs
        ):
            return False  # a run agrees with ``text`` as far as both go: it may read on
    return True


#: At most this many spellings of a literal run (``_literal_runs``), or none is read.
_MAX_RUNS = 16


def _literal_runs(items: tuple[Node, ...]) -> list[str] | None:
    r"""Every text the literal run at the start of ``items`` may spell: single characters,
    and optional ones (``s?`` in kimi-k2's ``<\|tool_calls?_section_begin\|>``) taken or
    not, up to the first other item; None when there would be more than ``_MAX_RUNS``."""
    runs = [""]
    for item in items:
        char = _single(item)
        if char is not None:
            runs = [run + char for run in runs]
            continue
        optional = _optional_single(item)
        if optional is None:
            break
        runs += [run + optional for run in runs]
        if len(runs) > _MAX_RUNS:
            return None
    return runs


def _optional_single(node: Node) -> str | None:
    """The character of an optional single character (``x?``, ``(?:x)?``), or None."""
    if not isinstance(node, Repeat) or node.low != 0 or node.high != 1:
        return None
    item = node.item
    while isinstance(item, Group):
        item = item.item
    return _single(item)


def _may_match(node: Chars, char: str) -> bool:
    """Whether ``node`` may match ``char`` (True when its class is not known exactly)."""
    return not node.source or node.contains(char)


def find_token_loop(source: str) -> TokenLoop | None:
    """The ``TokenLoop`` of a pattern, or None when it does not have that shape (or uses
    syntax the reader does not know)."""
    tree = exact_tree(source)
    if tree is None:
        return None
    items = tree.items if isinstance(tree, Seq) else ()
    pre: list[str] = []
    index = 0
    while index < len(items):
        item = items[index]
        if not isinstance(item, Repeat) or item.low != 0 or item.high != 1:
            break
        literal = _leading_literal(item.item)
        if not literal:
            return None
        pre.append(literal)
        index += 1
    if index + 1 >= len(items):
        return None
    loop = items[index]
    if (
        not isinstance(loop, Repeat)
        or loop.low != 0
        or loop.high is not None
        or not loop.greedy
        or loop.possessive
        or isinstance(loop.item, Chars)
    ):
        return None
    inner: Node = loop.item
    while isinstance(inner, Group) and not inner.atomic:
        inner = inner.item
    branches = inner.options if isinstance(inner, Alt) else (inner,)
    runs: list[Chars] = []
    literals: list[str] = []
    for branch in [*branches, Seq(items[index + 1 :])]:
        run = _leading_run(branch)
        if run is not None:
            runs.append(run)
            continue
        literal = _leading_literal(branch)
        if not literal:
            return None
        literals.append(literal)
    try:
        path = regex.compile(f"(?:(?P<step>{write(loop.item)}))*", REGEX_FLAGS)
    except regex.error:  # the pattern has its own group "step"
        return None
    return TokenLoop(path, runs, tuple(literals), tuple(pre))


def analyse(source: str) -> tuple[str, RunLeads | None, LiteralRun | None]:
    """``(possessive_source(source), its RunLeads or None, its LiteralRun or None)``."""
    tree = exact_tree(source)
    if tree is None:
        return source, None, None
    runs: list[Repeat] = []
    _possessive_runs(tree, [], runs)
    if runs:
        tree = _make_possessive(tree, {id(run) for run in runs})
    out = write(tree) if runs else source
    leads: RunLeads | None = None
    try:
        found = _lead(tree)
    except _Unknown:
        found = None
    if found is not None and found.runs and not found.nullable:
        leads = RunLeads(found.runs, found.others)
    return out, leads, _literal_run(tree)


def whitespace_only_as_lead(source: str) -> bool:
    """Whether whitespace can begin a match of ``source`` only as an optional leading run
    (``\\s*X``), read from the tree of each top-level alternative; anything unclear (or
    unreadable) answers False."""
    tree = exact_tree(source)
    return tree is not None and _lead_ok(tree)


def _lead_ok(node: Node) -> bool:
    items = _items(node)
    if not items:
        return False
    first = items[0]
    if isinstance(first, Alt):
        return len(items) == 1 and all(_lead_ok(option) for option in first.options)
    if isinstance(first, Group):
        return len(items) == 1 and _lead_ok(first.item)
    if isinstance(first, Repeat) and first.low == 0:
        body = first.item
        return isinstance(body, Chars) and bool(body.chars) and not body.chars - whitespace()
    if isinstance(first, Chars):
        single = first.chars.single()
        return single is not None and not single.isspace()
    return False


# -- anchors: where a match can start in a complete text ----------------------------------
#
# Searching a complete text (one-shot parsing, ``final``) for a pattern that may begin with
# common characters (``\s*to=``: any space) costs the regex engine an attempt at every
# position. Most delimiters are far more specific: every match of gpt-oss's headers begins
# with ``<|end|>``, ``<|channel|>``, ``<|constrain|>`` or ``to=``, after a run of spaces at
# most. ``find_anchors`` reads such literals from the pattern's syntax; the scanner then
# finds their occurrences with one literal search (C speed) and tries only the starts they
# allow. The rule is one-sided: an anchor is necessary for a match, never sufficient, so
# leaving out what the reader does not know (an assertion, a lookahead after the first
# character) only tries more starts. Anything it cannot bound gives no anchors.

#: Longest anchor kept, and the most alternatives followed, before giving up.
_ANCHOR_LENGTH = 16
_ANCHOR_STATES = 64
#: Anchors sharing a prefix this long are searched as that prefix (``_merge_anchors``).
_ANCHOR_MERGE = 6
#: A finite character set wider than this ends an anchor (``[\w\-]``, ``\s``).
_ANCHOR_SET = 4


class _NoAnchors(Exception):
    """A match may begin with text no small set of literals covers."""


class _Start(NamedTuple):
    text: str  # what a match begins with (after the lead run)
    open: bool  # whether the text may still be extended by what follows


def find_anchors(source: str) -> Anchors | None:
    """The anchors of a pattern (see above), or None when no small set is certain."""
    tree = exact_tree(source)
    if tree is None:
        return None
    leads: list[Chars] = []
    try:
        starts = _starts(tree, [_Start("", True)], leads)
    except _NoAnchors:
        return None
    texts = {start.text for start in starts}
    if "" in texts:
        return None
    literals = _merge_anchors(texts)
    lead: Callable[[str], bool] | None = None
    if leads:
        union = regex.compile("|".join(chars.source for chars in leads), REGEX_FLAGS)

        def lead(char: str, match: Any = union.fullmatch) -> bool:
            return match(char) is not None

    return Anchors(literals, lead)


def start_literals(source: str, length: int) -> frozenset[str] | None:
    """Texts of at most ``length`` characters one of which every match of the pattern
    begins with, read as for ``find_anchors`` but not merged (so two patterns whose texts
    do not begin one another never match at one place); None when a match may begin with
    a run or with text no small set covers."""
    tree = exact_tree(source)
    if tree is None:
        return None
    leads: list[Chars] = []
    try:
        starts = _starts(tree, [_Start("", True)], leads, length, through_optional=True)
    except _NoAnchors:
        return None
    texts = frozenset(start.text for start in starts)
    return None if leads or "" in texts else texts


def _merge_anchors(texts: set[str]) -> tuple[str, ...]:
    """Fewer, shorter anchors (each search is a pass over the text): literals that share a
    prefix of ``_ANCHOR_MERGE`` characters or more are replaced by their common prefix
    (``<|start|>user``, ``<|start|>tool`` -> ``<|start|>``), and one that begins with
    another is dropped. Shortening an anchor only allows more starts."""
    merged: list[str] = []
    for text in sorted(texts):
        if merged:
            last = merged[-1]
            size = 0
            while size < min(len(last), len(text)) and last[size] == text[size]:
                size += 1
            common = last[:size]
            if len(common) >= min(_ANCHOR_MERGE, len(merged[-1])):
                merged[-1] = common
                continue
        merged.append(text)
    return tuple(merged)


def _starts(
    node: Node,
    states: list[_Start],
    leads: list[Chars],
    length: int = _ANCHOR_LENGTH,
    through_optional: bool = False,
) -> list[_Start]:
    """The states after ``node``: what a match can begin with so far, texts of at most
    ``length`` characters. ``leads`` collects the classes of runs a match may begin with
    (before any literal). ``through_optional``: the text goes on after an optional item
    (``(?:<|start|>assistant)?``), which is there once or not at all, instead of ending
    there (the anchors' reading: fewer, shorter texts)."""
    closed = [state for state in states if not state.open]
    active = [state for state in states if state.open]
    if not active:
        return states
    out: list[_Start] = []
    if isinstance(node, Backref):
        raise _NoAnchors
    if isinstance(node, Chars):
        finite = node.finite
        for state in active:
            if finite is None or len(finite) > _ANCHOR_SET or len(state.text) >= length:
                out.append(_Start(state.text, False))
            else:
                out.extend(_Start(state.text + char, True) for char in sorted(finite))
    elif isinstance(node, Seq):
        out = active
        for item in node.items:
            out = _starts(item, out, leads, length, through_optional)
    elif isinstance(node, Group):
        out = _starts(node.item, active, leads, length, through_optional)
    elif isinstance(node, Alt):
        for option in node.options:
            out.extend(_starts(option, active, leads, length, through_optional))
    elif isinstance(node, Anchor) or (isinstance(node, Look) and (node.negative or not node.ahead)):
        out = active  # consumes nothing; ignoring its condition only allows more starts
    elif isinstance(node, Look):
        for state in active:
            if state.text:
                out.append(state)  # ignored, as above
            else:  # what follows begins with the lookahead's body; nothing more is read
                out.extend(
                    _Start(s.text, False)
                    for s in _starts(node.item, [state], leads, length, through_optional)
                )
    elif through_optional and node.high == 1:
        for state in active:
            if node.low == 0:
                out.append(state)  # not there
            out.extend(_starts(node.item, [state], leads, length, through_optional))
    else:
        body = node.item
        for state in active:
            if not state.text and isinstance(body, Chars):
                if body.finite is None:
                    raise _NoAnchors  # a run of nearly anything: every start is possible
                leads.append(body)  # a run a match may begin with, of any length
                out.append(state)
            elif state.text:
                if node.low > 0:
                    out.extend(
                        _Start(s.text, False)
                        for s in _starts(body, [state], leads, length, through_optional)
                    )
                else:
                    out.append(_Start(state.text, False))
            else:
                if node.low == 0:
                    out.append(state)  # the repeat matched nothing
                out.extend(
                    _Start(s.text, False)
                    for s in _starts(body, [state], leads, length, through_optional)
                )
    if len(out) + len(closed) > _ANCHOR_STATES:
        raise _NoAnchors
    return closed + out


# -- finite patterns -------------------------------------------------------------------------

#: A pattern is read as its texts only when there are at most this many.
_FINITE_TEXTS = 64
#: A class in such a pattern is one of at most this many characters.
_FINITE_CLASS = 8


class _NotFinite(Exception):
    """The pattern matches more than a small set of texts (or in a way that is not one)."""


def finite_texts(source: str) -> tuple[str, ...] | None:
    """Every text the pattern matches, when they are a few non-empty literals no one of
    which begins another (gpt-oss's end of turn ``<\\|return\\|>|<\\|start\\|>(?:user|...)``):
    then at any start at most one of them matches, which is the pattern's match there, and
    a search for the literals finds what a search for the pattern finds. None when the
    pattern has named groups, assertions, atomic groups or possessive repeats (where
    backtracking would not try every way), unbounded repeats or wide classes, or when the
    reader cannot read it."""
    tree = exact_tree(source)
    if tree is None:
        return None
    try:
        texts = _texts(tree)
    except _NotFinite:
        return None
    if "" in texts or any(a != b and b.startswith(a) for a in texts for b in texts):
        return None
    return tuple(sorted(texts))


def consuming_texts(source: str) -> tuple[str, ...]:
    """The texts of a pattern's top-level options that consume text, when each is a few
    literals, leaving out options that are positive lookaheads (``</think>|(?=<tool_call>)``:
    ``('</think>',)``, the close a reasoning region gains from the ``calls_in_reasoning``
    policy). Empty when an option is neither, or the reader cannot read the pattern."""
    tree = exact_tree(source)
    if tree is None:
        return ()
    options = tree.options if isinstance(tree, Alt) else (tree,)
    texts: set[str] = set()
    for option in options:
        if isinstance(option, Look) and option.ahead and not option.negative:
            continue
        try:
            texts |= _texts(option)
        except _NotFinite:
            return ()
    return () if "" in texts else tuple(sorted(texts))


def _texts(node: Node) -> set[str]:
    if isinstance(node, Chars):
        if node.finite is None or len(node.finite) > _FINITE_CLASS:
            raise _NotFinite
        return set(node.finite)
    if isinstance(node, Seq):
        out = {""}
        for item in node.items:
            following = _texts(item)
            out = {head + tail for head in out for tail in following}
            if len(out) > _FINITE_TEXTS:
                raise _NotFinite
        return out
    if isinstance(node, Alt):
        out = set()
        for option in node.options:
            out |= _texts(option)
        if len(out) > _FINITE_TEXTS:
            raise _NotFinite
        return out
    if isinstance(node, Group) and node.name is None and not node.atomic:
        return _texts(node.item)
    if isinstance(node, Repeat) and not node.possessive and node.high is not None:
        body = _texts(node.item)
        out, times = set(), {""}
        for count in range(node.high + 1):
            if count >= node.low:
                out |= times
            if len(out) > _FINITE_TEXTS:
                raise _NotFinite
            times = {head + tail for head in times for tail in body}
        return out
    raise _NotFinite


def can_match_empty(source: str) -> bool | None:
    """Whether some match of the pattern is empty (``$``, ``(?=x)``, ``a*``): a zero-width
    delimiter. None when the reader cannot read the pattern."""
    tree = exact_tree(source)
    return None if tree is None else _empty_heads(tree) is not False


def may_both_match_empty(first: str, second: str) -> bool:
    """Whether both patterns may match the empty string at one position: each can match
    empty, and what their empty matches look ahead at (``(?=<tool_call>)``, ``(?=\\s*$)``)
    can be the same text: a first character in common and one leading literal beginning the
    other, or both the end of the text. True when either cannot be read."""
    one, other = exact_tree(first), exact_tree(second)
    if one is None or other is None:
        return True
    heads, others = _empty_heads(one), _empty_heads(other)
    if heads is False or others is False:
        return False
    if heads is None or others is None:
        return True
    return any(_heads_meet(head, rival) for head in heads for rival in others)


class _Head(NamedTuple):
    """What must follow an empty match: one of ``chars`` and then (when known) the rest of
    ``literal``, the text every such continuation begins with; or, with ``end``, possibly
    the end of the text."""

    chars: list[Chars]
    literal: str
    end: bool


def _heads_meet(head: _Head, rival: _Head) -> bool:
    if head.end and rival.end:
        return True
    if not (head.literal.startswith(rival.literal) or rival.literal.startswith(head.literal)):
        return False
    return any(not char.disjoint(match) for char in head.chars for match in rival.chars)


#: Any one character (what a backreference may begin with).
_ANY = Chars(CharSet.any(), ".")


class _MatchStarts(NamedTuple):
    """How a match can begin: one of ``chars``, or at the end of the text (``end``); and
    whether it can be empty. Over-approximated: assertions other than ``$`` are skipped."""

    chars: list[Chars]
    end: bool
    nullable: bool


def _match_starts(node: Node) -> _MatchStarts:
    if isinstance(node, Chars):
        return _MatchStarts([node], False, False)
    if isinstance(node, Backref):
        return _MatchStarts([_ANY], True, True)
    if isinstance(node, Anchor):
        return _MatchStarts(
            [], node.kind in ("end", "end_string"), node.kind not in ("end", "end_string")
        )
    if isinstance(node, Look):
        return _MatchStarts([], False, True)
    if isinstance(node, Group):
        return _match_starts(node.item)
    if isinstance(node, Repeat):
        found = _match_starts(node.item)
        return _MatchStarts(found.chars, found.end, found.nullable or node.low == 0)
    if isinstance(node, Alt):
        options = [_match_starts(option) for option in node.options]
        return _MatchStarts(
            [char for option in options for char in option.chars],
            any(option.end for option in options),
            any(option.nullable for option in options),
        )
    chars: list[Chars] = []
    end = False
    for item in node.items:
        found = _match_starts(item)
        chars += found.chars
        end = end or found.end
        if not found.nullable:
            return _MatchStarts(chars, end, False)
    return _MatchStarts(chars, end, True)


def _empty_heads(node: Node) -> list[_Head] | Literal[False] | None:
    """False when ``node`` never matches empty; else what may follow where it does, or
    None when that is not known (an anchor, ``a*``)."""
    if isinstance(node, Chars):
        return False
    if isinstance(node, Backref):
        return None
    if isinstance(node, Anchor) or (isinstance(node, Look) and (node.negative or not node.ahead)):
        if isinstance(node, Anchor) and node.kind in ("end", "end_string"):
            return [_Head([], "", True)]
        return None
    if isinstance(node, Look):
        return _look_heads(node.item)
    if isinstance(node, Group):
        return _empty_heads(node.item)
    if isinstance(node, Repeat):
        return None if node.low == 0 else _empty_heads(node.item)
    if isinstance(node, Alt):
        heads: list[_Head] = []
        empty = False
        for option in node.options:
            option_heads = _empty_heads(option)
            if option_heads is None:
                return None
            if option_heads is not False:
                empty = True
                heads += option_heads
        return heads if empty else False
    constraint: list[_Head] | None = None
    for item in node.items:
        item_heads = _empty_heads(item)
        if item_heads is False:
            return False
        if item_heads is not None and constraint is None:
            constraint = item_heads
    return constraint


def _look_heads(item: Node) -> list[_Head] | None:
    """What a lookahead's text begins with. A leading optional part (``(?:<|section|>)?<|call|>``,
    a call opener looked ahead for) gives two heads, one with it and one without, so each
    keeps its leading literal."""
    while isinstance(item, Group):
        item = item.item
    if isinstance(item, Seq) and item.items:
        first = item.items[0]
        while isinstance(first, Group):
            first = first.item
        if isinstance(first, Seq):  # ``(?:A B) C`` reads as ``A B C``
            return _look_heads(Seq((*first.items, *item.items[1:])))
        if isinstance(first, Repeat) and first.low == 0 and first.high == 1:
            rest = item.items[1:]
            inner = first.item.items if isinstance(first.item, Seq) else (first.item,)
            with_it, without = _look_heads(Seq((*inner, *rest))), _look_heads(Seq(rest))
            return None if with_it is None or without is None else with_it + without
    found = _match_starts(item)
    if found.nullable:
        return None
    return [_Head(found.chars, _leading_literal(item), found.end)]


def optional_groups(source: str) -> frozenset[str] | None:
    """The named groups (as written) that some match of the pattern leaves out: under a
    ``?``/``*``, in some options of an alternation only, or in a negative lookaround. None
    when the reader cannot read the pattern."""
    tree = exact_tree(source)
    if tree is None:
        return None
    return frozenset(_group_names(tree) - _required_names(tree))


def _group_names(node: Node) -> set[str]:
    if isinstance(node, Seq):
        return set().union(*(_group_names(item) for item in node.items))
    if isinstance(node, Alt):
        return set().union(*(_group_names(option) for option in node.options))
    if isinstance(node, Group):
        own = {base_name(node.name)} if node.name is not None else set()
        return own | _group_names(node.item)
    if isinstance(node, Repeat | Look):
        return _group_names(node.item)
    return set()


def _required_names(node: Node) -> set[str]:
    if isinstance(node, Seq):
        return set().union(*(_required_names(item) for item in node.items))
    if isinstance(node, Alt):
        options = [_required_names(option) for option in node.options]
        return set.intersection(*options) if options else set()
    if isinstance(node, Group):
        own = {base_name(node.name)} if node.name is not None else set()
        return own | _required_names(node.item)
    if isinstance(node, Repeat):
        return _required_names(node.item) if node.low > 0 else set()
    if isinstance(node, Look) and not node.negative:
        return _required_names(node.item)
    return set()
