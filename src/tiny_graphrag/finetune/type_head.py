"""A type head beside a fine-tuned GLiNER: which of the data's types a span's words name, from a sentence encoder.

From a few hundred sentences of a new domain GLiNER learns where the names are, not which new type each is (it scores
every name ~0.35 for every new type), while a sentence encoder already knows that "Ustream" reads like a company. So
`models finetune` also fits a softmax regression over the encoder's embedding of each labelled span's words (and of
GLiNER's other finds, as "none"), and the head mixes its probability into GLiNER's scores: RESULTS.md, "A type head".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tiny_graphrag.backends.embed import Embedder
from tiny_graphrag.errors import ModelLoadError, require

HEAD_FILE, NONE = "type_head.npz", ""  # NONE: the class of spans that are no entity of the data
MIX, FLOOR, THRESHOLD, L2 = 0.5, 0.2, 0.3, 1 / 3  # the head's weight, GLiNER's floor, the kept score, the penalty
Found = tuple[int, int, str, float]  # start and end (characters), type, score


@dataclass(frozen=True)
class TypeHead:
    classes: tuple[str, ...]
    weight: np.ndarray  # classes x embedding dimension
    bias: np.ndarray
    embedder: Embedder

    @classmethod
    def fit(cls, spans: Sequence[str], types: Sequence[str], embedder: Embedder) -> TypeHead | None:
        """The head for labelled span words (NONE: no entity); None with fewer than two classes to tell apart."""
        if len(classes := tuple(sorted(set(types)))) < 2:
            return None
        torch = require("torch", "gliner", "the GLiNER type head")
        x, y = torch.from_numpy(embedder.embed(list(spans))), torch.tensor([classes.index(t) for t in types])
        w = torch.zeros((len(classes), x.shape[1]), requires_grad=True)
        b = torch.zeros(len(classes), requires_grad=True)
        opt = torch.optim.LBFGS([w, b], max_iter=500, line_search_fn="strong_wolfe")

        def loss() -> Any:  # scikit-learn's LogisticRegression(C=3): the summed loss, L2 on the weights only
            opt.zero_grad()
            value = torch.nn.functional.cross_entropy(x @ w.T + b, y, reduction="sum") + L2 / 2 * (w * w).sum()
            value.backward()
            return value

        opt.step(loss)
        return cls(classes, w.detach().numpy(), b.detach().numpy(), embedder)

    def save(self, folder: Path) -> None:
        named = np.array([self.embedder.name, self.embedder.fingerprint])
        np.savez(folder / HEAD_FILE, classes=np.array(self.classes), weight=self.weight, bias=self.bias, embedder=named)

    @classmethod
    def load(cls, folder: Path, models_dir: str | os.PathLike[str] | None = None) -> TypeHead | None:
        """The head saved in a GLiNER folder, or None when it has none."""
        if not (path := Path(folder) / HEAD_FILE).is_file():
            return None
        fix = (
            f"To fix: fine-tune the model again (`tiny-graphrag models finetune`) or delete {path} to use GLiNER alone"
        )
        try:
            with np.load(path, allow_pickle=False) as f:
                classes, weight, bias, (name, fingerprint) = f["classes"], f["weight"], f["bias"], f["embedder"]
        except Exception as exc:  # noqa: BLE001 - numpy raises many kinds for a damaged file
            raise ModelLoadError(f"{path} is unreadable ({exc}). {fix}") from exc
        if (embedder := Embedder(str(name), models_dir=models_dir)).fingerprint != fingerprint:
            raise ModelLoadError(
                f"{path} was fitted on another copy of the embedder {name} than {embedder.path}. {fix}"
            )
        return cls(tuple(str(c) for c in classes), weight, bias, embedder)

    def probabilities(self, spans: Sequence[str]) -> np.ndarray:
        at = {span: i for i, span in enumerate(dict.fromkeys(spans))}  # names repeat: each is embedded once
        logits = self.embedder.embed(list(at)) @ self.weight.T + self.bias
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True))[[at[span] for span in spans]]

    def find(
        self, model: Any, texts: Sequence[str], types: Sequence[str], threshold: float, batch: int
    ) -> list[list[Found]]:
        """GLiNER's entities of `types` in each text rescored with the head: the best non-overlapping spans scoring at
        least `threshold`. A span's score for a type mixes GLiNER's (every one above FLOOR) with the head's, lowered by
        the head's belief that it is none of the types asked; a type the head never saw keeps GLiNER's score (case is
        ignored, as by the encoders)."""
        raw = model.inference(
            list(texts), list(types), flat_ner=False, multi_label=True, threshold=FLOOR, batch_size=batch
        )
        scores: dict[tuple[int, int, int], dict[str, float]] = {}
        for i, ents in enumerate(raw):
            for e in ents:
                scores.setdefault((i, int(e["start"]), int(e["end"])), {})[str(e["label"])] = float(e["score"])
        at, found = {c.lower(): j for j, c in enumerate(self.classes)}, [list[Found]() for _ in texts]
        for (i, start, end), p in zip(scores, self.probabilities([texts[i][s:e] for i, s, e in scores])):
            gliner, head = scores[i, start, end], {t: float(p[at[t.lower()]]) for t in types if t.lower() in at}
            outside = 1 - sum(head.values())  # "none", and the types the head knows that were not asked
            mixed = {t: gliner.get(t, 0.0) for t in types} | {
                t: ((1 - MIX) * gliner.get(t, 0.0) + MIX * h) * (1 - MIX * outside) for t, h in head.items()
            }
            if mixed[best := max(mixed, key=mixed.__getitem__)] >= threshold:
                found[i].append((start, end, best, mixed[best]))
        return [non_overlapping(f) for f in found]


def gliner_entities(
    model: Any, head: TypeHead | None, texts: Sequence[str], types: Sequence[str], threshold: float, batch: int
) -> list[list[Found]]:
    """GLiNER's entities of `types` in each text (flat: no overlaps), rescored by `head` when there is one."""
    if head is not None:
        return head.find(model, texts, types, threshold, batch)
    raw = model.inference(list(texts), list(types), flat_ner=True, threshold=threshold, batch_size=batch)
    return [[(int(e["start"]), int(e["end"]), str(e["label"]), float(e["score"])) for e in ents] for ents in raw]


def non_overlapping(found: list[Found]) -> list[Found]:
    """The best-scored spans that overlap no better one (GLiNER's flat decoding), in text order."""
    kept: list[Found] = []
    for f in sorted(found, key=lambda f: -f[3]):
        if all(f[1] <= k[0] or f[0] >= k[1] for k in kept):
            kept.append(f)
    return sorted(kept)
