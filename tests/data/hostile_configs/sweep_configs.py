# ruff: noqa
"""The exhaustive side of mutate_configs.py's random draws: every top-level key kvcore reads of
each named seed config, set to each of SWEEP in turn, run through `kvcli config --model-config
F --gpu-memory-gib 80 --json` with mutate_configs.py's checks.

Usage (from the repository root, KVCLI_PURE=1):
  python tests/data/hostile_configs/sweep_configs.py NAME[,NAME] [OUT.jsonl]
    (NAME: a seed config's file name, as mutate_configs.seeds() names it, or a family;
    "first:FAMILY" its first config only)
Under KVMUT_SET=8 (or 9) the keys of the nested configs (text_config, vision_config, ...) are
swept too, and the run takes draw_options.memory's pool options. Each pass whose value is of a
wrong type ("x", [1], {"a": 1}, true) and whose report equals the unmutated config's is written
with "lead": true: the value read as the default or skipped without a word (quiet_lies.py's
test, here for every key rather than the random draws' single edits).
"""
import copy
import json
import resource
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from draw_options import memory  # noqa
from mutate_configs import DELETE, NESTED, ROOT, SEEDS, SET, _alarm, _set, _written, check  # noqa

SWEEP = [DELETE, None, "x", 1.5, -1, 0, 2**70, float("inf"), [1], {"a": 1}, True]
# (the keys kvcore reads: a key it never names cannot change a size)
READ = "".join(p.read_text() for p in (ROOT / "kvcore").rglob("*.py"))


WRONG = ('"x"', "[1]", '{"a": 1}', "true")


def _report(runner, app, folder, cfg, quant, label):
    """`kvcli config --json`'s report of `cfg` with the file's name taken out, None if refused."""
    folder = Path(folder) / label
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    if quant is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(quant))
    res = runner.invoke(app, ["config", "--model-config", str(folder / "config.json"),
                              *memory(SET), "--json"])
    return res.stdout.replace(str(folder), "F") if res.exit_code == 0 else None


def sweep(names, out_path=None):
    """Every top-level key kvcore reads of each seed config named in `names` (or of a
    family's), set to each of SWEEP in turn: the exhaustive side of the random draws."""
    from typer.testing import CliRunner

    from kvcli.app import app
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    signal.signal(signal.SIGALRM, _alarm)
    import kvcore
    # (the script's folder, not the current one, leads sys.path: without PYTHONPATH the
    # installed kvcore is the one tested, which need not be this checkout's)
    print(f"testing {Path(kvcore.__file__).parent}", file=sys.stderr)
    runner = CliRunner()
    tmp = Path(tempfile.mkdtemp(prefix="kvsweep"))
    out = open(out_path, "a") if out_path else sys.stdout
    n, firsts = 0, set()
    for family, name, cfg, quant in SEEDS:
        first = f"first:{family}" in names and family not in firsts
        if family not in names and name not in names and not first:
            continue
        firsts.add(family)
        base = _report(runner, app, tmp, cfg, quant, "base")
        paths = [(k,) for k in cfg if f'"{k}"' in READ]
        if SET != "7":
            paths += [(k, j) for k in NESTED if isinstance(cfg.get(k), dict)
                      for j in cfg[k] if f'"{j}"' in READ]
            # (a nested config's own objects: Phi-4-multimodal's audio_processor.config, ...)
            paths += [(k, j, m) for k in NESTED if isinstance(cfg.get(k), dict)
                      for j in cfg[k] if isinstance(cfg[k][j], dict)
                      for m in cfg[k][j] if f'"{m}"' in READ]
        for path in paths:
            for value in SWEEP:
                mut = copy.deepcopy(cfg)
                _set(mut, path, value if value is DELETE else copy.deepcopy(value))
                folder = tmp / str(n)
                folder.mkdir()
                (folder / "config.json").write_text(json.dumps(mut))
                if quant is not None:
                    (folder / "hf_quant_config.json").write_text(json.dumps(quant))
                args = ["config", "--model-config", str(folder / "config.json"),
                        *memory(SET), "--json"]
                kind, detail, dt = check(runner, app, args)
                desc = _written(path, value)
                lead = (kind is None and detail == "ok" and value is not DELETE
                        and json.dumps(value) in WRONG
                        and _report(runner, app, folder, mut, quant, "m") == base)
                print(json.dumps({"i": n, "cmd": "config", "family": family, "seed_config": name,
                                  "mutation": desc, "kind": kind,
                                  "detail": detail.replace(str(folder), "F"), "s": round(dt, 2),
                                  **({"lead": True} if lead else {})}),
                      file=out, flush=True)
                n += 1


if __name__ == "__main__":
    sweep(sys.argv[1].split(","), sys.argv[2] if len(sys.argv) > 2 else None)
