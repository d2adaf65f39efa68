"""The GLiNER type head (finetune/type_head.py): its fit against scikit-learn's, its mixing and decoding, a real
fine-tuning run that writes it and the extractor that uses it, and damaged heads."""

from __future__ import annotations

import numpy as np
import pytest
from _tiny_models import tiny_config

from tiny_graphrag.errors import ModelLoadError
from tiny_graphrag.finetune.type_head import HEAD_FILE, MIX, NONE, THRESHOLD, TypeHead, non_overlapping

NAMES = {
    "company": ["Google", "Siemens", "Acme Corp", "Microsoft", "Toyota", "Nestle", "Ustream", "Samsung"],
    "person": ["Marie Curie", "John Smith", "Ada Lovelace", "Alan Turing", "Justin Bieber", "Lindsay Lohan"],
    "location": ["Berlin", "Paris", "Tokyo", "Chicago", "Hawaii", "London", "Nairobi"],
    NONE: ["tonight", "lol", "the best", "very happy", "RT"],
}


def test_the_fit_is_scikit_learns_logistic_regression(embedder):
    """The head is a multinomial logistic regression with scikit-learn's C=3 penalty, fitted by torch's L-BFGS:
    the two give the same probabilities on names neither saw."""
    linear_model = pytest.importorskip("sklearn.linear_model")
    spans = [s for names in NAMES.values() for s in names]
    types = [t for t, names in NAMES.items() for _ in names]
    head = TypeHead.fit(spans, types, embedder)
    assert head is not None and head.classes == tuple(sorted(NAMES))
    reference = linear_model.LogisticRegression(C=3.0, tol=1e-10, max_iter=10_000).fit(embedder.embed(spans), types)
    unseen = ["Angela Merkel", "Madrid", "Nokia", "lmao", "Oxford"]
    assert list(reference.classes_) == list(head.classes)
    np.testing.assert_allclose(head.probabilities(unseen), reference.predict_proba(embedder.embed(unseen)), atol=2e-3)


def test_one_class_is_no_head(embedder):
    assert TypeHead.fit(["Berlin", "Paris"], ["location", "location"], embedder) is None


class Scores:
    """GLiNER's inference as the head asks it: every (span, type) at or above the floor."""

    def __init__(self, found: list[list[tuple[int, int, str, float]]]):
        self.found, self.asked = found, None

    def inference(self, texts, labels, *, flat_ner, multi_label, threshold, batch_size):
        assert (flat_ner, multi_label) == (False, True)
        self.asked = list(labels)
        return [
            [
                {"start": s, "end": e, "label": lab, "score": sc}
                for s, e, lab, sc in f
                if sc >= threshold and lab in labels
            ]
            for f in self.found
        ]


class Known:
    """An embedder that knows each span's class (a unit vector per class)."""

    def __init__(self, classes: tuple[str, ...], of: dict[str, str]):
        self.classes, self.of = classes, of

    def embed(self, texts):
        return np.stack([np.eye(len(self.classes))[self.classes.index(self.of[t])] for t in texts]).astype(np.float32)


def test_the_head_retypes_spans_drops_what_it_calls_none_and_keeps_the_best_of_overlaps():
    classes = ("", "company", "person")
    text = "RT @LilTwist on Ustream tonight"
    of = {"Ustream": "company", "LilTwist": "person", "@LilTwist": "person", "tonight": NONE}
    head = TypeHead(classes, np.eye(3, dtype=np.float32) * 20, np.zeros(3, dtype=np.float32), Known(classes, of))
    found = [(16, 23, "person", 0.36), (16, 23, "company", 0.3), (3, 12, "person", 0.6), (4, 12, "person", 0.7)]
    gliner = Scores([[*found, (24, 31, "person", 0.4), (24, 31, "location", 0.45)]])
    kept = head.find(gliner, [text], ["company", "person"], THRESHOLD, 8)[0]
    assert gliner.asked == ["company", "person"]
    # Ustream: GLiNER leans to person, the head is sure of company; "tonight" is none to the head; of the overlapping
    # "@LilTwist" and "LilTwist" the better mixed score stays
    assert [(text[s:e], t) for s, e, t, _ in kept] == [("LilTwist", "person"), ("Ustream", "company")]
    assert kept[1][3] == pytest.approx((1 - MIX) * 0.3 + MIX * 1.0, abs=1e-6)
    # a type the head knows but that was not asked counts as none: asked only person, Ustream is no person
    assert [text[s:e] for s, e, _, _ in head.find(gliner, [text], ["person"], THRESHOLD, 8)[0]] == ["LilTwist"]
    # a type the head never saw keeps GLiNER's own score ("tonight" as a location, 0.45)
    asked = ["company", "person", "location"]
    assert (24, 31, "location", 0.45) in head.find(gliner, [text], asked, THRESHOLD, 8)[0]
    # the head's types match the schema's whatever their case
    upper = TypeHead(("", "Company", "Person"), head.weight, head.bias, Known(("", "company", "person"), of))
    assert upper.find(gliner, [text], ["company", "person"], THRESHOLD, 8)[0] == kept


def test_non_overlapping_is_greedy_by_score_in_text_order():
    found = [(0, 5, "a", 0.4), (3, 8, "b", 0.9), (8, 10, "c", 0.5), (9, 12, "d", 0.6)]
    assert non_overlapping(found) == [(3, 8, "b", 0.9), (9, 12, "d", 0.6)]


pytest.importorskip("gliner")


@pytest.fixture(scope="module")
def headed(tiny_models_dir, tmp_path_factory):
    """A tiny GLiNER fine-tuned on template sentences, with its type head."""
    from test_finetune_train import template_file

    from tiny_graphrag.finetune.data import read_examples
    from tiny_graphrag.finetune.gliner import finetune_gliner
    from tiny_graphrag.finetune.loop import TrainSettings

    d = tmp_path_factory.mktemp("headed")
    train = read_examples(template_file(d / "train.jsonl", 120, 1))
    for name, head in (("g", True), ("plain", False)):
        settings = TrainSettings(max_steps=60, lr=3e-3, head_lr=3e-3, freeze_layers=0, type_head=head, progress=False)
        finetune_gliner(tiny_models_dir / "tiny-gliner", train, None, d / name, settings)
    return d


@pytest.mark.slow
def test_finetuning_writes_a_head_that_evaluation_and_the_extractor_both_use(headed, tiny_models_dir):
    from test_finetune_train import template_file

    from tiny_graphrag.extract.gliner import GlinerGlirelExtractor
    from tiny_graphrag.finetune.data import char_to_words, read_examples
    from tiny_graphrag.finetune.gliner import WithHead, evaluate_gliner, load_scored, predict
    from tiny_graphrag.finetune.labels import recorded_threshold
    from tiny_graphrag.schema import Schema

    folder = headed / "g"
    assert (folder / HEAD_FILE).is_file() and not (headed / "plain" / HEAD_FILE).exists()
    assert recorded_threshold(folder) == THRESHOLD
    scored = load_scored(folder)
    assert isinstance(scored, WithHead) and set(scored.head.classes) >= {"location", "organization", "person"}
    assert not isinstance(load_scored(headed / "plain"), WithHead)
    test = read_examples(template_file(headed / "test.jsonl", 12, 3))
    # 60 steps leave the tiny GLiNER unsure which type a name is; the head, from the names' embeddings, is not
    assert evaluate_gliner(folder, test).f1 > evaluate_gliner(headed / "plain", test).f1 + 0.2
    types = ["location", "organization", "person"]
    want = [[(s.first, s.last, s.label) for s in ex.entities] for ex in predict(scored, test, types, THRESHOLD)]
    assert any(want)
    schema = Schema(entity_types=tuple(types), name="t")
    ex = GlinerGlirelExtractor(schema, tiny_config(gliner_model=str(folder)), tiny_models_dir)
    assert ex.entity_threshold == THRESHOLD and ex.describe()["gliner_model"]["entity_threshold"] == THRESHOLD
    texts = [e.joined()[0] for e in test]
    for e, mentions, expected in zip(test, ex.entities(texts), want):
        offs = e.joined()[1]
        assert sorted((*char_to_words(offs, m.start, m.end), m.type) for m in mentions) == sorted(expected)
    strict = GlinerGlirelExtractor(schema, tiny_config(gliner_model=str(folder), entity_threshold=0.8), tiny_models_dir)
    assert all(m.score >= 0.8 for ms in strict.entities(texts) for m in ms)
    plain = GlinerGlirelExtractor(schema, tiny_config(gliner_model=str(headed / "plain")), tiny_models_dir)
    assert plain.type_head is None and plain.entity_threshold == 0.5


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "another embedder"])
def test_a_damaged_head_is_named_with_the_fix(headed, tmp_path, damage):
    import shutil

    folder = tmp_path / "g"
    shutil.copytree(headed / "g", folder)
    path = folder / HEAD_FILE
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        with np.load(path) as f:
            arrays = dict(f)
        arrays["embedder"] = np.array([str(arrays["embedder"][0]), "0" * 16])
        np.savez(path, **arrays)
    with pytest.raises(ModelLoadError) as err:
        TypeHead.load(folder)
    message = str(err.value)
    assert str(path) in message and "models finetune" in message and "delete" in message
    assert ("unreadable" if damage == "truncated" else "another copy of the embedder") in message


@pytest.mark.slow
def test_the_command_line_can_leave_the_head_out(tiny_models_dir, tmp_path):
    from test_finetune_train import template_file

    from tiny_graphrag.cli.commands import main

    data = template_file(tmp_path / "train.jsonl", 40, 1)
    base = ["models", "finetune", "gliner", "--base", str(tiny_models_dir / "tiny-gliner"), "--data", str(data)]
    for flags, out in (([], tmp_path / "with"), (["--no-type-head"], tmp_path / "without")):
        assert main([*base, "--out", str(out), "--max-steps", "5", "--min-steps", "5", *flags]) == 0
    assert (tmp_path / "with" / HEAD_FILE).is_file() and not (tmp_path / "without" / HEAD_FILE).exists()


@pytest.mark.slow
def test_the_head_uses_the_embedder_of_the_models_folder_given(tiny_models_dir, embedder, tmp_path):
    """`finetune(..., models_dir=M)` fits the head on M's copy of the embedder, the copy a build with M uses."""
    import shutil

    from test_finetune_train import template_file

    from tiny_graphrag.finetune import evaluate, finetune

    models = tmp_path / "models"
    shutil.copytree(embedder.path, models / "all-MiniLM-L6-v2")
    (models / "all-MiniLM-L6-v2" / "NOTE.txt").write_text("another copy", encoding="utf-8")  # another fingerprint
    data, out = template_file(tmp_path / "train.jsonl", 40, 1), tmp_path / "g"
    finetune("gliner", tiny_models_dir / "tiny-gliner", data, out, max_steps=5, models_dir=models, progress=False)
    assert TypeHead.load(out, models) is not None
    assert evaluate("gliner", out, data, models_dir=models).f1 >= 0  # `models evaluate --models-dir` finds that copy
    with pytest.raises(ModelLoadError, match="another copy of the embedder"):
        TypeHead.load(out)  # the package's copy
