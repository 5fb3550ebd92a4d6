"""The roofline's efficiency factors and fixed terms, with where each default comes from.

Defaults are the peers' measured efficiencies that the reference's worked example uses
(docs/clock.md, "Turning work into time" and "The reference's worked example"): with them the roofline gives its
Llama-3.1-8B / H100 SXM numbers (17.12 ms decode 64 x 4,096, 41.14 ms prefill 2,048 of GPU
time). They are not calibrated for any GPU: a calibration (a later `calibrated` clock) replaces
them with measured ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class Factors:
    # GEMMs at large M reach this fraction of the dense tensor peak (H100: 0.70-0.88, Vidur's
    # profile; H200 8192^3: 0.78-0.81)
    gemm_compute: float = 0.75
    # small-M GEMMs stream weights at this fraction of HBM bandwidth (H100 0.63-0.86, Vidur)
    gemm_memory: float = 0.80
    # attention FLOPs (causal count) at this fraction of the peak (RTX 4090 chunk 2,048: 0.62)
    attention_compute: float = 0.50
    # paged decode attention reads KV at this fraction of HBM bandwidth (RTX 4090 0.90-0.95)
    kv_memory: float = 0.90
    # per-launch floors, microseconds (a tiny kernel's GPU tail; CUDA graphs remove launch cost)
    gemm_floor_us: float = 2.0
    attention_floor_us: float = 10.0
    # GPU-side per step: sampler ~50 us + graph launch and sync ~100 us
    step_gpu_us: float = 150.0
    # CPU per step and per request (schedule, input prep, output processing): BLIS's fitted
    # magnitudes; hidden under async scheduling unless they exceed the GPU time
    cpu_step_us: float = 150.0
    cpu_request_us: float = 5.0
    # tensor-parallel all-reduce: a floor per call (vLLM's custom all-reduce) and the achieved
    # bus bandwidth as a fraction of the bidirectional link (H100 DGX NCCL: 230-365 GB/s of 900)
    allreduce_us: float = 25.0
    link_fraction: float = 0.35
    # GPUs without a GPU-to-GPU link all-reduce over PCIe, GB/s per direction
    pcie_gbps: float = 32.0

    def to_dict(self) -> dict:
        return asdict(self)


DEFAULT_FACTORS = Factors()
FACTORS_SOURCE = ("defaults from peers' measurements (docs/clock.md, \"Turning work into "
                  "time\"), not calibrated on this GPU")
