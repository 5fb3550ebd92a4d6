"""One engine's CPU-tier metrics (vLLM's OffloadingConnector, `metric_defs.OFFLOAD_METRICS`),
read from the replay's tier after every step, as `EngineMetrics` reads the rest.

What each counts, against vLLM 0.33 (docs/live.md has it for users):

* bytes, sizes: every job the fake worker finished, at its bytes (`FakeWorker.sizes`); vLLM's
  workers each report their own jobs and its aggregator sums them, so a load counts once a
  `--tp` rank and a store once a copy the tier holds (`tier_copies`: an MLA latent's one);
* times: modelled. On the simulated clock a job's copy takes its bytes over
  `--offload-bandwidth-gbps` (vLLM times the copy alone, between CUDA events on its stream, not
  its wait behind others); with step-counted transfers no copy time is modelled and a job
  takes 0.0 s, which is what the scheduler oracle's fake worker reports too;
* allocation failures: each store offer the manager could not place (`prepare_store` None);
* the async lookup delay: `kvcore.offload.lookup_delays` (simulated step starts);
* the CPU manager's gauges and allocation sizes: its `get_stats` after the step;
* the config info: `CPUOffloadingInfo`'s labels, one series with value 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvcore.live.metric_defs import OFFLOAD_EAGER, TRANSFER_TYPES
from kvcore.live.metrics import observe_many
from kvcore.offload.config import cpu_kv_cache_size_tokens
from kvcore.offload.manager_reports import M_READ, M_SKIPPED, M_USAGE, M_WRITE, reduce_stats

# (direction, its transfer_type label in the deprecated metrics)
_KINDS = (("load", TRANSFER_TYPES[0]), ("store", TRANSFER_TYPES[1]))


def config_info(cfg: Any, groups: Sequence[Any], max_model_len: int | None) -> tuple[str, ...]:
    """`CPUOffloadingInfo`'s label values (`cpu/common.py`): the tier's chunks, blocks per
    chunk, bytes (padded chunks), and the tokens it holds for requests of max_model_len tokens
    (`cpu_kv_cache_size_tokens`: "None" where max_model_len is not given: kvcli then applies
    none)."""
    tokens = cpu_kv_cache_size_tokens(cfg.num_chunks, cfg.blocks_per_chunk, groups,
                                      max_model_len)
    return (str(cfg.num_chunks), str(cfg.blocks_per_chunk),
            str(cfg.num_chunks * cfg.kv_bytes_per_chunk), str(tokens))


class OffloadMetrics:
    def __init__(self, by_name: dict[str, Any], lv: tuple[str, str], ctx: Any) -> None:
        self.by_name = by_name
        self.lv = lv
        tier = ctx.tier
        self.tier = tier
        # the worker's bytes are one rank's; vLLM's aggregator sums every worker's transfer
        # stats (TransferStats.aggregate): every tp rank loads, and stores too, except over an
        # MLA latent's one replicated copy, which rank 0 alone writes (offloading/worker.py:
        # the others store nothing and report nothing): the tier's copies (`tier_copies`)
        self.ranks = {"load": ctx.cfg.tp, "store": tier.cfg.copies}
        bw = tier.cfg.bandwidth                 # bytes per ms, or None: no copy time
        self.bytes_per_s = None if bw is None else bw * 1000.0
        self.eager = {(name, t): by_name[name].labels(*lv, t)
                      for name in OFFLOAD_EAGER for t in TRANSFER_TYPES}
        self.info = config_info(tier.cfg, ctx.kvm.coordinator.single_type_managers,
                                ctx.cfg.max_model_len)
        self.skipped = "vllm:kv_offload_stores_skipped" in by_name
        self.seen: dict[str, int] = {}                     # cumulative counts already added
        self.seen_sizes: dict[str, dict[int, int]] = {"load": {}, "store": {}}
        tier.delays.collect()

    def _child(self, name: str) -> Any:
        """The engine's series of ``name`` (made on first use, as vLLM binds its labels)."""
        return self.by_name[name].labels(*self.lv)

    def update(self) -> None:
        tier = self.tier
        w = tier.worker
        for kind, tt in _KINDS:
            # (by jobs, not bytes: a job of no block moves 0 bytes, and vLLM observes it)
            jobs = sum(w.sizes[kind].values())
            if jobs == self.seen.get(kind + " jobs", 0):
                continue
            self.seen[kind + " jobs"] = jobs
            total = self.ranks[kind] * w.bytes[kind]
            delta = total - self.seen.get(kind, 0)
            self.seen[kind] = total
            secs = 0.0 if self.bytes_per_s is None else delta / self.bytes_per_s
            for name, eager, value in (("bytes", "total_bytes", delta),
                                       ("time", "total_time", secs)):
                self._child(f"vllm:kv_offload_{kind}_{name}").inc(value)
                self.eager[(f"vllm:kv_offload_{eager}", tt)].inc(value)
            hist = self._child(f"vllm:kv_offload_{kind}_size")
            old = self.seen_sizes[kind]
            for nb, n in w.sizes[kind].items():
                new = n - old.get(nb, 0)
                if new:
                    old[nb] = n
                    observe_many(hist, nb, new * self.ranks[kind])
                    observe_many(self.eager[("vllm:kv_offload_size", tt)], nb,
                                 new * self.ranks[kind])
        failures = tier.conn.failures
        if failures > self.seen.get("failures", 0):
            self._child("vllm:kv_offload_allocation_failure").inc(
                failures - self.seen.get("failures", 0))
            self.seen["failures"] = failures
        delays = tier.delays.take()
        if delays:
            hist = self._child("vllm:kv_offload_lookup_async_delay_seconds")
            for d in delays:
                hist.observe(d)
        self._manager(tier.conn.manager)

    def _manager(self, manager: Any) -> None:
        """The CPU manager's `get_stats` (which starts its next interval) and the info."""
        sizes = manager.allocation_sizes
        if sizes:
            hist = self._child("vllm:kv_offload_cpu_allocation_size")
            for n, offers in sizes.items():
                observe_many(hist, n, offers)
        st = reduce_stats(manager)
        for name in (M_USAGE, M_WRITE, M_READ):
            self._child(name).set(st[name])
        if self.skipped:
            self._child(M_SKIPPED).inc(st.get(M_SKIPPED, 0))
        self.by_name["vllm:kv_offload_config_info"].labels(*self.lv, *self.info).set(1)

