"""Conservative entity resolution: fold obvious aliases into one node, never across types.

String rules propose links between two nodes of the same type; when an embedder is given, a link
also needs cosine similarity of the two display names >= ``embedding_threshold``. Linked nodes
form groups; each group collapses into its canonical node (most mentions, then longest name).

String rules (all within one entity type):

* title-stripped  Person names equal once leading titles are removed ("President Obama" = "Obama").
* token-subset    a Person name whose tokens are an ordered subset of exactly one longer name
                  ("Obama" -> "Barack Obama"); ambiguous shorter names ("Bush" with both
                  "George W. Bush" and "George H. W. Bush") are left alone.
* org-suffix      Organization names equal without a leading "the" or a trailing legal suffix.
* acronym         an all-caps Organization name spelling the initials of exactly one other one.
* spelling        the same name up to spaces/hyphens/dots, or near-identical spellings
                  (difflib ratio >= ``string_threshold`` token by token).

Every merge is recorded in ``graph.graph["merges"]`` (merge.py)."""

from __future__ import annotations

import difflib
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from tiny_graphrag.config import ResolutionConfig
from tiny_graphrag.index.graph import assign_hids
from tiny_graphrag.indexing.merge import merge_nodes
from tiny_graphrag.records import Merge

log = logging.getLogger(__name__)

Embed = Callable[[list[str]], np.ndarray]

# Type names are the user's; these spellings get the person/organization rules.
_PERSON_TYPES = {"person", "people", "per", "human", "individual"}
_ORG_TYPES = {"organization", "organisation", "org", "company", "institution", "agency", "regulator"}

_TITLES = set(
    """mr mrs ms miss mx dr prof professor sir dame lord lady president vice senator sen rep representative congressman
    congresswoman governor gov mayor judge justice chief minister prime chancellor secretary ambassador commissioner
    general gen colonel col captain capt lieutenant lt sergeant sgt admiral adm king queen prince princess pope rev
    reverend""".split()
)
# "George Bush" vs "George Bush Jr." may be two people: never merge across a generational suffix.
_GENERATIONAL = {"jr", "sr", "ii", "iii", "iv"}
_ORG_SUFFIXES = set("inc incorporated corp corporation co company ltd limited llc plc gmbh ag sa".split())
_ACRONYM_STOPWORDS = {"of", "the", "and", "for", "&", "in", "on", "de"}
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class _Link:
    alias: str
    target: str
    reason: str
    score: float


def resolve_aliases(
    graph: nx.MultiDiGraph, *, embed: Embed | None = None, config: ResolutionConfig = ResolutionConfig()
) -> list[Merge]:
    """Merge obvious aliases in place and return the merges done (also in graph.graph["merges"])."""
    if not config.enabled or graph.number_of_nodes() < 2:
        return []
    by_type: dict[str, list[str]] = defaultdict(list)
    for key, data in graph.nodes(data=True):
        by_type[data.get("type", "")].append(key)

    links: list[_Link] = []
    for node_type in sorted(by_type):
        keys = sorted(by_type[node_type])
        if node_type.casefold() in _PERSON_TYPES:
            links += _person_links(graph, keys)
        if node_type.casefold() in _ORG_TYPES:
            links += _org_links(graph, keys)
        links += _spelling_links(keys, config.string_threshold)
    if embed is not None and links:
        links = _embedding_filter(graph, links, embed, config.embedding_threshold)

    via: dict[str, _Link] = {}  # the link that brought each node into its group: its own alias link first
    for link in links:
        via.setdefault(link.alias, link)
    for link in links:
        via.setdefault(link.target, link)
    linked = nx.Graph([(link.alias, link.target) for link in links])
    done: list[Merge] = []
    for group in sorted((sorted(c) for c in nx.connected_components(linked)), key=lambda m: m[0]):
        canonical = _representative(graph, group)
        for alias in group:
            if alias != canonical:
                done.append(merge_nodes(graph, alias, canonical, reason=via[alias].reason, score=via[alias].score))
    if done:
        assign_hids(graph)
        log.info("entity resolution merged %d alias(es)", len(done))
    return done


def _representative(graph: nx.MultiDiGraph, keys: Iterable[str]) -> str:
    """Most mentions, then the longer display name, then the smallest key (for determinism)."""
    nodes = graph.nodes
    return min(keys, key=lambda k: (-nodes[k].get("mentions", 0), -len(str(nodes[k].get("name", k))), k))


def _embedding_filter(graph: nx.MultiDiGraph, links: list[_Link], embed: Embed, threshold: float) -> list[_Link]:
    names = sorted({graph.nodes[k].get("name", k) for link in links for k in (link.alias, link.target)})
    vectors = np.asarray(embed(names), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(names):
        raise ValueError(
            f"embed returned an array of shape {vectors.shape} for {len(names)} names; expected one row per name"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)  # tolerate an embedder that does not normalize
    row = {name: i for i, name in enumerate(names)}
    kept = []
    for link in links:
        a, b = (graph.nodes[k].get("name", k) for k in (link.alias, link.target))
        cosine = float(vectors[row[a]] @ vectors[row[b]])
        if cosine >= threshold:
            kept.append(_Link(link.alias, link.target, link.reason, cosine))
        else:
            log.debug("not merging %r and %r: embedding similarity %.3f < %.3f", a, b, cosine, threshold)
    return kept


def _tokens(key: str) -> tuple[str, ...]:
    return tuple(t for t in (w.strip(".,") for w in key.split()) if t)


def _is_initial(token: str) -> bool:
    return len(token) == 1 and token.isalpha()


def _person_core(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The name without leading titles ("president barack obama" -> "barack obama")."""
    i = 0
    while i < len(tokens) - 1 and tokens[i] in _TITLES:
        i += 1
    return tokens[i:]


def _subset_compatible(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    """`short` is an ordered proper subset of `long` that can name the same person."""
    if len(short) >= len(long) or all(_is_initial(t) for t in short):
        return False
    extras, i = [], 0
    for token in long:
        if i < len(short) and token == short[i]:
            i += 1
        else:
            extras.append(token)
    if i < len(short) or any(t in _GENERATIONAL for t in extras):
        return False
    # A name that spells initials pins them: "George W. Bush" is not "George H. W. Bush".
    return not (any(_is_initial(t) for t in short) and any(_is_initial(t) for t in extras))


def _classes(keys: Sequence[str], core: Callable[[str], tuple[str, ...]]) -> dict[tuple[str, ...], list[str]]:
    out: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for k in keys:
        if c := core(k):
            out[c].append(k)
    return out


def _person_links(graph: nx.MultiDiGraph, keys: Sequence[str]) -> list[_Link]:
    classes = _classes(keys, lambda k: _person_core(_tokens(k)))
    # A class speaks through its untitled form when it has one: "Obama", not "President Obama".
    rep = {
        c: _representative(graph, [k for k in members if _tokens(k) == c] or members) for c, members in classes.items()
    }
    links = [_Link(k, rep[c], "title-stripped", 1.0) for c, members in classes.items() for k in members if k != rep[c]]

    by_token: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for c in classes:
        for t in c:
            by_token[t].add(c)
    for short in classes:
        candidates = set.intersection(*(by_token[t] for t in short))
        fits = sorted((c for c in candidates if _subset_compatible(short, c)), key=lambda c: (-len(c), c))
        if not fits:
            continue
        # The candidates must all name one person: a single longest name the others are part of
        # ("Obama" -> "Barack Obama" -> "Barack Hussein Obama"), never two rival longer names.
        top = fits[0]
        if not all(_subset_compatible(c, top) for c in fits[1:]):
            log.debug("not merging %r: it may be any of %s", " ".join(short), [" ".join(c) for c in fits[:5]])
            continue
        alias = rep[short]
        reason = "title-stripped" if _tokens(alias) != short else "token-subset"
        links.append(_Link(alias, rep[top], reason, 1.0))
    return links


def _org_core(key: str) -> tuple[str, ...]:
    tokens = list(_tokens(key))
    if len(tokens) > 1 and tokens[0] == "the":
        tokens = tokens[1:]
    while len(tokens) > 1 and tokens[-1] in _ORG_SUFFIXES:
        tokens = tokens[:-1]
    return tuple(tokens)


def _org_links(graph: nx.MultiDiGraph, keys: Sequence[str]) -> list[_Link]:
    classes = _classes(keys, _org_core)
    rep = {c: _representative(graph, members) for c, members in classes.items()}
    links = [_Link(k, rep[c], "org-suffix", 1.0) for c, members in classes.items() for k in members if k != rep[c]]

    expansions: dict[str, set[str]] = defaultdict(set)  # acronym -> canonical keys it could stand for
    for c in classes:
        if len(c) < 2:
            continue
        words = [t for t in c if t not in _ACRONYM_STOPWORDS]
        for letters in {"".join(t[0] for t in c), "".join(t[0] for t in words)}:
            if len(letters) >= 2:
                expansions[letters].add(rep[c])
    for c in classes:
        short = rep[c]
        display = graph.nodes[short].get("name", short).replace(".", "").replace(" ", "")
        if len(c) != 1 or not (2 <= len(display) <= 8 and display.isalpha() and display.isupper()):
            continue
        targets = expansions.get(c[0].replace(".", ""), set()) - {short}
        if len(targets) == 1:
            links.append(_Link(short, next(iter(targets)), "acronym", 1.0))
    return links


def _spelling_links(keys: Sequence[str], threshold: float) -> list[_Link]:
    links: list[_Link] = []
    # Same letters, different spacing or punctuation: "coca-cola" / "coca cola", "u.n." / "un".
    compact: dict[str, list[str]] = defaultdict(list)
    for k in keys:
        compact[re.sub(r"[\s.\-]", "", k)].append(k)
    for members in compact.values():
        links += [_Link(k, members[0], "spelling", 1.0) for k in members[1:]]

    if threshold >= 1.0:
        return links
    # Near-identical spellings. Only keys with exactly one such partner merge, so a family of
    # similar names ("john smith", "jon smith", "joan smith") stays apart.
    partners: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for a, b in sorted(_spelling_candidates(keys)):
        if (ratio := _near_identical(a, b, threshold)) is not None:
            partners[a].append((b, ratio))
            partners[b].append((a, ratio))
    for a in sorted(partners):
        if len(partners[a]) != 1:
            continue
        b, ratio = partners[a][0]
        if a < b and len(partners[b]) == 1:
            links.append(_Link(a, b, "spelling", ratio))
    return links


def _spelling_candidates(keys: Sequence[str]) -> set[tuple[str, str]]:
    """Pairs that may differ by a typo, without comparing all pairs.

    Names one edit apart share either their first or their second half (one edit lands in one half), so a block per
    half-prefix and half-suffix finds every such pair; names further apart may be missed, which only makes resolution
    more conservative."""
    blocks: dict[tuple, list[str]] = defaultdict(list)
    for k in keys:
        n, count = len(k), len(_tokens(k))
        for half in {n // 2, (n - 1) // 2}:  # (n - 1) // 2: k may be the longer of the pair
            blocks[(count, "p", k[:half])].append(k)
        for half in {n - n // 2, (n - 1) - (n - 1) // 2}:
            blocks[(count, "s", k[n - half :])].append(k)
    pairs: set[tuple[str, str]] = set()
    for members in blocks.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if a != b and abs(len(a) - len(b)) <= max(len(a), len(b)) // 4:
                    pairs.add((min(a, b), max(a, b)))
    return pairs


def _near_identical(a: str, b: str, threshold: float) -> float | None:
    """The ratio of a and b when they are the same name up to small typos in long tokens."""
    if _DIGITS.findall(a) != _DIGITS.findall(b):  # "windows 10" / "windows 11"
        return None
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
        return None
    ratio = matcher.ratio()
    if ratio < threshold:
        return None
    # Token by token, so "john smith" / "joan smith" (ratio 0.9) differ at "john" / "joan" (0.75).
    for ta, tb in zip(_tokens(a), _tokens(b)):
        if ta != tb and difflib.SequenceMatcher(None, ta, tb, autojunk=False).ratio() < threshold:
            return None
    return ratio
