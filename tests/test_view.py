"""The HTML view in a real headless Chromium with the network off: it loads, draws the nodes, shows
an entity's description and text spans; a screenshot is kept as evidence (in the test's tmp dir)."""

from __future__ import annotations

import html
import re
import shutil
import subprocess

import matplotlib.image
import pytest
from _names_index import build_names_index

from tiny_graphrag.cli.commands import main
from tiny_graphrag.errors import InputError, OutputError
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.outputs.parquet import entity_description
from tiny_graphrag.outputs.view import view_data, write_view


def _chromium(tmp_path, url: str, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail(
            "Chromium is not installed: `bash scripts/setup.sh` installs it as root (apt-get install "
            "chromium); the view test needs a real browser"
        )
    offline = ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]  # every request fails
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--window-size=1400,900",
        "--virtual-time-budget=20000",
        *offline,
        *args,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return IndexStore.open(build_names_index(tmp_path_factory.mktemp("view") / "names").path)


def test_page_renders_offline_with_details_and_screenshot(index, tmp_path):
    graph = index.graph()
    top = graph.number_of_nodes() - 1  # a cut, which the page must state
    page = write_view(index, tmp_path / "view.html", top=top)
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?https?:""", text)
    data = view_data(index, top=top)
    assert data["cut"].startswith(f"Showing the {top} of {graph.number_of_nodes()} entities")
    first = max(data["nodes"], key=lambda n: n["value"])  # the best-connected entity, surely shown
    dom = _chromium(tmp_path, f"{page.as_uri()}#q={first['label']}", "--dump-dom").stdout
    assert f"rendered {top} nodes" in dom  # vis-network ran (inlined: nothing could be fetched) and drew them
    assert html.escape(data["cut"], quote=False) in dom
    key = next(k for k, d in graph.nodes(data=True) if d["hid"] == first["id"])
    details = dom.split('<div id="details">', 1)[1].split('<h2 id="com-head"', 1)[0]
    assert html.escape(entity_description(graph.nodes[key]), quote=False) in details
    doc_id, _, start, end = graph.nodes[key]["provenance"][0]
    span = index.document(doc_id).text[start:end]
    assert f'<span class="span">{html.escape(span, quote=False)}</span>' in details
    assert "Community report:" in details
    assert "<labs>" not in dom.lower() and "Acme &lt;Labs&gt;" in dom  # names are text, never markup

    shot = tmp_path / "view.png"
    _chromium(tmp_path, f"{page.as_uri()}#q={first['label']}", f"--screenshot={shot}")
    image = matplotlib.image.imread(shot)[..., :3]
    # Only the graph's canvas: the 360-px sidebar on the left has legend dots in the same colours.
    image = image[:, int(370 * image.shape[1] / 1400) :]
    colour = [int(first["color"][i : i + 2], 16) / 255 for i in (1, 3, 5)]
    close = (abs(image - colour).max(axis=2) < 0.02).sum()
    assert close > 30, f"the screenshot {shot} shows no node in the colour {first['color']}"


def test_empty_graph_page_says_so(tmp_path):
    store = IndexStore.open(build_names_index(tmp_path / "empty", texts=["nothing to find here at all."]).path)
    assert store.graph().number_of_nodes() == 0
    page = write_view(store, tmp_path / "empty.html")
    dom = _chromium(tmp_path, page.as_uri(), "--dump-dom").stdout
    assert "This index has no entities to show" in dom and "rendered 0 nodes" in dom


def test_options_and_refusals(index, tmp_path, capsys):
    coms = index.communities()
    one = max(coms, key=lambda c: len(c.nodes))
    data = view_data(index, community=one.id)
    assert sorted(n["label"] for n in data["nodes"]) == sorted(index.graph().nodes[k]["name"] for k in one.nodes)
    assert one.id in data["cut"]
    with pytest.raises(InputError, match="levels"):
        view_data(index, level=max(c.level for c in coms) + 1)
    with pytest.raises(InputError, match="no community"):
        view_data(index, community="com-nope")
    from tiny_graphrag.indexing.update import Index

    for show in (lambda: view_data(index, top=0), lambda: Index.open(index.path).view(top=0)):  # a notebook's too
        with pytest.raises(InputError, match="--top 0: show at least one entity"):
            show()
    out = tmp_path / "graph.html"
    assert main(["view", str(index.path), "--out", str(out), "--top", "3"]) == 0
    assert len(view_data(index, top=3)["nodes"]) == 3 and out.stat().st_size > 100_000  # vis-network inlined
    before = out.read_bytes()
    assert main(["view", str(index.path), "--out", str(out)]) == 2 and "--force" in capsys.readouterr().err
    assert out.read_bytes() == before
    with pytest.raises(OutputError):
        write_view(index, index.path / "graph.html", force=True)
