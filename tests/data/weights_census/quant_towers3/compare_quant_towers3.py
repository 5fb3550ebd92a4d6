"""Compare kvcli's weights per rank with answers.json here: ../quant_towers/
compare_quant_towers.py's comparison on this folder (a development tool, run from the project
root with the project's venv: python tests/data/weights_census/quant_towers3/
compare_quant_towers3.py [-v] [-g] [--root DIR]; `--root`: kvcore from an older tree, the
counts before a change). A case vLLM refused before any build (bitsandbytes, a method vLLM
0.33 does not know) is tallied "refused whole" when kvcli refuses it too."""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "compare_quant_towers", HERE.parent / "quant_towers" / "compare_quant_towers.py")
cqt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cqt)
cqt.HERE = HERE


def main():
    cases = json.loads((HERE / "answers.json").read_text())["cases"]
    tally, verbose = cqt.Counter(), "-v" in sys.argv
    for name, case in cases.items():
        cfg = json.loads((HERE / f"{name.split(' ')[0]}.config.json").read_text())
        if "refused" in case:       # (vLLM refused before any build: bitsandbytes)
            got, _ = cqt.kvcli(cfg, name, 1, 4096)
            kind = "refused whole by both" if isinstance(got, str) else "refused whole by vLLM"
            tally[kind] += 1
            print(f"{name}: {kind}: kvcli {got}")
            continue
        if " " in name:
            continue        # (a case under a serving option: tests/test_quant_towers3.py's)
        for tp, ranks in case["tp"].items():
            got, warn = cqt.kvcli(cfg, name, int(tp), 4096)
            for r, rec in enumerate(ranks):
                if "refused" in rec:
                    kind = "both refuse" if isinstance(got, str) else "vllm refuses"
                    want = rec["refused"][:160].replace("\n", " ")
                else:
                    want = sum(rec["param_bytes_by_dtype"].values())
                    kind = "equal" if got == want else "kvcli refuses" if isinstance(
                        got, str) else "differ"
                kind += ", warned" if warn and kind in ("equal", "differ") else ""
                tally[kind] += 1
                if verbose and kind not in ("equal", "both refuse") and r == 0:
                    print(f"{name} tp{tp}: {kind}: kvcli {got} vllm {want}")
    print(dict(tally))


if __name__ == "__main__":
    main()
