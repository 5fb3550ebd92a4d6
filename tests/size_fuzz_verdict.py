"""One size-fuzz case (tests/data/size_fuzz/: a drawn config, its serving options, vLLM 0.33's
answer) against kvcli: `kvcli config --model-config F --json` with the case's options on the
case's available bytes, and kvcore's weights estimate for rank 0. Shared by
tests/test_size_fuzz_cases.py and the campaign's compare.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import apply_mm
from kvcore.models.weights import estimate_weights_bytes

GIB = 1 << 30
# vLLM's refusal of a length above the model's, which kvcli sizes with a warning naming it
LONG = re.compile(r"max_model_len \((\d+)\) is greater than the derived max_model_len "
                  r"\(\w+=(\d+)")


def cli_args(path: Path, opts: dict[str, Any]) -> list[str]:
    """The case's options on exactly its available bytes (nothing held back)."""
    args = ["config", "--model-config", str(path), "--json", "--tp", str(opts["tp"]),
            "--kv-cache-dtype", opts["kv_cache_dtype"],
            "--gpu-memory-gib", repr(opts["available"] / GIB),
            "--gpu-memory-utilization", "1", "--weights-gib", "0"]
    if opts["max_model_len"] is not None:
        args += ["--max-model-len", str(opts["max_model_len"])]
    if opts["block_size"] is not None:
        args += ["--block-size", str(opts["block_size"])]
    return args


def compact(ans: dict[str, Any]) -> dict[str, Any]:
    """A recorded answer (record.py's line) as a fixture keeps it: the refusal, or the groups
    (block size, page bytes, layers' indices) and blocks and rank 0's parameter bytes."""
    refused = ans.get("refused") or ans.get("planning", {}).get("refused")
    if refused:     # (in pieces of 80 characters: the fixture file's lines stay short)
        return {"refused": [refused[i:i + 80] for i in range(0, min(len(refused), 400), 80)]}
    plan = ans["planning"]
    return {"groups": [[g["block_size"], g["page_size_bytes"], indices(g["layers"])]
                       for g in plan["groups"]],
            "num_blocks": plan["num_blocks"],
            "rank0_bytes": sum(ans["rank0"]["param_bytes_by_dtype"].values())}


def indices(names: list[str]) -> list[int]:
    """Each layer's decoder index (its name's first number)."""
    return [int(m.group(1)) if (m := re.search(r"(?:^|\.)(\d+)(?:\.|$)", n)) else -1
            for n in names]


def same_groups(ours: list[list], theirs: list[list]) -> bool:
    """The same groups in vLLM's order: block size, page bytes, and layers (by index where
    vLLM's indices are distinct; by count where a decoder layer holds two caches, LongCat's,
    or kvcli numbers the attention layers alone, Cosmos3-Edge's)."""
    def key(g: list, by_index: bool) -> tuple:
        return (g[0], g[1], tuple(g[2]) if by_index else len(g[2]))
    by_index = all(len(set(g[2])) == len(g[2]) for g in theirs) and (
        sorted(i for g in ours for i in g[2]) == sorted(i for g in theirs for i in g[2]))
    return [key(g, by_index) for g in ours] == [key(g, by_index) for g in theirs]


def verdict(config: dict[str, Any], opts: dict[str, Any], want: dict[str, Any],
            path: Path) -> tuple[str, Any]:
    """("equal", note) or (the cause of the difference, its detail)."""
    path.write_text(json.dumps(config))
    r = CliRunner().invoke(app, cli_args(path, opts))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        return "kvcli crashed", f"{type(r.exception).__name__}: {r.exception}"
    errors = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    refused = "".join(want.get("refused") or ())
    long = refused and LONG.search(refused)
    if long and r.exit_code == 0:
        said = re.search(r"above \S+ ([\d,]+) \(", r.stderr)
        if said and int(said.group(1).replace(",", "")) == int(long.group(2)):
            return "equal", "vLLM refuses the length; kvcli warns, naming the same limit"
        return "derived max_model_len", {"vllm": long.group(2), "kvcli": r.stderr[:300]}
    if refused:
        if r.exit_code == 0:
            return "vLLM refuses, kvcli sizes", refused[:300]
        if r.exit_code != 2 or len(errors) != 1:
            return "kvcli refuses, not in one line", r.stderr[:300]
        return "equal", "both refuse"
    if r.exit_code != 0:
        return "kvcli refuses, vLLM builds", " ".join(errors)[:300]
    view = json.loads(r.stdout)
    ours = [[g["block_size"], g["page_size_bytes"], indices(g["layers"])] for g in view["groups"]]
    if not same_groups(ours, want["groups"]):
        return "groups", {"kvcli": ours, "vllm": want["groups"]}
    if view["num_blocks"] != want["num_blocks"]:
        return "num_blocks", {"kvcli": view["num_blocks"], "vllm": want["num_blocks"]}
    g = apply_mm(read_hf_config(config, source=str(path)), None)[0]
    if not g.weights_unmodelled:
        got = estimate_weights_bytes(g, opts["tp"])
        if got != want["rank0_bytes"]:
            return "weights", {"kvcli": got, "vllm": want["rank0_bytes"]}
    return "equal", None
