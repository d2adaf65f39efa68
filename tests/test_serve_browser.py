"""The served page in a real headless Chromium (Debian's, driven by Selenium through its
chromium-driver), every request off the loopback refused: it opens, asks a question, the answer
streams in, a citation opens its passage highlighted in its document, the graph panel draws the
answer's entities (also on a server with --token); a document holding <script> and javascript:
links shows them as text.

The page is under test here, so the answers are scripted (a FakeLLM streaming word by word and
citing the first source it was shown): SmolLM2-135M rarely cites. tests/test_serve.py streams
the real model through the same server code."""

from __future__ import annotations

import re
import shutil

import pytest
from _fakes import FakeLLM
from _serve_index import EVIL, build_serve_index, serving

from tiny_graphrag.search.engine import QueryEngine
from tiny_graphrag.serve.app import create_app
from tiny_graphrag.serve.indexes import ServedIndex

# Each token appended to the answer before the finished answer replaces them: the stream, seen.
WATCH = """
window.tokens = 0;
new MutationObserver((records) => {
  for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 3 && !r.removedNodes.length) window.tokens++;
}).observe(document.getElementById("answer"), {childList: true});
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver

    exe, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if exe is None or driver is None:
        pytest.fail("chromium and chromium-driver are needed: `apt-get install chromium chromium-driver` (as root)")
    options = webdriver.ChromeOptions()
    options.binary_location = exe
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1200,800",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
        "--proxy-server=127.0.0.1:9",  # every request that is not to the loopback fails
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(arg)
    b = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))
    b.set_script_timeout(120)
    yield b
    b.quit()


def cite_first_source(messages, schema, max_tokens) -> str:
    first = re.search(r"-----Sources-----\nid\|text\n(\d+)\|", messages[-1]["content"])
    if first is None:  # a small reader's prompt: it answers alone, and the citation is attached to it
        return "New York, where Acme <Labs> works"
    return f"It is in New York, where Acme <Labs> works. [Data: Sources ({first.group(1)})]"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    index = build_serve_index(tmp_path_factory.mktemp("browser") / "idx")
    engine = QueryEngine(index, llm=FakeLLM(cite_first_source))
    with serving(create_app({"idx": ServedIndex("idx", engine, None)})) as base:
        yield base, engine


def _until(browser, script: str, what: str, tries: int = 1200):
    for _ in range(tries):  # a bound on the polling, not a timed assertion
        value = browser.execute_script(script)
        if value:
            return value
        browser.execute_async_script("setTimeout(arguments[arguments.length - 1], 100)")
    raise AssertionError(f"the page never showed {what}")


def test_ask_stream_open_a_citation_and_the_graph(browser, url, tmp_path):
    from selenium.webdriver.common.by import By

    browser.get(url[0] + "/")
    _until(browser, "return document.getElementById('index').options.length", "the index list")
    browser.execute_script(WATCH)
    browser.find_element(By.ID, "question").send_keys("Where is New York?")
    browser.find_element(By.ID, "mode").send_keys("naive")
    browser.find_element(By.ID, "ask-button").click()
    status = _until(
        browser, "const s = document.getElementById('status').textContent; return /search in/.test(s) && s", "a result"
    )
    assert status.startswith("naive search in")
    assert browser.execute_script("return window.tokens") >= 4  # pieces arrived one by one before the end
    links = browser.find_elements(By.CSS_SELECTOR, "#answer a")
    assert links, browser.find_element(By.ID, "answer").text
    links[0].click()
    mark = _until(browser, "return document.querySelector('#cited mark')", "the cited passage")
    sid = int(links[0].text)
    chunk = next(c for c in browser.execute_script("return result.sources.chunks") if c["id"] == sid)
    assert mark.text == chunk["text"].strip() or mark.text == chunk["text"]
    _until(browser, "return nodes && nodes.length", "the graph of the answer's entities")
    browser.find_element(By.CSS_SELECTOR, "#context-box summary").click()
    assert browser.find_element(By.ID, "context").text.startswith("[1] ")  # the evidence the small reader read
    browser.save_screenshot(str(tmp_path / "serve.png"))
    assert (tmp_path / "serve.png").stat().st_size > 10_000


def test_markup_in_documents_and_names_is_text(browser, url):
    from selenium.webdriver.common.by import By

    base, engine = url
    store = engine.store
    evil = next(store.source_ids()[c.id] for c in store.chunks() if "<script>" in c.text)
    acme = next(d["hid"] for _, d in engine.index.graph.nodes(data=True) if d["name"] == "Acme <Labs>")
    browser.get(base + "/")
    _until(browser, "return document.getElementById('index').options.length", "the index list")
    browser.find_element(By.ID, "question").send_keys("What did Acme <Labs> write?")
    browser.find_element(By.ID, "only-context").click()
    browser.find_element(By.ID, "ask-button").click()
    _until(browser, "return result !== null", "a result")
    browser.execute_script(f"openCitation('sources', {evil})")
    cited = _until(browser, "return document.querySelector('#cited mark') && document.getElementById('cited')", "it")
    assert "<script>" in cited.text and 'href="javascript:alert(1)"' in cited.text
    assert EVIL.split(" for ")[0].split("wrote ")[1] in cited.text
    assert (
        browser.execute_script("return document.querySelectorAll('#cited script, #cited a[href^=javascript]').length")
        == 0
    )
    assert browser.title == "tiny-graphrag"  # the document's script never ran
    browser.execute_script(f"openCitation('entities', {acme})")
    _until(browser, "return document.getElementById('cited-head').textContent === 'Acme <Labs>'", "the entity")
    browser.find_element(By.ID, "tab-index").click()
    _until(browser, "return document.querySelectorAll('.community').length", "the communities")
    browser.find_elements(By.CSS_SELECTOR, ".community")[0].click()
    _until(browser, "return document.querySelectorAll('#report a').length", "a community's report")


def test_with_a_token_the_page_asks_for_it_and_works(browser, url):
    from selenium.webdriver.common.by import By

    token = "s3cret-t0ken"
    with serving(create_app({"idx": ServedIndex("idx", url[1], None)}, token=token)) as base:
        browser.get(base + "/")
        _until(browser, "return !document.getElementById('token-form').hidden", "the token form")
        browser.find_element(By.ID, "token").send_keys(token)
        browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
        _until(browser, "return document.getElementById('index').options.length", "the index list")
        browser.find_element(By.ID, "question").send_keys("Where is New York?")
        browser.find_element(By.ID, "ask-button").click()
        _until(browser, "return /search in/.test(document.getElementById('status').textContent)", "a result")
        # the graph library loads (a <script src> sends no token) and draws the answer's entities
        drawn = (
            "return typeof vis !== 'undefined' && nodes && nodes.length && !!document.querySelector('#graph canvas')"
        )
        _until(browser, drawn, "the graph of the answer's entities")
