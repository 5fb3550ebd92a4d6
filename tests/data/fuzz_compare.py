"""Dev tool (not a test): compare oracle-answered cases with kvcli, as the tests compare them.

    [KVCLI_PURE=1] PYTHONPATH=.:tests .venv/bin/python tests/data/fuzz_compare.py [--cli] DIR...

For every answered case in the folders (`X.expected.jsonl` beside `X.trace.jsonl` or
`X.ops.jsonl`): an op script against `offload_manager`'s answer (`test_offload_manager`); a
trace with a CPU tier against `sched_offload`'s (`test_offload_replay`); any other trace against
`sched`'s (`oracle_sched.assert_matches`; a pipeline-parallel trace with a batch queue's lines,
as sched_pp's oracle writes them; with drafts, also `assert_spec_matches`: the drafts of each
step and vLLM's spec stats, as oracle_spec.py and its kin write them). An answer that is vLLM's
refusal (`{"error": ...}`) matches when kvcli refuses too, with an InputError (both reasons
printed). A trace with a hash-id form beside it
(`X.hash.jsonl`, `sched_fresh/make_hash_cases.py`) is checked in both forms. Each form is also
replayed from a streamed reading (`read_trace(keep=1)` and `keep=7`), which must write the same
step, request and event bytes and summary as the whole reading. With `--cli`, `kvcli replay` is
also run as a command (files on disk), held and streamed (HELD_REQUESTS set to 3), and must
write the library's bytes. The build is the one the process imports: set KVCLI_PURE=1 for the
pure-Python stack. Prints each failure and a total; exit 1 when any case failed.

To answer many cases in one process (vLLM's import costs ~13 s a process), run
`oracle_batch.py` beside this file with the oracle's interpreter.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import oracle_sched as O
import test_offload_manager as TM
import test_offload_replay as TO

from kvcore import compiled
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.vllm_events import VllmEvents
from kvcore.errors import InputError
from kvcore.traces import read_trace

# kvcli's command with HELD_REQUESTS patched (traces with more requests are streamed)
CLI = ("import sys, kvcli.commands.replay as r; r.HELD_REQUESTS = {held}; "
       "from kvcli.app import main; sys.argv[0] = 'kvcli'; main()")


def outputs(path: Path, asyn: bool, keep: int | None) -> tuple[object, tuple]:
    """The summary and (steps, requests, events, summary JSON) bytes of a replay."""
    steps, reqs, ev = io.BytesIO(), io.BytesIO(), io.BytesIO()
    sink = VllmEvents(ev) if O.config_of(path).get("kv_events") else None
    s = replay(str(path), ReplayOptions(arrivals="step", async_scheduling=asyn), sink,
               steps_out=steps, requests_out=reqs, trace=read_trace(str(path), keep=keep))
    d = s.to_dict()
    d.pop("wall_time_s", None)
    return s, (steps.getvalue(), reqs.getvalue(), ev.getvalue(), json.dumps(d, sort_keys=True))


def parsed(s: object, raw: tuple) -> tuple:
    """`oracle_sched.replay_case`'s shape, from a replay's bytes."""
    return (s, [json.loads(x) for x in raw[0].splitlines()],
            {r["id"]: r for r in (json.loads(x) for x in raw[1].splitlines())},
            [json.loads(x)["events"] for x in raw[2].splitlines()])


def against_oracle(path: Path, answer: Path, asyn: bool, run: tuple) -> None:
    cfg = O.config_of(path)
    if "kv_offloading_size_chunks" in cfg or "kv_offloading_size" in cfg:
        # test_offload_case finds the answer by name: give it one where it looks
        with tempfile.TemporaryDirectory() as d:
            trace = Path(d) / "x.trace.jsonl"
            os.symlink(path.resolve(), trace)
            os.symlink(answer.resolve(), Path(d) / "x.expected.jsonl")
            TO.test_offload_case(trace, "expected", cfg.get("async_scheduling", False))
    else:
        expected = O.load_lines(answer)
        O.assert_matches(expected, run, asyn=asyn, kv_events=cfg.get("kv_events", False))
        if "num_speculative_tokens" in cfg:     # an oracle_spec.py answer: drafts, spec stats
            O.assert_spec_matches(expected, run, asyn)


def through_cli(path: Path, asyn: bool, whole: tuple) -> None:
    kv = O.config_of(path).get("kv_events", False)
    for held in (50_000, 3):
        with tempfile.TemporaryDirectory() as d:
            args = [sys.executable, "-c", CLI.format(held=held), "replay", str(path),
                    "--arrivals", "step",
                    "--async-scheduling" if asyn else "--no-async-scheduling",
                    "--steps", f"{d}/s", "--requests", f"{d}/r", "--json"]
            if kv:
                args += ["--events", f"{d}/e", "--events-format", "vllm"]
            p = subprocess.run(args, check=False, capture_output=True,
                               env=os.environ)
            assert p.returncode == 0, p.stderr.decode()[-2000:]
            got = (Path(f"{d}/s").read_bytes(), Path(f"{d}/r").read_bytes(),
                   Path(f"{d}/e").read_bytes() if kv else b"")
        assert got == whole[:3], f"kvcli replay (HELD_REQUESTS {held}) wrote other bytes"


def check_trace(path: Path, answer: Path, cli: bool) -> None:
    cfg = O.config_of(path)
    asyn = cfg.get("async_scheduling", False)
    s, whole = outputs(path, asyn, None)
    # a batch queue's lines: async scheduling, or pipeline parallelism (sched_pp's oracle)
    against_oracle(path, answer, asyn or cfg.get("pipeline_parallel_size", 1) > 1,
                   parsed(s, whole))
    for keep in (1, 7):
        got = outputs(path, asyn, keep)[1]
        for i, what in enumerate(("steps", "requests", "events")):
            assert got[i] == whole[i], f"read with keep={keep}: other {what} bytes"
        assert same_reading(got[3]) == same_reading(whole[3]), \
            f"read with keep={keep}: other summary"
    if cli:
        through_cli(path, asyn, whole)


def both_refuse(path: Path, why: str) -> None:
    """vLLM refused the case (its config, or an assertion): kvcli must refuse it too, with an
    InputError (one line, exit 2), not replay it or crash."""
    try:
        outputs(path, O.config_of(path).get("async_scheduling", False), None)
    except InputError as e:
        print(f"both refuse {path.name}: vLLM {why.splitlines()[0][:120]!r}; kvcli "
              f"{e.field}: {e.message[:120]!r}", flush=True)
        return
    raise AssertionError(f"the oracle refused it ({why[:300]}), kvcli replayed it")


def same_reading(summary: str) -> dict:
    """The summary less the one warning worded by the reading: the capped outputs' note counts
    the requests and names the first in a trace held whole, and gives the longest alone in one
    streamed (`start_warnings.capped_outputs_note`: not read twice)."""
    d = json.loads(summary)
    d["warnings"] = [w for w in d.get("warnings", ())
                     if "ask more tokens than max_model_len" not in w]
    return d


def cases(folders: list[str]) -> list[tuple[str, Path, Path]]:
    """(label, input, answer) for every answered case in the folders."""
    out = []
    for d in folders:
        for ops in sorted(Path(d).glob("*.ops.jsonl")):
            out.append((ops.name, ops, ops.with_name(ops.name.replace(".ops.", ".expected."))))
        for t in sorted(Path(d).glob("*.trace.jsonl")):
            answer = t.with_name(t.name.replace(".trace.", ".expected."))
            out.append((t.name, t, answer))
            h = t.with_name(t.name.replace(".trace.", ".hash."))
            if h.exists():
                out.append((h.name, h, answer))
    return out


def main() -> int:
    cli = "--cli" in sys.argv[1:]
    todo = cases([a for a in sys.argv[1:] if a != "--cli"])
    print(f"kvcore stack: {compiled.status()}", flush=True)
    failed = 0
    for label, path, answer in todo:
        try:
            if not answer.exists() and not Path(f"{answer}.gz").exists():   # (load_lines: either)
                raise AssertionError("no answer")
            lines = O.load_lines(answer)
            if lines and "error" in lines[-1]:
                both_refuse(path, lines[-1]["error"])
                continue
            if path.name.endswith(".ops.jsonl"):
                TM.test_answers_like_vllm(path)
            else:
                check_trace(path, answer, cli)
        except Exception as e:  # noqa: BLE001  (report every case, not only the first failure)
            failed += 1
            print(f"FAIL {path}: {''.join(traceback.format_exception_only(e))[:3000]}",
                  flush=True)
    print(f"{len(todo) - failed} of {len(todo)} matched", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
