"""Document readers on files made by real writers (fpdf2, python-docx, stdlib email/csv/json, pyarrow):
what each reads, where each unit starts, and the message each kind of bad input gets."""

from __future__ import annotations

import json
import logging
import zipfile

import pytest

from bench.documents import mail, write_csv, write_docx, write_eml, write_html, write_mbox, write_pdf
from tiny_graphrag.config import ChunkingConfig, DocumentsConfig
from tiny_graphrag.errors import InputError
from tiny_graphrag.indexing.chunking import chunk_document
from tiny_graphrag.indexing.documents import collect_documents, load_documents, read_document
from tiny_graphrag.indexing.readers import kind_of

PAGES = [
    "Marie Curie was born in Warsaw. She studied physics in Paris.",
    "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London.",
    "Alan Turing worked at Bletchley Park during the war.",
]
DATE = "Mon, 1 Mar 2021 10:00:00 +0000"


def test_pdf_pages_are_units_and_metadata_is_kept(tmp_path):
    doc = read_document(write_pdf(tmp_path / "report.pdf", PAGES, title="Annual report", author="Ann Analyst"))
    assert [label for label, _ in doc.units] == ["p. 1", "p. 2", "p. 3"]
    for (label, start), page in zip(doc.units, PAGES):
        assert doc.text[start : start + len(page)] == page  # each unit starts where its page's text does
    assert doc.metadata["author"] == "Ann Analyst" and doc.metadata["title"] == "Annual report"
    at = doc.text.index("Charles Babbage")
    assert doc.unit_at(at) == ("p. 2", doc.units[1][1])
    assert doc.unit_at(doc.units[1][1] - 1, doc.units[2][1] + 3)[0] == "p. 1 to p. 3"
    chunks = chunk_document(doc, ChunkingConfig(max_tokens=256, overlap_tokens=32))  # room for all: one per page
    assert [c.text for c in chunks] == PAGES and [doc.unit_at(c.start, c.end)[0] for c in chunks] == [
        "p. 1",
        "p. 2",
        "p. 3",
    ]


def test_docx_paragraphs_headings_and_tables(tmp_path):
    path = write_docx(tmp_path / "memo.docx", "Budget memo", PAGES[:2], table=[["Name", "City"], ["Curie", "Paris"]])
    doc = read_document(path)
    assert doc.text.split("\n\n") == ["Budget memo", *PAGES[:2], "Name | City", "Curie | Paris"]
    assert doc.metadata["author"] == "Ann Analyst" and doc.file_sha256


def test_html_keeps_the_article_not_the_navigation(tmp_path):
    doc = read_document(write_html(tmp_path / "page.html", "Computing pioneers", PAGES))
    assert all(p in doc.text for p in PAGES)
    assert "About us" not in doc.text and "All rights reserved" not in doc.text
    assert doc.metadata["author"] == "Jo Writer"


def test_eml_and_mbox_one_document_per_message(tmp_path):
    (eml,) = load_documents([write_eml(tmp_path / "a.eml", "Engine plans", "Ada <ada@example.org>", DATE, PAGES[1])])
    assert eml.text.startswith("Subject: Engine plans\nFrom: Ada <ada@example.org>\nDate: ")
    assert PAGES[1] in eml.text and eml.metadata["subject"] == "Engine plans"
    box = write_mbox(
        tmp_path / "team.mbox", [mail(f"Note {n}", "bob@example.org", DATE, p) for n, p in enumerate(PAGES)]
    )
    docs = load_documents([box])
    assert [d.units for d in docs] == [((f"message {n}", 0),) for n in (1, 2, 3)]
    assert [d.metadata["subject"] for d in docs] == ["Note 0", "Note 1", "Note 2"] and PAGES[2] in docs[2].text


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json", "parquet"])
def test_tables_one_document_per_row(tmp_path, fmt):
    rows = [
        {"id": 1, "headline": "Curie", "body": PAGES[0], "notes": "", "year": 2021},
        {"id": 2, "headline": "Lovelace", "body": PAGES[1], "notes": 'She wrote "Notes, on it".', "year": 2022},
    ]
    path = tmp_path / f"records.{fmt}"
    if fmt == "csv":
        write_csv(path, rows)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    config = DocumentsConfig(text_columns=("body", "notes"), title_column="headline")
    docs = load_documents([path], config)
    assert [d.text for d in docs] == [PAGES[0], PAGES[1] + '\n\nShe wrote "Notes, on it".']  # joined, blanks left out
    assert [d.units for d in docs] == [(("row 1", 0),), (("row 2", 0),)]
    assert docs[1].metadata == {"id": "2", "year": "2022", "title": "Lovelace"}


def test_table_without_the_named_column_lists_its_columns(tmp_path):
    path = write_csv(tmp_path / "records.csv", [{"id": 1, "body": PAGES[0]}])
    with pytest.raises(InputError, match=r"records.csv has no column 'text'; its columns are \['id', 'body'\]"):
        load_documents([path])
    with pytest.raises(InputError, match="no column 'headline'.*--title-column"):
        load_documents([path], DocumentsConfig(text_columns=("body",), title_column="headline"))


def test_huge_row_and_page_are_chunked_like_any_text(tmp_path):
    long = " ".join(f"Sentence {n} names Marie Curie in Paris." for n in range(400))
    (row,) = load_documents([write_csv(tmp_path / "big.csv", [{"text": long}])])
    (pdf,) = load_documents([write_pdf(tmp_path / "big.pdf", [long[:2500]])])
    for doc in (row, pdf):
        chunks = chunk_document(doc, ChunkingConfig(max_tokens=32, overlap_tokens=0))
        assert len(chunks) > 5 and {doc.unit_at(c.start)[0] for c in chunks} == {doc.units[0][0]}


def test_scanned_pages_are_named_and_the_build_goes_on(tmp_path, caplog):
    write_pdf(tmp_path / "scan.pdf", ["", ""])
    write_pdf(tmp_path / "mixed.pdf", [PAGES[0], "", PAGES[2]])
    with caplog.at_level(logging.WARNING):
        loaded = collect_documents([tmp_path])
    (doc,) = loaded.documents
    assert doc.source.endswith("mixed.pdf") and [u for u, _ in doc.units] == ["p. 1", "p. 3"]
    assert any("scan.pdf: no text on any of its 2 pages" in n and "ocrmypdf" in n for n in loaded.notes)
    assert any("mixed.pdf: no text on page 2 " in n for n in loaded.notes)
    assert "ocrmypdf" in caplog.text


def test_encrypted_pdf_is_named_and_a_password_opens_it(tmp_path, monkeypatch):
    path = write_pdf(tmp_path / "secret.pdf", [PAGES[0]], password="s3cret")
    with pytest.raises(InputError, match=r"secret.pdf is an encrypted PDF.*TINY_GRAPHRAG_PDF_PASSWORD"):
        load_documents([path])
    monkeypatch.setenv("TINY_GRAPHRAG_PDF_PASSWORD", "s3cret")
    assert load_documents([path])[0].text == PAGES[0]


def test_corrupt_files_are_named_and_the_rest_is_built(tmp_path, caplog):
    good = write_pdf(tmp_path / "good.pdf", PAGES)
    (tmp_path / "cut.pdf").write_bytes(good.read_bytes()[:300])  # a download cut short
    (tmp_path / "bad.docx").write_bytes(b"PK\x03\x04 not really a zip")
    with zipfile.ZipFile(tmp_path / "broken.docx", "w") as z:  # a zip without Word's parts
        z.writestr("word/document.xml", "<not xml")
    (tmp_path / "latin.txt").write_bytes("caf\u00e9".encode("latin-1"))  # a text file: the same rule
    with caplog.at_level(logging.ERROR):
        loaded = collect_documents([tmp_path])
    assert [d.source for d in loaded.documents] == [str(good)]
    names = ("bad.docx", "broken.docx", "cut.pdf", "latin.txt")
    assert sorted(loaded.failed) == sorted(str(tmp_path / n) for n in names)
    assert (
        "cut.pdf is not a readable PDF" in caplog.text and "broken.docx is not a readable Word document" in caplog.text
    )
    assert "4 file(s) could not be read" in loaded.notes[-1] and "latin.txt is not valid UTF-8" in caplog.text
    with pytest.raises(InputError, match="cut.pdf is not a readable PDF.*repair"):  # alone: the build stops
        load_documents([tmp_path / "cut.pdf"])


def test_content_decides_not_the_extension(tmp_path):
    write_pdf(tmp_path / "report.txt", PAGES)  # a PDF named .txt
    write_html(tmp_path / "page.pdf", "Pioneers", PAGES)  # HTML named .pdf
    write_eml(tmp_path / "message", "Engine", "ada@example.org", DATE, PAGES[1])  # no extension at all
    (tmp_path / "notes.html").write_text(PAGES[2], encoding="utf-8")  # plain text named .html
    assert [kind_of(tmp_path / n) for n in ("report.txt", "page.pdf", "message", "notes.html")] == [
        "pdf",
        "html",
        "eml",
        "text",
    ]
    docs = {d.source.rsplit("/", 1)[-1]: d for d in load_documents([tmp_path])}
    assert docs["report.txt"].units[1][0] == "p. 2" and docs["notes.html"].text == PAGES[2]
    assert "About us" not in docs["page.pdf"].text and PAGES[1] in docs["message"].text


def test_formats_not_read_get_one_line_by_extension(tmp_path, caplog):
    (tmp_path / "a.txt").write_text(PAGES[0], encoding="utf-8")
    for name in ("x.png", "y.png", "z.png", "w.png"):
        (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with zipfile.ZipFile(tmp_path / "deck.pptx", "w") as z:
        z.writestr("ppt/presentation.xml", "<p/>")
    (tmp_path / "run.log").write_text("started", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        loaded = collect_documents([tmp_path])
    line = loaded.notes[-1]
    assert line.startswith("skipped 6 file(s) of formats not read")
    assert (
        ".png (4: w.png, x.png, y.png, ...)" in line and ".pptx (1: deck.pptx)" in line and ".log (1: run.log)" in line
    )
    assert [r.getMessage() for r in caplog.records].count(line) == 1


def test_sync_keeps_the_indexed_version_of_a_file_that_cannot_be_read_now():
    from tiny_graphrag.indexing.sync import plan
    from tiny_graphrag.records import new_document

    old = [new_document(PAGES[0], "a.pdf"), new_document(PAGES[1], "b.txt")]
    final = plan(old, [new_document(PAGES[2], "c.txt")], sync=True, unread=["a.pdf"])
    assert [d.source for d in final.documents] == ["c.txt", "a.pdf"] and final.removed == (old[1].id,)


# ---- issue 44: bad input the readers met ----------------------------------------------------------
def docx_with_body(path, body: bytes, compression=zipfile.ZIP_DEFLATED):
    """A real .docx (python-docx's parts) whose document.xml holds `body` (raw WordprocessingML)."""
    write_docx(path.with_suffix(".src.docx"), "Title", ["para"])
    with zipfile.ZipFile(path.with_suffix(".src.docx")) as z, zipfile.ZipFile(path, "w", compression) as out:
        for info in z.infolist():
            data = z.read(info)
            if info.filename == "word/document.xml":
                head, _, tail = data.partition(b"<w:body>")
                data = head + b"<w:body>" + body + tail
            out.writestr(info.filename, data)
    path.with_suffix(".src.docx").unlink()
    return path


PARA = b"<w:p><w:r><w:t>" + b"Marie Curie was born in Warsaw. " * 32 + b"</w:t></w:r></w:p>"


def test_a_docx_that_unpacks_past_the_bound_is_refused_naming_it(tmp_path):
    from tiny_graphrag.cli.commands import build_config
    from tiny_graphrag.cli.parser import build_parser

    bomb = docx_with_body(tmp_path / "bomb.docx", PARA * (3 * 2**20 // len(PARA)))  # 3 MiB, ~30 KB packed
    (tmp_path / "a.txt").write_text(PAGES[0], encoding="utf-8")
    loaded = collect_documents([tmp_path], DocumentsConfig(max_unpacked_mb=1))
    assert [d.source for d in loaded.documents] == [str(tmp_path / "a.txt")] and loaded.failed == (str(bomb),)
    with pytest.raises(InputError, match=r"bomb.docx unpacks to more than 1 MiB.*--max-unpacked-mb N"):
        load_documents([bomb], DocumentsConfig(max_unpacked_mb=1))
    (doc,) = load_documents([bomb], DocumentsConfig(max_unpacked_mb=4))  # within a raised bound: read
    assert doc.text.count("Marie Curie") > 90_000
    args = build_parser().parse_args(["build", "x", "--out", "y", "--max-unpacked-mb", "4"])
    assert build_config(args).documents.max_unpacked_mb == 4


def test_a_docx_part_that_holds_more_than_its_header_says_is_not_unpacked(tmp_path):
    import struct
    import tracemalloc
    import zlib

    bomb = docx_with_body(tmp_path / "liar.docx", PARA * (48 * 2**20 // len(PARA)))  # 48 MiB
    data = bytearray(bomb.read_bytes())
    with zipfile.ZipFile(bomb) as z, z.open("word/document.xml") as f:
        prefix = f.read(4096)
    at = data.rindex(b"PK\x01\x02", 0, data.rindex(b"word/document.xml"))  # its central directory entry
    struct.pack_into("<I", data, at + 16, zlib.crc32(prefix))  # declared: 4 KB, and their checksum
    struct.pack_into("<I", data, at + 24, len(prefix))
    bomb.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="liar.docx is not a readable Word document"):  # its XML is cut short
            load_documents([bomb])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20  # the 48 MiB behind the lie were never unpacked


def test_a_docx_part_compressed_as_word_never_does_is_refused(tmp_path):
    bzipped = docx_with_body(tmp_path / "bz.docx", PARA, compression=zipfile.ZIP_BZIP2)  # unbounded when unpacked
    with pytest.raises(InputError, match="bz.docx is not a readable Word document.*compression method 12.*save it"):
        load_documents([bzipped])


def test_a_parquet_table_declaring_more_than_the_bound_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([{"text": f"{n}. {PAGES[0] * 40}"} for n in range(1000)]), path)  # 2.4 MiB
    with pytest.raises(InputError, match=r"rows.parquet unpacks to more than 1 MiB.*--max-unpacked-mb"):
        load_documents([path], DocumentsConfig(max_unpacked_mb=1))
    assert len(load_documents([path], DocumentsConfig(max_unpacked_mb=4))) == 1000


UNKNOWN_CHARSET = (
    b"From: ann@example.org\nSubject: Plans\nDate: Mon, 1 Mar 2021 10:00:00 +0000\n"
    b"Content-Type: text/plain; charset=x-unknown\n\nThe plans are ready.\n"
)


def test_a_message_of_an_unknown_charset_is_named_and_the_rest_is_read(tmp_path):
    (tmp_path / "odd.eml").write_bytes(UNKNOWN_CHARSET)
    good = mail("Engine", "ada@example.org", DATE, PAGES[1])
    (tmp_path / "box.mbox").write_bytes(
        b"From ann@example.org Mon Mar  1 10:00:00 2021\n" + UNKNOWN_CHARSET + b"\n"
        b"From ada@example.org Mon Mar  1 10:00:00 2021\n" + bytes(good)
    )
    loaded = collect_documents([tmp_path])
    assert [d.metadata["subject"] for d in loaded.documents] == ["Engine"]  # the mbox's good message
    assert loaded.failed == (str(tmp_path / "odd.eml"),)
    assert any("box.mbox, message 1 was not indexed" in n and "x-unknown" in n for n in loaded.notes)
    with pytest.raises(InputError, match=r"odd.eml was not read: .*character set.*x-unknown.*To fix: set the charset="):
        load_documents([tmp_path / "odd.eml"])
    (tmp_path / "one.mbox").write_bytes(b"From ann@example.org Mon Mar  1 10:00:00 2021\n" + UNKNOWN_CHARSET)
    with pytest.raises(InputError, match=r"one.mbox, message 1 was not indexed: .*x-unknown.*To fix"):  # not "no text"
        load_documents([tmp_path / "one.mbox"])


def test_a_forwarded_message_is_read_with_the_one_forwarding_it(tmp_path):
    outer = mail("Fwd: Engine", "bob@example.org", DATE, "See below.")
    outer.add_attachment(mail("Engine", "ada@example.org", DATE, PAGES[1]))  # message/rfc822
    (doc,) = load_documents([write_mbox(tmp_path / "fwd.mbox", [outer])])
    assert "See below." in doc.text and "Subject: Engine" in doc.text and PAGES[1] in doc.text


def test_csv_long_cells_ragged_rows_and_repeated_names_are_kept(tmp_path):
    import csv

    limit = csv.field_size_limit()
    long = "Marie Curie was born in Warsaw. " * 4400  # 140,800 characters: past csv's default field limit
    (tmp_path / "long.csv").write_text(f"id,text\n1,{long}\n", encoding="utf-8")
    assert load_documents([tmp_path / "long.csv"])[0].text == long.strip()
    assert csv.field_size_limit() == limit  # the process-wide limit is as it was
    (tmp_path / "odd.csv").write_text("id,text,text\n1,first,second,x,y\n2,third,fourth\n", encoding="utf-8")
    loaded = collect_documents([tmp_path / "odd.csv"])
    assert [d.text for d in loaded.documents] == ["first", "third"]
    assert loaded.documents[0].metadata == {"id": "1", "text (2)": "second", "column 4": "x", "column 5": "y"}
    (note,) = loaded.notes
    assert "kept as the columns ['text (2)', 'column 4', 'column 5']" in note and "(row(s) ['1'])" in note


@pytest.mark.parametrize("content", ["id,text\n", "", "\n\n"])
def test_a_table_without_rows_says_so(tmp_path, content):
    (tmp_path / "t.csv").write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="t.csv holds no rows, so nothing to index. To fix: add rows") as info:
        load_documents([tmp_path / "t.csv"])
    assert "--text-column" not in str(info.value)


def test_text_files_are_text_unless_clearly_mail_or_pdf(tmp_path):
    notes = {
        "formats.txt": "File formats. A PDF starts with %PDF-1.7 and ends with %%EOF.\n",
        "letter.txt": "From the desk of Ann\nFrom: Ann <ann@example.org>\nSubject: Plans\n\nThe plans are ready.\n",
        "post.md": "Title: Plans\nAuthor: Ann\nFrom: Bob\nDate: 2021-03-01\n\n# Plans\n\nThe plans are ready.\n",
    }
    for name, text in notes.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert {d.source.rsplit("/", 1)[-1]: d.text for d in load_documents([tmp_path])} == notes  # every line kept
    write_mbox(tmp_path / "saved.txt", [mail("Note", "bob@example.org", DATE, PAGES[0])])  # an mbox named .txt
    assert kind_of(tmp_path / "saved.txt") == "mbox"


def test_a_page_date_is_what_the_page_declares_never_a_year_from_its_text(tmp_path):
    body = "<p>In 2004 the company moved to Paris, and it has grown every year since then.</p>" * 3
    (tmp_path / "a.html").write_text(f"<html><head><title>T</title></head><body>{body}</body></html>")
    assert "date" not in read_document(tmp_path / "a.html").metadata
    dated = '<html><head><meta name="date" content="2021-03-04"><title>T</title></head>'
    (tmp_path / "b.html").write_text(f"{dated}<body>{body}</body></html>")
    assert read_document(tmp_path / "b.html").metadata["date"] == "2021-03-04"
