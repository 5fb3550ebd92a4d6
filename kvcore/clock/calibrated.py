"""The `calibrated` clock: the roofline with a calibration file's measured ceilings as the GPU's
peaks and its fitted factors (`kvcli calibrate --gpu`; `kvcore.clock.calibration`).

Everything else is the roofline's: the same work per kernel group, the same max per group and
sum, the same all-reduce and fixed terms, and the file's CPU terms (``c_step_us``, ``c_req_us``:
`kvcli calibrate` writes the defaults, as micro-benchmarks cannot measure them; reference 7.3,
and ``factors.cpu_terms`` says where they come from). A file measured on a CPU, or with factors
no measurement determined, gets a warning beside the times (`calibration_caveat`).
"""

from __future__ import annotations

from kvcore.clock.calibration import Calibration, calibration_caveat, check_scope
from kvcore.clock.kv_dtypes import KV_CACHE_DTYPES
from kvcore.clock.roofline import WORK_SOURCE, RooflineClock
from kvcore.models.geometry import ModelGeometry
from kvcore.models.quantization import auto_kv_dtype


class CalibratedClock(RooflineClock):
    name = "calibrated"
    uncalibrated = False

    def __init__(self, g: ModelGeometry, cal: Calibration, *, tp: int = 1,
                 kv_cache_dtype: str = "auto", async_scheduling: bool = True,
                 spec_tokens: int = 0) -> None:
        kv_cache_dtype = auto_kv_dtype(g, kv_cache_dtype)     # (a ModelOpt checkpoint's "auto")
        check_scope(cal, g, kv_dtype=KV_CACHE_DTYPES.get(kv_cache_dtype) or g.dtype, tp=tp)
        self.cal = cal
        super().__init__(g, cal.gpu, tp=tp, kv_cache_dtype=kv_cache_dtype, factors=cal.factors,
                         async_scheduling=async_scheduling, spec_tokens=spec_tokens)

    def describe(self) -> dict:
        doc = self.cal.doc
        return {"name": "calibrated", "calibration": self.cal.path, "model": self.g.name,
                "gpu": self.gpu.to_dict(), "measured_on": doc["gpu"],
                "created": doc.get("created"), "tp": self.tp,
                "kv_cache_dtype": self.kv_cache_dtype, "async_scheduling": self.async_scheduling,
                "factors": self.factors.to_dict(),
                "factors_source": (f"fitted by kvcli calibrate on {doc['gpu']['name']} "
                                   f"({self.cal.path}); CPU terms "
                                   f"{doc['factors'].get('cpu_terms', 'default')}"),
                "loo_mape_pct": doc["fit"]["loo_mape_pct"], "work": WORK_SOURCE}

    def uncalibrated_warning(self) -> str | None:
        return calibration_caveat(self.cal)
