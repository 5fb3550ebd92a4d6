"""The replay engine and the drivers: the scheduler, the replay (engine and cache modes), event
sinks, trace generation, op scripts and the bench workload.

Entry point: `kvcore.engine.replay.replay(trace_path, ReplayOptions(...), sink)`. The replay's
files: `options.py` (the knobs), `context.py` (set-up both modes share), `engine_loop.py` and
`cache_mode.py` (the two modes), `request_log.py` (per-request lines), `admit_fields.py` (miss
attribution fields of `admit` events), `events.py` (our stream's sinks), `vllm_events.py`
(vLLM's event batches), `recorder.py` (the `Recorder` writing our stream)."""
