"""A build over a folder of real documents (PDF, DOCX, HTML, .eml, CSV), then searches whose
citations lead to the PDF's page: the CLI's text and --json, the notebook, the view, the export,
and an update that reads a changed PDF again and an unchanged one not."""

from __future__ import annotations

import json
import re

import pytest
from _fakes import LARGE, FakeLLM

from bench.documents import write_csv, write_docx, write_eml, write_html, write_pdf
from tiny_graphrag import load_index
from tiny_graphrag.cli import main
from tiny_graphrag.cli.commands import _print_citations
from tiny_graphrag.errors import InputError
from tiny_graphrag.indexing import readers
from tiny_graphrag.outputs.notebook import search_result_html
from tiny_graphrag.outputs.parquet import graphrag_rows
from tiny_graphrag.outputs.view import view_html
from tiny_graphrag.search.engine import QueryEngine

PAGES = [
    "Marie Curie was born in Warsaw. She studied physics in Paris with Pierre Curie.",
    "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London.",
    "Alan Turing worked at Bletchley Park during the war.",
]
QUESTION = "Who worked with Charles Babbage?"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    work = tmp_path_factory.mktemp("documents")
    docs = work / "docs"
    docs.mkdir()
    write_pdf(docs / "annual-report.pdf", PAGES, title="Annual report", author="Ann Analyst")
    write_docx(docs / "memo.docx", "Memo", ["Grace Hopper joined the Navy in New York."])
    write_html(docs / "page.html", "Pioneers", ["Tim Berners-Lee built the web at CERN in Geneva."] * 2)
    write_eml(
        docs / "note.eml",
        "Visit",
        "Bob <bob@example.org>",
        "Mon, 1 Mar 2021 10:00:00 +0000",
        "Linus Torvalds visited Helsinki.",
    )
    rows = [
        {"text": "Katherine Johnson worked at NASA in Virginia.", "year": 1961},
        {"text": "Margaret Hamilton wrote the Apollo software for NASA at MIT.", "year": 1969},
    ]
    write_csv(docs / "records.csv", rows)
    code = main(
        ["build", str(docs), "--out", str(work / "idx"), "--extractor", "spacy", "--no-reports", "--max-tokens", "64"]
    )
    assert code == 0
    return work


def cite_babbage(messages, schema, max_tokens):
    """Cites the Sources row whose text names Babbage, as a model that read it would."""
    sid = re.search(r"^(\d+)\|[^\n]*Babbage", messages[-1]["content"], re.M).group(1)
    return f"Ada Lovelace [Data: Sources ({sid})]."


@pytest.fixture(scope="module")
def answers(corpus):
    """Each mode's answer as a small reader gives it (the answer alone: its citation is attached)
    and as a large one (the model cites the row it read)."""
    out = {}
    for reader, llm in (
        ("small", FakeLLM(lambda *a: "Ada Lovelace")),
        ("large", FakeLLM(cite_babbage, n_params=LARGE)),
    ):
        with QueryEngine(corpus / "idx", llm=llm) as qe:
            out.update({(mode, reader): getattr(qe, f"{mode}_search")(QUESTION) for mode in ("local", "naive")})
    return out


def test_every_format_is_indexed(corpus):
    store = load_index(corpus / "idx")
    names = sorted(d.source.rsplit("/", 1)[-1] for d in store.documents())
    assert names == ["annual-report.pdf", "memo.docx", "note.eml", "page.html", "records.csv", "records.csv"]
    pdf = next(d for d in store.documents() if d.source.endswith(".pdf"))
    assert [u for u, _ in pdf.units] == ["p. 1", "p. 2", "p. 3"] and pdf.metadata["author"] == "Ann Analyst"


@pytest.mark.parametrize("reader", ["small", "large"])
@pytest.mark.parametrize("mode", ["local", "naive"])
def test_the_answer_cites_the_right_page(answers, mode, reader, capsys):
    result = answers[mode, reader]
    assert result.details["reader"] == reader
    (sid,) = result.citations()["sources"]
    cited = next(c for c in result.sources.chunks if c.id == sid)
    assert cited.location == f"annual-report.pdf, p. 2, chars 0-{len(PAGES[1])}" and cited.text == PAGES[1]
    assert cited.metadata["author"] == "Ann Analyst"
    shown = (
        "Annual report (p. 2): Ada Lovelace" if reader == "small" else f"{sid}|(annual-report.pdf, p. 2) Ada Lovelace"
    )
    assert shown in result.context  # the model sees the page too
    assert result.to_dict()["sources"]["chunks"][[c.id for c in result.sources.chunks].index(sid)]["location"] == (
        cited.location
    )
    _print_citations(result)
    assert f"[Sources {sid}] annual-report.pdf, p. 2, chars 0-" in capsys.readouterr().out
    assert "annual-report.pdf, p. 2, chars 0-" in search_result_html(result)


def test_only_context_json_names_pages_and_rows(corpus, capsys):
    q = ["query", "naive", "Katherine Johnson NASA", "--index", str(corpus / "idx"), "--only-context", "--json"]
    assert main(q) == 0
    chunks = json.loads(capsys.readouterr().out)["sources"]["chunks"]
    assert any(c["location"].startswith("records.csv, row 1, chars 0-") for c in chunks)


def test_view_and_export_say_the_page(corpus):
    store = load_index(corpus / "idx")
    assert "annual-report.pdf, p. 2" in view_html(store)
    rows = graphrag_rows(store)
    meta = json.loads(next(d["metadata"] for d in rows["documents"] if d["title"].endswith(".pdf")))
    assert [u["unit"] for u in meta["units"]] == ["p. 1", "p. 2", "p. 3"] and meta["author"] == "Ann Analyst"
    babbage = next(u["id"] for u in rows["text_units"] if "Babbage" in u["text"])
    assert meta["units"][1]["text_unit_ids"] == [babbage]


def test_where_keeps_the_documents_with_that_metadata(corpus, capsys):
    with QueryEngine(corpus / "idx", llm=FakeLLM(lambda *a: "Ada Lovelace")) as qe:
        rows = qe.naive_search("Who worked for NASA?", only_context=True, where={"year": 1969}).sources.chunks
        assert [(c.location.split(",")[1], c.metadata["year"]) for c in rows] == [(" row 2", "1969")]
        kept = qe.local_search(QUESTION, where={"title": "Annual report"})
        assert {c.source.rsplit("/", 1)[-1] for c in kept.sources.chunks} == {"annual-report.pdf"}
        assert kept.citations()["sources"]  # the Babbage page is still there to cite
        none = qe.naive_search(QUESTION, only_context=True, where={"author": "Nobody"})
        assert not none.sources.chunks and "no document has the metadata {'author': 'Nobody'}" in none.notes[0]
        with pytest.raises(InputError, match=r"metadata key 'yeer' \(its documents' keys are \[.*'year'"):
            qe.naive_search(QUESTION, where={"yeer": "1969"})
    q = ["query", "naive", "NASA", "--index", str(corpus / "idx"), "--only-context", "--json", "--where", "year=1961"]
    assert main(q) == 0
    assert [c["location"][:21] for c in json.loads(capsys.readouterr().out)["sources"]["chunks"]] == [
        "records.csv, row 1, c"
    ]
    with pytest.raises(SystemExit):  # argparse's own errors exit 2 with a usage line
        main(q[:-1] + ["year"])
    assert "--where: expected KEY=VALUE" in capsys.readouterr().err


def test_an_unchanged_pdf_is_not_read_again_and_a_changed_one_is(corpus, monkeypatch):
    index = load_index(corpus / "idx")
    pdf_reader, reads = readers.READERS["pdf"], []
    monkeypatch.setitem(readers.READERS, "pdf", lambda *a: reads.append(a[0]) or pdf_reader(*a))
    assert index.add([corpus / "docs"]).summary.changes["documents"] == {"added": 0, "removed": 0}
    assert reads == []
    write_pdf(corpus / "docs" / "annual-report.pdf", [*PAGES, "Grace Hopper wrote the first compiler."])
    result = index.add([corpus / "docs"])
    assert reads == [corpus / "docs" / "annual-report.pdf"]
    assert result.summary.changes["documents"] == {"added": 1, "removed": 1}
    pdf = next(d for d in index.documents() if d.source.endswith(".pdf"))
    assert [u for u, _ in pdf.units] == ["p. 1", "p. 2", "p. 3", "p. 4"]


def test_an_index_from_before_units_is_read_and_updated(tmp_path):
    import hashlib
    import sqlite3

    (tmp_path / "a.txt").write_text(PAGES[1], encoding="utf-8")
    idx = tmp_path / "idx"
    assert main(["build", str(tmp_path / "a.txt"), "--out", str(idx), "--extractor", "spacy", "--no-reports"]) == 0
    db = sqlite3.connect(idx / "index.sqlite")  # as written before documents had units and metadata
    db.execute("ALTER TABLE documents DROP COLUMN info")
    db.commit()
    db.close()
    manifest = json.loads((idx / "manifest.json").read_text())
    del manifest["config"]["documents"]
    manifest["settings"] = {k: v for k, v in manifest["settings"].items() if not k.startswith("config.documents.")}
    manifest["files"]["index.sqlite"] = hashlib.sha256((idx / "index.sqlite").read_bytes()).hexdigest()
    (idx / "manifest.json").write_text(json.dumps(manifest))
    with QueryEngine(idx) as qe:
        (chunk,) = qe.naive_search(QUESTION, only_context=True).sources.chunks
    assert chunk.unit == "" and chunk.location == f"a.txt chars 0-{len(PAGES[1])}"
    write_pdf(tmp_path / "b.pdf", PAGES[:1])
    assert load_index(idx).add([tmp_path / "b.pdf"]).summary.changes["documents"] == {"added": 1, "removed": 0}


def test_the_served_source_says_the_page(corpus, tmp_path):
    from fastapi.testclient import TestClient

    from tiny_graphrag.serve.app import create_app
    from tiny_graphrag.serve.indexes import open_indexes

    empty = tmp_path / "models"
    empty.mkdir()
    c = TestClient(create_app(open_indexes([corpus / "idx"], llm=None, n_ctx=None, models_dir=str(empty))))
    found = c.post("/api/indexes/idx/query", json={"question": QUESTION, "mode": "naive", "only_context": True})
    sid = next(s["id"] for s in found.json()["sources"]["chunks"] if "Babbage" in s["text"])
    served = c.get(f"/api/indexes/idx/sources/{sid}").json()
    assert served["location"].startswith("annual-report.pdf, p. 2, chars 0-")
