"""A small reader's answer: the form the question asks for, and the citations attached afterwards.

A 0.5B model asked for an answer, its citations and a refusal phrase at once, inside a one-line grammar, answered in
sentences that restate the question and cited ids as answers (bench/RESULTS.md). It is asked for the answer alone, in
the form the question asks for (a few words, a date or a number, yes or no, or a short list for "which/what are ..."),
and the answer is then matched to the evidence it was shown: each answer (or list item) cites the passages whose kept
sentences contain it, else those sharing most of its words. "Not in the data" is decided before the call, by retrieval
thresholds and the selection."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tiny_graphrag.search.evidence import Sentence, content_words

# "What are the main themes?", "Who were ...", "Name the ...", "List ...": several answers.
_LIST = re.compile(r"^\s*(?:(?:what|which|who)\s+(?:are|were)\b|(?:list|name|enumerate)\b)", re.IGNORECASE)
# "Which countries ...", "What people ...": a plural noun after the question word (not "What does ...").
_PLURAL = re.compile(r"^\s*(?:what|which)\s+(?:(?:two|three|four|five|\d+)\s+)?(\w+)\b", re.IGNORECASE)
_NOT_PLURAL = {"is", "was", "has", "does", "its", "this", "his", "hers", "us", "series", "species", "news"}
_PLURALS = {"people", "men", "women", "children", "members"}
# "When ...", "In what year ...", "How many ...": a date or a number (a digit in the answer).
_NUMBER = re.compile(
    r"^\s*(?:when\b|(?:in |during |by )?(?:what|which) year\b|how (?:many|much|old|long)\b|what (?:date|age)\b)",
    re.IGNORECASE,
)
_YES_NO = re.compile(r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.IGNORECASE)
_NORMALIZE = re.compile(r"\b(a|an|the)\b|[^\w\s]", re.UNICODE)
MAX_CITED = 2  # passages cited per answer or list item
YES_NO = {"yes", "no"}


def question_form(query: str) -> str:
    """ "yesno" for a question a yes or no answers ("Are X and Y both ...?", not "Is X or Y older?"), "number" for a
    date or a number, "list" when it asks for several things, else "factoid"."""
    if _YES_NO.search(query) and not re.search(r"\bor\b", query, re.IGNORECASE):
        return "yesno"
    if _NUMBER.search(query):
        return "number"
    if _LIST.search(query):
        return "list"
    m = _PLURAL.search(query)
    word = m.group(1).lower() if m else ""
    plural = word in _PLURALS or (word.endswith("s") and not word.endswith(("ss", "us")) and word not in _NOT_PLURAL)
    return "list" if plural else "factoid"


def tokens(text: str) -> list[str]:
    """SQuAD's normalization: lowercase, no punctuation or articles; as words."""
    return _NORMALIZE.sub(" ", text.lower()).split()


def clean_answer(text: str) -> str:
    """The answer's first line, without a leading "Answer:" or a closing full stop."""
    first = (text.strip().splitlines() or [""])[0].strip()
    first = re.sub(r"^(?:final\s+)?answer\s*:\s*", "", first, flags=re.IGNORECASE).strip()
    return first[:-1].rstrip() if first.endswith(".") and not first.endswith("..") else first


def items_of(answer: str, form: str) -> list[str]:
    """The answer's parts to cite one by one: a list's items (split on ";" or a line's commas), else the answer."""
    if form != "list":
        return [answer]
    parts = [p.strip(" -*•\t") for p in re.split(r";|\n", answer)]
    if len(parts) == 1:
        parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", answer)]
    return [p for p in parts if p]


def supporting(item: str, kept: Sequence[Sentence], query: str) -> list[int]:
    """Indexes into `kept` of the sentences that support `item`: those containing its words in
    sequence, else those holding most of them (half at least); for yes/no, the best sentences for
    the question. Best-scored first, at most MAX_CITED passages."""
    want = tokens(item)
    if not want:
        return []
    needle = f" {' '.join(want)} "
    hits = [i for i, s in enumerate(kept) if needle in f" {' '.join(tokens(s.passage.title + ' ' + s.text))} "]
    if not hits and want[0] in YES_NO:
        hits = list(range(len(kept)))
    elif not hits:
        need = set(want) - {"and", "of", "in"}
        overlap = [(len(need & set(tokens(s.passage.title + " " + s.text))), i) for i, s in enumerate(kept)]
        most = max((o for o, _ in overlap), default=0)
        hits = [i for o, i in overlap if o == most and 2 * o >= len(need) and o > 0]
    best: dict[str, int] = {}  # passage -> its best supporting sentence
    for i in sorted(hits, key=lambda i: -kept[i].score):
        best.setdefault(kept[i].passage.chunk.id, i)
    return list(best.values())[:MAX_CITED]


def echoes_question(answer: str, query: str) -> bool:
    """The answer names nothing the question does not: it restates its subject ("Van Hook Township" for the county seat
    of where Van Hook Township is). Yes/no and either-or answers (the question names both choices) are not echoes."""
    words = content_words(answer)
    if not words or words <= YES_NO or re.search(r"\bor\b", query, re.IGNORECASE):
        return False
    return words <= content_words(query)


def labels_like_prompt(answer: str, asked: str) -> bool:
    """The answer opens with a word of the prompt's description after its colon ("Name: Tampa Bay Buccaneers, Place:
    Oklahoma", "a date,2000"; not "only 3"): what sampled answers and number answers wrote in place of one."""
    return (tokens(answer) or [""])[0] in content_words(asked.rpartition(":")[2])


def echoes_prompt(answer: str, asked: str) -> bool:
    """The answer is the prompt's own description of one ("a name", "a place, a date, a number or a few words"): a 0.5B
    reader with nothing to say copies what it was asked for, at times with one word glued: "or afew_words_from_the")."""
    words = content_words(answer.replace("_", " "))
    return bool(words) and len(words - content_words(asked)) <= len(words) // 4
