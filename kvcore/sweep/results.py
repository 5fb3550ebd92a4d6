"""A sweep's results file: one JSON line a finished job, appended the moment it finishes.

    {"job_id": "9f3c...", "index": 4, "command": "replay", "trace": "conv.jsonl",
     "trace_sha256": "...", "config": {...}, "result": {...}, "kvcli_version": "0.1.0",
     "defaults": "5d0c...", "wall_time_s": 41.2}

`result` is the job's `--json` document less its wall-clock times (`kvcore.sweep.job`); the
job's wall time is `wall_time_s` beside it. Lines are in completion order; readers sort by
`index` (the sweep's order), so nothing a person or a program reads depends on it. A line cut
short by a crash (the last one, without its newline) is not a finished job.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

import orjson

from kvcore.errors import InputError, path_label
from kvcore.sources import bounded_lines, open_source
from kvcore.sweep.grid import Job
from kvcore.warning_groups import warning_groups

_KEYS = ("job_id", "config", "result")


def results_line(job: Job, outcome: dict[str, Any]) -> dict[str, Any]:
    """The results line of a finished job (an outcome with a `result`)."""
    return {"job_id": job.job_id, "index": job.index, "command": job.command,
            "trace": path_label(job.trace), "trace_sha256": job.trace_sha256, "config": job.config,
            "result": outcome["result"], "kvcli_version": outcome["kvcli_version"],
            # (the worker's: a node running another kvcli records its own defaults)
            "defaults": outcome.get("defaults") or defaults_id(job.command),
            "wall_time_s": outcome["wall_time_s"]}


@functools.cache
def defaults_id(command: str) -> str:
    """16 hex digits naming the defaults the options a job leaves unset take (the replay's
    knobs; a cluster's too). A job's id names only the keys its sweep sets, so a default that
    changed between two kvcli versions (gpu_memory_utilization 0.9 -> vLLM's 0.92) would give
    the same id to jobs that ran differently; a resume compares this instead."""
    from kvcore.engine.options import KNOBS

    defaults = {f.name: f.default for f in KNOBS if f.default is not MISSING}
    # Defaults derived by a rule, not held in a field, carry their rule's version: a job naming
    # a GPU ran 2,048 tokens and 128 sequences before vllm serve's batch defaults per GPU
    # (`kvcore.engine.serve_defaults`), 8,192 and 1,024 on an H100 after, under the same id.
    defaults["derived.serve_batch_defaults"] = 1
    if command == "cluster":
        from kvcore.cluster.options import ClusterOptions

        defaults |= {f"cluster.{f.name}": f.default for f in fields(ClusterOptions)
                     if f.default is not MISSING}
    canonical = orjson.dumps(defaults, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:16]


def check_same_defaults(lines: list[dict], path: str, command: str) -> None:
    """Refuse to resume beside this sweep's finished `lines` when they ran under other option
    defaults (an older kvcli): their ids are today's, their numbers not (`defaults_id`)."""
    other = sum(1 for d in lines if d.get("defaults") != defaults_id(command))
    if other:
        raise InputError(f"{path}: {other} of this sweep's {len(lines)} finished job(s) in it "
                         "ran under other option defaults (an older kvcli; e.g. "
                         "gpu_memory_utilization was 0.9, vLLM's 0.92 now): resumed, the sweep "
                         "would mix them with today's; resume into a new file",
                         field="results")


@dataclass(slots=True)
class Results:
    path: str
    lines: list[dict[str, Any]] = field(default_factory=list)   # one a job, in file order
    partial_tail: bool = False          # the last line was cut short (ignored)
    duplicates: int = 0                 # lines of a job already seen (the first is kept)
    differing: int = 0                  # of those, lines whose result is not the first's

    def duplicates_note(self) -> str | None:
        """The warning for lines of a job already read (two sweeps' files put together), or
        None: they were dropped without a word, a differing result included."""
        if not self.duplicates:
            return None
        differ = (f", {self.differing} with another result than its first" if self.differing
                  else "")
        return (f"{self.path}: {self.duplicates} line(s) repeat a job already read{differ}; "
                "each job's first line is the one shown")

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {d["job_id"]: d for d in self.lines}

    def sorted(self) -> list[dict[str, Any]]:
        """The lines in the sweep's order (`index`, then the id), never the finishing order."""
        return sorted(self.lines, key=lambda d: (d.get("index", 0), d["job_id"]))


def read_results(path: str, *, missing_ok: bool = False) -> Results:
    """Read a results file; a line that is not a results line is an `InputError` naming it,
    except a last line cut short (`partial_tail`). A missing file is empty with
    `missing_ok`."""
    import os

    out = Results(path)
    if missing_ok and not os.path.exists(path):
        return out
    name, stream = open_source(path)
    seen: dict[str, Any] = {}           # job id -> its first line's result
    with stream:
        for no, raw in enumerate(bounded_lines(name, stream), 1):
            _read_line(out, seen, name, no, raw)
            if out.partial_tail:
                # (the end of the file as read; a sweep still appending may finish the line
                # before another read, whose rest would be no line at all)
                break
    return out


def _read_line(out: Results, seen: dict[str, Any], name: str, no: int, raw: bytes) -> None:
    """One line of a results file into ``out`` (``seen``: job id -> its first result)."""
    if not raw.strip():
        return
    if not raw.endswith(b"\n"):
        # no newline after it: cut short by a crash, even where it parses (a write that
        # stopped just before its newline); `open_append` cuts it off before appending,
        # so it is never counted as finished (it was, then cut: a finished job lost)
        out.partial_tail = True
        return
    try:
        d = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise InputError("not a JSON line (is this a kvcli sweep results file?)",
                         path=name, line=no) from None
    if not isinstance(d, dict) or any(k not in d for k in _KEYS):
        raise InputError(f"not a results line: it needs {', '.join(_KEYS)}", path=name,
                         line=no)
    _check_line(d, name, no)
    if d["job_id"] in seen:
        out.duplicates += 1
        out.differing += d["result"] != seen[d["job_id"]]
        return
    seen[d["job_id"]] = d["result"]
    out.lines.append(d)


# each field a results line may hold: its types, and whether every line must have it
_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "job_id": ((str,), True), "config": ((dict,), True), "result": ((dict,), True),
    "trace": ((str,), True), "trace_sha256": ((str,), True), "index": ((int,), False),
    "command": ((str,), False), "kvcli_version": ((str,), False), "defaults": ((str,), False),
    "wall_time_s": ((int, float), False)}
_COMMANDS = ("replay", "cluster")


def _check_line(d: dict[str, Any], name: str, line: int) -> None:
    """A results line's fields are the types kvcli writes (a hand-edited or foreign line is
    named here, not met later as a KeyError in the table)."""
    for key, (types, required) in _FIELDS.items():
        if key not in d:
            if required:
                raise InputError("missing (not a kvcli sweep results line?)", path=name,
                                 line=line, field=key)
            continue
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, types):
            what = _TYPE_NAMES[types[-1]]       # (int, float): a number
            raise InputError(f"must be {what}, got {orjson.dumps(v).decode()[:40]}", path=name,
                             line=line, field=key)
    if d.get("command", "replay") not in _COMMANDS:
        raise InputError(f"must be one of {', '.join(_COMMANDS)}, got {d['command']!r}",
                         path=name, line=line, field="command")


_TYPE_NAMES = {str: "a string", dict: "a JSON object", int: "an integer", float: "a number"}


def job_warnings(rows: list[dict | None]) -> list[tuple[str, list[int]]]:
    """Each distinct warning of the finished jobs' results (``rows`` in the grid's order, None
    where a job has not finished; a results line's ``index`` where it has one) with the grid
    indices of the jobs that gave it, in order of first appearance (`warning_groups`): a sweep
    says each once, not once a job (the uncalibrated clock's in every one of a hundred jobs)."""
    return warning_groups((row.get("index", position) if row else position, _warnings_of(row))
                          for position, row in enumerate(rows))


def _warnings_of(row: dict | None) -> list:
    result = row.get("result") if row else None
    return (result.get("warnings") or []) if isinstance(result, dict) else []


def job_warnings_by_id(rows: list[dict]) -> list[tuple[str, list[str]]]:
    """`job_warnings` of finished jobs, each with the ids of the jobs that gave it."""
    # (a job named once a warning, however often its result repeats it)
    return warning_groups((row["job_id"], dict.fromkeys(map(str, _warnings_of(row))))
                          for row in rows)
