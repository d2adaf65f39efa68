"""Search settings. Each default says where it comes from (GraphRAG's defaults or our measurements)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tiny_graphrag.config import Checked, allowed
from tiny_graphrag.errors import ConfigError


@dataclass(frozen=True)
class FusionConfig(Checked):
    """How the dense (embedding) and keyword (FTS5 BM25) chunk rankings are fused.

    "score": each ranking's scores min-max scaled, then weighted and summed (search/hybrid.py): a flat keyword ranking
    adds nothing and the dense order stands. "rrf": weighted reciprocal rank fusion, k = 60 as in Cormack et al. (2009).
    Default: score fusion with equal weights and a back-off from flat keyword rankings, chosen on hotpotqa100 and
    bench/data/musique (a set where BM25 is much weaker than dense retrieval) together, and measured on held-out halves
    of both (bench/retrieval_tuning.py; bench/RESULTS.md, "Retrieval on held-out halves of hotpotqa100 and MuSiQue")."""

    # "score" (min-max score fusion) or "rrf" (weighted reciprocal rank fusion)
    method: str = allowed("score", ("rrf", "score"))
    k: float = allowed(60.0, ">= 0")  # RRF only
    dense_weight: float = allowed(1.0, ">= 0")
    keyword_weight: float = allowed(1.0, ">= 0")
    depth: int = allowed(100, ">= 1")  # how many chunks each ranking contributes before fusion
    # Scale the keyword weight by min(1, (s1 / s5 - 1) / backoff) per query (search/hybrid.py,
    # peak_weight): a flat BM25 ranking backs off to the dense order. None: a fixed weight.
    flat_keyword_backoff: float | None = allowed(1.0, "> 0 or None")


@dataclass(frozen=True)
class LocalConfig(Checked):
    # GraphRAG local search shares: text units 50%, community reports 15%, the rest (35%) for entities and
    # relationships; what the tables leave goes to text. Reports are off by default: with the 0.5B reader, local answers
    # from text alone (and relationships, which a co-occurrence graph has none of) were right more often than with
    # reports and the entity table (bench/RESULTS.md, "Answers you can check": held out on A Christmas Carol); with a
    # stronger reader, community_share=0.15 and entity_table=True give GraphRAG's context.
    text_share: float = allowed(0.5, "[0, 1]")
    community_share: float = allowed(0.0, "[0, 1]")
    top_entities: int = allowed(5, ">= 1")  # linked entities kept as seeds
    max_entities: int = allowed(40, ">= 1")  # seeds + neighbours offered to the entity table
    # Query-to-entity cosine needed for an embedding link (MiniLM). Whole questions against entity
    # names score low; below this the links on hotpotqa100 were mostly wrong entities.
    min_similarity: float = allowed(0.6, "[-1, 1]")  # a cosine
    # No keyword hit and no chunk above this cosine: no text is shown (NaiveConfig.min_similarity's
    # value and reason; kept apart so each mode's thresholds live in its own settings).
    text_min_similarity: float = allowed(0.15, "[-1, 1]")
    # Personalized PageRank over entities and chunks (HippoRAG 2), seeded by the linked entities (mass 1 in all; weight:
    # query-entity cosine / sqrt(chunks mentioning the entity)) and the `seed_chunks` best hybrid chunks (weight 1/rank,
    # mass `passage_weight` in all). Chunks are then ranked by PageRank mass, after the best `keep_text_top` hybrid
    # chunks, plus `prior_weight` times the fused text score (both scaled by their best). The values were chosen by
    # coordinate ascent on all of hotpotqa100 and bench/data/musique together (the procedure is measured on held-out
    # halves of both, on 2wiki30 and on bench/data/musique_b, never tuned on: bench/RESULTS.md,
    # "Retrieval on held-out halves of hotpotqa100 and MuSiQue").
    damping: float = allowed(0.7, "(0, 1)")
    seed_chunks: int = allowed(3, ">= 0")
    passage_weight: float = allowed(4.0, ">= 0")
    # "similarity" (query-entity cosine) or "link" (exact 1, else the cosine)
    seed_by: str = allowed("similarity", ("link", "similarity"))
    keep_text_top: int = allowed(0, ">= 0")
    prior_weight: float = allowed(0.0, ">= 0")
    # Entities whose vectors are at least this alike are linked for the walk (HippoRAG's synonymy
    # edges, 0.8 there): spaCy's "US" and "United States" are different nodes. None: no links.
    synonym_similarity: float | None = allowed(0.8, "(0, 1] or None")  # a cosine
    # Links between entities that only share a sentence (the spaCy extractor's co-occurrence relation, read from the
    # index's manifest) count this much in the walk against typed relations and mentions (1: as built). They repeat what
    # the mention links say (both names are in a chunk the walk reaches) and let a name mentioned beside many others
    # pull the walk away; 0 was chosen with the rest (typed relations keep their weight).
    cooccurrence_weight: float = allowed(0.0, ">= 0")
    # The entity table shows names, types and aliases (no extractor here writes descriptions): a
    # list of candidate answers without evidence, which the 0.5B reader took for the answer
    # ("Chicago" for where Obama studied law, "Chicago Bears" for his baseball team).
    entity_table: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.text_share + self.community_share > 1:
            raise ConfigError(
                f"LocalConfig.text_share + community_share must be <= 1, got "
                f"{self.text_share + self.community_share}: nothing would be left for entities and relationships"
            )


@dataclass(frozen=True)
class GlobalConfig(Checked):
    # Which reports are mapped (selection.py): from the root level down, the reports nearest the
    # question (an irrelevant parent rules out its children), best first, within
    # `dynamic_map_calls` map calls and `dynamic_share` of a whole level's text. Chosen on the tune
    # half of bench/data/global_questions.json (bench/RESULTS.md, "Dynamic community selection").
    dynamic_map_calls: int = allowed(3, ">= 1")
    dynamic_share: float = allowed(0.3, "(0, 1]")  # a share of a level's text
    # relevance (0: the median report's score, 1: the best's) to keep or descend
    dynamic_cutoff: float = allowed(0.2, "[0, 1]")
    level: int | None = allowed(None, ">= 0 or None")  # the deepest level the selection may reach (None: all)
    map_chunk_tokens: int = allowed(1500, ">= 1")  # report text per map call (GraphRAG: 8k; our windows are 4k)
    map_max_tokens: int = allowed(200, ">= 1")  # output per map call: ids, scores of <= max_points findings
    reduce_max_tokens: int = allowed(700, ">= 1")
    max_points: int = allowed(5, ">= 1")  # key points per map answer (schema maxItems)
    shuffle_seed: int = 0  # GraphRAG shuffles reports before packing so no chunk is all one topic
    # What is mapped: "reports" (community reports), "tree" (the RAPTOR tree's summaries, the top
    # layer as level 0), or "auto": the reports, else the tree's summaries when the index has none.
    source: str = allowed("auto", ("auto", "reports", "tree"))
    # A question no report (selection.py) or, for a small reader, no sentence (global_answer.py) is this near gets "no
    # relevant information" without a model call. MiniLM's scale: off-topic questions ("the boiling point of mercury?")
    # reached 0.04-0.08, whole-corpus ones ("What are the main themes?") 0.21-0.24 on the demo's texts (RESULTS.md).
    min_similarity: float = allowed(0.15, "[-1, 1]")  # a cosine
    # A small reader's answer (global_answer.py) quotes the sentences of the question's nearest `chunks` chunks, best by
    # cosine - length_penalty x ln(tokens) first, within reduce_max_tokens. Chosen on global_questions.json's tune half.
    chunks: int = allowed(15, ">= 1")
    length_penalty: float = allowed(0.15, ">= 0")


@dataclass(frozen=True)
class NaiveConfig(Checked):
    top_chunks: int = allowed(20, ">= 1")  # candidates packed until the budget is full
    # No keyword hit and no chunk above this cosine: nothing in the index is relevant, so the
    # answer says so without a model call (unrelated texts score about 0-0.15 with MiniLM).
    min_similarity: float = allowed(0.15, "[-1, 1]")  # a cosine


@dataclass(frozen=True)
class TreeSearchConfig(Checked):
    """RAPTOR tree search. "collapsed" ranks every node of every layer; "traversal" keeps the
    `top_k` best children at each layer from the top down (RAPTOR's defaults: collapsed, top_k 5)."""

    strategy: str = allowed("collapsed", ("collapsed", "traversal"))
    top_k: int = allowed(5, ">= 1")
    # RAPTOR's best collapsed setting was ~2,000 tokens of context; a smaller n_ctx caps it.
    context_tokens: int = allowed(2000, ">= 1")
    # The best node under this cosine: nothing is relevant, no answer call (NaiveConfig.min_similarity's value).
    min_similarity: float = allowed(0.15, "[-1, 1]")  # a cosine


# A model under this many parameters reads the small reader's evidence (SearchConfig.reader "auto"):
# the offline 0.5B reader reached a quarter of its gold-passage F1 from whole contexts (bench/RESULTS.md).
SMALL_READER_PARAMS = 4_000_000_000


@dataclass(frozen=True)
class EvidenceConfig(Checked):
    """What a small reader is shown (search/evidence.py): the best sentences of the best `passages`
    retrieved passages within `tokens`. Chosen on the tune halves of bench's multi-hop sets
    (bench/RESULTS.md, "Answers a small reader gets right")."""

    passages: int = allowed(4, ">= 1")  # retrieved passages whose sentences compete
    tokens: int = allowed(600, ">= 64")  # the budget of the kept sentences (the reader's own tokens)
    lexical_weight: float = allowed(0.3, ">= 0")  # x the share of the question's words a sentence holds
    prior_weight: float = allowed(0.1, ">= 0")  # x the passage's place in the retrieval ranking (1 best .. 0)
    second_hop: bool = True  # score again against the question joined with each of its best sentences
    hops: int = allowed(3, ">= 1")  # how many of its best sentences each make a second-hop question
    hop_weight: float = allowed(1.0, "[0, 1]")  # the second hop's score counts this much
    hop_passages: int = allowed(5, ">= 0")  # passages each joined question may add
    min_share: float = allowed(0.5, "[0, 1]")  # sentences under this share of the best one's score are not kept
    # no sentence scores this much: nothing found bears on the question (an unrelated sentence
    # scores about its passage prior: a MiniLM cosine near 0.1 and no word of the question)
    min_score: float = allowed(0.2, ">= 0")
    # a factoid answer that only repeats the question's names: this many answers sampled from the same prompt
    # (temperature SAMPLE_TEMPERATURE, seeds 1..n), the most common that names something else kept; 0: refused
    echo_samples: int = allowed(4, ">= 0")


@dataclass(frozen=True)
class SearchConfig(Checked):
    fusion: FusionConfig = field(default_factory=FusionConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    global_: GlobalConfig = field(default_factory=GlobalConfig)
    naive: NaiveConfig = field(default_factory=NaiveConfig)
    tree: TreeSearchConfig = field(default_factory=TreeSearchConfig)
    evidence: EvidenceConfig = field(default_factory=EvidenceConfig)
    # How local, naive and tree search answer. "small": the best sentences within
    # `evidence.tokens`, an answer-only call, citations attached by matching the answer to them
    # (reader.py); "large": GraphRAG's context tables filling the window, the model writing the
    # answer and its citations; "auto": "small" for a model under SMALL_READER_PARAMS parameters.
    reader: str = allowed("auto", ("auto", "large", "small"))
    answer_max_tokens: int = allowed(500, ">= 1")  # the final answer's output tokens
    context_tokens: int | None = allowed(None, ">= 64 or None")  # None: what fits in n_ctx after prompt and answer
    n_ctx: int | None = allowed(None, ">= 256 or None")  # None: the LLM's window, else the index's, else 4096
