"""Assemble this folder's questions.json and corpus.json from HippoRAG's MuSiQue file.

    python bench/data/musique/make.py MUSIQUE_JSON_OR_FRAGMENT [--out bench/data/musique] [--exclude QUESTIONS_JSON ...]

The input is HippoRAG's `reproduce/dataset/musique.json` (a list of records with `question`,
`answer`, `paragraphs`: [{title, paragraph_text, is_supporting}], one MuSiQue dev question
each), or any contiguous piece of it: every complete record in the text is read, a record cut
at either end is skipped. MuSiQue paragraphs share titles (many "FC Barcelona" paragraphs), so
each distinct paragraph is one passage, keyed by its title, and by "title (n)" for the n-th
distinct paragraph under the same title; gold passages are the supporting paragraphs' keys.
Records whose id is in an --exclude file's questions (another set made by this script) are
left out, so two sets never share a question. JSON Lines input (one record a line) works too.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path


def records(text: str) -> list[dict]:
    decoder, out = json.JSONDecoder(), []
    for m in re.finditer(r'\{"id": "', text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "paragraphs" in obj and "question" in obj:
            out.append(obj)
    return out


def assemble(recs: list[dict]) -> tuple[list[dict], dict[str, list[str]]]:
    key_of: dict[tuple[str, str], str] = {}
    per_title: dict[str, int] = {}
    corpus: dict[str, list[str]] = {}
    questions = []
    for r in recs:
        gold = []
        for p in r["paragraphs"]:
            title, text = p["title"].strip(), " ".join(p["paragraph_text"].split())
            if (title, text) not in key_of:
                n = per_title[title] = per_title.get(title, 0) + 1
                key = title if n == 1 else f"{title} ({n})"
                key_of[(title, text)] = key
                corpus[key] = [text]
            if p.get("is_supporting"):
                gold.append(key_of[(title, text)])
        questions.append(
            {
                "_id": r["id"],
                "type": r["id"].split("__")[0],
                "question": r["question"],
                "answer": r["answer"],
                "supporting_facts": [[g, 0] for g in dict.fromkeys(gold)],
            }
        )
    return questions, corpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument(
        "--exclude", type=Path, nargs="*", default=[], help="questions.json files whose questions to leave out"
    )
    args = ap.parse_args()
    for path in (args.source, *args.exclude):
        if not path.is_file():
            ap.error(
                f"{path} is not a file: give the MuSiQue JSON (or fragment) and --exclude questions.json files that exist"
            )
    excluded = {q["_id"] for f in args.exclude for q in json.loads(f.read_text(encoding="utf-8"))}
    recs = [r for r in records(args.source.read_text(encoding="utf-8")) if r["id"] not in excluded]
    questions, corpus = assemble(recs)
    (args.out / "questions.json").write_text(
        json.dumps(questions, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (args.out / "corpus.json").write_text(json.dumps(corpus, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(questions)} questions, {len(corpus)} passages")


if __name__ == "__main__":
    main()
