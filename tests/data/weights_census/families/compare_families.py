"""Compare kvcli's weights per rank with answers.json here (a development tool, run from the
project root with the project's venv: python tests/data/weights_census/families/compare_
families.py [-v] [-g]): per case, each rank equal, different (kvcli's and vLLM's bytes), refused by
both, or refused by one; and whether kvcli warns that it counts the weights unquantised.
../quant2/compare_quant2.py runs it on its own folder."""
# ruff: noqa
import json, sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config


def kvcli(cfg, name, tp, gib=80):
    try:
        g = read_hf_config(cfg, name=name)
        if tp > 1:
            resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=gib,
                                    max_model_len=1024)
        return estimate_weights_bytes(g, tp), unquantised_method(g)
    except InputError as e:
        return f"refused: {e.field}: {e.message}"[:200], None
    except Exception as e:               # a crash is a finding too
        return f"CRASH {type(e).__name__}: {e}"[:200], None


def main(here=HERE, gib=80):
    """`here`'s answers.json against kvcli (`gib`: the memory a TP check sizes with)."""
    cases = json.loads((here / "answers.json").read_text())["cases"]
    tally, verbose, grid = Counter(), "-v" in sys.argv, {}
    for key, case in cases.items():
        name = key.split("/")[-1]
        cfg = json.loads((here / name).read_text())
        for tp, ranks in ({"1": [case]} if "refused" in case else case["tp"]).items():
            for r, rec in enumerate(ranks):
                got, warn = kvcli(cfg, name, int(tp), gib)
                if "refused" in rec:
                    kind = "both refuse" if isinstance(got, str) else "vllm refuses"
                    want = rec["refused"][:160].replace("\n", " ")
                else:
                    want = sum(rec["param_bytes_by_dtype"].values())
                    kind = "equal" if got == want else "kvcli refuses" if isinstance(
                        got, str) else "differ"
                if kind == "equal" and warn:
                    kind = "equal, warned"
                if kind == "differ" and warn:
                    kind = "differ, warned"
                tally[kind] += 1
                grid.setdefault(name.removesuffix(".config.json"), Counter())[kind] += 1
                if verbose and kind not in ("equal", "both refuse"):
                    print(f"{name} tp{tp} r{r}: {kind}: kvcli {got} vllm {want}")
    if "-g" in sys.argv:
        for name, kinds in grid.items():
            print(f"{name:34} " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print(dict(tally))


if __name__ == "__main__":
    main()
