"""GPU presets for the roofline clock: dense datasheet peaks, each number with its source.

NVIDIA prints tensor TFLOPs "with sparsity" (an asterisk) for A100/H100/H200/L40S/L4: the dense
figures here are half of those (`listed_sparse` says the halving was made). Link bandwidths are
bidirectional totals per GPU, as datasheets print them; the all-reduce term takes a fraction
(`kvcore.clock.factors`). Numbers and sources: each preset's `source`, listed by `kvcli clock gpus`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.errors import InputError, clipped
from kvcore.named_choices import named_choices


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    label: str                      # what `torch.cuda.get_device_name()` says, or the product
    mem_gb: float                   # HBM / GDDR, 10^9 bytes as the datasheet prints
    hbm_tbps: float                 # memory bandwidth, 10^12 bytes/s
    bf16_tflops: float              # dense BF16 tensor peak, 10^12 FLOP/s
    fp8_tflops: float | None        # dense FP8 (None: no FP8 tensor cores)
    link_gbps: float | None         # GPU-to-GPU link, bidirectional total per GPU, 10^9 B/s
    link_kind: str
    listed_sparse: bool             # the datasheet lists sparse TFLOPs (halved here)
    source: str

    def to_dict(self) -> dict:
        return {"name": self.name, "label": self.label, "mem_gb": self.mem_gb,
                "hbm_tbps": self.hbm_tbps, "bf16_dense_tflops": self.bf16_tflops,
                "fp8_dense_tflops": self.fp8_tflops, "link_gbps_bidir": self.link_gbps,
                "link_kind": self.link_kind, "listed_sparse": self.listed_sparse,
                "source": self.source}


GPUS: dict[str, Gpu] = {g.name: g for g in (
    Gpu("a100-80gb", "NVIDIA A100-SXM4-80GB", 80, 2.039, 312.0, None, 600.0, "NVLink 3",
        True, "NVIDIA A100 datasheet via glennklockwood.com/garden/processors/A100 (312 dense "
        "BF16 / 624 sparse, 2.039 TB/s); NVLink 600 GB/s: xynio.com/nvidia-a100-tensor-core-gpu"),
    Gpu("h100-sxm", "NVIDIA H100 80GB HBM3", 80, 3.35, 989.4, 1979.0, 900.0, "NVLink 4",
        True, "NVIDIA H100 datasheet 2430615 (1,979 BF16 / 3,958 FP8 with sparsity, 3.35 TB/s; "
        "inference-sim/training datasheets/h100-sxm.json); glennklockwood.com/garden/processors/"
        "h100; NVLink 4 900 GB/s"),
    Gpu("h100-pcie", "NVIDIA H100 PCIe", 80, 2.0, 756.0, 1513.0, 600.0, "NVLink bridge",
        True, "NVIDIA H100 PCIe table (1,513 BF16 / 3,026 FP8 '* shown with sparsity', 2.0 TB/s) "
        "via archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html; LLM-Viewer hardware_params"),
    Gpu("h100-nvl", "NVIDIA H100 NVL", 94, 3.9, 835.5, 1671.0, 600.0, "NVLink bridge",
        True, "inference-sim/training datasheets/h100-nvl.json (NVIDIA H100 NVL datasheet)"),
    Gpu("h200", "NVIDIA H200", 141, 4.8, 989.4, 1979.0, 900.0, "NVLink 4",
        True, "NVIDIA H200 datasheet (1,979 BF16 / 3,958 FP8 with sparsity, 4.8 TB/s, 141 GB); "
        "dense: alpharomercoma/MI300X-vs-H200 METHODOLOGY.md"),
    Gpu("b200", "NVIDIA B200", 180, 8.0, 2250.0, 4500.0, 1800.0, "NVLink 5",
        True, "glennklockwood.com/garden/processors/B200 (HGX B200 1,000 W: 4,500 BF16 / 9,000 "
              "FP8 sparse, 8 TB/s); 180 GB usable: TensorRT-LLM perf-overview.md"),
    Gpu("l40s", "NVIDIA L40S", 48, 0.864, 362.05, 733.0, None, "PCIe Gen4 x16",
        True, "NVIDIA L40S table (733 BF16 / 1,466 FP8 '* with sparsity', 864 GB/s) via "
        "mullet.se product 355414; no NVLink (itcreations.com)"),
    Gpu("l4", "NVIDIA L4", 24, 0.3, 121.0, 242.5, None, "PCIe Gen4 x16",
        True, "grokipedia.com/page/NVIDIA_L4_vs_L40S (242 FP16 / 485 FP8 with sparsity, "
        "300 GB/s); not yet checked against NVIDIA's L4 datasheet"),
    Gpu("mi300x", "AMD Instinct MI300X", 192, 5.3, 1307.4, 2614.9, 896.0, "Infinity Fabric",
        False, "AMD MI300X platform data sheet via GenZ Systems/system_configs.py (1,307 TF, "
        "5.3 TB/s) and alpharomercoma METHODOLOGY.md (dense); IF 896 GB/s: gpu.blog"),
)}

_ALIASES = {"a100": "a100-80gb", "a100-sxm": "a100-80gb", "h100": "h100-sxm",
            "h100-sxm5": "h100-sxm", "h200-sxm": "h200"}


def find_gpu(name: str) -> Gpu:
    """The preset for a name (case-insensitive; `torch.cuda.get_device_name()` labels too)."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    key = _ALIASES.get(key, key)
    if key in GPUS:
        return GPUS[key]
    for g in GPUS.values():
        if g.label.lower() == name.strip().lower():
            return g
    raise InputError(f"unknown GPU {clipped(name)}; "
                     f"{named_choices(key, list(GPUS), 'presets', 'kvcli clock gpus')}",
                     field="gpu")
