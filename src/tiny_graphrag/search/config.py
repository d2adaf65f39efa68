"""Search settings. Each default says where it comes from (GraphRAG's defaults or our measurements)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tiny_graphrag.errors import ConfigError


@dataclass(frozen=True)
class FusionConfig:
    """How the dense (embedding) and keyword (FTS5 BM25) chunk rankings are fused.

    "score": each ranking's scores min-max scaled, then weighted and summed (search/hybrid.py):
    a flat keyword ranking adds nothing and the dense order stands. "rrf": weighted reciprocal
    rank fusion, k = 60 as in Cormack et al. (2009). Default: score fusion with equal weights
    and a back-off from flat keyword rankings, chosen on hotpotqa100 and bench/data/musique (a
    set where BM25 is much weaker than dense retrieval) together, and measured on held-out
    halves of both (bench/retrieval_tuning.py; bench/RESULTS.md, "Retrieval on held-out halves
    of hotpotqa100 and MuSiQue").
    """

    method: str = "score"  # "score" (min-max score fusion) or "rrf" (weighted reciprocal rank fusion)
    k: float = 60.0  # RRF only
    dense_weight: float = 1.0
    keyword_weight: float = 1.0
    depth: int = 100  # how many chunks each ranking contributes before fusion
    # Scale the keyword weight by min(1, (s1 / s5 - 1) / backoff) per query (search/hybrid.py,
    # peak_weight): a flat BM25 ranking backs off to the dense order. None: a fixed weight.
    flat_keyword_backoff: float | None = 1.0

    def __post_init__(self) -> None:
        if self.method not in ("rrf", "score"):
            raise ConfigError(f"fusion method must be 'rrf' or 'score', got {self.method!r}")
        if self.k < 0:
            raise ConfigError(f"fusion k must be >= 0, got {self.k}")
        if self.dense_weight < 0 or self.keyword_weight < 0:
            raise ConfigError(
                f"fusion dense_weight and keyword_weight must be >= 0, got {self.dense_weight}, {self.keyword_weight}"
            )
        if self.depth < 1:
            raise ConfigError(f"fusion depth must be >= 1, got {self.depth}")
        if self.flat_keyword_backoff is not None and self.flat_keyword_backoff <= 0:
            raise ConfigError(f"fusion flat_keyword_backoff must be > 0 or None, got {self.flat_keyword_backoff}")


@dataclass(frozen=True)
class LocalConfig:
    # GraphRAG local search shares: text units 50%, community reports 15%, the rest (35%) for
    # entities and relationships; what the tables leave goes to text. Reports are off by default:
    # with the 0.5B reader, local answers from text alone (and relationships, which a
    # co-occurrence graph has none of) were right more often than with reports and the entity
    # table (bench/RESULTS.md, "Answers you can check": held out on A Christmas Carol); with a stronger reader,
    # community_share=0.15 and entity_table=True give GraphRAG's context.
    text_share: float = 0.5
    community_share: float = 0.0
    top_entities: int = 5  # linked entities kept as seeds
    max_entities: int = 40  # seeds + neighbours offered to the entity table
    # Query-to-entity cosine needed for an embedding link (MiniLM). Whole questions against entity
    # names score low; below this the links on hotpotqa100 were mostly wrong entities.
    min_similarity: float = 0.6
    # No keyword hit and no chunk above this cosine: no text is shown (NaiveConfig.min_similarity's
    # value and reason; kept apart so each mode's thresholds live in its own settings).
    text_min_similarity: float = 0.15
    # Personalized PageRank over entities and chunks (HippoRAG 2), seeded by the linked entities
    # (mass 1 in all; weight: query-entity cosine / sqrt(chunks mentioning the entity)) and the
    # `seed_chunks` best hybrid chunks (weight 1/rank, mass `passage_weight` in all). Chunks are
    # then ranked by PageRank mass, after the best `keep_text_top` hybrid chunks, plus
    # `prior_weight` times the fused text score (both scaled by their best). The values were
    # chosen by coordinate ascent on all of hotpotqa100 and bench/data/musique together (the
    # procedure is measured on held-out halves of both, on 2wiki30 and on bench/data/musique_b,
    # never tuned on: bench/RESULTS.md,
    # "Retrieval on held-out halves of hotpotqa100 and MuSiQue").
    damping: float = 0.7
    seed_chunks: int = 3
    passage_weight: float = 4.0
    seed_by: str = "similarity"  # "similarity" (query-entity cosine) or "link" (exact 1, else the cosine)
    keep_text_top: int = 0
    prior_weight: float = 0.0
    # Entities whose vectors are at least this alike are linked for the walk (HippoRAG's synonymy
    # edges, 0.8 there): spaCy's "US" and "United States" are different nodes. None: no links.
    synonym_similarity: float | None = 0.8
    # Links between entities that only share a sentence (the spaCy extractor's co-occurrence
    # relation, read from the index's manifest) count this much in the walk against typed
    # relations and mentions (1: as built). They repeat what the mention links say (both names
    # are in a chunk the walk reaches) and let a name mentioned beside many others pull the walk
    # away; 0 was chosen with the rest (typed relations keep their weight).
    cooccurrence_weight: float = 0.0
    # The entity table shows names, types and aliases (no extractor here writes descriptions): a
    # list of candidate answers without evidence, which the 0.5B reader took for the answer
    # ("Chicago" for where Obama studied law, "Chicago Bears" for his baseball team).
    entity_table: bool = False

    def __post_init__(self) -> None:
        if not (0 <= self.text_share <= 1 and 0 <= self.community_share <= 1):
            raise ConfigError("local text_share and community_share must be in [0, 1]")
        if self.text_share + self.community_share > 1:
            raise ConfigError(
                f"local text_share + community_share = {self.text_share + self.community_share} > 1: "
                "nothing would be left for entities and relationships"
            )
        if self.seed_by not in ("link", "similarity"):
            raise ConfigError(f"local seed_by must be 'link' or 'similarity', got {self.seed_by!r}")
        if self.passage_weight < 0 or self.prior_weight < 0 or self.seed_chunks < 0 or self.keep_text_top < 0:
            raise ConfigError("local passage_weight, prior_weight, seed_chunks and keep_text_top must be >= 0")
        if self.cooccurrence_weight < 0:
            raise ConfigError(f"local cooccurrence_weight must be >= 0, got {self.cooccurrence_weight}")
        if self.synonym_similarity is not None and not 0 < self.synonym_similarity <= 1:
            raise ConfigError(
                f"local synonym_similarity must be a cosine in (0, 1] or None, got {self.synonym_similarity}"
            )
        if not 0 < self.damping < 1:
            raise ConfigError(f"local damping must be in (0, 1), got {self.damping}")


@dataclass(frozen=True)
class GlobalConfig:
    # Which reports are mapped. "dynamic" (selection.py): from the root level down, the reports
    # nearest the question (an irrelevant parent rules out its children), best first, within
    # `dynamic_map_calls` map calls and `dynamic_share` of a whole level's text; `level` is then
    # the deepest level it may descend to. "level": every report of one level (`level`, or the
    # deepest within `max_map_chunks`). Chosen on the tune half of bench/data/global_questions.json
    # (bench/RESULTS.md, "Dynamic community selection").
    selection: str = "dynamic"
    dynamic_map_calls: int = 3
    dynamic_share: float = 0.3
    dynamic_cutoff: float = 0.2  # relevance (0: the median report's score, 1: the best's) to keep or descend
    level: int | None = None  # None: dynamic, every level; "level", the deepest within max_map_chunks
    map_chunk_tokens: int = 1500  # report text per map call (GraphRAG: 8k with 16k+ windows; ours are 4k)
    max_map_chunks: int = 8  # level choice: the deepest level needing at most this many map calls
    map_max_tokens: int = 200  # output tokens per map call: ids and scores of at most max_points findings
    reduce_max_tokens: int = 500
    max_points: int = 5  # key points per map answer (schema maxItems)
    shuffle_seed: int = 0  # GraphRAG shuffles reports before packing so no chunk is all one topic
    # What is mapped: "reports" (community reports), "tree" (the RAPTOR tree's summaries, the top
    # layer as level 0), or "auto": the reports, else the tree's summaries when the index has none.
    source: str = "auto"
    # A point's importance: (1 - w) x the map model's score (0 for a finding it did not choose)
    # + w x the point's query similarity, from the candidates' median (0) to the best (1)
    # (search/grounding.py), since a 0.5B map model's choices and scores did not tell relevant
    # findings from irrelevant ones. Points under `point_cutoff` x the best point's importance do
    # not reach the reduce. relevance_weight=0, point_cutoff=0 is GraphRAG's rule: the model's
    # chosen findings by its score, score-0 points dropped. Chosen on the demo's question
    # (bench/RESULTS.md, "Grounded map points" and "Answers you can check").
    relevance_weight: float = 0.75
    point_cutoff: float = 0.6
    # Grounded (relevance_weight > 0), a question whose nearest finding has a lower query cosine,
    # and none of whose points the map model scored above 0, is answered "no relevant
    # information" without a reduce call. MiniLM's scale: off-topic questions ("the boiling point
    # of mercury?") reached 0.04-0.08, whole-corpus ones ("What are the main themes?") 0.21-0.24
    # on the demo's article and A Christmas Carol (bench/RESULTS.md).
    min_similarity: float = 0.15

    def __post_init__(self) -> None:
        if self.selection not in ("dynamic", "level"):
            raise ConfigError(f"global search selection must be 'dynamic' or 'level', got {self.selection!r}")
        if (
            isinstance(self.dynamic_map_calls, bool)
            or not isinstance(self.dynamic_map_calls, int)
            or self.dynamic_map_calls < 1
        ):
            raise ConfigError(f"global dynamic_map_calls must be an integer >= 1, got {self.dynamic_map_calls!r}")
        if not 0 < self.dynamic_share <= 1:
            raise ConfigError(
                f"global dynamic_share must be in (0, 1] (a share of a level's text), got {self.dynamic_share}"
            )
        if not 0 <= self.dynamic_cutoff <= 1:
            raise ConfigError(f"global dynamic_cutoff must be in [0, 1], got {self.dynamic_cutoff}")
        if self.source not in ("auto", "reports", "tree"):
            raise ConfigError(f"global search source must be 'auto', 'reports' or 'tree', got {self.source!r}")
        if not 0 <= self.relevance_weight <= 1:
            raise ConfigError(f"global relevance_weight must be in [0, 1], got {self.relevance_weight}")
        if not -1 <= self.min_similarity <= 1:
            raise ConfigError(f"global min_similarity must be a cosine in [-1, 1], got {self.min_similarity}")
        if not 0 <= self.point_cutoff <= 1:
            raise ConfigError(
                f"global point_cutoff must be in [0, 1] (a share of the best point's), got {self.point_cutoff}"
            )


@dataclass(frozen=True)
class NaiveConfig:
    top_chunks: int = 20  # candidates packed until the budget is full
    # No keyword hit and no chunk above this cosine: nothing in the index is relevant, so the
    # answer says so without a model call (unrelated texts score about 0-0.15 with MiniLM).
    min_similarity: float = 0.15


@dataclass(frozen=True)
class TreeSearchConfig:
    """RAPTOR tree search. "collapsed" ranks every node of every layer; "traversal" keeps the
    `top_k` best children at each layer from the top down (RAPTOR's defaults: collapsed, top_k 5)."""

    strategy: str = "collapsed"
    top_k: int = 5
    # RAPTOR's best collapsed setting was ~2,000 tokens of context; a smaller n_ctx caps it.
    context_tokens: int = 2000
    # The best node under this cosine: nothing is relevant, no answer call (NaiveConfig.min_similarity's value).
    min_similarity: float = 0.15

    def __post_init__(self) -> None:
        if self.strategy not in ("collapsed", "traversal"):
            raise ConfigError(f"tree strategy must be 'collapsed' or 'traversal', got {self.strategy!r}")
        if self.top_k < 1 or self.context_tokens < 1:
            raise ConfigError("tree top_k and context_tokens must be >= 1")


@dataclass(frozen=True)
class SearchConfig:
    fusion: FusionConfig = field(default_factory=FusionConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    global_: GlobalConfig = field(default_factory=GlobalConfig)
    naive: NaiveConfig = field(default_factory=NaiveConfig)
    tree: TreeSearchConfig = field(default_factory=TreeSearchConfig)
    answer_max_tokens: int = 500  # the final answer's output tokens
    context_tokens: int | None = None  # None: what fits in n_ctx after the prompt and the answer
    n_ctx: int | None = None  # None: the LLM's window, else the index's LLM config, else 4096
