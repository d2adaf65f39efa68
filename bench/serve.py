"""`python -m bench.serve [--clients 20] [--seconds 60]`: a bounded load test of `tiny-graphrag serve`
on the loopback.

Builds the Obama sample without reports (spaCy extractor, no model calls) unless `--index` names
an index, starts the server in a subprocess with the small SmolLM2-135M model, and runs `clients`
threads that each ask questions one after another (streamed, local and naive search in turn from a
fixed pool) for `seconds`. Then the same questions are answered in this process by a QueryEngine
opened as `tiny-graphrag query --llm M` opens it, and every server answer must equal its answer.
Prints a JSON summary: requests, errors, mismatches, latency and queue-wait percentiles, model calls
and cache hits (the server's answer cache serves a repeated question without the model).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
QUESTIONS = [
    "Where did Barack Obama study law?",
    "Who is Michelle Obama?",
    "Where was Barack Obama born?",
    "When was Obama awarded the Nobel Peace Prize?",
    "Which party does Obama belong to?",
    "Who was Obama's vice president?",
    "Where did Obama grow up?",
    "What did Obama do in Chicago?",
    "Who are Obama's daughters?",
    "What was the Affordable Care Act?",
]
POOL = [(mode, q) for q in QUESTIONS for mode in ("local", "naive")]


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p / 100 * len(values)))], 3) if values else float("nan")


def ask(url: str, mode: str, question: str) -> dict:
    started = time.perf_counter()
    record = {"mode": mode, "question": question, "wait": None, "positions": []}
    body = {"question": question, "mode": mode, "stream": True}
    with httpx.stream("POST", f"{url}query", json=body, timeout=600) as reply:
        if reply.status_code != 200:
            return {**record, "error": f"{reply.status_code}: {reply.read().decode()}"}
        kind = None
        for line in reply.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if kind == "queue":
                    record["positions"].append(data["position"])
                    if data["position"] == 0:
                        record["wait"] = time.perf_counter() - started
                elif kind in ("result", "error"):
                    record[kind] = data
    record["seconds"] = time.perf_counter() - started
    return record


def ready(url: str, timeout: float = 60.0) -> None:
    """Wait until the server answers (it prints its address once the port is bound, before it listens)."""
    give_up = time.perf_counter() + timeout
    while True:
        try:
            httpx.get(f"{url}api/status", timeout=5).raise_for_status()
            return
        except httpx.HTTPError:
            if time.perf_counter() > give_up:
                raise
            time.sleep(0.2)


def load(url: str, clients: int, seconds: float) -> list[dict]:
    records: list[dict] = []
    counter = iter(range(10**9))
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def client() -> None:
        while time.perf_counter() < stop:
            with lock:
                mode, question = POOL[next(counter) % len(POOL)]
            try:
                record = ask(url, mode, question)
            except httpx.HTTPError as exc:
                record = {"mode": mode, "question": question, "error": repr(exc)}
            with lock:
                records.append(record)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, default=ROOT / "graphs" / "obama-serve")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--llm", type=Path, default=MODEL)
    args = ap.parse_args()
    cli = [sys.executable, "-m", "tiny_graphrag.cli"]
    if not args.index.exists():
        doc = ROOT / "examples" / "data" / "barack_obama.txt"
        subprocess.run(
            [*cli, "build", str(doc), "--out", str(args.index), "--extractor", "spacy", "--no-reports"], check=True
        )
    server = subprocess.Popen(
        [*cli, "serve", str(args.index), "--port", "0", "--llm", str(args.llm)], stdout=subprocess.PIPE, text=True
    )
    try:
        url = server.stdout.readline().split(" at ")[1].split()[0]
        ready(url)
        t0 = time.perf_counter()
        records = load(f"{url}api/indexes/{args.index.name}/", args.clients, args.seconds)
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(60)

    Path("bench/out").mkdir(parents=True, exist_ok=True)
    Path("bench/out/serve_records.json").write_text(json.dumps(records, ensure_ascii=False))  # before the slow part
    print(f"load done: {len(records)} requests in {wall:.1f} s; answering them in Python to compare", flush=True)
    from tiny_graphrag.search.engine import QueryEngine

    engine = QueryEngine(args.index)
    engine.change_llm_settings(model=str(args.llm))
    asked = dict.fromkeys((r["mode"], r["question"]) for r in records if "result" in r)  # only what was answered
    expected = {(m, q): getattr(engine, f"{m}_search")(q).answer for m, q in asked}
    done = [r for r in records if "result" in r]
    mismatches = [r for r in done if r["result"]["answer"] != expected[(r["mode"], r["question"])]]
    latency, wait = [r["seconds"] for r in done], [r["wait"] for r in done if r["wait"] is not None]
    summary = {
        "clients": args.clients,
        "seconds": round(wall, 1),
        "requests": len(records),
        "answers": len(done),
        "errors": [r.get("error") for r in records if "result" not in r][:5],
        "mismatches": [(r["mode"], r["question"], r["result"]["answer"]) for r in mismatches][:5],
        "n_mismatches": len(mismatches),
        "latency_p50_s": percentile(latency, 50),
        "latency_p95_s": percentile(latency, 95),
        "queue_wait_p50_s": percentile(wait, 50),
        "queue_wait_p95_s": percentile(wait, 95),
        "max_position": max((max(r["positions"], default=0) for r in done), default=0),
        "model_calls": sum(r["result"]["llm_calls"] for r in done),
        "cache_hits": sum(r["result"]["cache_hits"] for r in done),
        "mean_answer_tokens": round(statistics.mean(r["result"]["completion_tokens"] for r in done), 1) if done else 0,
        "answers_per_minute": round(len(done) / wall * 60, 1),
    }
    print(json.dumps(summary, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
