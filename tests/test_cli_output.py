"""The CLI's default query output: the checked answer, then what each cited id points at."""

from __future__ import annotations

from tiny_graphrag.cli import commands as cli
from tiny_graphrag.search.result import SearchResult, SourceChunk, SourceEntity, SourceRelation, SourceReport, Sources

SOURCES = Sources(
    chunks=(
        SourceChunk(
            3,
            "c3",
            "d1",
            120,
            180,
            "Obama  graduated from\nHarvard Law School " + "x" * 120,
            source="/data/notes/obama.txt",
        ),
    ),
    reports=(SourceReport(1, "C7", 0, "Obama's education", 8.0, "..."),),
    entities=(SourceEntity(5, "harvard", "Harvard Law School", "ORG", "..."),),
    relationships=(SourceRelation(9, "Obama", "Harvard Law School", "studied_at", 1.0, "..."),),
)


def _printed(answer: str, capsys) -> list[str]:
    cli._print_citations(SearchResult("local", "q", answer, "ctx", SOURCES))
    return capsys.readouterr().out.splitlines()


def test_every_cited_kind_is_listed_with_what_it_points_at(capsys):
    out = _printed("Harvard Law School. [Data: Sources (3); Reports (1); Entities (5); Relationships (9)]", capsys)
    # In the one kind order the parser uses (entities, relationships, sources, reports).
    assert out[:3] == [
        "cited:",
        "  [Entities 5] Harvard Law School (ORG)",
        "  [Relationships 9] Obama -studied_at-> Harvard Law School",
    ]
    assert out[3].startswith('  [Sources 3] obama.txt chars 120-180: "Obama graduated from Harvard Law School x')
    assert out[3].endswith('..."') and len(out[3]) < 160  # whitespace collapsed, long text cut
    assert out[4:] == ["  [Reports 1] Obama's education (community C7, level 0)"]


def test_nothing_is_printed_without_citations_and_unknown_ids_are_skipped(capsys):
    assert _printed("Harvard Law School.", capsys) == []
    assert _printed("Harvard. [Data: Sources (4)]", capsys) == []  # not in the context: listed as removed elsewhere


def test_a_tree_summary_is_listed_with_the_sources_it_covers_in_the_cli_and_the_notebook(capsys):
    from tiny_graphrag.outputs.notebook import search_result_html

    summary = SourceReport(1, "L1.0", 1, "summary of 2 passages (layer 1)", 0.0, "Obama studied law.")
    result = SearchResult(
        "tree", "q", "Law. [Data: Reports (1)]", "ctx", Sources(reports=(summary,)), details={"summaries": {1: [3, 8]}}
    )
    cli._print_citations(result)
    label = "tree summary of 2 passages (layer 1), covering Sources (3, 8)"
    assert capsys.readouterr().out.splitlines() == ["cited:", f"  [Reports 1] {label}"]
    assert label in search_result_html(result)
