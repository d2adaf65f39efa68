// tiny-graphrag serve: the page's logic. Every text (documents, names, answers) goes in with
// textContent or as canvas labels, never as HTML, so markup in the data shows as text.
"use strict";
const $ = (id) => document.getElementById(id);
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function link(text, onclick) {
  const a = el("a", text, "link");
  a.href = "#";  // a fixed target: the click runs onclick, never a URL from the data
  a.addEventListener("click", (ev) => { ev.preventDefault(); onclick(); });
  return a;
}

// ---- the API, with the token asked for once -------------------------------------------------
let token = sessionStorage.getItem("tgr-token") || "";
let tokenWaiters = [];
function askToken() {
  $("token-form").hidden = false;
  $("token").focus();
  return new Promise((resolve) => tokenWaiters.push(resolve));
}
$("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  token = $("token").value;
  sessionStorage.setItem("tgr-token", token);
  $("token-form").hidden = true;
  tokenWaiters.splice(0).forEach((r) => r());
});
async function call(path, options = {}) {
  for (;;) {
    const headers = Object.assign({}, options.headers || {});
    if (token) headers["Authorization"] = "Bearer " + token;
    const response = await fetch(path, Object.assign({}, options, { headers }));
    if (response.status === 401) { await askToken(); continue; }
    if (!response.ok) {
      let message = response.statusText;
      try { message = (await response.json()).error || message; } catch (e) { /* not JSON */ }
      throw new Error(`${response.status}: ${message}`);
    }
    return response;
  }
}
const getJSON = async (path) => (await call(path)).json();
const api = (path) => `api/indexes/${encodeURIComponent($("index").value)}${path}`;

// ---- tabs and the index list ----------------------------------------------------------------
function show(tab) {
  $("ask").hidden = tab !== "ask";
  $("index-page").hidden = tab !== "index";
  $("tab-ask").classList.toggle("on", tab === "ask");
  $("tab-index").classList.toggle("on", tab === "index");
  if (tab === "index") loadIndexPage();
}
$("tab-ask").addEventListener("click", () => show("ask"));
$("tab-index").addEventListener("click", () => show("index"));
$("mode").addEventListener("change", () => {
  document.querySelectorAll(".for-global").forEach((e) => (e.hidden = $("mode").value !== "global"));
  document.querySelectorAll(".for-tree").forEach((e) => (e.hidden = $("mode").value !== "tree"));
});
let indexes = [];
async function loadIndexes() {
  indexes = await getJSON("api/indexes");
  $("index").replaceChildren(...indexes.map((i) => el("option", i.name)));
  noteAnswering();
}
function noteAnswering() {
  const current = indexes.find((i) => i.name === $("index").value);
  $("status").textContent = current && current.answering ? current.answering : "";
}
$("index").addEventListener("change", () => { noteAnswering(); if (!$("index-page").hidden) loadIndexPage(); });

// ---- asking ---------------------------------------------------------------------------------
let result = null;  // the last finished SearchResult (as JSON)
$("query").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = { question: $("question").value, mode: $("mode").value, only_context: $("only-context").checked, stream: true };
  if (body.mode === "global" && $("level").value !== "") body.level = Number($("level").value);
  if (body.mode === "tree" && $("strategy").value) body.strategy = $("strategy").value;
  if ($("context-tokens").value !== "") body.context_tokens = Number($("context-tokens").value);
  $("ask-button").disabled = true;
  $("answer").replaceChildren();
  $("notes").replaceChildren();
  $("context-box").hidden = true;
  $("status").textContent = "retrieving…";
  try {
    const response = await call(api("/query"), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    await readEvents(response, onEvent);
  } catch (e) {
    $("status").replaceChildren(el("span", e.message, "error"));
  } finally {
    $("ask-button").disabled = false;
  }
});
async function readEvents(response, handle) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const kind = (block.match(/^event: (.*)$/m) || [])[1];
      const data = (block.match(/^data: (.*)$/m) || [])[1];
      if (kind && data) handle(kind, JSON.parse(data));
    }
  }
}
function onEvent(kind, data) {
  if (kind === "queue") {
    $("status").textContent = data.position > 0
      ? `waiting for the model: ${data.position} ${data.position === 1 ? "request" : "requests"} ahead of yours`
      : "the model is writing…";
  } else if (kind === "token") {
    $("answer").append(document.createTextNode(data.text));
  } else if (kind === "result") {
    showResult(data);
  } else if (kind === "error") {
    $("status").replaceChildren(el("span", data.error, "error"));
  }
}
function showResult(r) {
  result = r;
  const secs = r.seconds && r.seconds.total !== undefined ? ` in ${r.seconds.total.toFixed(1)} s` : "";
  $("status").textContent = `${r.mode} search${secs}` + (r.only_context ? " (only the context: no model call)" : "");
  $("answer").replaceChildren(...renderAnswer(r.answer));
  $("notes").replaceChildren(...r.notes.map((n) => el("li", n)));
  $("context").textContent = r.context;
  $("context-box").hidden = false;
  $("context-box").open = r.only_context;
  drawAnswerGraph(r);
}

// ---- citations: "[Data: Sources (1, 2); Reports (3)]" -> links ------------------------------
const KINDS = { sources: "sources", reports: "reports", entities: "entities", relationships: "relationships" };
function renderAnswer(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(/\[Data:([^\]]*)\]/g)) {
    out.push(document.createTextNode(text.slice(last, m.index)));
    const span = el("span", "[Data: ");
    m[1].split(";").forEach((part, i) => {
      const g = part.trim().match(/^(\w+)\s*\(([^)]*)\)$/);
      if (i) span.append("; ");
      if (!g || !KINDS[g[1].toLowerCase()]) { span.append(part.trim()); return; }
      span.append(g[1] + " (");
      g[2].split(",").map((s) => s.trim()).forEach((id, j) => {
        if (j) span.append(", ");
        if (/^\d+$/.test(id)) span.append(link(id, () => openCitation(g[1].toLowerCase(), Number(id))));
        else span.append(id);
      });
      span.append(")");
    });
    span.append("]");
    out.push(span);
    last = m.index + m[0].length;
  }
  out.push(document.createTextNode(text.slice(last)));
  return out;
}
async function openCitation(kind, id) {
  const box = $("cited");
  box.className = "";
  $("cited-head").textContent = `${kind[0].toUpperCase()}${kind.slice(1)} ${id}`;
  try {
    if (kind === "sources") return showSource(await getJSON(api(`/sources/${id}`)));
    if (kind === "entities") return showEntity(await getJSON(api(`/entities?id=${id}`)));
    const items = result ? result.sources[kind] : [];
    const item = items.find((x) => x.id === id);
    if (!item) return box.replaceChildren(el("p", `${kind} ${id} is not in this answer's context`, "error"));
    if (kind === "reports") {
      box.replaceChildren(el("h3", item.title), el("div", `community ${item.community_id}, level ${item.level}`, "muted"), el("pre", item.text));
      box.append(link("open the community", () => { show("index"); openReport(item.community_id); }));
    } else {
      box.replaceChildren(el("p", `${item.head} —${item.label}→ ${item.tail}`), el("pre", item.text));
    }
  } catch (e) {
    box.replaceChildren(el("p", e.message, "error"));
  }
}
function showSource(s) {
  const w = s.window, doc = el("div", undefined, "doc");
  const mark = el("mark", w.text.slice(s.start - w.offset, s.end - w.offset));
  doc.append(w.offset ? "…" : "", w.text.slice(0, s.start - w.offset), mark, w.text.slice(s.end - w.offset), w.offset + w.text.length < s.document.length ? "…" : "");
  const where = s.location;
  $("cited").replaceChildren(el("div", where, "muted"), doc);
  mark.scrollIntoView({ block: "center" });
}
function showEntity(e) {
  const box = $("cited");
  $("cited-head").textContent = e.name;
  box.replaceChildren(el("div", e.description), el("div", `type ${e.type} · id ${e.id}`, "muted"));
  const rel = el("ul");
  for (const r of e.relations) {
    const other = r.from === e.id ? r.to : r.from;
    const li = el("li", `${r.from === e.id ? "→" : "←"} ${r.label} `);
    li.append(link(`entity ${other}`, () => openCitation("entities", other)));
    rel.append(li);
  }
  const mentions = el("ul");
  e.mentions.forEach((m) => mentions.append(el("li")).append(link(`source ${m.source}, characters ${m.start}-${m.end}`, () => openCitation("sources", m.source))));
  box.append(el("h3", "Relations"), rel, el("h3", "Mentioned in"), mentions);
  for (const c of e.communities) box.append(el("div")).append(link(`community ${c.id} (level ${c.level})${c.title ? ": " + c.title : ""}`, () => { show("index"); openReport(c.id); }));
}

// ---- the graph panel: the answer's entities and their neighbours; a click expands ----------
let network = null, nodes = null, edges = null;
function resetGraph() {
  nodes = new vis.DataSet();
  edges = new vis.DataSet();
  network = new vis.Network($("graph"), { nodes, edges }, {
    nodes: { shape: "dot", size: 12, font: { size: 13 } },
    edges: { arrows: "to", font: { size: 10, align: "middle" }, color: { color: "#aaa" } },
    physics: { stabilization: { iterations: 150 } },
  });
  network.on("stabilizationIterationsDone", () => network.fit());
  network.on("click", (p) => { if (p.nodes.length) { expand(p.nodes[0]); openCitation("entities", p.nodes[0]); } });
}
function addGraph(g) {
  nodes.update(g.nodes.map((n) => ({ id: n.id, label: n.name, title: `${n.name} (${n.type})`, color: n.color, borderWidth: n.seed ? 3 : 1 })));
  edges.update(g.edges.map((e) => ({ id: `${e.from}-${e.label}-${e.to}`, from: e.from, to: e.to, label: e.label })));
  $("graph-note").textContent = `${nodes.length} entities` + (g.more ? ` (${g.more} more not shown)` : "") + " · click one to expand";
}
async function expand(id) { addGraph(await getJSON(api(`/graph?ids=${id}`))); }
async function drawAnswerGraph(r) {
  resetGraph();
  const cited = (r.answer.match(/Entities \(([^)]*)\)/g) || []).flatMap((m) => m.match(/\d+/g) || []);
  let ids = cited.length ? cited : r.sources.entities.slice(0, 10).map((e) => e.id);
  let query = `ids=${ids.join(",")}`;
  if (!ids.length) {
    const chunks = (r.answer.match(/Sources \(([^)]*)\)/g) || []).flatMap((m) => m.match(/\d+/g) || []);
    ids = chunks.length ? chunks : r.sources.chunks.slice(0, 5).map((c) => c.id);
    query = `sources=${ids.join(",")}`;
  }
  if (!ids.length) { $("graph-note").textContent = "no entities in this answer's context"; return; }
  try { addGraph(await getJSON(api(`/graph?${query}`))); } catch (e) { $("graph-note").textContent = e.message; }
}

// ---- the index page -------------------------------------------------------------------------
async function loadIndexPage() {
  const info = await getJSON(api(""));
  const c = info.counts || {};
  const table = el("table");
  const row = (k, v) => { const tr = table.insertRow(); tr.insertCell().textContent = k; tr.insertCell().textContent = v; };
  row("built", `${info.created || "?"} by ${info.library_version || "?"}`);
  for (const k of ["documents", "chunks", "entities", "relations", "reports"]) row(k, c[k] ?? 0);
  for (const l of info.levels) row(`level ${l.level}`, `${l.communities} communities, size ${l.min_size}-${l.max_size}`);
  row("tree", info.tree ? "yes" : "none");
  row("answers", info.answering || "yes");
  $("info").replaceChildren(table);
  const list = await getJSON(api("/communities"));
  $("communities").replaceChildren(...list.map((k) => {
    const d = el("div", undefined, "community");
    d.append(el("b", k.title || `Community ${k.id}`), el("div", `${k.id} · level ${k.level} · ${k.size} entities`, "muted"));
    d.addEventListener("click", () => openReport(k.id));
    return d;
  }));
}
async function openReport(id) {
  const box = $("report");
  box.className = "";
  try {
    const r = await getJSON(api(`/communities/${encodeURIComponent(id)}`));
    $("report-head").textContent = r.report ? r.report.title : `Community ${r.community}`;
    box.replaceChildren(el("div", `community ${r.community}, level ${r.level}` + (r.report ? `, rating ${r.report.rating}` : ", no report"), "muted"));
    if (r.report) {
      box.append(el("p", r.report.summary));
      for (const f of r.report.findings) box.append(el("h3", f.summary), el("p", f.explanation));
    }
    const names = el("p");
    r.entities.forEach((e, i) => { if (i) names.append(", "); names.append(link(e.name, () => { show("ask"); openCitation("entities", e.id); })); });
    box.append(el("h3", "Entities"), names);
  } catch (e) {
    box.replaceChildren(el("p", e.message, "error"));
  }
}

loadIndexes().catch((e) => $("status").replaceChildren(el("span", e.message, "error")));
