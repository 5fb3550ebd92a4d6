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

# With the CPU offload tier (vLLM's OffloadingConnector): the flat transfer counters and the
# deprecated ones with a transfer_type label, which the CPU spec still updates.
OFFLOAD_METRICS: tuple[tuple[str, str, str, tuple[str, ...], str | None], ...] = (
    ("vllm:kv_offload_load_bytes", "counter",
     "Total bytes loaded from offload storage to GPU.", (), None),
    ("vllm:kv_offload_store_bytes", "counter",
     "Total bytes stored from GPU to offload storage.", (), None),
    ("vllm:kv_offload_total_bytes", "counter", "Number of bytes offloaded by KV connector",
     ("transfer_type",), None),
)

FAMILIES = {"request_latency": REQUEST_LATENCY, "time_to_first_token": TIME_TO_FIRST_TOKEN,
            "inter_token_latency": INTER_TOKEN_LATENCY,
            "request_num_preemptions": REQUEST_NUM_PREEMPTIONS}
