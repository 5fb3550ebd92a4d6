# ruff: noqa
"""Compare kvcli's perf.py count with the oracle's answers in a campaign directory.

    python tests/data/perf_families/compare.py DIR [KVCORE_ROOT]

KVCORE_ROOT: a directory holding another kvcore to compare (e.g. `git archive BASE kvcore`
unpacked), by default this checkout's.

One line a spec: `equal`, `differs` (the first difference), `vllm-refused` (no
.expected.jsonl: the oracle's exit 3 message is in its log) or `kvcli-refused` (its message).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [*sys.argv[2:3], *(str(Path(__file__).resolve().parents[i]) for i in (3, 2))]

from perf_case_io import expected, load_spec


def first_difference(spec: Path, exp: Path) -> str | None:
    from kvcore.clock.vllm_count import vllm_counts

    _, shape, batches = load_spec(spec, substitute=True)
    header, steps = expected(exp)
    comps = header["components"]
    if "attn" in comps:
        a = comps["attn"]
        want = (a["num_hidden_layers"], a["num_key_value_heads"], a["head_dim"],
                a["cache_byte_size"], a["weight_byte_size"], a["num_swa_layers"])
        got = (shape.num_hidden_layers, shape.num_key_value_heads, shape.head_dim,
               shape.cache_byte_size, shape.weight_byte_size, shape.num_swa_layers)
        if want != got:
            return f"attn geometry vllm {want} kvcli {got}"
    if "ffn" in comps:
        f = comps["ffn"]
        want = (f["intermediate_size"], f["num_experts"], f["num_experts_per_tok"],
                f["moe_intermediate_size"], f["num_moe_layers"], f["num_shared_experts"])
        got = (shape.intermediate_size, shape.num_experts, shape.num_experts_per_tok,
               shape.moe_intermediate_size, shape.num_moe_layers, shape.num_shared_experts)
        if want != got:
            return f"ffn geometry vllm {want} kvcli {got}"
    for b, want in zip(batches, steps):
        got = vllm_counts(shape, b)
        for mine, key in ((got.flops, "num_flops_per_gpu_breakdown"),
                          (got.read_bytes, "num_read_bytes_per_gpu_breakdown"),
                          (got.write_bytes, "num_write_bytes_per_gpu_breakdown")):
            if mine != want[key]:
                keys = sorted(set(mine) | set(want[key]))
                diff = {k: (want[key].get(k), mine.get(k)) for k in keys
                        if want[key].get(k) != mine.get(k)}
                return f"{want['label']} {key} (vllm, kvcli): {diff}"
    return None


def main() -> None:
    d = Path(sys.argv[1])
    tally: dict[str, int] = {}
    for spec in sorted(d.glob("*.steps.jsonl")):
        name = spec.name[: -len(".steps.jsonl")]
        exp = d / f"{name}.expected.jsonl"
        if not exp.exists():
            verdict, why = "vllm-refused", ""
        else:
            try:
                why = first_difference(spec, exp)
                verdict = "equal" if why is None else "differs"
            except Exception as e:  # kvcli's refusal, or a crash
                verdict, why = "kvcli-refused", f"{type(e).__name__}: {e}"
        tally[verdict] = tally.get(verdict, 0) + 1
        print(f"{name:40s} {verdict:14s} {why or ''}"[:400])
    print(tally)


if __name__ == "__main__":
    main()
