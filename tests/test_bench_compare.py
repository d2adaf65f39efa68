"""bench.compare: the relative differences between runs' headline numbers."""

from __future__ import annotations

import json

import pytest

from bench.compare import compare, main, numbers


def test_numbers_are_read_from_summary_strings():
    assert numbers("2.6x") == [2.6]
    assert numbers("43.5 / 46.8") == [43.5, 46.8]
    assert numbers("65.0/84.0/90.5") == [65.0, 84.0, 90.5]


def test_largest_relative_difference_from_the_first_run():
    a = {"summary": {"ratio": "2.0x", "p50 / p95": "40.0 / 50.0", "only in a": "1"}}
    b = {"summary": {"ratio": "2.2x", "p50 / p95": "40.0 / 45.0"}}
    rows = {label: (values, spread) for label, values, spread in compare([a, b])}
    assert rows["ratio"][1] == pytest.approx(0.1)
    assert rows["p50 / p95"][1] == pytest.approx(0.1)
    assert rows["only in a"] == (["1", "-"], None)  # nothing to compare against


def test_main_prints_a_table(tmp_path, capsys):
    paths = []
    for i, value in enumerate(("3.0x", "3.0x")):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps({"summary": {"ratio": value}, "seconds_total": 10, "machine": {}}))
        paths.append(str(p))
    assert main(paths) == 0
    assert "| ratio | 3.0x | 3.0x | 0.0% |" in capsys.readouterr().out
    assert main(paths[:1]) == 2
