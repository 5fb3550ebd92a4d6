"""Dev tool (not a test): sanity checks of oracle_spec.py's answers, vLLM's invariants as its
lines show them.

    python3 tests/data/sched_spec/check_spec.py X.trace.jsonl ...

reads X.expected.jsonl (or .gz) beside each trace and prints one line per case: OK with what it
covers (preemptions, padded admissions, max_model_len stops, ...), or what failed. Checked:
drafts scheduled per request at most K, a padded admission exactly K (1 + K tokens); the
summary's spec totals against the step lines (sync: every scheduled draft counted; async: at
most those); accepted <= drafted, none at rate 0, all but the padded ones at rate 1; every
request finished with its output_length (or at max_model_len); every block free at the end;
and, for a sync request never preempted, its decode accounting: output = 1 + decode steps +
accepted drafts, so at rate 0 output = 1 + decode steps and at rate 1 the last decode step is
the first whose scheduled tokens cover output_length (ceil((out - 1) / (K + 1)) full steps).
"""

import gzip
import json
import sys
from pathlib import Path


def answer(trace: Path) -> list[dict]:
    p = trace.with_name(trace.name.replace(".trace.", ".expected."))
    text = p.read_text() if p.exists() else gzip.decompress(
        p.with_name(p.name + ".gz").read_bytes()).decode()
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def check(trace: Path) -> tuple[list[str], set[str]]:
    lines = trace.read_text().splitlines()
    cfg = json.loads(lines[0])["config"]
    reqs = {str(r["id"]): r for r in map(json.loads, lines[1:]) if r}
    got = answer(trace)
    if "error" in got[0]:
        return [f"error {got[0]['error']}"], set()
    steps, summ = got[:-1], got[-1]["summary"]
    k, rate, asyn = (cfg["num_speculative_tokens"], cfg["spec_acceptance_rate"],
                     cfg.get("async_scheduling", False))
    mml = cfg.get("max_model_len", 8192)
    bad, seen = [], set()
    drafted = drafts = pads = 0
    for e in steps:
        ss = e.get("spec_scheduled", {})
        for rid, d in ss.items():
            drafted, drafts = drafted + d, drafts + 1
            if not 0 < d <= k:
                bad.append(f"step {e['step']}: {rid} {d} drafts")
            if rid in e["admitted"]:
                pads += 1
                if d != k or e["scheduled"][rid] != 1 + k:
                    bad.append(f"step {e['step']}: padded {rid} {d} drafts")
        seen |= {"preemption"} if e["preempted"] else set()
        seen |= {"events"} if e.get("events") else set()
    seen |= {"pad"} if pads else set()
    sp = summ["spec"]
    if sp["num_accepted_tokens"] > sp["num_draft_tokens"]:
        bad.append(f"accepted > drafted {sp}")
    if (sp["num_draft_tokens"], sp["num_drafts"]) != (drafted, drafts) and not asyn:
        bad.append(f"spec {sp} but the steps drafted {drafted} in {drafts}")
    if asyn and (sp["num_draft_tokens"] > drafted or sp["num_drafts"] > drafts):
        bad.append(f"spec {sp} over the steps' {drafted} in {drafts}")
    if rate == 0 and sp["num_accepted_tokens"]:
        bad.append(f"rate 0 accepted {sp['num_accepted_tokens']}")
    if rate == 1 and not asyn and sp["num_accepted_tokens"] != drafted - k * pads:
        bad.append(f"rate 1: accepted {sp['num_accepted_tokens']} of {drafted} ({pads} pads)")
    for r in summ["requests"]:
        want, plen = reqs[r["id"]]["output_length"], r["prompt_len"]
        capped = plen + want > mml
        seen |= {"max_model_len"} if capped else set()
        if r["num_output_tokens"] != (mml - plen if capped else want):
            bad.append(f"{r['id']}: {r['num_output_tokens']} outputs of {want}")
        if r["num_preemptions"] or asyn:
            continue
        bad += decode_accounting(r, steps, k, rate, mml)
    if summ["num_free_blocks_end"] != summ["config"]["_effective"]["num_blocks"] - 1:
        bad.append(f"{summ['num_free_blocks_end']} blocks free at the end")
    return bad, seen


def decode_accounting(r: dict, steps: list[dict], k: int, rate: float, mml: int) -> list[str]:
    """A sync request never preempted: its prefill, then one decode per scheduled step, each
    yielding 1 + accepted tokens (1 + drafts at rate 1), the last trimmed at its limit."""
    rid, out = r["id"], r["num_output_tokens"]
    done, decodes = r["num_cached_tokens"] or 0, []
    for e in steps:
        n = e["scheduled"].get(rid)
        if n is None:
            continue
        if done < r["prompt_len"]:
            done += n
        else:
            decodes.append(n)
    if rate == 0 and out != 1 + len(decodes):
        return [f"{rid}: {out} outputs in {len(decodes)} decodes at rate 0"]
    if rate == 1 and decodes and not (1 + sum(decodes[:-1]) < out <= 1 + sum(decodes)):
        return [f"{rid}: {out} outputs, decodes {decodes} at rate 1"]
    if not 1 + len(decodes) <= out <= 1 + sum(decodes):
        return [f"{rid}: {out} outputs, decodes {decodes}"]
    return []


def main() -> int:
    failed = 0
    for t in map(Path, sys.argv[1:]):
        bad, seen = check(t)
        failed += bool(bad)
        print(t.name, "OK" if not bad else "FAIL", " ".join(sorted(seen)), *bad[:3], sep="  ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
