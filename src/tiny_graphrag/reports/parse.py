"""A community report from model output: JSON parsing, repair of cut-off output, validation.

A small model's output can stop mid-JSON (max_tokens) or hold raw newlines inside strings; what is complete is kept, and
anything not in REPORT_SCHEMA's shape is refused (None), never guessed."""

from __future__ import annotations

import json
import re
from typing import Any

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


# A JSON string (to its end when it is unterminated: what follows is inside it), or a structural character.
_JSON_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"?|[{}\[\],]', re.DOTALL)


def _closing_candidates(text: str) -> list[str]:
    """Ways to end a truncated JSON text after a complete member, longest first."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token in "{[":
            stack.append("}" if token == "{" else "]")
        elif token in "}]":
            if stack:
                stack.pop()
            cuts.append((m.end(), "".join(reversed(stack))))
        elif token == ",":
            cuts.append((m.start(), "".join(reversed(stack))))
    return [text[:pos] + closers for pos, closers in reversed(cuts)]


def _loads_object(text: str) -> dict | None:
    text = text.strip()
    start = text.find("{")
    if start < 0:
        return None
    try:
        # strict=False: a raw newline inside a string is harmless; keep what the model wrote
        value, _ = json.JSONDecoder(strict=False).raw_decode(text[start:])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _clean(value: Any) -> str | None:
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def validate_report(data: Any) -> dict | None:
    """A report dict in REPORT_SCHEMA's shape (rating clamped to 0..10), or None if invalid. A
    finding holds an explanation, or (grounded, report_schema's `sources`) the id of its source."""
    if not isinstance(data, dict):
        return None
    title, summary = _clean(data.get("title")), _clean(data.get("summary"))
    rating, explanation, findings_in = data.get("rating"), data.get("rating_explanation"), data.get("findings")
    if title is None or summary is None or not isinstance(explanation, str):
        return None
    if isinstance(rating, bool) or not isinstance(rating, (int, float)) or rating != rating:
        return None
    if not isinstance(findings_in, list):
        return None
    findings = []
    for f in findings_in[:5]:
        if not isinstance(f, dict) or not (line := _clean(f.get("summary"))):
            continue
        if explained := _clean(f.get("explanation")):
            findings.append({"summary": line, "explanation": explained})
        elif isinstance(f.get("source"), int) and not isinstance(f["source"], bool):  # a grounded finding
            findings.append({"summary": line, "source": f["source"]})
    if not findings:
        return None
    return {
        "title": title,
        "summary": summary,
        "rating": float(min(10.0, max(0.0, rating))),
        "rating_explanation": " ".join(explanation.split()),
        "findings": findings,
    }


def parse_report_json(text: str, *, truncated: bool = False) -> tuple[dict, bool] | None:
    """(report dict, repaired?) from model output; a truncated text is closed after its last
    complete member, dropping an unfinished finding. None when nothing valid can be recovered."""
    if not truncated:
        if (valid := validate_report(_loads_object(text))) is not None:
            return valid, False
    start = text.find("{")
    if start < 0:
        return None
    for candidate in _closing_candidates(text[start:]):
        if (valid := validate_report(_loads_object(candidate))) is not None:
            return valid, True
    return None


def end_at_boundary(text: str, bound: int) -> str:
    """`text` if it is shorter than its maxLength `bound`; else, since the grammar stopped it mid-phrase, cut back to
    where a reader can stop: the last sentence end in its second half, else the last clause there or the last space,
    marked with "…". The word before the bound is dropped even when punctuation follows it: pressed for room, the model
    ends a word early ("in the commu,")."""
    # Whitespace was normalized, so a cut string may be a little shorter than its bound; a longer
    # one was not cut by a grammar (a backend that ignores the schema) and is left alone.
    if not text or not bound - 2 <= len(text) <= bound:
        return text
    half = len(text) // 2
    ends = [m.end() for m in _SENTENCE_END.finditer(text) if m.end() > half]
    if ends:
        return text[: ends[-1]]
    cut = max(text.rfind(", "), text.rfind("; "))
    if cut <= half:
        cut = text.rfind(" ")
    return (text[:cut] if cut > half else text).rstrip(",;: ") + "…"


def trim_to_bounds(data: Any, schema: dict) -> Any:
    """A validated report whose strings that reached their schema bound end at a boundary."""
    if isinstance(data, str):
        return end_at_boundary(data, schema["maxLength"]) if "maxLength" in schema else data
    if isinstance(data, list):
        return [trim_to_bounds(v, schema["items"]) for v in data]
    if isinstance(data, dict):
        props = schema["properties"]
        return {k: trim_to_bounds(v, props[k]) if k in props else v for k, v in data.items()}
    return data
