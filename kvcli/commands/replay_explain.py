"""`kvcli replay TRACE --explain REQUEST_ID`: the story of one request (`kvcore.analysis.explain`)
instead of the summary; the replay runs with its usual options and writes no other output."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import IO, cast

from kvcli import output


def run_explain(trace: str, opts, rid: str, as_json: bool, given: list[str],
                calls: bool = False) -> int:
    from kvcore.analysis.explain import RequestStory, StepLines
    from kvcore.analysis.stats import StreamingStats
    from kvcore.engine.events import CallbackEvents
    from kvcore.engine.replay import replay
    from kvcore.errors import InputError, clipped
    from kvcore.traces import read_trace

    if given:
        flag = given[0].replace("_", "-")
        raise InputError(f"writes no other output (--{flag} given)", field="explain")
    tr = read_trace(trace)
    if not any(r.id == rid for r in tr.requests):
        raise InputError(f"no request {clipped(rid)} in {tr.label}", field="explain")
    said = []
    if "warmup" in (opts.given or ()):
        # (the story tells the request's events; a warm-up decides what a summary counts)
        said.append("option --warmup: no effect with --explain: the story has no count to "
                    "leave the warm-up's requests out of")
        output.warn(said[-1])
        # (its misses are told for a warm-up request too: the warm-up only marks admissions
        # uncounted, and an uncounted one gets no miss reasons)
        opts = dataclasses.replace(opts, warmup=0.0)
    story = RequestStory(rid)
    # why its prompt missed: stats' miss attribution over every request, kept for this one
    # (it needs the prompts' hashes; the sample's story takes 0.70 s with it, 0.55 s without)
    misses = StreamingStats(watch=rid)

    def both(ev: dict) -> None:
        story.event(ev)
        misses(ev)

    sink = CallbackEvents(both, shows_hashes=False)     # (used, never shown)
    rec = None
    if calls:
        # The call trees of its manager calls: the replay's manager is built inside `replay`,
        # so the recorder turns the short decode path off on every manager it meets.
        from kvcore.call_tree import CallRecorder

        rec = CallRecorder(request=rid, tag=lambda: {"step": sink.step}, every_manager=True)
    with rec if rec is not None else contextlib.nullcontext():
        # (cast: StepLines stands in for the binary file of step lines; the replay only calls
        # its write)
        summary = replay(trace, opts, sink, steps_out=cast(IO[bytes], StepLines(story.step_line)),
                         warn=output.warn, trace=tr)
    doc = story.to_dict()
    doc["misses"] = misses.watched()
    doc["warnings"] = said + list(summary.warnings)     # (as a plain replay's JSON has them)
    doc["interrupted"] = summary.interrupted        # (Ctrl-C: the story so far)
    if rec is not None:
        doc["calls"] = [n.to_dict() for n in rec.take()]
    output.emit(story_view(doc), as_json=as_json)
    if calls and not as_json:
        output.emit_tree(f"calls made for request {rid} (step= the engine step)", doc["calls"])
    if summary.interrupted:
        output.message("interrupted: the story so far")
        return output.interrupt_code()
    return 0


def _blocks(ids: list[int]) -> str:
    """Block ids as ranges, for a person: ``5 blocks: 1-4, 9``."""
    parts: list[str] = []
    start = prev = None
    for b in ids + [None]:
        if start is not None:
            assert prev is not None     # (set with start)
            if b is None or b != prev + 1:
                parts.append(str(start) if start == prev else f"{start}-{prev}")
                start = None
        if b is not None and start is None:
            start = b
        prev = b
    shown = ", ".join(parts[:6]) + (", ..." if len(parts) > 6 else "")
    return f"{len(ids)} block{'s' if len(ids) != 1 else ''}: {shown}"


def _detail(line: dict) -> str:
    out = []
    for k, v in line.items():
        if k in ("step", "t_ms", "what"):
            continue
        if k == "blocks" and isinstance(v, list):
            out.append(_blocks(v))
            continue
        if k == "blocks":
            out.append(f"{v} block{'s' if v != 1 else ''}")
            continue
        if isinstance(v, list):
            v = _blocks(v)
        elif isinstance(v, dict):       # cached_by: who had cached the blocks it hit
            v = ", ".join(f"{who} ({n})" for who, n in v.items())
        out.append(f"{k.replace('_', ' ')} {v}")
    return "; ".join(out)


def story_view(d: dict) -> output.View:
    rows = [(e["step"], f"{e['t_ms']:,.3f}", e["what"], _detail(e)) for e in d["events"]]
    runs = [(r["from"], r["to"], r["to"] - r["from"] + 1, r["tokens"]) for r in d["scheduled"]]
    tables = [output.Table(f"Request {d['request']}", ("step", "t_ms", "what", "detail"), rows),
              output.Table("Scheduled (runs of steps with the same tokens)",
                           ("from step", "to step", "steps", "tokens a step"), runs)]
    text = []
    if d["hit_by"]:
        text.append("its cached blocks were hit by: " + ", ".join(
            f"{k} ({v})" for k, v in d["hit_by"].items()))
    if d["evicted_by"]:
        text.append("its cached blocks were evicted by: " + ", ".join(
            f"{k} ({v})" for k, v in d["evicted_by"].items()))
    for m in d["misses"]:
        why = ", ".join(f"{r} {n:,}" for r, n in m["missed"].items())
        text.append(f"missed at step {m['step']:,}: {m['missed_tokens']:,} of "
                    f"{m['prompt_tokens']:,} prompt tokens" + (f" ({why})" if why else ""))
        if m["evicted_by"]:
            text.append("  its missed blocks were evicted by: " + ", ".join(
                f"{k} ({v})" for k, v in m["evicted_by"].items()))
    return output.View(d, tables=tables, text=text)
