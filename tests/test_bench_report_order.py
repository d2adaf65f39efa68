"""bench/report_order.py's variants: the orders and bounds it compares (no model needed)."""

from __future__ import annotations

from bench.report_order import bound_of, strings_of, trigrams, variants
from tiny_graphrag.reports.prompt import report_schema


def test_the_variants_are_the_orders_they_name():
    v = variants(300)
    ours, graphrag, roomy, summary_first = v.values()
    assert ours == report_schema(300)
    assert list(graphrag["properties"]) == ["title", "summary", "rating", "rating_explanation", "findings"]
    assert list(graphrag["properties"]["findings"]["items"]["properties"]) == ["summary", "explanation"]
    assert list(summary_first["properties"])[0] == "findings"
    assert list(summary_first["properties"]["findings"]["items"]["properties"]) == ["summary", "explanation"]
    # Roomy bounds only ever widen, and only where the budget had cut them below a sentence.
    assert bound_of(roomy, ("summary",)) == 250 > bound_of(graphrag, ("summary",))
    assert bound_of(roomy, ("findings", "explanation")) == 200 > bound_of(graphrag, ("findings", "explanation"))
    assert bound_of(variants(800)["GraphRAG's order, roomy bounds"], ("summary",)) == 500  # not narrowed
    assert (
        ours["properties"]["findings"]["items"]["properties"]
        is not graphrag["properties"]["findings"]["items"]["properties"]
    )


def test_strings_and_trigrams():
    report = {
        "title": "T",
        "summary": "S",
        "rating": 1,
        "rating_explanation": "R",
        "findings": [{"summary": "a", "explanation": "b"}, {"summary": "c", "explanation": "d"}],
    }
    per_finding = [("findings", "summary"), ("findings", "explanation")]
    assert [p for p, _ in strings_of(report)] == [("title",), ("summary",), ("rating_explanation",)] + 2 * per_finding
    assert trigrams("The Dodd-Frank reforms, passed") == [
        ("the", "dodd", "frank"),
        ("dodd", "frank", "reforms"),
        ("frank", "reforms", "passed"),
    ]
