"""Training and evaluation examples: GLiNER's and GLiREL's own formats and a friendly JSONL.

One line per example, in any of three shapes (a file may mix them):

- friendly, character offsets (hand-written or exported from an annotation tool)::

    {"text": "Obama studied at Harvard.", "entities": [{"start": 0, "end": 5, "label": "person"},
     {"start": 17, "end": 24, "label": "organization"}], "relations": [{"head": 0, "tail": 1,
     "label": "educated at"}]}

  `head`/`tail` index into `entities`. Offsets become words with the tokenization the extractor uses (WORD_RE, GLiNER's
  own whitespace splitter): a span covers every word it overlaps.
- GLiNER's: `{"tokenized_text": [...], "ner": [[first word, last word, label], ...]}` (inclusive).
- GLiREL's: the same plus `"relations": [{"head": {"position": [first, last]}, "tail": {...}, "relation_text": label}]`,
  positions being spans of `ner` (inclusive, as GLiREL predicts)."""

from __future__ import annotations

import bisect
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import InputError
from tiny_graphrag.indexing.chunking import WORD_RE
from tiny_graphrag.indexing.readers.text import decode

FORMATS_HELP = (
    "JSONL, one example per line: friendly {'text', 'entities': [{'start', 'end', 'label'}], "
    "'relations': [{'head', 'tail', 'label'}]} (character offsets; head/tail index entities), or GLiNER's / "
    "GLiREL's own training format ({'tokenized_text', 'ner', 'relations'})"
)


@dataclass(frozen=True)
class Span:
    """Words first..last (inclusive) labelled `label`."""

    first: int
    last: int
    label: str
    score: float = field(default=1.0, compare=False)  # a prediction's; equality is span and label


@dataclass(frozen=True)
class Relation:
    """`label` from entity number `head` to entity number `tail` of the same example."""

    head: int
    tail: int
    label: str
    score: float = field(default=1.0, compare=False)


@dataclass(frozen=True)
class Example:
    tokens: tuple[str, ...]
    entities: tuple[Span, ...] = ()
    relations: tuple[Relation, ...] = ()
    # character offsets of the tokens in `text` (None: the tokens joined by spaces)
    text: str | None = None
    offsets: tuple[tuple[int, int], ...] | None = None
    where: str = field(default="", compare=False)  # file:line, for messages

    def joined(self) -> tuple[str, tuple[tuple[int, int], ...]]:
        """The text the models read and each token's character span in it."""
        if self.text is not None and self.offsets is not None:
            return self.text, self.offsets
        offsets, pos = [], 0
        for tok in self.tokens:
            offsets.append((pos, pos + len(tok)))
            pos += len(tok) + 1
        return " ".join(self.tokens), tuple(offsets)

    def keep_entities(self, keep: Sequence[int], **changes: Any) -> Example:
        """The example with only the entities numbered `keep` (renumbered in that order) and the
        relations between them; `changes` replace other fields."""
        new = {old: k for k, old in enumerate(keep)}
        rels = tuple(
            Relation(new[r.head], new[r.tail], r.label) for r in self.relations if r.head in new and r.tail in new
        )
        return replace(self, entities=tuple(self.entities[i] for i in keep), relations=rels, **changes)

    def cut(self, max_words: int) -> Example:
        """The first max_words words, their entities and relations (the models read max_len words)."""
        if len(self.tokens) <= max_words:
            return self
        keep = [i for i, e in enumerate(self.entities) if e.last < max_words]
        return self.keep_entities(keep, tokens=self.tokens[:max_words], text=None, offsets=None)

    def entity_labels(self) -> set[str]:
        return {e.label for e in self.entities}

    def relation_labels(self) -> set[str]:
        return {r.label for r in self.relations}


def read_examples(path: str | os.PathLike[str]) -> list[Example]:
    """Every example of a JSONL file (the three shapes above); a bad line is an InputError naming
    file:line and the field."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"examples file {path} is a folder; pass a file of examples instead: {FORMATS_HELP}")
    if not path.is_file():
        raise InputError(f"training data {path} does not exist; pass a .jsonl file (one JSON example per line)")
    text = decode(path.read_bytes(), path, binary_fix="and holds no examples: write one JSON object per line")
    examples = []
    for n, line in enumerate(io.StringIO(text, newline=None), 1):  # lines as a text file reads them
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{where}: not valid JSON ({exc}); write one JSON object per line") from exc
        examples.append(parse_record(record, where))
    if not examples:
        raise InputError(f"{path} has no examples; write one JSON object per line")
    return examples


def parse_record(record: Any, where: str = "<record>") -> Example:
    if not isinstance(record, Mapping):
        raise InputError(
            f"{where}: expected a JSON object with 'text' or 'tokenized_text', got {type(record).__name__}"
        )
    if "text" in record:
        return from_friendly(record, where)
    if "tokenized_text" in record:
        return from_library(record, where)
    raise InputError(
        f"{where}: no 'text' (friendly format) or 'tokenized_text' (GLiNER/GLiREL format) field; "
        "see `tiny-graphrag models finetune --help` for the formats"
    )


def _bad(where: str, what: str, fix: str) -> InputError:
    return InputError(f"{where}: {what}; {fix}")


def _int(value: Any, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(where, f"field '{name}' must be a whole number, got {value!r:.60}", "fix the value")
    return value


def _str(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(where, f"field '{name}' must be a non-empty string, got {value!r:.60}", "fix the value")
    return value.strip()


def _list(record: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = record.get(key, [])
    if not isinstance(value, list):
        raise _bad(where, f"field '{key}' must be a list, got {type(value).__name__}", f"write '{key}' as [...]")
    return value


def _relations(raw: list[Any], n_entities: int, where: str) -> tuple[Relation, ...]:
    out = []
    for i, r in enumerate(raw):
        name = f"relations[{i}]"
        if not isinstance(r, Mapping):
            raise _bad(where, f"field '{name}' must be an object", 'write {"head": 0, "tail": 1, "label": "..."}')
        head, tail = _int(r.get("head"), where, f"{name}.head"), _int(r.get("tail"), where, f"{name}.tail")
        for side, idx in (("head", head), ("tail", tail)):
            if not 0 <= idx < n_entities:
                raise _bad(
                    where,
                    f"field '{name}.{side}' is {idx}, but there are {n_entities} entities",
                    "head and tail are indices into 'entities' (from 0)",
                )
        if head == tail:
            raise _bad(where, f"field '{name}' links entity {head} to itself", "a relation joins two entities")
        out.append(Relation(head, tail, _str(r.get("label"), where, f"{name}.label")))
    return tuple(out)


def from_friendly(record: Mapping[str, Any], where: str = "<record>") -> Example:
    """A friendly record (character offsets) as words, with the extractor's tokenization."""
    text = record["text"]
    if not isinstance(text, str) or not text.strip():
        raise _bad(where, "field 'text' must be a non-empty string", "give the sentence or passage as a string")
    words = [(m.start(), m.end()) for m in WORD_RE.finditer(text)]
    spans = []
    for i, e in enumerate(_list(record, "entities", where)):
        name = f"entities[{i}]"
        if not isinstance(e, Mapping):
            raise _bad(where, f"field '{name}' must be an object", 'write {"start": 0, "end": 5, "label": "..."}')
        start, end = _int(e.get("start"), where, f"{name}.start"), _int(e.get("end"), where, f"{name}.end")
        if not 0 <= start < end <= len(text):
            raise _bad(
                where,
                f"field '{name}' has start {start} and end {end}, outside the text of {len(text)} characters or empty",
                "offsets are characters, start inclusive, end exclusive",
            )
        covered = [k for k, (s, t) in enumerate(words) if s < end and t > start]
        if not covered:
            raise _bad(where, f"field '{name}' covers only spaces", "fix its start and end")
        spans.append(Span(covered[0], covered[-1], _str(e.get("label"), where, f"{name}.label")))
    relations = _relations(_list(record, "relations", where), len(spans), where)
    return Example(
        tokens=tuple(text[s:t] for s, t in words),
        entities=tuple(spans),
        relations=relations,
        text=text,
        offsets=tuple(words),
        where=where,
    )


def from_library(record: Mapping[str, Any], where: str = "<record>") -> Example:
    """GLiNER's format, or GLiREL's (GLiNER's plus 'relations' between 'ner' spans)."""
    tokens = record["tokenized_text"]
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) and t for t in tokens):
        raise _bad(where, "field 'tokenized_text' must be a non-empty list of words", "write the words as strings")
    spans: list[Span] = []
    index: dict[tuple[int, int], int] = {}
    for i, item in enumerate(_list(record, "ner", where)):
        name = f"ner[{i}]"
        if not isinstance(item, list) or len(item) < 3:
            raise _bad(where, f"field '{name}' must be [first word, last word, label]", 'e.g. [0, 1, "person"]')
        first, last = _int(item[0], where, f"{name}[0]"), _int(item[1], where, f"{name}[1]")
        if not 0 <= first <= last < len(tokens):
            raise _bad(
                where,
                f"field '{name}' spans words {first}..{last}, outside the {len(tokens)} words",
                "word indices start at 0 and the last one is inclusive",
            )
        index.setdefault((first, last), len(spans))
        spans.append(Span(first, last, _str(item[2], where, f"{name}[2]")))
    rels = []
    for i, r in enumerate(_list(record, "relations", where)):
        name = f"relations[{i}]"
        try:
            head = tuple(r["head"]["position"])
            tail = tuple(r["tail"]["position"])
            label = r["relation_text"]
        except (KeyError, TypeError) as exc:
            raise _bad(
                where,
                f"field '{name}' lacks {exc}",
                'write {"head": {"position": [first, last]}, "tail": {...}, "relation_text": "..."}',
            ) from exc
        for side, pos in (("head", head), ("tail", tail)):
            if pos not in index:
                raise _bad(
                    where, f"field '{name}.{side}.position' {list(pos)} is not a span of 'ner'", "add it to 'ner'"
                )
        rels.append({"head": index[head], "tail": index[tail], "label": label})
    return Example(
        tokens=tuple(tokens), entities=tuple(spans), relations=_relations(rels, len(spans), where), where=where
    )


# ---- writing: the libraries' formats and the friendly one --------------------------------
def to_gliner(ex: Example) -> dict[str, Any]:
    return {"tokenized_text": list(ex.tokens), "ner": [[e.first, e.last, e.label] for e in ex.entities]}


def to_glirel(ex: Example) -> dict[str, Any]:
    def side(i: int) -> dict[str, Any]:
        e = ex.entities[i]
        return {"position": [e.first, e.last], "type": e.label, "name": " ".join(ex.tokens[e.first : e.last + 1])}

    return {
        "tokenized_text": list(ex.tokens),
        "ner": [[e.first, e.last, e.label, " ".join(ex.tokens[e.first : e.last + 1])] for e in ex.entities],
        "relations": [{"head": side(r.head), "tail": side(r.tail), "relation_text": r.label} for r in ex.relations],
    }


def to_friendly(ex: Example) -> dict[str, Any]:
    text, offsets = ex.joined()
    return {
        "text": text,
        "entities": [{"start": offsets[e.first][0], "end": offsets[e.last][1], "label": e.label} for e in ex.entities],
        "relations": [{"head": r.head, "tail": r.tail, "label": r.label} for r in ex.relations],
    }


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def labels_of(examples: Sequence[Example]) -> tuple[list[str], list[str]]:
    """Sorted entity labels and relation labels present in the examples."""
    ents = sorted({lab for ex in examples for lab in ex.entity_labels()})
    rels = sorted({lab for ex in examples for lab in ex.relation_labels()})
    return ents, rels


def char_to_words(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Inclusive word indices of a character span, or None when it covers no word."""
    starts, ends = [s for s, _ in offsets], [e for _, e in offsets]
    first = bisect.bisect_right(ends, start)
    last = bisect.bisect_left(starts, end) - 1
    return (first, last) if first <= last else None
