"""cache.py: the persistent model-call cache (keys, round trips, reopening, corrupt files, threads)."""

from __future__ import annotations

import threading

import pytest

from tiny_graphrag.errors import TinyGraphRAGError
from tiny_graphrag.index.cache import CacheFileError, CallCache, cache_key


def test_cache_key_depends_on_every_part_but_not_on_dict_order():
    key = cache_key("report", "fp1", {"a": 1, "b": [1, 2]})
    assert key == cache_key("report", "fp1", {"b": [1, 2], "a": 1})
    assert (
        len(
            {
                key,
                cache_key("answer", "fp1", {"a": 1, "b": [1, 2]}),
                cache_key("report", "fp2", {"a": 1, "b": [1, 2]}),
                cache_key("report", "fp1", {"a": 2, "b": [1, 2]}),
            }
        )
        == 4
    )


@pytest.mark.parametrize("on_disk", [False, True])
def test_get_put_round_trip_and_counts(tmp_path, on_disk):
    cache = CallCache(tmp_path / "calls.sqlite" if on_disk else None)
    assert cache.get("k") is None
    cache.put("k", {"text": "é", "n": [1, 2.5]})
    assert cache.get("k") == {"text": "é", "n": [1, 2.5]}
    cache.put("k", "replaced")
    assert cache.get("k") == "replaced"
    assert (cache.hits, cache.misses) == (2, 1)
    cache.close()


def test_values_persist_across_reopening(tmp_path):
    path = tmp_path / "sub" / "calls.sqlite"  # missing parents are created
    first = CallCache(path)
    first.put("k", ["a", 1])
    first.close()
    again = CallCache(path)
    assert again.get("k") == ["a", 1] and again.hits == 1
    assert CallCache(None).get("k") is None  # an in-memory cache shares nothing
    again.close()


def test_a_corrupt_cache_file_is_a_clear_error(tmp_path):
    path = tmp_path / "calls.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CacheFileError) as err:
        CallCache(path)
    msg = str(err.value)
    assert isinstance(err.value, TinyGraphRAGError)
    assert str(path) in msg and "delete it" in msg
    path.unlink()
    CallCache(path).close()  # and a fresh file is created in its place


def test_concurrent_threads_and_connections(tmp_path):
    path = tmp_path / "calls.sqlite"
    caches = [CallCache(path), CallCache(path)]  # like two processes sharing graphs/.cache
    errors: list[BaseException] = []

    def work(cache: CallCache, worker: int) -> None:
        try:
            for i in range(25):
                cache.put(f"{worker}:{i}", {"worker": worker, "i": i})
                assert cache.get(f"{worker}:{i}") == {"worker": worker, "i": i}
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(caches[w % 2], w)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(c.hits for c in caches) == 100 and sum(c.misses for c in caches) == 0
    for c in caches:
        c.close()
    reopened = CallCache(path)
    assert all(reopened.get(f"{w}:{i}") == {"worker": w, "i": i} for w in range(4) for i in range(25))
    reopened.close()
