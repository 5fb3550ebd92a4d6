"""What the `kvcli sweep` end-to-end tests share (not a test module): a command run for its
``--json`` document, and a results file read back line by line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app


def result_lines(path) -> list[dict]:
    """The JSON lines of a results file, in file order."""
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def kvcli_json(*args) -> dict:
    """``kvcli ARGS --json``'s document; the command must succeed."""
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)
