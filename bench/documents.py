"""Document readers: units (pages, rows, messages) per second per format, and how much of the known
text each reader recovers (character-level agreement, difflib's ratio on whitespace-normalised text).

Units are pages (PDF), paragraphs (DOCX, HTML), messages (mbox) and rows (CSV). The documents
are made by real writers from known text: fpdf2 (PDF), python-docx (DOCX), an HTML
page with navigation and a footer around the article, the standard library's `email` (.eml) and
`csv`. The writers are also what tests/test_readers.py builds its inputs with.
"""

from __future__ import annotations

import csv
import difflib
import email.message
import mailbox
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import Context, obama_text

HTML_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title><meta name="author" content="{author}"></head>
<body><nav><a href="/">Home</a> | <a href="/news">News</a> | <a href="/about">About us</a></nav>
<article><h1>{title}</h1>
{paragraphs}
</article>
<footer>Copyright 2024 Example Newsroom. All rights reserved. Privacy | Terms | Contact</footer>
</body></html>
"""


def write_pdf(
    path: Path, pages: Sequence[str], *, title: str = "", author: str = "", password: str | None = None
) -> Path:
    """A PDF with one page per text ("" : a page with a drawing and no text, as a scanned page)."""
    from fpdf import FPDF

    pdf = FPDF()
    if password:
        pdf.set_encryption(owner_password=password + "-owner", user_password=password)
    font = unicode_font()
    if font is not None:  # an embedded TrueType font writes any character (Helvetica: Latin-1 only)
        pdf.add_font("DejaVu", fname=str(font))
    pdf.set_font("DejaVu" if font is not None else "Helvetica", size=11)
    pdf.set_title(title)
    pdf.set_author(author)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
        else:
            pdf.rect(20, 20, 150, 200, style="F")
    pdf.output(str(path))
    return path


def unicode_font() -> Path | None:
    """DejaVu Sans from matplotlib's package data or the system's fonts, if there is one."""
    try:
        import matplotlib

        places = [Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"]
    except ImportError:
        places = []
    places.append(Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
    return next((p for p in places if p.is_file()), None)


def write_docx(path: Path, title: str, paragraphs: Sequence[str], table: Sequence[Sequence[str]] = ()) -> Path:
    import docx

    document = docx.Document()
    document.core_properties.author = "Ann Analyst"
    document.add_heading(title, level=1)
    for p in paragraphs:
        document.add_paragraph(p)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, cells in enumerate(table):
            for c, value in enumerate(cells):
                grid.cell(r, c).text = value
    document.save(str(path))
    return path


def write_html(path: Path, title: str, paragraphs: Sequence[str], author: str = "Jo Writer") -> Path:
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    path.write_text(HTML_PAGE.format(title=title, author=author, paragraphs=body), encoding="utf-8")
    return path


def mail(subject: str, sender: str, date: str, body: str) -> email.message.EmailMessage:
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"], msg["To"], msg["Date"] = subject, sender, "team@example.org", date
    msg.set_content(body)
    return msg


def write_eml(path: Path, subject: str, sender: str, date: str, body: str) -> Path:
    path.write_bytes(bytes(mail(subject, sender, date, body)))
    return path


def write_mbox(path: Path, messages: Sequence[email.message.EmailMessage]) -> Path:
    box = mailbox.mbox(str(path))
    for m in messages:
        box.add(m)
    box.close()
    return path


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def agreement(expected: str, got: str) -> float:
    """Character-level agreement of two texts: 2 * matched characters / all characters, matching
    whole words in order (difflib over words; over single characters it takes minutes)."""
    a, b = expected.split(), got.split()
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    matched = sum(len(w) + 1 for m in blocks for w in a[m.a : m.a + m.size])
    total = sum(len(w) + 1 for w in a) + sum(len(w) + 1 for w in b)
    return 2 * matched / total if total else 1.0


def corpus(folder: Path, text: str, n_units: int) -> dict[str, tuple[Path, int, str]]:
    """format -> (file, units in it, the known text), each made of `n_units` paragraphs of `text`."""
    paras = [p.strip() for p in text.split("\n") if len(p.split()) > 20][:n_units]
    paras += paras * (n_units // max(len(paras), 1))
    paras = paras[:n_units]
    title = "Barack Obama"
    rows = [{"id": n, "text": p, "year": 2000 + n % 20} for n, p in enumerate(paras)]
    messages = [mail(f"Note {n}", "ann@example.org", "Mon, 1 Mar 2021 10:00:00 +0000", p) for n, p in enumerate(paras)]
    return {
        "pdf": (write_pdf(folder / "a.pdf", paras, title=title), n_units, "\n".join(paras)),
        "docx": (write_docx(folder / "a.docx", title, paras), n_units, "\n".join([title, *paras])),
        "html": (write_html(folder / "a.html", title, paras), n_units, "\n".join([title, *paras])),
        "mbox": (write_mbox(folder / "a.mbox", messages), n_units, "\n".join(paras)),
        "csv": (write_csv(folder / "a.csv", rows), n_units, "\n".join(paras)),
    }


def run(ctx: Context) -> dict[str, Any]:
    from tiny_graphrag.indexing.documents import collect_documents

    n_units = 20 if ctx.mode.name == "quick" else 100
    folder = ctx.work / "documents"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"units_per_file": n_units}
    for fmt, (path, units, known) in corpus(folder, obama_text(), n_units).items():
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            docs = collect_documents([path]).documents
            best = min(best, time.perf_counter() - t0)
        # The text a reader recovered, without the header lines a mail or row adds.
        got = "\n".join(d.text.split("\n\n", 1)[-1] if fmt == "mbox" else d.text for d in docs)
        out[fmt] = {
            "units_per_s": round(units / best, 1),
            "documents": len(docs),
            "agreement": round(agreement(known, got), 4),
        }
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("units per file", str(r["units_per_file"]))]
    for fmt in ("pdf", "docx", "html", "mbox", "csv"):
        x = r[fmt]
        rows.append((fmt, f"{x['units_per_s']} units/s, agreement {x['agreement']}, {x['documents']} document(s)"))
    return rows
