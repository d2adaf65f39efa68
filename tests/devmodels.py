"""Random-weight GLiNER and GLiREL models built offline, for tests and benchmarks.

No GLiNER/GLiREL weights can be downloaded on air-gapped machines, but both libraries load any
folder they saved themselves. We build a backbone from a transformers config and a WordPiece
tokenizer from a fixed vocabulary list (the `tokenizers` trainer orders its vocabulary
differently from run to run, which changed predictions), wrap it in GLiNER / GLiREL, and save.
With the same seed the files and predictions are identical from run to run.

`build_tiny_*` make ~100 kB models for unit tests; `build_gliner` / `build_glirel` take any
backbone config (e.g. DeBERTa-v3-base/-large sizes) so speed can be measured without weights.
"""

from __future__ import annotations

import argparse
import logging
import random
import string
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import os

    from transformers import PretrainedConfig

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_COMMON_WORDS = (
    "the of and to in a is was for on with as by at from that it his her he she they an be "
    "born lives works studied founded president company city university married near"
).split()


def fixed_vocab(size: int | None = None) -> list[str]:
    """A deterministic WordPiece vocabulary: specials, characters, `##` pieces, common words.

    With `size`, padded with synthetic tokens up to that many entries (the content does not
    matter for speed measurements, only the embedding matrix size).
    """
    chars = string.ascii_letters + string.digits
    vocab = SPECIAL_TOKENS + list(chars + string.punctuation) + ["##" + c for c in chars] + _COMMON_WORDS
    vocab = list(dict.fromkeys(vocab))
    if size is not None:
        if size < len(vocab):
            raise ValueError(f"vocab_size must be at least {len(vocab)}, got {size}")
        vocab += [f"tok{i}" for i in range(size - len(vocab))]
    return vocab


def build_tokenizer(vocab: Sequence[str], model_max_length: int = 512) -> Any:
    """A cased BERT WordPiece tokenizer over exactly `vocab`, built with `tokenizers`."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast

    ids = {w: i for i, w in enumerate(vocab)}
    tok = Tokenizer(models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece()
    return BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        do_lower_case=False,
        model_max_length=model_max_length,
        # DeBERTa-style backbones have no token types; GLiNER/GLiREL only pass these two.
        model_input_names=["input_ids", "attention_mask"],
    )


def tiny_backbone_config(vocab_size: int) -> PretrainedConfig:
    """A 2-layer BERT with hidden size 32."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )


def _save_backbone(out: Path, backbone_config: PretrainedConfig, vocab: Sequence[str]) -> Path:
    """A random-weight backbone + tokenizer saved in `out` (seeded by the caller)."""
    from transformers import AutoModel

    backbone_config.vocab_size = len(vocab)
    out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(vocab, backbone_config.max_position_embeddings).save_pretrained(out)
    AutoModel.from_config(backbone_config).save_pretrained(out)
    return out


def build_gliner(
    out_dir: str | os.PathLike[str],
    backbone_config: PretrainedConfig,
    *,
    vocab_size: int | None = None,
    vocab: Sequence[str] | None = None,
    seed: int = 0,
    hidden_size: int | None = None,
    max_width: int = 12,
) -> Path:
    """A random-weight GLiNER (span model) on a backbone of the given config, saved to out_dir.

    The tokenizer's vocabulary is `vocab` when given (e.g. a realistic WordPiece list, so that
    sequence lengths match a trained model's), else the character-level `fixed_vocab(vocab_size)`.

    The saved folder is self-contained (tokenizer and encoder config inside), so it loads with
    `GLiNER.from_pretrained(out_dir, local_files_only=True)` from anywhere, also after a move.
    """
    import torch
    from gliner import GLiNER, GLiNERConfig

    out = Path(out_dir)
    vocab = list(vocab) if vocab is not None else fixed_vocab(vocab_size)
    backbone_config.vocab_size = len(vocab)
    out.mkdir(parents=True, exist_ok=True)
    # GLiNER builds its encoder from encoder_config (random weights), so only the tokenizer is
    # needed on disk; it goes where the finished model keeps its own copy.
    build_tokenizer(vocab, backbone_config.max_position_embeddings).save_pretrained(out)
    with torch.random.fork_rng(devices=[]):
        config = GLiNERConfig(
            model_name=str(out.resolve()),
            hidden_size=hidden_size or backbone_config.hidden_size,
            max_width=max_width,
            dropout=0.1,
            encoder_config=backbone_config.to_dict(),
        )
        torch.manual_seed(seed)
        model = GLiNER._get_gliner_class(config).load_from_config(
            config, backbone_from_pretrained=False, local_files_only=True
        )
    model.save_pretrained(out)
    log.info("built random-weight GLiNER in %s", out)
    return out


def build_glirel(
    out_dir: str | os.PathLike[str],
    backbone_config: PretrainedConfig,
    *,
    vocab_size: int | None = None,
    vocab: Sequence[str] | None = None,
    seed: int = 0,
    hidden_size: int | None = None,
) -> Path:
    """A random-weight GLiREL on a backbone of the given config, saved to out_dir (`vocab` as in build_gliner).

    GLiREL reloads its backbone from `model_name` in glirel_config.json: we save the backbone
    in `out_dir/backbone` and record its absolute path. If the folder moves,
    tiny_graphrag's loader still finds `backbone/` next to the weights.
    """
    import torch
    from glirel import GLiREL

    out = Path(out_dir)
    vocab = list(vocab) if vocab is not None else fixed_vocab(vocab_size)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        backbone = _save_backbone(out / "backbone", backbone_config, vocab)
        # Field values follow the published glirel-large-v0 training config.
        config = argparse.Namespace(
            model_name=str(backbone.resolve()),
            fine_tune=True,
            subtoken_pooling="first",
            hidden_size=hidden_size or backbone_config.hidden_size,
            scorer="dot",
            rel_mode="marker",
            span_marker_mode="markerv1",
            refine_prompt=False,
            refine_relation=False,
            ffn_mul=4,
            dropout=0.1,
            loss_func="binary_cross_entropy_loss",
            alpha=0.3,
            gamma=3,
            label_embed_strategy="both",
            coref_classifier=False,
            coref_loss_weight=10.0,
            coreference_label="SELF",
            num_train_rel_types=25,
            random_drop=True,
            max_len=512,
            max_width=12,
            max_entity_pair_distance=None,
            fixed_relation_types=True,
            positive_weight=2.0,
            negative_weight=1.0,
            max_types=25,
            shuffle_types=True,
            max_neg_type_ratio=1,
            add_entity_markers=False,
        )
        torch.manual_seed(seed)
        model = GLiREL(config)
    model.save_pretrained(out)
    log.info("built random-weight GLiREL in %s", out)
    return out


def build_tiny_gliner(out_dir: str | os.PathLike[str], seed: int = 0, train_steps: int = 0) -> Path:
    """A ~100 kB GLiNER (2-layer BERT, hidden 32), optionally trained on template sentences.

    Untrained, it finds arbitrary spans with scores near 0.5. `train_steps` of a few hundred
    (about a minute on two free cores) makes it tag obvious Person/Organization/Location names.
    """
    out = build_gliner(out_dir, tiny_backbone_config(len(fixed_vocab())), seed=seed, hidden_size=32)
    if train_steps > 0:
        _train_on_templates(out, steps=train_steps, seed=seed)
    return out


def build_tiny_glirel(out_dir: str | os.PathLike[str], seed: int = 0) -> Path:
    """A ~100 kB random-weight GLiREL (2-layer BERT, hidden 32)."""
    return build_glirel(out_dir, tiny_backbone_config(len(fixed_vocab())), seed=seed, hidden_size=32)


def build_tiny_encoder(out_dir: str | os.PathLike[str], seed: int = 0) -> Path:
    """A random-weight 2-layer BERT (hidden 32) and its tokenizer: a plain transformers encoder folder,
    the kind the starter recipe builds GLiNER and GLiREL on (their own layers start random)."""
    import torch

    torch.manual_seed(seed)
    return _save_backbone(Path(out_dir), tiny_backbone_config(len(fixed_vocab())), fixed_vocab())


# ---- optional training of the tiny GLiNER -------------------------------------------------
_PEOPLE = [
    "Barack Obama",
    "Angela Merkel",
    "Marie Curie",
    "John Smith",
    "Ada Lovelace",
    "Alan Turing",
    "Maria Garcia",
    "Li Wei",
]
_ORGS = ["Harvard", "Google", "Siemens", "Oxford University", "Acme Corp", "Red Cross", "NASA"]
_PLACES = ["Hawaii", "Berlin", "Paris", "London", "Chicago", "Kenya", "Tokyo"]
_TEMPLATES = [
    "{p} works at {o} in {l} .",
    "{p} was born in {l} .",
    "{p} studied at {o} .",
    "{o} is based in {l} .",
    "{p} founded {o} .",
    "In {l} , {p} met {q} .",
]


def _template_example(rng: random.Random) -> dict[str, Any]:
    fill = {
        "{p}": ("Person", rng.choice(_PEOPLE)),
        "{q}": ("Person", rng.choice(_PEOPLE)),
        "{o}": ("Organization", rng.choice(_ORGS)),
        "{l}": ("Location", rng.choice(_PLACES)),
    }
    tokens: list[str] = []
    ner: list[list[Any]] = []
    for word in rng.choice(_TEMPLATES).split():
        if word in fill:
            label, value = fill[word]
            start = len(tokens)
            tokens += value.split()
            ner.append([start, len(tokens) - 1, label])
        else:
            tokens.append(word)
    return {"tokenized_text": tokens, "ner": ner}


def _train_on_templates(path: Path, *, steps: int, seed: int, batch_size: int = 8, lr: float = 3e-3) -> None:
    """A few optimizer steps of GLiNER's own loss on template sentences; saves in place."""
    import torch
    from gliner import GLiNER

    rng = random.Random(seed)
    # GLiNER's collator samples negative types with the global `random` module: seed it for
    # reproducible training and restore the caller's state afterwards.
    saved_random = random.getstate()
    random.seed(seed)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = GLiNER.from_pretrained(str(path), local_files_only=True)
            collate = model._create_data_collator()
            optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
            model.train()
            for step in range(steps):
                batch = collate([_template_example(rng) for _ in range(batch_size)])
                loss = model(**batch).loss
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if step % 50 == 0:
                    log.debug("tiny GLiNER training step %d loss %.3f", step, loss.item())
            model.eval()
    finally:
        random.setstate(saved_random)
    model.save_pretrained(path)
