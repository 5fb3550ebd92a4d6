"""A synthetic forward step: the model's layer shapes with random weights, decodes on paged KV
made by kvcore, prefill chunks on their context. What a calibration is checked against
(`kvcli.calibration.check`, `benchmarks/calibration_check.py`): the step is never in the
calibration's tables (those time one kernel at a time).

Per layer: RMSNorm, QKV GEMM, attention (the project's Triton paged decode for the decodes,
causal SDPA per prefill chunk), O GEMM, residual add, RMSNorm, gate_up GEMM, SiLU x mul, down
GEMM, residual add; then the final norm and the lm_head on one row per request. It leaves out
what the clock leaves out of a step's GPU work too (sampling, the KV write, RoPE).
"""

from __future__ import annotations

from typing import Any

import torch

from kernels.cases import CaseSpec, build
from kvcli.calibration.micro import DTYPES, SHORT_DTYPE, causal_sdpa, gemm_shapes


class SyntheticModel:
    def __init__(self, g: Any, *, tp: int, device: torch.device, block_size: int = 16) -> None:
        self.g, self.tp, self.device, self.block_size = g, tp, device, block_size
        self.dtype = DTYPES[g.dtype]
        self.hq = max(1, g.num_attention_heads // tp)
        self.hkv = max(1, g.num_kv_heads // tp)
        self.d = g.head_dim
        shapes = {op: (n, k) for op, n, k in gemm_shapes(g, tp)}
        self.di = g.intermediate_size // tp

        def w(op: str) -> torch.Tensor:
            n, k = shapes[op]
            return torch.randn(k, n, device=device, dtype=self.dtype) / k ** 0.5

        self.layers = [{op: w(op) for op in ("qkv", "o", "gate_up", "down")}
                       for _ in range(g.num_layers)]
        self.lm_head = w("lm_head")
        self.norm = torch.ones(g.hidden_size, device=device, dtype=self.dtype)

    def prepare(self, decodes: list[int], prefills: list[tuple[int, int]], seed: int = 0
                ) -> Any:
        """A step of one-token decodes (their KV lengths, the new token included) and prefill
        chunks (new tokens, tokens computed before): returns a function that runs it."""
        from kernels import paged_decode
        from kvcli.gpu_bench import scripted_tables

        g, dev, dt = self.g, self.device, self.dtype
        paged = None
        if decodes:
            tab = scripted_tables(decodes, block_size=self.block_size, seed=seed,
                                  decode_steps=min(8, min(decodes) - 1))
            paged = build(CaseSpec("step", self.hq, self.hkv, self.d, SHORT_DTYPE[g.dtype]), tab,
                          self.block_size, dev)
        ctxs = [(torch.randn(1, self.hq, c + x, self.d, device=dev, dtype=dt),
                 torch.randn(1, self.hq, c + x, self.d, device=dev, dtype=dt))
                for c, x in prefills]
        n_dec = len(decodes)
        tokens = n_dec + sum(c for c, _ in prefills)
        x0 = torch.randn(tokens, g.hidden_size, device=dev, dtype=dt)
        last = [n_dec - 1 + sum(c for c, _ in prefills[:i + 1]) for i in range(len(prefills))]
        rows = torch.tensor(list(range(n_dec)) + last, device=dev, dtype=torch.long)
        qd = self.hq * self.d
        D = g.hidden_size

        def step() -> torch.Tensor:
            x = x0
            for i, lw in enumerate(self.layers):
                h = torch.nn.functional.rms_norm(x, (D,), self.norm, 1e-5)
                q = (h @ lw["qkv"])[:, :qd]
                parts = []
                if paged is not None:
                    kv = paged.kv[i % len(paged.kv)]
                    parts.append(paged_decode(q[:n_dec].reshape(n_dec, self.hq, self.d),
                                              kv[:, 0], kv[:, 1], paged.block_tables,
                                              paged.seq_lens).reshape(n_dec, qd))
                at = n_dec
                for (c, xc), (k, v) in zip(prefills, ctxs):
                    qc = q[at:at + c].reshape(c, self.hq, self.d).transpose(0, 1)[None]
                    parts.append(causal_sdpa(qc, k, v, xc)[0].transpose(0, 1).reshape(c, qd))
                    at += c
                a = torch.cat(parts) if len(parts) > 1 else parts[0]
                x = x + a @ lw["o"]
                h = torch.nn.functional.rms_norm(x, (D,), self.norm, 1e-5)
                gu = h @ lw["gate_up"]
                x = x + (torch.nn.functional.silu(gu[:, :self.di]) * gu[:, self.di:]) @ lw["down"]
            h = torch.nn.functional.rms_norm(x[rows], (D,), self.norm, 1e-5)
            return h @ self.lm_head

        return step
