"""`kvcli bench --gpu` and `python -m kernels.bench` without a GPU, the block tables they use
(made by kvcore), the benchmark's byte accounting, and the import boundaries
(kernels without Typer/Rich/kvcore; kvcore without torch)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "traces"      # see tests/data/README.md


def _py(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    e["PYTHONPATH"] = str(ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=timeout, check=False)


def test_kvcli_bench_gpu_without_cuda_exits_3_with_one_line() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this checks the machine without one")
    p = _py("-m", "kvcli", "bench", "--gpu")
    assert p.returncode == 3, p.stderr
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no CUDA device")


CONVERSATION = str(TRACES / "mooncake" / "conversation_trace.jsonl.gz")


@pytest.mark.parametrize(("args", "says"), [
    (["--model", "bogus"], "option --model: unknown model 'bogus'"),
    (["--cases", "64x4k,nope"], "option --cases: unknown case 'nope'"),
    (["--trace", CONVERSATION, "--model", "bogus"], "option --model: unknown model 'bogus'"),
    (["--trace", "/nonexistent.jsonl"], "/nonexistent.jsonl: no such file"),
    (["--trace", CONVERSATION, "--sample-steps", "0"], "option --sample-steps: "),
])
def test_kvcli_bench_gpu_says_bad_input_before_the_missing_gpu(args: list[str],
                                                               says: str) -> None:
    """Bad input is exit 2 on any machine: an unknown model, case or trace exited 3 ('no CUDA
    device') on one without a GPU, so the mistake surfaced only on the GPU machine."""
    p = _py("-m", "kvcli", "bench", "--gpu", *args)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"error: {says}") and len(p.stderr.splitlines()) == 1
    assert "model_config" not in p.stderr       # (it offered options bench does not have)


def test_gpu_bench_without_torch_raises_no_device() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "from kvcli.gpu_bench import run_gpu_bench\n"
            "from kvcore.errors import NoDeviceError\n"
            "try:\n"
            "    run_gpu_bench(trace=None, model=None, cases=None)\n"
            "except NoDeviceError as e:\n"
            "    print('NoDevice:', e)\n")
    p = _py("-c", code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("NoDevice: torch is not installed")


def test_kernels_bench_without_cuda_exits_3() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this checks the machine without one")
    p = _py("-m", "kernels.bench")
    assert p.returncode == 3
    assert p.stderr.strip() == "error: no CUDA device (torch.cuda.is_available() is false)"


def test_import_boundaries() -> None:
    pytest.importorskip("torch")
    p = _py("-c", "import sys, kernels, kernels.bench, kernels.checks, kernels.reference; "
                  "kernels.paged_decode_reference; "
                  "print(sorted(m for m in ('typer', 'rich', 'kvcore', 'kvcli') "
                  "if m in sys.modules))")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
    p = _py("-c", "import sys, kvcore.kv_cache_manager, kvcore.engine.replay, kvcli.app, "
                  "kvcli.gpu_bench; print('torch' in sys.modules, 'triton' in sys.modules)")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False False"


def test_ideal_bytes_of_the_llama_64x4k_step() -> None:
    from kernels.cases import ideal_bytes

    # 1 GiB of KV + 2 x 512 KiB of q/out + 64 x 256 table entries + 64 lengths (int32).
    assert ideal_bytes([4096] * 64, 32, 8, 128, 2, 16) == 1_074_856_192
    assert ideal_bytes([0, 17], 8, 2, 64, 4, 16) == 17 * 2 * 64 * 2 * 4 + 2 * 2 * 8 * 64 * 4 \
        + 2 * 4 + 2 * 4


def test_shipped_tables_are_what_kvcore_makes(tmp_path: Path) -> None:
    from kvcli.gpu_bench import SHIPPED, write_tables

    made = tmp_path / "t.json.gz"
    write_tables(made)
    with gzip.open(made, "rt") as a, gzip.open(SHIPPED, "rt") as b:
        assert json.load(a) == json.load(b)


def test_scripted_tables_are_scattered_and_consistent() -> None:
    from kvcli.gpu_bench import scripted_tables

    t = scripted_tables([100, 33, 1, 260], seed=5)
    rows = t["block_tables"]
    assert [len(r) for r in rows] == [7, 3, 1, 17]
    flat = [b for r in rows for b in r]
    assert len(set(flat)) == len(flat)                          # no sharing without a prefix
    assert all(0 <= b < t["num_blocks"] for b in flat)
    assert any(b != a + 1 for r in rows for a, b in pairwise(r))   # not one contiguous run
    p = scripted_tables([200, 220, 240], prefix=64, seed=5)["block_tables"]
    assert p[0][:4] == p[1][:4] == p[2][:4]                     # 4 shared prefix blocks
    assert len({r[4] for r in p}) == 3


def test_gpu_bench_view_from_a_device_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's table from the JSON an H200 run wrote (benchmarks/data), no GPU needed."""
    torch = pytest.importorskip("torch")
    from kernels import bench, bench_table
    from kvcli import gpu_bench

    doc = json.loads((ROOT / "benchmarks" / "data" / "gpu_bench_h200.json").read_text())
    seen = {}

    def fake_run(names, tables, *, spec, log):
        seen.update(names=names, cases=sorted(tables["cases"]), spec=spec)
        return doc

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bench, "run", fake_run)
    view = gpu_bench.run_gpu_bench(trace=None, model="llama-3.1-8b", cases="64x4k,1x32k")
    assert seen["names"] == ["64x4k", "1x32k"] and "64xvar" in seen["cases"]
    assert (seen["spec"].num_q_heads, seen["spec"].num_kv_heads, seen["spec"].head_dim) == \
        (32, 8, 128)
    table = view.tables[0]
    assert table.columns == bench_table.COLUMNS and len(table.rows) == len(doc["cases"])
    row = dict(zip(table.columns, table.rows[0]))
    c = doc["cases"][0]
    # that run timed one strategy, the legacy rule with the merge kernel: shown as "old"
    assert row["case"] == c["case"] and row["old us"] == round(c["triton"]["time_us"], 1)
    assert row["old splits"] == c["num_splits"] and row["new us"] == "-"
    assert row["kv"] == "bf16" and row["window"] == "-"
    with pytest.raises(Exception, match="unknown case 'nope'"):
        gpu_bench.run_gpu_bench(trace=None, model=None, cases="nope")


def test_benchmark_runs_end_to_end_on_cpu_under_the_interpreter() -> None:
    p = _py("-m", "kernels.bench", "--cpu-smoke", "--json", env={"TRITON_INTERPRET": "1"})
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    assert [c["case"] for c in doc["cases"]] == [
        "4x100", "4x100-fp8", "3xvar", "3xvar-fp8", "1x600", "1x600-fp8", "3xvar-w40",
        "3xvar-fp8-w40"]
    for c in doc["cases"]:
        assert c["correct"]
        for s in ("new", "old"):
            assert c["strategies"][s]["time_us"] > 0
        assert c["triton"]["time_us"] == c["strategies"]["new"]["time_us"]
        baselines = c["kv_dtype"] == "bf16" and not c["window"]
        assert ("gather_sdpa" in c) == ("sdpa_contig" in c) == baselines
        if baselines:
            assert c["max_err_vs_sdpa"] < 2e-2
    by = {c["case"]: c for c in doc["cases"]}
    # 4 x 100 tokens, 8 q / 2 kv heads of 32, bf16 q: KV + q/out + 4 x 7 table entries + lengths
    assert by["4x100"]["bytes"] == 400 * 2 * 32 * 2 * 2 + 2 * 4 * 8 * 32 * 2 + 28 * 4 + 16
    assert by["4x100-fp8"]["bytes"] == 400 * 2 * 32 * 2 * 1 + 2 * 4 * 8 * 32 * 2 + 28 * 4 + 16
    # window 40 over lengths 0, 37, 250: 0 + 37 + 40 keys; blocks 0 + 3 + (249//16 - 210//16 + 1)
    assert by["3xvar-w40"]["keys_read"] == 77
    assert by["3xvar-w40"]["bytes"] == 77 * 2 * 32 * 2 * 2 + 2 * 3 * 8 * 32 * 2 + 6 * 4 + 12
    # the smoke run's pretend GPU (4 SMs) splits 1 x 600 (2 programs): waves 2, legacy 3
    one = by["1x600"]["strategies"]
    assert (one["new"]["num_splits"], one["old"]["num_splits"]) == (2, 3)
    assert [a["num_splits"] for a in one["new"]["split_sweep"]] == [1, 2, 4]
    grid = by["1x600"]["small_grid_sweep"]
    assert len(grid) == 5 * 2 * 2 and {g["merge"] for g in grid} == {"fused", "kernel"}
    assert all("time_us" in g for g in grid)
    assert sum("small_grid_sweep" in c for c in doc["cases"]) == 1   # once in a smoke run



SAVE_EACH = """
import json, sys
from pathlib import Path
from kernels import bench
from kernels.cases import CaseSpec, smoke_tables
out = Path(sys.argv[1])
write, seen = bench.save_json(out), []
def save(doc):
    write(doc)
    on_disk = json.loads(out.read_text())
    seen.append([len(on_disk["cases"]), on_disk["done"]])
doc = bench.run(["4x100", "3xvar"], smoke_tables(), sweep=False, check=False,
                spec=CaseSpec("", 8, 2, 32), cpu_smoke=True, kv_dtypes=(None,), windows=[],
                small_grid=False, sms=4, save=save)
print(json.dumps({"seen": seen, "done": doc["done"]}))
"""


def test_a_run_saves_each_finished_case_whole(tmp_path: Path) -> None:
    """The GPU script's parts run under time limits: ``--out`` is rewritten after every case (a
    killed run leaves the cases it finished, marked not done), whole, and the run ends done."""
    p = _py("-c", SAVE_EACH, str(tmp_path / "b.json"), env={"TRITON_INTERPRET": "1"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout) == {"seen": [[1, False], [2, False]], "done": True}
    assert sorted(x.name for x in tmp_path.iterdir()) == ["b.json"]   # no .tmp left behind


def test_distinct_blocks_count_a_shared_prefix_block_once() -> None:
    """What a step must bring from memory: its warm-L2 judgment used the logical reads, so 64
    requests on one system prompt looked 64 times colder than they are."""
    from kernels.cases import distinct_blocks

    shared = [7, 8, 9]                                     # three blocks of a prompt
    rows = [[*shared, 20 + i, 40 + i] for i in range(4)]   # each then two blocks of its own
    assert distinct_blocks(rows, [80] * 4, 16) == 3 + 4 * 2
    assert distinct_blocks(rows, [49] * 4, 16) == 3 + 4     # positions 48..: the 4th block
    # a window of 20 at length 80 reads positions 60..79: blocks 3 and 4 only
    assert distinct_blocks(rows, [80] * 4, 16, window=20) == 4 * 2
    # a window reaching into the prefix: positions 40..79, blocks 2..4
    assert distinct_blocks(rows, [80] * 4, 16, window=40) == 1 + 4 * 2
    assert distinct_blocks([[], [5]], [0, 3], 16) == 1
