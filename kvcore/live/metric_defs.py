"""vLLM 0.33's Prometheus metrics that a replay can fill: names, types, help, labels and bucket
boundaries as `vllm/v1/metrics/loggers.py` (`PrometheusStatLogger`), `vllm/v1/metrics/buckets.py`
and, for the CPU tier, `.../kv_connector/v1/offloading/metrics.py` define them. Every metric has
vLLM's per-engine labels ``model_name`` and ``engine`` first.
"""

from __future__ import annotations

ENGINE_LABELS = ("model_name", "engine")

# vllm/v1/metrics/buckets.py
REQUEST_LATENCY = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TIME_TO_FIRST_TOKEN = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                       2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
INTER_TOKEN_LATENCY = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                       5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
REQUEST_NUM_PREEMPTIONS = (1, 2, 3, 4, 5, 10, 20)
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")   # FinishReason's strings
TRANSFER_TYPES = ("CPU_to_GPU", "GPU_to_CPU")                         # load, store


def request_tokens_buckets(max_model_len: int) -> tuple[float, ...]:
    """vLLM's ``request_tokens`` family: 1, 2, 5, 10, 20, 50, ... up to max_model_len."""
    out: list[float] = []
    scale = 1
    while True:
        for m in (1, 2, 5):
            if m * scale > max_model_len:
                return tuple(out)
            out.append(m * scale)
        scale *= 10


# (name, type, help, extra label names, bucket family or None)
METRICS: tuple[tuple[str, str, str, tuple[str, ...], str | None], ...] = (
    ("vllm:num_requests_running", "gauge",
     "Number of requests in model execution batches.", (), None),
    ("vllm:num_requests_waiting", "gauge",
     "Number of requests waiting to be processed.", (), None),
    ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", (), None),
    ("vllm:prefix_cache_queries", "counter",
     "Prefix cache queries, in terms of number of queried tokens.", (), None),
    ("vllm:prefix_cache_hits", "counter",
     "Prefix cache hits, in terms of number of cached tokens.", (), None),
    ("vllm:external_prefix_cache_queries", "counter",
     ("External prefix cache queries from KV connector cross-instance cache sharing, in terms "
      "of number of queried tokens."), (), None),
    ("vllm:external_prefix_cache_hits", "counter",
     ("External prefix cache hits from KV connector cross-instance cache sharing, in terms of "
      "number of cached tokens."), (), None),
    ("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine.",
     (), None),
    ("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.", (), None),
    ("vllm:generation_tokens", "counter", "Number of generation tokens processed.", (), None),
    ("vllm:request_success", "counter", "Count of successfully processed requests.",
     ("finished_reason",), None),
    ("vllm:request_prompt_tokens", "histogram", "Number of prefill tokens processed.", (),
     "request_tokens"),
    ("vllm:request_generation_tokens", "histogram", "Number of generation tokens processed.",
     (), "request_tokens"),
    ("vllm:time_to_first_token_seconds", "histogram",
     "Histogram of time to first token in seconds.", (), "time_to_first_token"),
    ("vllm:inter_token_latency_seconds", "histogram",
     "Histogram of inter-token latency in seconds.", (), "inter_token_latency"),
    ("vllm:request_time_per_output_token_seconds", "histogram",
     "Histogram of time_per_output_token_seconds per request.", (), "inter_token_latency"),
    ("vllm:e2e_request_latency_seconds", "histogram",
     "Histogram of e2e request latency in seconds.", (), "request_latency"),
    ("vllm:request_queue_time_seconds", "histogram",
     "Histogram of time spent in WAITING phase for request.", (), "request_latency"),
    ("vllm:request_inference_time_seconds", "histogram",
     "Histogram of time spent in RUNNING phase for request.", (), "request_latency"),
    ("vllm:request_prefill_time_seconds", "histogram",
     "Histogram of time spent in PREFILL phase for request.", (), "request_latency"),
    ("vllm:request_decode_time_seconds", "histogram",
     "Histogram of time spent in DECODE phase for request.", (), "request_latency"),
    ("vllm:request_num_preemptions", "histogram",
     "Histogram of the number of times a request was preempted.", (),
     "request_num_preemptions"),
)

# With the CPU offload tier (vLLM's OffloadingConnector, `OffloadPromMetrics`), in vLLM's order of
# registration: the deprecated transfer metrics with a transfer_type label (their children exist
# from the start, `OFFLOAD_EAGER`), the CPU spec's (`cpu/spec.py`; `STORES_SKIPPED` only with a
# store_threshold of 2 or more), the connector's flat ones (`get_connector_metric_definitions`;
# each series appears with its first observation, as vLLM binds its labels then) and the
# config info. vLLM's `kv_offload_lookup_sync_delay_seconds` is not here: it times one Python
# call, which a replay does not model (docs/live.md).
OFFLOAD_METRICS: tuple[tuple[str, str, str, tuple[str, ...], str | None], ...] = (
    ("vllm:kv_offload_total_bytes", "counter", "Number of bytes offloaded by KV connector",
     ("transfer_type",), None),
    ("vllm:kv_offload_total_time", "counter",
     "Total time measured by all KV offloading operations", ("transfer_type",), None),
    ("vllm:kv_offload_size", "histogram", "Histogram of KV offload transfer size, in bytes.",
     ("transfer_type",), "transfer_size"),
    ("vllm:kv_offload_cpu_cache_usage_perc", "gauge",
     ("Fraction of CPU KV-cache space currently pinned by active transfers (0.0 = idle, 1.0 = "
      "saturated). Sustained high values indicate transfers (stores or promotions) may be "
      "dropped due to insufficient capacity."), (), None),
    ("vllm:kv_offload_cpu_cache_write_usage_perc", "gauge",
     ("Fraction of CPU KV-cache space currently pinned by in-flight stores that have not yet "
      "completed (0.0 = idle, 1.0 = saturated)."), (), None),
    ("vllm:kv_offload_cpu_cache_read_usage_perc", "gauge",
     ("Fraction of CPU KV-cache space currently pinned by in-flight loads that have not yet "
      "completed (0.0 = idle, 1.0 = saturated)."), (), None),
    ("vllm:kv_offload_cpu_allocation_size", "histogram",
     "Histogram of the number of CPU chunks requested by each KV offload prepare_store call.",
     (), "cpu_allocation_size"),
    ("vllm:kv_offload_load_bytes", "counter",
     "Total bytes loaded from offload storage to GPU.", (), None),
    ("vllm:kv_offload_load_time", "counter",
     "Total load time from offload storage to GPU, in seconds.", (), None),
    ("vllm:kv_offload_load_size", "histogram",
     "Histogram of KV offload load operation size, in bytes.", (), "transfer_size"),
    ("vllm:kv_offload_store_bytes", "counter",
     "Total bytes stored from GPU to offload storage.", (), None),
    ("vllm:kv_offload_store_time", "counter",
     "Total store time from GPU to offload storage, in seconds.", (), None),
    ("vllm:kv_offload_store_size", "histogram",
     "Histogram of KV offload store operation size, in bytes.", (), "transfer_size"),
    ("vllm:kv_offload_lookup_async_delay_seconds", "histogram",
     ("Histogram of time between a request's offload lookup first deferring and the following "
      "lookup resolving, or request finish, in seconds."), (), "lookup_async_delay"),
    ("vllm:kv_offload_allocation_failure", "counter",
     "Number of KV offload store allocation attempts that failed.", (), None),
    ("vllm:kv_offload_config_info", "gauge",
     ("Static configuration of the KV offload managers of this engine instance. The configured "
      "offloading spec declares the label names, and each manager fills the values, so a "
      "series appears from the first scheduler step of its engine. A manager reports one "
      "series for each configuration it holds, and a label of its own tells the series apart. "
      "Each engine reports its own configuration, not the instance total."),
     ("cpu_num_chunks", "cpu_blocks_per_chunk", "cpu_kv_cache_size_bytes",
      "cpu_kv_cache_size_tokens"), None),
)
# perf.py's `PerfMetricsProm` (`vllm/v1/metrics/perf.py`): registered with the others whether
# or not --enable-mfu-metrics is given (vLLM's PrometheusStatLogger makes them unconditionally;
# without the flag they stay 0), in this order: flops, read bytes, write bytes.
MFU_METRICS: tuple[tuple[str, str, str, tuple[str, ...], str | None], ...] = (
    ("vllm:estimated_flops_per_gpu_total", "counter",
     ("Estimated number of floating point operations per GPU (for Model Flops Utilization "
      "calculations)."), (), None),
    ("vllm:estimated_read_bytes_per_gpu_total", "counter",
     ("Estimated number of bytes read from memory per GPU (for Model Flops Utilization "
      "calculations)."), (), None),
    ("vllm:estimated_write_bytes_per_gpu_total", "counter",
     ("Estimated number of bytes written to memory per GPU (for Model Flops Utilization "
      "calculations)."), (), None),
)
# vllm/v1/spec_decode/metrics.py's `SpecDecodingProm`, registered (first, as vLLM's
# PrometheusStatLogger makes it first) only with speculative decoding on; the per-position
# counter has one series a draft position (label `position`, "0" to "K-1")
SPEC_METRICS: tuple[tuple[str, str, str, tuple[str, ...], str | None], ...] = (
    ("vllm:spec_decode_num_drafts", "counter", "Number of spec decoding drafts.", (), None),
    ("vllm:spec_decode_num_draft_tokens", "counter", "Number of draft tokens.", (), None),
    ("vllm:spec_decode_num_accepted_tokens", "counter", "Number of accepted tokens.", (), None),
    ("vllm:spec_decode_num_accepted_tokens_per_pos", "counter",
     "Accepted tokens per draft position.", ("position",), None),
)
SPEC_PER_POS = SPEC_METRICS[-1][0]
STORES_SKIPPED: tuple[str, str, str, tuple[str, ...], str | None] = (
    "vllm:kv_offload_stores_skipped", "counter",
    "Number of KV offload stores skipped because the reuse threshold was not reached.", (), None)
OFFLOAD_EAGER = ("vllm:kv_offload_total_bytes", "vllm:kv_offload_total_time",
                 "vllm:kv_offload_size")

# offloading/metrics.py's TRANSFER_SIZE_BUCKETS (bytes), its async lookup delay's (s), and the
# CPU spec's allocation sizes (chunks)
TRANSFER_SIZE = (1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6)
LOOKUP_ASYNC_DELAY = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10)
CPU_ALLOCATION_SIZE = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144)

FAMILIES = {"request_latency": REQUEST_LATENCY, "time_to_first_token": TIME_TO_FIRST_TOKEN,
            "inter_token_latency": INTER_TOKEN_LATENCY,
            "request_num_preemptions": REQUEST_NUM_PREEMPTIONS, "transfer_size": TRANSFER_SIZE,
            "lookup_async_delay": LOOKUP_ASYNC_DELAY, "cpu_allocation_size": CPU_ALLOCATION_SIZE}
