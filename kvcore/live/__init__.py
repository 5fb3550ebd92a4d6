"""kvcli as a stand-in vLLM: KV events over ZMQ, the wall-clock pace, vLLM's metrics (docs/live.md)."""
