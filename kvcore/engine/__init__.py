"""The replay engine: scheduler, replay driver (engine and cache modes), event sinks, trace
generation. Entry point: `kvcore.engine.replay.replay(trace_path, ReplayOptions(...), sink)`."""
