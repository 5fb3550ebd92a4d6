# ruff: noqa
"""Dev tool (not a test): gen.py's cases against record.py's vLLM answers, case by case.

    KVCLI_PURE=1 .venv/bin/python tests/data/size_fuzz/compare.py CASES.jsonl ANSWERS.jsonl \\
        [--report OUT.json] [--show N] [--arch A] [--fixtures N]

Each case through tests/size_fuzz_verdict.py (the test's own check): `kvcli config
--model-config F --json` with the case's options on the case's available bytes, and kvcore's
weights estimate for rank 0. A case is equal when both refuse (kvcli in one line, exit 2), or
both size it with the same groups and blocks and the same bytes of parameters on rank 0.
Prints a line a difference and the counts by cause; the report holds every case's verdict.
--fixtures N writes cases.json (the test's fixtures): every case named in FIXED (the findings'
cases, fixed since), then N more drawn by the seed across the architectures, each config's
JSON under SMALL bytes. --add ID... appends those cases' fixtures to cases.json (a finding's
case fixed since the sample was drawn: the sample stays as it was drawn). --rerecorded ID...
replaces those cases' answers in cases.json in place (ANSWERS.jsonl: a new recording of them).
"""
import argparse, json, random, sys, tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from size_fuzz_verdict import compact, verdict

SMALL = 6000
# the cases each finding was found by (README.md), kept as fixtures whatever their size
FIXED = ("s0-0011", "s0-0024", "s0-0031", "s0-0053", "s0-0047", "s0-0055", "s0-0028",
         "s0-0049", "s0-0066", "s0-0021", "s0-0246", "s0-0051", "s0-0078", "s0-0266",
         "s0-0316", "s0-0326", "s0-0060", "s0-0309", "s0-0191", "s0-0210", "s0-0291",
         "s0-0383", "s0-0198", "s0-0033", "s0-0324", "s0-0010", "s0-0352", "s0-0288",
         "s0-0012", "s0-0610", "s0-0076",
         # (the weights left as found, fixed family by family since: --add put them in)
         "s0-0482", "s0-0376", "s0-0406", "s0-0368", "s0-0516",
         "s0-0171", "s0-0682", "s0-0357", "s0-0408",
         "s0-0544", "s0-0540", "s0-0407", "s0-0233",
         "s0-0600", "s0-0170", "s0-0065", "s0-0657",
         "s0-0695", "s0-0001", "s0-0241", "s0-0480",
         "s0-0070", "s0-0067", "s0-0589", "s0-0244", "s0-0163", "s0-0172", "s0-0045", "s0-0414",
         "s0-0019", "s0-0396", "s0-0592", "s0-0123", "s0-0504", "s0-0081", "s0-0083", "s0-0709",
         "s0-0555", "s0-0289")


# vLLM's refusals that are this machine's, not a config's (no GPU, no timm): README.md
NOT_HERE = ("Please install timm", "requires the timm library", "failed to be inspected",
            "No Unquantized MoE backend supports the deployment configuration",
            "get_device_name", "FlashAttnMLASparseImpl currently supports only FP16/BF16")


def not_here(ans):
    why = ans.get("refused", "") + " ".join(ans.get("traceback_tail") or [])
    return any(w in why for w in NOT_HERE)


def fixture(case, ans):
    return {"id": case["id"], "arch": case["arch"], "mutated": case["mutated"],
            "options": case["options"], "config": case["config"], "vllm": compact(ans)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("answers")
    ap.add_argument("--report")
    ap.add_argument("--show", type=int, default=400)
    ap.add_argument("--arch")
    ap.add_argument("--fixtures", type=int)
    ap.add_argument("--add", nargs="+", default=[])
    ap.add_argument("--rerecorded", nargs="+", default=[])
    a = ap.parse_args()
    cases = {c["id"]: c for c in map(json.loads, Path(a.cases).read_text().splitlines())}
    answers = [json.loads(x) for x in Path(a.answers).read_text().splitlines()]
    tmp = Path(tempfile.mkdtemp())
    causes, report, built, archs = Counter(), {}, 0, Counter()
    for ans in answers:
        case = cases[ans["id"]]
        if a.arch and case["arch"] != a.arch:
            continue
        cause, detail = ("not built here", ans["refused"][:200]) if not_here(ans) else verdict(
            case["config"], case["options"], compact(ans), tmp / f"{ans['id']}.config.json")
        causes[cause] += 1
        built += "refused" not in ans
        archs[case["arch"]] += 1
        report[ans["id"]] = {"arch": case["arch"], "cause": cause, "detail": detail,
                             "options": case["options"], "mutated": case["mutated"]}
        if cause != "equal" and causes[cause] <= a.show:
            print(ans["id"], case["arch"], cause, json.dumps(detail)[:400], case["options"])
    print(f"{len(report)} cases, {len(archs)} architectures, {built} built by vLLM;",
          dict(causes.most_common()))
    if a.report:
        Path(a.report).write_text(json.dumps(report, indent=1))
    if a.fixtures:
        by_id = {x["id"]: x for x in answers}
        equal = [i for i in by_id if report.get(i, {}).get("cause") == "equal"
                 and len(json.dumps(cases[i]["config"])) < SMALL and i not in FIXED]
        pick = list(FIXED) + random.Random(0).sample(equal, min(a.fixtures, len(equal)))
        out = [fixture(cases[i], by_id[i]) for i in pick]
        # (one key a line, every line under 100 characters)
        (HERE / "cases.json").write_text(json.dumps(out, indent=0) + "\n")
    if a.add:
        by_id = {x["id"]: x for x in answers}
        kept = json.loads((HERE / "cases.json").read_text())
        have = {x["id"] for x in kept}
        kept += [fixture(cases[i], by_id[i]) for i in a.add if i not in have]
        (HERE / "cases.json").write_text(json.dumps(kept, indent=0) + "\n")
    if a.rerecorded:    # (those cases' answers replaced in place: the file's order kept)
        by_id = {x["id"]: x for x in answers}
        kept = json.loads((HERE / "cases.json").read_text())
        for x in kept:
            if x["id"] in a.rerecorded:
                x["vllm"] = compact(by_id[x["id"]])
        (HERE / "cases.json").write_text(json.dumps(kept, indent=0) + "\n")


if __name__ == "__main__":
    main()
