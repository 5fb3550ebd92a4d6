"""Compare kvcli's weights per rank with answers.json here (a development tool, run from the
project root with the project's venv: python tests/data/weights_census/quant_towers/
compare_quant_towers.py [-v] [-g] [--root DIR]): ../families/compare_families.py's comparison
(each rank equal, different, refused by both or by one; warned or not) on this folder's case
names; `--root` imports kvcore from DIR instead (an older tree, `git archive BASE kvcore kvcli |
tar -x -C DIR`: the counts before a change)."""
# ruff: noqa
import json, sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
if "--root" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--root") + 1])
    import kvcore                       # (cached: compare_families' imports take this one)
    print("kvcore from", kvcore.__file__)
sys.path.insert(0, str(HERE.parent / "families"))
import compare_families
from kvcore.errors import InputError


def kvcli(cfg, name, tp, gib):
    """compare_families.kvcli, with TP 1 resolved too (vLLM refuses Qwen2.5-VL's 3,420-wide
    down_proj under AWQ and W4A16 at every TP)."""
    if tp == 1:
        from kvcore.models.hf_config import read_hf_config
        from kvcore.sizing.resolve import resolve_kv_cache_config
        try:
            resolve_kv_cache_config(geometry=read_hf_config(cfg, name=name),
                                    tensor_parallel_size=1, gpu_memory_gib=gib,
                                    max_model_len=1024)
        except InputError as e:
            return f"refused: {e.field}: {e.message}"[:200], None
    return compare_families.kvcli(cfg, name, tp, gib)


def main():
    cases = json.loads((HERE / "answers.json").read_text())["cases"]
    tally, verbose, grid = Counter(), "-v" in sys.argv, {}
    for name, case in cases.items():
        if " " in name:
            continue        # (a case under a serving option: tests/test_quant_towers.py's)
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        for tp, ranks in case["tp"].items():
            for r, rec in enumerate(ranks):
                got, warn = kvcli(cfg, name, int(tp), 4096)
                if "refused" in rec:
                    kind = "both refuse" if isinstance(got, str) else "vllm refuses"
                    want = rec["refused"][:160].replace("\n", " ")
                else:
                    want = sum(rec["param_bytes_by_dtype"].values())
                    kind = "equal" if got == want else "kvcli refuses" if isinstance(
                        got, str) else "differ"
                kind += ", warned" if warn and kind in ("equal", "differ") else ""
                tally[kind] += 1
                grid.setdefault(name, Counter())[kind] += 1
                if verbose and kind not in ("equal", "both refuse") and r == 0:
                    print(f"{name} tp{tp}: {kind}: kvcli {got} vllm {want}")
    if "-g" in sys.argv:
        for name, kinds in grid.items():
            print(f"{name:44} " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print(dict(tally))


if __name__ == "__main__":
    main()
