"""`kvcli script OPS`: replay an op script through kvcore's KV cache manager.

Prints one JSON line per op and a summary, exactly as the oracle (the real vLLM 0.33) does;
``--view`` renders the same run for a person (per op: each group's block table, hits, newly
allocated, cached and evicted blocks, the free count).

``--model`` / ``--model-config`` / ``--gpu-memory-gib`` are the replay's own declarations
(`kvcli.replay_options`), shown here under a "Model" panel; with a model its KV cache groups
replace the script's ``groups`` (see `kvcore.engine.script_model.with_model`).
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, get_args

import typer

from kvcli import config_options as co
from kvcli.replay_options import GpuMemOpt, ModelConfigOpt, ModelOpt

_M = "Model (replaces the script's groups; flags override the script's config)"


def _in_panel(alias: Any, panel: str = _M) -> Any:
    """The replay's option declaration `alias`'s ``typer.Option``, shown under this command's
    panel."""
    _, info = get_args(alias)
    info = copy.copy(info)
    info.rich_help_panel = panel
    return info


def _opt(flag: str, help_text: str, *aliases: str) -> Any:
    return typer.Option(flag, *aliases, help=help_text, rich_help_panel=_M, show_default=False)


# (each alias spelled `Annotated[...]` here: mypy takes only a literal one as a type; the kinds
# of the first three are the replay's, `tests/test_script_cli_model.py` checks)
ScriptModelOpt = Annotated[str | None, _in_panel(ModelOpt)]
ScriptModelConfigOpt = Annotated[str | None, _in_panel(ModelConfigOpt)]
ScriptGpuMemOpt = Annotated[float | None, _in_panel(GpuMemOpt)]
ScriptBlockSizeOpt = Annotated[int | None, _opt(
    "--block-size", "Tokens per block (overrides the script's block_size). [default: 16]")]
ScriptNumBlocksOpt = Annotated[int | None, _opt(
    "--num-blocks", "Blocks in the pool, the null block included (overrides the script's "
    "num_blocks). [default: 1024]", "--num-gpu-blocks-override")]
ScriptMaxLenOpt = Annotated[int | None, _opt(
    "--max-model-len", "Overrides the script's max_model_len [default: 32768, or the model's]")]
LayersOpt = Annotated[int | None, _opt(
    "--layers", "Explicit geometry instead of a preset: layers (with --kv-heads --head-dim).")]
KvHeadsOpt = Annotated[int | None, _opt("--kv-heads", "Explicit geometry: KV heads.")]
HeadDimOpt = Annotated[int | None, _opt("--head-dim", "Explicit geometry: head size.")]
SlidingWindowOpt = Annotated[int | None, _opt(
    "--sliding-window", "Explicit geometry: window (tokens).")]
SlidingLayersOpt = Annotated[str | None, _opt(
    "--sliding-layers", "Which layers slide: '5:1' or '0,2,4-9'. [default: all]")]
ChunkOpt = Annotated[int | None, _opt(
    "--attention-chunk-size", "Explicit geometry: chunked-local attention chunk (tokens).")]
ChunkedLayersOpt = Annotated[str | None, _opt(
    "--chunked-layers", "Which layers are chunked-local [default: all]")]
# vLLM's multimodal serving options, `kvcli config`'s declarations (they change the weights,
# so the blocks --gpu-memory-gib sizes); the dotted --limit-mm-per-prompt.image 0 is joined
# into the JSON form by `kvcli.app.main`
ScriptLimitMmOpt = Annotated[str | None, _in_panel(co.LimitMmOpt)]
ScriptLanguageOnlyOpt = Annotated[bool, _in_panel(co.LanguageOnlyOpt)]
ScriptMmTpModeOpt = Annotated[str, _in_panel(co.MmTpModeOpt)]


def register(app: typer.Typer) -> None:
    @app.command("script")
    def script(
        ops: Annotated[str, typer.Argument(help="Op script: JSON or JSON lines, .gz ok, '-' for "
                                           "stdin.")],
        view: Annotated[bool, typer.Option("--view", help="Render the run for a person (Rich).")]
        = False,
        calls: Annotated[bool, typer.Option("--calls", help=(
            "Each op's call tree through KVCacheManager -> coordinator -> managers -> BlockPool "
            "-> free queue, with vLLM's names, arguments and returned block ids (a tree for "
            "people; with --json, a 'calls' list on each op's line)."))] = False,
        calls_depth: Annotated[int | None, typer.Option(
            "--calls-depth", help="Layers shown: 1 the facade, 2 + the coordinator, 3 + "
            "the managers, 4 + the block pool, 5 + its free queue. [default: all]",
            show_default=False)] = None,
        as_json: Annotated[bool, typer.Option("--json", help="With --calls: JSON lines.")]
        = False,
        hash_seed: Annotated[str | None, typer.Option(
            "--hash-seed", help="NONE_HASH seed (overrides the script's hash_seed; default "
            "'vllm-none-hash' for every hash function; PYTHONHASHSEED is ignored).")] = None,
        model: ScriptModelOpt = None,
        model_config: ScriptModelConfigOpt = None,
        gpu_memory_gib: ScriptGpuMemOpt = None,
        block_size: ScriptBlockSizeOpt = None,
        num_blocks: ScriptNumBlocksOpt = None,
        max_model_len: ScriptMaxLenOpt = None,
        layers: LayersOpt = None,
        kv_heads: KvHeadsOpt = None,
        head_dim: HeadDimOpt = None,
        sliding_window: SlidingWindowOpt = None,
        sliding_layers: SlidingLayersOpt = None,
        attention_chunk_size: ChunkOpt = None,
        chunked_layers: ChunkedLayersOpt = None,
        limit_mm_per_prompt: ScriptLimitMmOpt = None,
        language_model_only: ScriptLanguageOnlyOpt = False,
        mm_encoder_tp_mode: ScriptMmTpModeOpt = "weights",
    ) -> None:
        """Replay an op script (the oracle's contract) and print one JSON line per op.

        With --model (or --model-config, or --layers ...) the model's KV cache groups replace
        the script's groups, e.g. `kvcli script ops.jsonl --model gpt-oss-20b --num-blocks 64`.
        """
        from kvcli import output

        def go() -> None:
            from kvcore.engine.op_script import load_script
            from kvcore.engine.script_model import with_model
            from kvcore.engine.script_runner import run_ops
            from kvcore.errors import InputError
            from kvcore.mm_options import mm_options

            if not ops:
                # (it said "error: : no such file", naming neither the argument nor a file)
                raise InputError("an empty path", field="op_script")
            if calls_depth is not None and calls_depth < 1:
                raise InputError(f"must be >= 1, got {calls_depth}", field="calls_depth")
            if view and calls:
                # (--calls drew its trees and dropped --view without a word)
                raise InputError("not with --calls: one renders block tables, the other call "
                                 "trees; give one", field="view")
            output.check_distinct([("the op script", ops),
                                   ("--model-config's file", model_config)], [])
            mm = mm_options(limit_mm_per_prompt, language_model_only, mm_encoder_tp_mode)
            cfg, op_list = load_script(ops)
            if hash_seed is not None:
                from kvcore.engine.option_rules import check_seed

                check_seed(hash_seed)
                cfg.hash_seed = hash_seed
            with_model(cfg, model=model, model_config=model_config, layers=layers,
                       gpu_memory_gib=gpu_memory_gib, num_blocks=num_blocks,
                       block_size=block_size, max_model_len=max_model_len, kv_heads=kv_heads,
                       head_dim=head_dim, sliding_window=sliding_window,
                       sliding_layers=sliding_layers, attention_chunk_size=attention_chunk_size,
                       chunked_layers=chunked_layers, mm=mm)
            for k, why in cfg.mm_notes:
                output.warn(f"option {output.flag(k)}: {why}")
            if calls:
                from kvcore.engine.script_calls import run_ops_with_calls

                lines = run_ops_with_calls(cfg, op_list, ops, calls_depth)
                if as_json:
                    output.emit_lines(lines)
                else:
                    output.emit_call_trees(lines)
                return
            if calls_depth is not None or as_json:
                raise InputError("needs --calls", field="calls_depth" if calls_depth is not None
                                 else "json")
            if view:
                output.emit(script_view(cfg, op_list, ops), as_json=False)
                return
            output.emit_lines(run_ops(cfg, op_list, ops))

        output.run(go)


def _fmt_groups(per_group: list[list[int]], null_as: str = "-") -> str:
    """``1,2,3`` for one group; one line per group for several (the null block as ``-``)."""
    parts = [",".join(null_as if b == 0 else str(b) for b in g) for g in per_group]
    if all(not p for p in parts):
        return ""
    if len(parts) == 1:
        return parts[0]
    return "\n".join(f"g{i}: {p or '.'}" for i, p in enumerate(parts))


def script_view(cfg, op_list, path: str):
    """The run as one table for a person: a row per op with what it did to which blocks."""
    from kvcli.output import Table, View
    from kvcore.engine.script_runner import ScriptRunner
    from kvcore.tracing import RecordingTracer

    tracer = RecordingTracer()
    runner = ScriptRunner(cfg, path, tracer=tracer)
    n = len(cfg.groups)
    rows = []
    data = []
    last: dict = {}     # request id -> its last block table
    for i, op in enumerate(op_list, start=1):
        res = runner.apply(op)
        got: dict[str, list[list[int]]] = {k: [[] for _ in range(n)] for k in
                                           ("touch", "allocate", "cache", "evict", "free")}
        for rec in tracer.take():
            kind, _req, group = rec[0], rec[1], rec[2]
            if kind == "evict":
                got["evict"][group].append(rec[3])
            elif kind == "free":
                got["free"][group].extend(rec[4])  # the blocks whose ref count reached 0
            else:
                got[kind][group].extend(rec[3])
        kind = res["op"]
        if kind == "summary":
            continue
        label = f"{kind} {res.get('id', '')}".strip()
        if kind == "new" and res.get("ok"):
            label += f" ({res['prompt_len']} tok, hit {res['hit']})"
        elif kind == "decode":
            label += f" +{res.get('token')}"
        elif kind == "prefill" and "n" in res:
            label += f" {res['n']} tok"
        status = "ok" if res.get("ok", True) else (res.get("error") or "refused")
        table = res.get("block_table")
        rid = res.get("id")
        if table:
            last[rid] = table
        elif kind == "free":
            last.pop(rid, None)
        shown = _fmt_groups(table) if table else ""
        if not table and status != "ok" and rid in last:
            # a refused op changes nothing: the request still holds its blocks (a blank read
            # as if it had lost them)
            shown = _fmt_groups(last[rid]) + " (held)"
        rows.append((i, label, status, _fmt_groups(got["touch"]), _fmt_groups(got["allocate"]),
                     _fmt_groups(got["cache"]), _fmt_groups(got["evict"]),
                     _fmt_groups(got["free"]), res.get("free", ""), shown))
        data.append({"op": res, **{k: v for k, v in got.items()}})
    summary = runner.summary()
    st = summary["prefix_cache_stats"]
    def describe(g: dict) -> str:
        extra = (f" W={g['sliding_window']}" if "sliding_window" in g else
                 f" chunk={g['attention_chunk_size']}" if "attention_chunk_size" in g else "")
        if cfg.specs is not None:
            extra += f" bs={g['block_size']}"
        return g["type"] + extra

    groups = ", ".join(describe(g) for g in cfg.groups)
    size = "" if cfg.specs is not None else f"block size {cfg.block_size}, "
    model = f" ({cfg.model})" if cfg.model else ""
    title = (f"{path}: {groups}{model}; {size}{cfg.num_blocks} blocks "
             f"(block 0 = null, shown as -)")
    ops_table = Table(title, ("#", "op", "result", "hit", "allocated", "cached", "evicted",
                              "freed", "free", "block table (per group)" if n > 1 else "block table"),
                      rows)
    line = (f"prefix cache: {st['requests']} admitted requests, {st['hits']:,} of "
            f"{st['queries']:,} prompt tokens hit ({summary['hit_rate']:.1%}); "
            f"free blocks {summary['free_blocks']} of {cfg.num_blocks - 1}; "
            f"cached hashes {summary['cached_block_hashes']}")
    text = [line]
    return View({"ops": data, "summary": summary}, tables=[ops_table], text=text)
