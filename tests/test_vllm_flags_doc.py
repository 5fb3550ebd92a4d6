"""docs/replay.md says what tests/data/vllm_flags.json holds: the "vLLM's flags" table names, for
each vLLM flag, the kvcli commands that take it, and "A first line {"config": ...}" names every
key a trace's config line may set (the CPU tier's in docs/offload.md's "Options" table). The
table lacked `kvcli config --performance-mode` and the paragraph `performance_mode` while the
code took both."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kvcore.engine.options import CONFIG_KEYS

DOCS = Path(__file__).resolve().parents[1] / "docs"
TABLE = json.loads((Path(__file__).parent / "data" / "vllm_flags.json").read_text())


def _doc_rows() -> list[tuple[list[str], list[str]]]:
    """(vLLM flags, commands) for each row of docs/replay.md's flags table."""
    text = (DOCS / "replay.md").read_text()
    rows = []
    for line in text[text.index("| vLLM 0.33 flag"):].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        flags = [f.replace("[no-]", "") for f in re.findall(r"`(--[\w\[\]-]+|-tp)`", cells[0])]
        commands = [c.strip() for c in re.sub(r"\(.*?\)", "", cells[2]).split(",")]
        rows.append((flags, commands))
    return rows


def test_the_flags_table_names_the_commands_that_take_each_flag():
    by_flag = {f: row for row in TABLE["rows"] if row["vllm"] for f in row["vllm"]["flags"]}
    checked = 0
    for flags, commands in _doc_rows():
        row = next((by_flag[f] for f in flags if f in by_flag), None)
        if row is None:                 # the PYTHONHASHSEED row: no flag
            continue
        assert sorted(commands) == sorted(row["commands"]), flags
        checked += 1
    assert checked == 32


def test_every_config_line_key_is_named_in_the_docs():
    replay = (DOCS / "replay.md").read_text()
    start = replay.index('**A first line `{"config": {...}}`**')
    paragraph = replay[start:replay.index("\n\n", start)]
    offload = (DOCS / "offload.md").read_text()
    options = offload[offload.index("## Options"):offload.index("Bad values exit 2")]
    named = set(re.findall(r"`(\w+)`", paragraph)) | set(re.findall(r"`(\w+)`", options))
    assert sorted(CONFIG_KEYS - named) == []
