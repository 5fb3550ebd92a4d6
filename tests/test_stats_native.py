"""The native stats kernel (`native.pyx`, through `native_events.py`) against the Python path:
random streams (shared hashes, evictions of blocks in use, regret, partial blocks, warm-up
admissions, hashes small and 64-bit), streams that make it leave for the Python path half-way
(a hash that is no uint64, a hash domain, a negative block index), and malformed events: the
reports, or the errors, must be exactly those of the vectorized and the per-block paths. Run on
the compiled build (`KVCLI_TEST_COMPILED=1`); the pure suite has no kernel and skips them."""

from __future__ import annotations

import os
import random

import pytest
from stats_streams import Stream
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.analysis.stats import native_events, stats_from_lines
from kvcore.errors import InputError

# the compiled suite must have the kernel (a build without it is not used: kvcore/compiled.py)
COMPILED = os.environ.get("KVCLI_TEST_COMPILED", "") not in ("", "0")
pytestmark = pytest.mark.skipif(not native_events.available() and not COMPILED,
                                reason="no native stats kernel (pure, or not built)")

BIG = 1 << 64


def random_stream(seed: int, *, requests: int = 60, num_blocks: int = 24, weird=None,
                  domain_at: int | None = None) -> Stream:
    """A consistent stream of ``requests`` requests on a small pool; ``weird``: a hash used
    for the cache events of the second half (no uint64), ``domain_at``: the request admitted
    under a hash domain."""
    rng = random.Random(seed)
    bs = 4
    s = Stream(block_size=bs, num_blocks=num_blocks)
    pool = [rng.randrange(1, 40) for _ in range(20)] + [rng.randrange(BIG) for _ in range(40)]
    ref = [0] * num_blocks
    bhash: list = [None] * num_blocks
    active: dict[str, list[int]] = {}
    step = 0
    for r in range(requests):
        step += rng.choice([0, 1, 1, 2])
        s.at(step)
        name = f"r{r}"
        k = rng.randrange(1, 7)
        hashes = [rng.choice(pool) for _ in range(k)]
        tail = rng.choice([0, 0, 1, 3])
        toks = [rng.randrange(4) for _ in range(k + (tail > 0))]
        held = [b for b in range(1, num_blocks) if bhash[b] is not None]
        touched = rng.sample(held, min(len(held), rng.randrange(0, 3)))
        extra = {"first_tokens": [toks]} if rng.random() < 0.8 else {}
        if domain_at == r:
            extra["hash_domain"] = "lora=x"
        s.arrive(name, k * bs + tail)
        s.admit(name, k * bs + tail, min(len(touched), k) * bs, [hashes],
                counted=rng.random() < 0.85, **extra)
        if touched:
            s.touch(name, touched, [bhash[b] for b in touched])
            for b in touched:
                ref[b] += 1
        mine = list(touched)
        new = []
        for _ in range(rng.randrange(0, k + 1)):
            free = [b for b in range(1, num_blocks) if ref[b] == 0 and bhash[b] is None
                    and b not in new]
            if not free:
                idle = [b for b in range(1, num_blocks) if ref[b] == 0 and b not in new]
                if not idle:
                    break
                victims = rng.sample(idle, min(len(idle), rng.choice([1, 1, 2])))
                s.add("evict", name, 0, blocks=victims, hashes=[bhash[b] for b in victims])
                for b in victims:
                    bhash[b] = None
                free = victims
            new.append(rng.choice(free))
        if new:
            s.allocate(name, new)
            for b in new:
                ref[b] = 1
            use = weird if weird is not None and r > requests // 2 else None
            cached = new[:rng.randrange(len(new) + 1)]
            hs = [use if use is not None and i == 0 else rng.choice(hashes + pool[:5])
                  for i in range(len(cached))]
            if cached:
                s.cache(name, cached, hs)
                for b, h in zip(cached, hs):
                    bhash[b] = h
        mine += new
        in_use = [b for b in range(1, num_blocks) if ref[b] and bhash[b] is not None]
        if in_use and rng.random() < 0.15:          # an evict of a block in use
            b = rng.choice(in_use)
            s.evict(name, b, bhash[b])
            bhash[b] = None
        active[name] = mine
        while active and (len(active) > 3 or rng.random() < 0.3):
            done = rng.choice(sorted(active))
            blocks = active.pop(done)
            for b in blocks:
                ref[b] -= 1
            freed = [b for b in blocks if ref[b] == 0]
            s.finish(done).free(done, blocks, freed=freed,
                                evictable=[b for b in freed if bhash[b] is not None])
    return s.end()


def reports(s: Stream, monkeypatch) -> tuple[list, int]:
    """The report (or error) of the native, vectorized and per-block paths, and how often the
    native run left its kernel."""
    left = []
    leave = native_events.NativeEvents.leave_native

    def spy(self):
        left.append(1)
        leave(self)

    monkeypatch.setattr(native_events.NativeEvents, "leave_native", spy)
    lines = s.lines()
    out = []
    for opts in ({}, {"native": False}, {"per_block": True}):
        try:
            out.append(stats_from_lines("t.jsonl", lines[0], iter(lines[1:]), **opts))
        except InputError as err:
            out.append(str(err))
        if not opts:
            n_left = len(left)
    return out, n_left


@pytest.mark.parametrize("seed", range(40))
def test_native_kernel_matches_the_python_paths(seed, monkeypatch):
    (native, vec, ref), left = reports(random_stream(seed), monkeypatch)
    assert left == 0                      # the kernel did the whole stream
    assert native == vec == ref


def test_random_streams_exercise_what_the_kernel_does(monkeypatch):
    rs = [reports(random_stream(seed), monkeypatch)[0][0] for seed in range(40)]
    assert sum(r["eviction"]["regret"]["evictions"] for r in rs) > 0
    assert sum(r["eviction"]["evicted_while_referenced"] for r in rs) > 0
    for reason in ("cold", "evicted", "partial_block", "last_token"):
        assert sum(r["misses"]["blocks"][reason] for r in rs) > 0, reason


def test_a_large_pool_and_many_hashes(monkeypatch):
    """Enough hashes to grow the kernel's maps several times and delete from full ones."""
    (native, vec, ref), left = reports(random_stream(7, requests=1500, num_blocks=300),
                                       monkeypatch)
    assert left == 0 and native == vec == ref


@pytest.mark.parametrize("weird", [-3, "s", BIG - 1, 0])
def test_a_hash_the_kernel_does_not_take_sends_it_to_python(weird, monkeypatch):
    (native, vec, ref), left = reports(random_stream(5, weird=weird), monkeypatch)
    assert native == vec == ref
    # (a negative or string hash is refused where it enters, `stats/entry_checks.py`, before
    # the kernel sees it: the same error from every path, the kernel never left; a hash of
    # 2**64 - 1 or 0 the kernel takes)
    assert left == 0
    if weird in (-3, "s"):
        shown = {-3: "-3", "s": '"s"'}[weird]
        assert native == (f"t.jsonl:195: field 'hashes': bad 'cache' event: holds {shown}, "
                          "not a block hash (an int from 0 to 2**64 - 1)")


def test_a_hash_domain_sends_it_to_python(monkeypatch):
    (native, vec, ref), left = reports(random_stream(11, domain_at=30), monkeypatch)
    assert left == 1 and native == vec == ref


def base() -> Stream:
    s = Stream(block_size=4, num_blocks=10)
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[11, 12]]).allocate("A", [1, 2])
    return s.cache("A", [1, 2], [11, 12])


@pytest.mark.parametrize("kind, fields, leaves", [
    ("allocate", {"blocks": [-1]}, True),                  # a negative index: Python's list
    ("touch", {"blocks": [1, 1], "hashes": [11, 11]}, True),
    ("cache", {"blocks": [3], "hashes": [7, 8]}, True),    # the extra hash: ignored
    ("cache", {"blocks": [3, 3], "hashes": [7, 8]}, True),  # a further key: Python
    ("cache", {"blocks": [1], "hashes": [7]}, True),       # (per_block.py keeps both)
    ("evict", {"blocks": [], "hashes": []}, False),
    ("free", {"blocks": [1, 1, 2], "freed": [1]}, True),
    ("allocate", {"blocks": [3, 3]}, True),
    ("evict", {"blocks": [1, 2], "hashes": [11]}, True),
    ("evict", {"blocks": [1], "hashes": [12]}, True),
    ("evict", {"blocks": [1], "hashes": [11], "group": 1}, True),
    ("free", {"blocks": [1], "freed": [1, 2]}, True),
    ("free", {"blocks": [1]}, True),
    ("cache", {"blocks": [1], "hashes": [True]}, False),    # refused as it enters
    ("cache", {"blocks": [99], "hashes": [5]}, True),
    ("cache", {"blocks": "x", "hashes": [5]}, True),
])
def test_unusual_and_malformed_events_match(kind, fields, leaves, monkeypatch):
    s = base()
    group = fields.pop("group", 0)
    s.add(kind, "A", group, **fields).end()
    (native, vec, ref), left = reports(s, monkeypatch)
    assert native == vec == ref
    assert left == leaves


def test_an_error_reads_the_same_from_the_cli(tmp_path):
    s = base().add("evict", "A", 0, blocks=[2, 1], hashes=[12, 13]).end()
    res = CliRunner().invoke(app, ["stats", s.write(tmp_path / "bad.jsonl")])
    assert res.exit_code == 2
    assert "bad.jsonl:6: bad 'evict' event: evict of block 1 with hash 13" in res.stderr
