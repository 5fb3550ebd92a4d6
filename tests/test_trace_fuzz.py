"""The mutation fuzzer of `stream_mutants.py` over traces `kvcli replay` reads (a Mooncake trace,
a token-id trace with its config line): each mutant changes one field of one line (or cuts,
doubles or swaps a line), and the replay gives the original's summary or refuses the trace in
one line naming the file, the line and the field. Fixed seeds, a bounded number of mutants.

Mutants a trace may take, each a valid trace: two lines swapped (replayed in timestamp order,
said in a warning) or one doubled (a request twice), a config line's option left out (its
default) or null (its default where that is none, else refused at the line), a request `id`
that is an integer (an id is a string or an integer). A `timestamp` left out or null in a trace
with timestamps is refused at its line (`traces/arrival_fields.same_timing`)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from stream_mutants import mutants
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
TRACES = {
    "mooncake": (ROOT / "traces" / "multiturn-chat.jsonl", 12, ["--num-blocks", "200"]),
    "token_ids": (ROOT / "tests" / "data" / "sched_cases_hybrid" / "a_full_swa_skip.trace.jsonl",
                  None, ["--arrivals", "step"]),
}
_VALID = re.compile(r"swapped|duplicated|\(None\) config\.\S+ (missing|null)|\(None\) id str")
_WALL = re.compile(rb'"wall[a-z_]*": ?[0-9.e+-]+')


def _replay(path: Path, args: list[str]):
    r = runner.invoke(app, ["replay", str(path), "--json", *args])
    return r.exit_code, _WALL.sub(b"", r.stdout_bytes), r.stderr


@pytest.mark.parametrize("name", sorted(TRACES))
def test_every_trace_mutant_replays_the_same_or_names_its_line_and_field(name, tmp_path):
    src, head, args = TRACES[name]
    lines = src.read_bytes().splitlines(keepends=True)[:head]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines))
    code, want, _ = _replay(path, args)
    assert code == 0
    found = []
    for what, lineno, new in mutants(lines, random.Random(20261206), 2, 8):
        path.write_bytes(b"".join(new))
        code, out, err = _replay(path, args)
        if code == 2:
            one = err.count("\n") == 1 and not out and "Traceback" not in err
            near = any(f"{path}:{n}: " in err for n in (lineno - 1, lineno, lineno + 1))
            if not (one and near and ("field '" in err or "not JSON" in err)):
                found.append(f"{what}: {err}")
        elif code != 0 or (out != want and not _VALID.search(what)):
            found.append(f"{what}: exit {code}, {'same' if out == want else 'another'} summary")
    assert found == []
