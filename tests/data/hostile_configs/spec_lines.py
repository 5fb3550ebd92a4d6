# ruff: noqa
"""The MTP drafts' names and token counts where no flag gives them (the eleventh campaign): a
trace's config line and a `kvcli sweep --set` grid naming mtp, a deprecated name of it or a
hostile value for `spec_method` / `num_speculative_tokens`, with and without a several-module
target (`--model-config` of weights_census/mtpmulti2's tiny Qwen3-Next at n 2), each run with
mutate_configs.py's checks (traceback, exit code, one-line refusal, slow).

Usage (from the repository root, KVCLI_PURE=1):
  PYTHONPATH=. python tests/data/hostile_configs/spec_lines.py [OUT.jsonl]
"""
import itertools
import json
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from families import _mtpmulti2  # noqa
from mutate_configs import ROOT, _alarm, check  # noqa

TRACE = ROOT / "tests" / "data" / "sched_spec_mtp" / "aseed90106.trace.jsonl"
METHODS = ["mtp", "qwen3_next_mtp", "deepseek_mtp", "glm4_moe_lite_mtp", "pangu_ultra_moe_mtp",
           "glm_ocr_mtp", "MTP", "", None, 1, ["mtp"], {"a": 1}, "mtp\u0000", "eagle"]
TOKENS = [1, 2, 3, 6, 7, 0, -1, 1.5, "2", None, 2**70, 1e30, True]


def main(out_path=None):
    from typer.testing import CliRunner

    from kvcli.app import app
    signal.signal(signal.SIGALRM, _alarm)
    runner, tmp = CliRunner(), Path(tempfile.mkdtemp(prefix="kvspec"))
    target = tmp / "config.json"
    target.write_text(json.dumps(dict(_mtpmulti2())["tiny-qwen3-next-2mtp"]))
    lines = TRACE.read_text().splitlines()
    out = open(out_path, "a") if out_path else sys.stdout
    n = 0
    for method, k in itertools.product(METHODS, TOKENS):
        head = json.loads(lines[0])
        head["config"].update(spec_method=method, num_speculative_tokens=k)
        trace = tmp / f"{n}.jsonl"
        trace.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
        jobs = [["replay", str(trace), "--json"],
                ["replay", str(trace), "--model-config", str(target), "--num-blocks", "4000"]]
        if isinstance(method, str) and "\u0000" not in method and isinstance(k, int):
            jobs.append(["sweep", "--trace", str(TRACE), "--set", f"spec_method=mtp,{method}",
                         "--set", f"num_speculative_tokens={k}",
                         "--results", str(tmp / f"{n}.r.jsonl")])
        for args in jobs:
            kind, detail, dt = check(runner, app, args)
            print(json.dumps({"i": n, "cmd": " ".join(args[:1] + args[3:4]), "method": method,
                              "k": k, "kind": kind, "detail": detail.replace(str(tmp), "T"),
                              "s": round(dt, 2)}), file=out, flush=True)
        n += 1


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
