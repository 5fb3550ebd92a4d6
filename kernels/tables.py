"""The benchmark's block tables file (made by kvcore, shipped in ``data/``): read without torch,
so that `kvcli bench --gpu` can check a case name before it looks for a GPU."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "block_tables.json.gz"


def load_tables(path: str | Path | None = None) -> dict:
    """The tables file: ``{"source", "block_size", "cases": {name: {num_blocks, seq_lens,
    block_tables}}}`` (gzipped JSON, so that no numpy is needed to read it)."""
    path = Path(path) if path else DATA
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)
