# ruff: noqa
"""A seeded mutator over valid model configs (the new readers of the last session: Gemma 3n/4,
Mamba/Falcon-Mamba, LFM2, the pre-Llama decoders, Nemotron-H, ModelOpt with and without an
hf_quant_config.json beside it, GPTQ dynamic rules and modules_in_block_to_quantize,
compressed-tensors groups and kv_cache_scheme), each mutant run through `kvcli config
--model-config F --gpu-memory-gib 80 --json` and (every REPLAY_EVERY-th) `kvcli replay T
--model-config F --num-blocks 4000`, in this process (typer's CliRunner), flagging:

  traceback  an exception other than SystemExit (the CLI's one-line refusal exits 2)
  exit       an exit code other than 0 or 2
  shape      exit 2 without exactly one stderr line starting 'error: '
  slow       a run over SLOW_S seconds (a hang is cut at HANG_S by SIGALRM, which re's matcher
             and Python loops honour; a run the alarm cannot stop is killed by the driver)
  memory     MemoryError (the worker runs under a 4 GiB address-space limit)
  nonsense   exit 0 with num_blocks < 1, a page of 0 bytes, NaN/inf or a negative in the sizes,
             or 0 weights estimated for a model with layers

Usage (from the repository root, KVCLI_PURE=1):
  python tests/data/hostile_configs/mutate_configs.py run SEED COUNT [OUT.jsonl [START]]
  python tests/data/hostile_configs/mutate_configs.py show SEED INDEX   # one mutant's files
The seeds are families.py's: KVMUT_SET=8 (9, 10, 11) draws the eighth (... eleventh) campaign's
(default 7), and KVMUT_FAMILIES=NAME=FOLDER/GLOB[,...] adds configs under tests/data. Under set 8
each draw also draws options (--tensor-parallel-size 2/4/8, --language-model-only,
--mm-encoder-tp-mode data, a --limit-mm-per-prompt JSON, good or bad) for both commands, and 10%
of draws cut or grow a per-layer list (a list as long as num_hidden_layers); draw_options.py
says what sets 9 and 10 add.
Each mutant is a function of (SEED, index, the seed set) alone, so a finding replays from them.
"""
import copy
import json
import math
import os
import random
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

from draw_options import memory, options
from families import seeds

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
SLOW_S, HANG_S, REPLAY_EVERY = 5.0, 6, 4
TRACE = ('{"timestamp": 0.0, "input_length": 40, "output_length": 4}\n'
         '{"timestamp": 0.5, "input_length": 24, "output_length": 3}\n')

DELETE = object()
HUGE = [10**30, 2**70, 2**63, 2**40, 1e30, 1e308]
VALUES = [DELETE, None, "x", "", "1", 1.5, 0.5, -1, 0, -2**31, [1], [], {}, {"a": 1}, True,
          False, "\u00e9\u202e\u0000", float("nan"), float("inf"), -0.0] + HUGE
BAD_REGEX = ["+:.*(", "-:[", "+:(?P<x", "*", "+:(a|b", "-:\\"]
SLOW_REGEX = ["+:(.*.*)*z$", "-:(.+)+$x", "+:(m|mo|mod|mode|model)*\\.$q", "(\\w+\\.?)+!"]
WHOLE = ["list", "bom", "empty", "null", "number", "string", "truncated", "nested_list"]
NESTED = ("text_config", "vision_config", "audio_config", "quantization_config",
          "vision_tower_config", "llm_config", "text_model_config", "thinker_config",
          "language_config", "projector_config", "slice_config", "img_processor", "embd_layer",
          "audio_processor", "rope_scaling")


def _paths(obj, prefix=()):
    """Every place in `obj` a mutation can hit (a list's first 3 items only)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    if value is DELETE:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


def _rename_rule(cfg, rng, pool):
    """A GPTQ dynamic key or a compressed-tensors re: target made `pool`'s regex."""
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return False
    if isinstance(q.get("dynamic"), dict) and q["dynamic"]:
        keys = list(q["dynamic"])
        k = rng.choice(keys)
        q["dynamic"] = {(rng.choice(pool) if x == k else x): v for x, v in q["dynamic"].items()}
        return True
    groups = q.get("config_groups")
    if isinstance(groups, dict) and groups:
        g = groups[rng.choice(list(groups))]
        if isinstance(g, dict) and isinstance(g.get("targets"), list) and g["targets"]:
            g["targets"][0] = "re:" + rng.choice(pool).lstrip("+-:")
            return True
    if isinstance(q.get("ignore"), list):
        q["ignore"].append("re:" + rng.choice(pool).lstrip("+-:"))
        return True
    return False


def mutant(seed, index):
    """(family, name, description, config text, hf_quant_config text or None)."""
    rng = random.Random(seed * 1_000_003 + index)
    # (a family first, then one of its configs: ModelOpt's 60 files would take half the draws)
    family = rng.choice(sorted({s[0] for s in SEEDS}))
    family, name, cfg, quant = rng.choice([s for s in SEEDS if s[0] == family])
    cfg, quant = copy.deepcopy(cfg), copy.deepcopy(quant)
    roll = rng.random()
    target_quant = quant is not None and rng.random() < 0.4
    if roll < 0.05:
        how = rng.choice(WHOLE)
        text = json.dumps(cfg)
        whole = {"list": json.dumps([cfg]), "bom": "\ufeff" + text, "empty": "", "null": "null",
                 "number": "7", "string": '"config"', "truncated": text[:len(text) // 2],
                 "nested_list": json.dumps({**cfg, "text_config": [1, 2]})}[how]
        if target_quant:
            return family, name, f"hf_quant_config.json {how}", json.dumps(cfg), whole
        return (family, name, f"config.json {how}", whole,
                None if quant is None else json.dumps(quant))
    if roll < 0.15 and _rename_rule(cfg, rng, BAD_REGEX + SLOW_REGEX):
        desc = "regex rule"
    elif roll < 0.25 and SET != "7" and (relength := _relength(cfg, rng)):
        desc = relength
    else:
        obj = quant if target_quant else cfg
        n = rng.choice((1, 1, 1, 2, 3))
        changes = []
        for _ in range(n):
            paths = list(_paths(obj))
            if not paths:
                break
            # (the top-level keys and quantization_config's weigh more than a deep list item)
            weights = [3.0 if len(p) == 1 or (len(p) == 2 and p[0] in NESTED) else 1.0
                       for p in paths]
            path = rng.choices(paths, weights)[0]
            value = rng.choice(VALUES)
            _set(obj, path, value if value is DELETE else copy.deepcopy(value))
            changes.append(_written(path, value))
        desc = ("hf_quant_config.json " if target_quant else "") + "; ".join(changes)
    return family, name, desc, json.dumps(cfg), None if quant is None else json.dumps(quant)


def _layer_lists(cfg):
    """(dict, key) of each list as long as its config's layer count (a per-layer list)."""
    for d in [cfg] + [v for v in cfg.values() if isinstance(v, dict)]:
        n = d.get("num_hidden_layers", d.get("num_layers"))
        if isinstance(n, int) and n > 1:
            yield from ((d, k) for k, v in d.items() if isinstance(v, list) and len(v) == n)


def _relength(cfg, rng):
    """A per-layer list cut by one or grown by one (its last item repeated): what it did."""
    found = list(_layer_lists(cfg))
    if not found:
        return None
    d, k = rng.choice(found)
    d[k] = d[k][:-1] if rng.random() < 0.5 else d[k] + d[k][-1:]
    return f"{k} of length {len(d[k])}"


def _written(path, value):
    return f"{'.'.join(map(str, path))}={'<del>' if value is DELETE else json.dumps(value)}"


def _nonsense(out):
    try:
        rep = json.loads(out)
    except ValueError:
        return "output is not JSON"
    mem = rep.get("memory") or {}
    if not isinstance(rep.get("num_blocks"), int) or rep["num_blocks"] < 1:
        return f"num_blocks {rep.get('num_blocks')}"
    for g in rep.get("groups") or []:
        if not g.get("page_size_bytes", 1) > 0:
            return f"page of {g.get('page_size_bytes')} bytes"
    for k, v in list(mem.items()) + [(k, rep.get(k)) for k in ("max_concurrency",
                                                                 "kv_cache_tokens")]:
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            return f"{k} {v}"
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            return f"{k} {v}"
    if rep.get("layers") and mem.get("weights_gib") == 0:
        return "0 weights"
    return None


def _alarm(*_):
    raise TimeoutError("hang")


def check(runner, app, args):
    """(kind or None, detail, seconds) of one kvcli run."""
    t = time.perf_counter()
    signal.alarm(HANG_S)
    try:
        res = runner.invoke(app, args)
    except TimeoutError:
        return "slow", f"over {HANG_S} s (cut)", time.perf_counter() - t
    finally:
        signal.alarm(0)
    dt = time.perf_counter() - t
    exc = res.exception
    if isinstance(exc, TimeoutError):
        return "slow", f"over {HANG_S} s (cut)", dt
    if isinstance(exc, MemoryError):
        return "memory", "MemoryError", dt
    if exc is not None and not isinstance(exc, SystemExit):
        import traceback
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{tb.filename.split('kvcore/')[-1]}:{tb.lineno}"
        return "traceback", f"{type(exc).__name__}: {str(exc)[:160]} at {where}", dt
    if res.exit_code not in (0, 2):
        return "exit", f"exit {res.exit_code}: {res.output[-200:]}", dt
    if dt > SLOW_S:
        return "slow", f"{dt:.1f} s", dt
    if res.exit_code == 2 and "Invalid value for '--" in res.stderr:
        # (typer's boxed usage error: CliRunner runs `app` in standalone mode, where kvcli's
        # main() prints it as one line 'error: option --X: ...')
        return None, "usage: " + " ".join(res.stderr.split())[-160:], dt
    if res.exit_code == 2:
        lines = res.stderr.strip().splitlines()
        errs = [ln for ln in lines if ln.startswith("error: ")]
        if len(errs) != 1 or errs[0] != lines[-1] or res.stdout.strip():
            return "shape", res.stderr[-300:], dt
        return None, lines[-1], dt
    if args[0] == "config":
        why = _nonsense(res.stdout)
        if why:
            return "nonsense", why, dt
    return None, "ok", dt


def run(seed, count, out_path=None, start=0):
    from typer.testing import CliRunner

    from kvcli.app import app
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    signal.signal(signal.SIGALRM, _alarm)
    import kvcore
    # (the script's folder, not the current one, leads sys.path: without PYTHONPATH the
    # installed kvcore is the one tested, which need not be this checkout's)
    print(f"testing {Path(kvcore.__file__).parent}", file=sys.stderr)
    runner = CliRunner()
    tmp = Path(tempfile.mkdtemp(prefix="kvmut"))
    (tmp / "t.jsonl").write_text(TRACE)
    out = open(out_path, "a") if out_path else sys.stdout
    for i in range(start, start + count):
        family, name, desc, text, quant = mutant(seed, i)
        folder = tmp / str(i)
        folder.mkdir()
        (folder / "config.json").write_text(text, encoding="utf-8")
        if quant is not None:
            (folder / "hf_quant_config.json").write_text(quant, encoding="utf-8")
        f = str(folder / "config.json")
        print(json.dumps({"start": i}), file=out, flush=True)
        opts = options(seed, i, SET, family)
        jobs = [["config", "--model-config", f, *memory(SET), "--json"] + opts]
        if i % REPLAY_EVERY == 0:
            # (a pool of --num-blocks: a real pool of 8 million blocks takes 15 s to build)
            jobs.append(["replay", str(tmp / "t.jsonl"), "--model-config", f,
                         "--num-blocks", "4000"] + opts
                        # (replay simulates a draft's acceptance, which it must be told)
                        + ["--spec-acceptance-rate", "0.7"] * ("--speculative-config" in opts))
        for args in jobs:
            kind, detail, dt = check(runner, app, args)
            if kind == "slow" and dt < HANG_S:
                # (the machine is shared: a run over SLOW_S is a finding only if its rerun,
                # the modules it imported now loaded, is slow too)
                kind, detail, dt = check(runner, app, args)
            print(json.dumps({"i": i, "cmd": args[0], "family": family, "seed_config": name,
                              "mutation": desc, "options": opts, "kind": kind,
                              "detail": detail.replace(str(folder), "F"),
                              "s": round(dt, 2)}), file=out, flush=True)


SET = os.environ.get("KVMUT_SET", "7")
SEEDS = seeds(SET, os.environ.get("KVMUT_FAMILIES", ""))

if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None,
            int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    elif sys.argv[1] == "show":
        family, name, desc, text, quant = mutant(int(sys.argv[2]), int(sys.argv[3]))
        print(family, name, desc,
              " ".join(options(int(sys.argv[2]), int(sys.argv[3]), SET, family)))
        print(text[:4000])
        if quant is not None:
            print("hf_quant_config.json:", quant[:2000])
