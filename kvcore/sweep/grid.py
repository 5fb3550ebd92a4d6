"""A spec's grid as frozen jobs, each checked before any runs, with a stable id.

Jobs come in one order (the traces as listed, then the grid's Cartesian product with its last
option changing fastest): the order of every table and JSON document, whatever order the jobs
finish in. A job's id is the sha256 of its canonical form: the command, its options (the fixed
ones and its grid point, sorted by name, floats as floats) and the sha256 of its trace's bytes,
so the same job is the same id in any spec, on any machine, under any path of the trace. The
files its options name (`model_config`, `calibration`) count by their bytes too, not by their
path (a path relative to the folder a sweep ran from gave a resumed sweep new ids: every job
ran again, twice in the results).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.preflight import first_refusal
from kvcore.engine.startup import start_up
from kvcore.errors import InputError
from kvcore.host_memory import engines_bytes
from kvcore.sweep.keys import CLUSTER_DEFAULTS, CLUSTER_KEYS, FILE_KEYS
from kvcore.sweep.spec import SweepSpec
from kvcore.traces import Trace, read_trace

# The most jobs one sweep plans: every job is made and checked (against its trace) before the
# first runs, so a grid of 10^9 (nine --set of ten values) filled the memory for minutes and
# never started; 100,000 replays are already days of a machine's cores.
MAX_JOBS = 100_000


@dataclass(frozen=True, slots=True)
class Job:
    index: int                  # position in the sweep's order
    command: str                # "replay" | "cluster"
    trace: str                  # the trace's path
    trace_sha256: str
    canonical: str              # {"command", "config", "trace_sha256"} as sorted compact JSON
    job_id: str

    @property
    def legacy_id(self) -> str:
        """The id kvcli gave the job before a file an option names counted by its bytes (by its
        path then): a results file written then is resumed, not run again."""
        return hashlib.sha256(self.canonical.encode()).hexdigest()[:16]

    @property
    def config(self) -> dict[str, Any]:
        """The options the job sets (fixed and swept), by name."""
        return json.loads(self.canonical)["config"]

    def replay_options(self) -> ReplayOptions:
        """The job's `ReplayOptions`: what it sets is `given` (over the trace's config line),
        exactly as the same options typed on `kvcli replay`'s command line."""
        given = {k: v for k, v in self.config.items() if k not in CLUSTER_KEYS}
        if isinstance(given.get("groups"), list):
            given["groups"] = tuple(given["groups"])
        return ReplayOptions(**given, given=frozenset(given))

    def cluster_options(self):
        """The job's `ClusterOptions` (a cluster job: one router)."""
        from kvcore.cluster.options import ClusterOptions
        from kvcore.cluster.router_opts import parse_router_opts

        c = {**CLUSTER_DEFAULTS, **{k: v for k, v in self.config.items() if k in CLUSTER_KEYS}}
        return ClusterOptions(replicas=c["replicas"],
                              routers=parse_router_opts([c["router"]], list(c["router_opt"])),
                              seed=c["seed"], metrics_interval_ms=c["metrics_interval_ms"],
                              kv_event_lag_ms=c["kv_event_lag_ms"])


def job_id(command: str, config: dict[str, Any], trace_sha256: str,
           hashed: dict[str, str] | None = None) -> tuple[str, str]:
    """(canonical JSON, id): the id is the first 16 hex digits of the sha256 of the canonical
    form, a named file's path replaced there by ``sha256:`` and its bytes' sha256. ``hashed``
    keeps each path's identity across a sweep's jobs (the file was read once a grid point:
    about 2 s at the 100,000-job limit)."""
    known = {} if hashed is None else hashed
    files = {k: known.get(v) or known.setdefault(v, _file_identity(v))
             for k in FILE_KEYS if isinstance(v := config.get(k), str) and v}
    canonical = _canonical(command, config, trace_sha256)
    identity = _canonical(command, {**config, **files}, trace_sha256) if files else canonical
    return canonical, hashlib.sha256(identity.encode()).hexdigest()[:16]


def _file_identity(path: str) -> str:
    """``sha256:`` and the bytes' sha256; the path itself where it cannot be read (the job's
    check then refuses it, naming its option)."""
    try:
        return f"sha256:{file_sha256(path)}"
    except InputError:
        return path


def _canonical(command: str, config: dict[str, Any], trace_sha256: str) -> str:
    return json.dumps({"command": command, "config": config, "trace_sha256": trace_sha256},
                      sort_keys=True, separators=(",", ":"), allow_nan=False)


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None
    return h.hexdigest()


@dataclass(slots=True)
class Plan:
    """A sweep ready to run: its jobs in order, the traces they read (by sha256), the options
    the grid sweeps (the table's columns)."""

    spec: SweepSpec
    jobs: list[Job]
    traces: dict[str, Trace]            # sha256 -> the trace, read once
    swept: list[str]
    folded: int = 0                     # grid points run as another's job (another router's
                                        # options only)
    # job id -> the host bytes its pools take at most (`kvcore.host_memory.engines_bytes`):
    # jobs run side by side must fit together
    job_bytes: dict[str, int] = field(default_factory=dict)


def expand(spec: SweepSpec, *, traces: dict[str, tuple[str, Trace]] | None = None) -> Plan:
    """Read every trace once, expand the grid and check every job's options against its
    trace (`ReplayOptions`' rules, the routers' options): a bad one raises `InputError` naming
    the spec's key and line before any job runs. `traces` (path -> (sha256, trace)) skips
    reading them again."""
    _check_size(spec)
    read: dict[str, tuple[str, Trace]] = dict(traces or {})
    for path in spec.traces:
        if path not in read:
            sha = file_sha256(path)
            read[path] = (sha, read_trace(path))
    names = [k for k, _ in spec.grid]
    routers = set(dict(spec.grid).get("router", ())) or {
        spec.fixed.get("router", CLUSTER_DEFAULTS["router"])}
    jobs: list[Job] = []
    hashed: dict[str, str] = {}         # a model_config's or calibration's path -> its identity
    seen: dict[str, int] = {}           # job id -> the place in `traces` of the trace that made it
    first: dict[str, dict[str, Any]] = {}   # job id -> the options of the point that made it
    folded = 0
    sizes: dict[str, int] = {}
    for t, path in enumerate(spec.traces):
        sha, trace = read[path]
        for point in itertools.product(*(values for _, values in spec.grid)):
            config = {**spec.fixed, **dict(zip(names, point, strict=True))}
            if spec.command == "cluster":
                _own_router_opts(config, routers)
            canonical, jid = job_id(spec.command, config, sha, hashed)
            if jid in seen:
                if twin := next((k for k in FILE_KEYS if first[jid].get(k) != config.get(k)),
                                None):
                    # (the same bytes under two names: one job; it was said to be a router's)
                    raise spec.error(twin, f"{config[twin]} holds the same bytes as "
                                     f"{first[jid][twin]}: one job would stand for both; give "
                                     "one of them")
                if seen[jid] == t:   # points that differ only in another router's options:
                    folded += 1         # one job (its router ignores them)
                    continue
                raise InputError(f"the trace {path} is listed twice (same content)",
                                 path=spec.path, field="traces")
            seen[jid], first[jid] = t, config
            job = Job(len(jobs), spec.command, path, sha, canonical, jid)
            sizes[jid] = _check(spec, job, trace)
            jobs.append(job)
    swept = (["trace"] if len(spec.traces) > 1 else []) + names
    return Plan(spec, jobs, {sha: tr for sha, tr in read.values()}, swept, folded, sizes)


def _check_size(spec: SweepSpec) -> None:
    """At most `MAX_JOBS` jobs, counted before one is made (nor a trace read)."""
    n = math.prod([len(spec.traces), *(len(values) for _, values in spec.grid)])
    if n <= MAX_JOBS:
        return
    what = (f"{n:,} jobs ({len(spec.traces)} trace(s) x "
            + " x ".join(f"{len(v)} {k}" for k, v in spec.grid)
            + f") is more than the limit of {MAX_JOBS:,} a sweep")
    if spec.path is None:
        raise InputError(what, field="set")
    raise InputError(what, path=spec.path, field="grid")


def _own_router_opts(config: dict[str, Any], routers: set[str]) -> None:
    """Keep of `router_opt` what this job's router is given, as `kvcli cluster --routers`
    gives its routers their options: `ROUTER.KEY=V` entries of another router are left out, and
    a bare `KEY=V` this router does not take where another router of the sweep (`routers`)
    does (refused for every job: the round_robin jobs of a sweep over llmd and round_robin
    refused llmd's queue_weight, which the cluster took); a job's id then depends only on what
    it runs. A bare key no router of the sweep takes stays, for the job's check to refuse."""
    from kvcore.cluster.router import REGISTRY, router_names

    if "router_opt" not in config:
        return
    router = config.get("router", CLUSTER_DEFAULTS["router"])
    known = set(router_names())

    def others(opt: str) -> bool:
        key = opt.partition("=")[0]
        target, dot, _ = key.partition(".")
        if dot and target in known:
            return target != router
        options = REGISTRY[router].OPTIONS if router in REGISTRY else {}
        return key not in options and any(key in REGISTRY[r].OPTIONS for r in routers
                                          if r in REGISTRY)

    own = [o for o in config["router_opt"] if not others(o)]
    if own:
        config["router_opt"] = own
    else:
        del config["router_opt"]


def _check(spec: SweepSpec, job: Job, trace: Trace) -> int:
    """The job's options as its run will see them: the checks its run makes before it
    allocates anything (`engine/startup.py`: the pool's size, vLLM's start-up refusals, the
    clock, the CPU tier; a cluster's own; vLLM's failure at the first lookup, which a job
    meets unless max_steps stops it first), so that a value only a run refused (`clock=bogus`)
    stops the sweep before any job runs. An error names the spec's key. Returns the host
    bytes the job's pools take at most."""
    config = job.config
    try:
        opts = job.replay_options()
        copts = None
        if job.command == "cluster":
            from kvcore.cluster.checks import check_cluster

            copts = job.cluster_options()
            check_cluster(copts)
        cfg = resolve(opts, trace.config, path=job.trace, config_line=trace.config_line)
        start = start_up(trace, cfg)
        if (refused := first_refusal(trace, start)) is not None:
            raise refused
        if start.lookup_refusal is not None and start.cfg.max_steps is None:
            # (vLLM fails at its first lookup, which a job that runs a request makes)
            raise start.lookup_refusal
        if copts is not None:
            from kvcore.cluster.checks import check_on_trace

            check_on_trace(cfg, copts, start)
        assert start.cfg.num_blocks is not None         # (sized by the start-up)
        return engines_bytes(start.cfg.num_blocks, None if copts is None else copts.replicas)
    except InputError as err:
        if err.path is not None:            # the trace's own config line: its file and line
            raise
        owner: str | None = err.field if err.field is not None and err.field in config \
            else _owner(err.field, config)
        if owner is None:
            point = _point(spec, config)
            what = f"{err.message} (job {job.index}: {point})" if point else err.message
            if spec.path is None:           # the flags' form: the option is --set
                raise InputError(f"{err.field}: {what}" if err.field else what,
                                 field="set") from None
            raise InputError(what, path=spec.path, field=err.field) from None
        # the rest of the grid point: the other swept options (the owner may be one every
        # job sets, its error then depending on a swept one's value); a router option's
        # refusal names the routers itself
        rest = _point(spec, config, owner) if owner != "router_opt" else ""
        raise spec.error(owner, err.message + (f" (with {rest})" if rest else "")) from None
    except TypeError as err:                # a value of a type the rule cannot compare
        raise InputError(str(err), path=spec.path) from None


def _owner(field: str | None, config: dict[str, Any]) -> str | None:
    """The option an error about `field` belongs to: routers' options are `router_opt`'s."""
    if field in ("router", "routers") and "router" in config:
        return "router"
    if field == "router_opt":
        return "router_opt"
    return None


def _point(spec: SweepSpec, config: dict[str, Any], but: str | None = None) -> str:
    return ", ".join(f"{k}={config[k]}" for k, _ in spec.grid if k != but)
