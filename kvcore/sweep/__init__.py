"""`kvcli sweep`: a grid of replays (or cluster runs) over one or more traces (docs/sweep.md).

`spec.py` reads a spec file (TOML or JSON) or the command line's `--trace` / `--set` into a
`SweepSpec`; `keys.py` knows every option a job may set and its type; `grid.py` expands the spec
into frozen `Job`s with stable ids and checks each one before any runs; `job.py` is the pure
function a worker runs (the same `replay` / `run_cluster` call the commands make);
`executor.py` is the seam the executors sit behind (`executor_local.py`, a process pool, the
default; `executor_ray.py`, Ray tasks); `results.py` reads a results file back; `metrics.py`
picks the numbers a table or a plot shows; `run.py` runs what is left of a sweep.
"""
