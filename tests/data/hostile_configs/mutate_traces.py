# ruff: noqa
"""The trace side of the campaign (mutate_configs.py's checks): a short valid trace (a config
line with a few of `kvcli replay`'s config keys, then four requests of traces/shared-prefix.jsonl
cut to 64 tokens, or an op script of traces/*.ops.jsonl) with one to three values replaced
(deleted, null, a wrong type, zero, negative, past 2^64, NaN: mutate_configs.VALUES) in the
config line or a request, or a request's timestamp left out (the all-or-none rule). Run
through `kvcli replay T --num-blocks 400` or `kvcli script T`, in this process.

Usage (from the repository root, KVCLI_PURE=1):
  python tests/data/hostile_configs/mutate_traces.py run SEED COUNT [OUT.jsonl]
  python tests/data/hostile_configs/mutate_traces.py show SEED INDEX
"""
import copy
import json
import random
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from mutate_configs import DELETE, HANG_S, ROOT, VALUES, _alarm, _paths, _set, check  # noqa

# (config keys whose valid values a trace's config line takes: a few of each kind)
CONFIG = {"block_size": 16, "max_num_seqs": 8, "max_num_batched_tokens": 256,
          "max_model_len": 512, "enable_prefix_caching": True, "enable_chunked_prefill": True,
          "long_prefill_token_threshold": 0, "policy": "fcfs", "num_speculative_tokens": 2,
          "spec_acceptance_rate": 0.5, "spec_seed": 1, "kv_offloading_size_chunks": 16,
          "prefix_cache_retention_interval": 64, "hash_seed": "1",
          "prefix_caching_hash_algo": "sha256", "async_scheduling": False}


def _requests():
    out = []
    for line in (ROOT / "traces" / "shared-prefix.jsonl").read_text().splitlines()[:4]:
        r = json.loads(line)
        r["input_length"], r["output_length"], r["hash_ids"] = 64, 4, r["hash_ids"][:4]
        out.append(r)
    return out


def _ops(rng):
    files = sorted((ROOT / "traces").glob("*.ops.jsonl"))
    return [json.loads(x) for x in rng.choice(files).read_text().splitlines() if x.strip()]


def mutant(seed, index):
    """(kind, description, the trace's text)."""
    rng = random.Random(seed * 1_000_003 + index)
    if rng.random() < 0.3:
        lines = _ops(rng)
        kind = "script"
    else:
        keys = rng.sample(sorted(CONFIG), rng.randint(0, 4))
        lines = ([{"config": {k: CONFIG[k] for k in keys}}] if keys else []) + _requests()
        kind = "replay"
    changes = []
    if kind == "replay" and rng.random() < 0.2:
        i = rng.randrange(len(lines))
        how = rng.choice(["del", "null"])
        if "timestamp" in lines[i]:
            if how == "del":
                del lines[i]["timestamp"]
            else:
                lines[i]["timestamp"] = None
            changes.append(f"line {i + 1} timestamp {how}")
    for _ in range(rng.choice((1, 1, 2, 3))):
        i = rng.randrange(len(lines))
        paths = [p for p in _paths(lines[i]) if not (len(p) > 1 and isinstance(p[-1], int)
                                                      and p[-2] == "hash_ids" and p[-1] > 0)]
        if not paths:
            continue
        path = rng.choice(paths)
        value = rng.choice(VALUES)
        _set(lines[i], path, value if value is DELETE else copy.deepcopy(value))
        changes.append(f"line {i + 1} {'.'.join(map(str, path))}="
                       f"{'<del>' if value is DELETE else json.dumps(value)}")
    return kind, "; ".join(changes), "".join(json.dumps(x) + "\n" for x in lines)


def run(seed, count, out_path=None):
    from typer.testing import CliRunner

    from kvcli.app import app
    signal.signal(signal.SIGALRM, _alarm)
    import kvcore
    # (the script's folder, not the current one, leads sys.path: without PYTHONPATH the
    # installed kvcore is the one tested, which need not be this checkout's)
    print(f"testing {Path(kvcore.__file__).parent}", file=sys.stderr)
    runner = CliRunner()
    tmp = Path(tempfile.mkdtemp(prefix="kvtmut"))
    out = open(out_path, "a") if out_path else sys.stdout
    for i in range(count):
        kind, desc, text = mutant(seed, i)
        f = tmp / f"{i}.jsonl"
        f.write_text(text)
        args = ([kind, str(f)] + (["--num-blocks", "400"] if kind == "replay" else []))
        found, detail, dt = check(runner, app, args)
        print(json.dumps({"i": i, "cmd": kind, "family": "trace", "seed_config": kind,
                          "mutation": desc, "kind": found,
                          "detail": detail.replace(str(f), "F"), "s": round(dt, 2)}),
              file=out, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        kind, desc, text = mutant(int(sys.argv[2]), int(sys.argv[3]))
        print(kind, desc)
        print(text[:3000])
