"""The router contract: what a router is given, what it returns, and the registry by name.

A router sees each request once, when it arrives, and picks a replica: `route(req, view)`. It
may read only the `ClusterView` (`view.py`): scraped metrics (stale by the sampling interval),
router-local counters (fresh), the replicas' true prefix hits (for the `oracle` upper bound),
and an index fed by the replicas' vLLM KV events (when the router says it `needs_events`). It
may keep its own state (a routing-history index) and update it in the hooks: `on_routed` right
after its decision, `on_first_token` and `on_finished` when that replica's step ends.

A router is a pure function of its inputs and its `rng` (seeded from `--seed`): same trace,
same options, same seed, same decisions.

Routers register themselves by name (`@register`); `make_router(name, ...)` builds one with its
options checked (`--router-opt key=value`: each router declares `OPTIONS`).
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from kvcore.errors import InputError, clipped, clipped_int
from kvcore.kv_events import hashes_to_ints
from kvcore.named_choices import named_choices

if TYPE_CHECKING:
    from kvcore.cluster.view import ClusterView
    from kvcore.traces import TraceRequest


class RouteRequest:
    """A request as the router sees it at its arrival."""

    __slots__ = ("_ints", "arrival_ms", "id", "index", "output_len", "prompt_len", "raw", "tr")

    def __init__(self, id: str, index: int, arrival_ms: float, prompt_len: int,
                 output_len: int, block_hashes: list[int] | None, tr: TraceRequest | None,
                 raw: list[bytes] | None = None) -> None:
        self.id = id
        self.index = index                  # position in arrival order (0, 1, ...)
        self.arrival_ms = arrival_ms
        self.prompt_len = prompt_len
        self.output_len = output_len
        self.tr = tr
        self.raw = raw                      # vLLM's block hashes as bytes (None in tests)
        self._ints = block_hashes

    @property
    def block_hashes(self) -> list[int]:
        """vLLM's block hashes of the prompt's full engine blocks (`view.block_size` tokens
        each), in their 64-bit external form (as vLLM's KV events carry them): a chained hash,
        so ``block_hashes[j]`` names the whole prefix up to block j. A router with a coarser
        block of m engine blocks takes every m-th one. Converted on first use (a router that
        never looks pays nothing: the conversion was 3.5% of an 8-replica round-robin run)."""
        if self._ints is None:
            self._ints = hashes_to_ints(self.raw or ())
        return self._ints


@dataclass(slots=True)
class Decision:
    """A router's answer. `reason` says why in one word (`round_robin`, `random`, `least_load`,
    `best_prefix`, `imbalance`, `below_threshold`, `tie`, `lowest_cost`, `best_score`, ...);
    `scores` maps each scorer's name to its per-replica scores (for `--decisions`);
    `predicted_hit` is the hit in tokens the router believed the chosen replica had (None:
    the router has no prefix notion), compared with the true hit in the report."""

    replica: int
    reason: str
    scores: dict[str, list[float]] | None = None
    predicted_hit: int | None = None


@dataclass(frozen=True, slots=True)
class Option:
    """One `--router-opt` a router takes: its type (int, float, str or bool), default, help,
    and the values it allows (`make_router` checks a given value against them): at least `lo`,
    more than `above`, at most `hi`, one of `choices`."""

    kind: type
    default: Any
    help: str
    lo: float | None = None
    above: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] | None = None
    # (other option, value): read only when that option has that value (llmd's
    # lru_capacity_per_server with auto_tune false); given otherwise, it changes nothing
    only_when: tuple[str, Any] | None = None

    def check(self, router: str, key: str, v: Any) -> None:
        """An `InputError` naming `router_opt` if `v` is out of bounds."""
        why = None
        if self.choices is not None and v not in self.choices:
            why = f"expected one of {', '.join(self.choices)}, got {v!r}"
        elif self.lo is not None and v < self.lo:
            why = f"must be >= {self.lo:g}, got {v!r}"
        elif self.above is not None and v <= self.above:
            why = f"must be > {self.above:g}, got {v!r}"
        elif self.hi is not None and v > self.hi:
            why = f"must be <= {self.hi:g}, got {v!r}"
        if why is not None:
            raise InputError(f"router {router} option {key}: {why}", field="router_opt")


class Router(ABC):
    """A routing rule. Subclasses set `name`, `OPTIONS`, and implement `route`."""

    name: ClassVar[str] = ""
    # The options this router takes, by name (`--router-opt name=value`).
    OPTIONS: ClassVar[dict[str, Option]] = {}
    # True: the view's `events` index is fed with the replicas' KV events (costly; only then).
    needs_events: ClassVar[bool] = False
    # True: `route` reads `view.metrics` (the samples scraped every metrics_interval_ms)
    reads_metrics: ClassVar[bool] = False
    # True: `route` draws from `rng` (the cluster's seed matters)
    draws_random: ClassVar[bool] = False

    def __init__(self, n: int, opts: dict[str, Any], rng: random.Random,
                 block_size: int) -> None:
        """`n` replicas, `opts` every option of `OPTIONS` (defaults filled in), `rng` the
        router's own seeded generator, `block_size` the engine's block size in tokens."""
        self.n = n
        self.opts = opts
        self.rng = rng
        self.block_size = block_size
        self.idle: list[str] = []   # the given options this choice of the others leaves unread

    @classmethod
    def settle(cls, opts: dict[str, Any], given: frozenset[str]) -> None:
        """Fill in options that depend on others (a preset's values), in place, before the
        router is built; `given` names the options the user set (never overridden)."""

    @abstractmethod
    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        """The replica for `req` (0 <= replica < n), decided at `view.now_ms`."""

    def uses_events(self) -> bool:
        """Whether this router reads `view.events` (the class's `needs_events`; a router
        whose options can turn the index off says so here: feeding it costs time)."""
        return self.needs_events

    def on_routed(self, req: RouteRequest, replica: int, view: ClusterView) -> None:
        """Right after `route` (the request is now `replica`'s): history indexes learn here."""

    def on_first_token(self, rid: str, replica: int, t_ms: float) -> None:
        """The request's first token came out of `replica` at `t_ms`."""

    def on_finished(self, rid: str, replica: int, t_ms: float) -> None:
        """The request finished on `replica` at `t_ms`, or `replica` rejected it (it never
        runs: no first token came before)."""


REGISTRY: dict[str, type[Router]] = {}


def register(cls: type[Router]) -> type[Router]:
    """Class decorator: add a router to the registry under its `name`."""
    assert cls.name and cls.name not in REGISTRY, cls.name
    REGISTRY[cls.name] = cls
    return cls


def router_names() -> list[str]:
    _load_all()
    return sorted(REGISTRY)


def unknown_router(name: str, known: list[str], field: str = "router") -> InputError:
    """The error for a router name not registered: the known names, the closest one, and
    `--routers` for a comma list given to `--router`."""
    import difflib

    hint = ""
    if "," in name:
        hint = " (several routers: --routers A,B,...)"
    elif close := difflib.get_close_matches(name.replace("-", "_"), known, n=1, cutoff=0.6):
        hint = f" (did you mean {close[0]}?)"
    # (the near miss is said already, as "did you mean")
    listed = named_choices(name, known, "routers", "kvcli cluster --list-routers", close=())
    return InputError(f"unknown router {clipped(name)}{hint}; {listed}", field=field)


def make_router(name: str, n: int, raw_opts: dict[str, str], seed: int,
                block_size: int) -> Router:
    """Build router `name` for `n` replicas with `raw_opts` (strings, from `--router-opt`)
    checked against its `OPTIONS`; an `InputError` naming the option otherwise."""
    _load_all()
    cls = REGISTRY.get(name)
    if cls is None:
        raise unknown_router(name, sorted(REGISTRY))
    opts = {k: o.default for k, o in cls.OPTIONS.items()}
    for key, text in raw_opts.items():
        opt = cls.OPTIONS.get(key)
        if opt is None:
            known = ", ".join(sorted(cls.OPTIONS)) or "none"
            raise InputError(f"router {name} has no option {key!r} (its options: {known})",
                             field="router_opt")
        opts[key] = _convert(name, key, opt.kind, text)
        opt.check(name, key, opts[key])
    cls.settle(opts, frozenset(raw_opts))
    # each router its own generator, seeded by the seed and its name (same seed, same choices)
    rng = random.Random(f"{seed}:{name}")
    router = cls(n, opts, rng, block_size)
    for key in raw_opts:
        if (when := cls.OPTIONS[key].only_when) is not None and opts[when[0]] != when[1]:
            router.idle.append(f"router {name} option {key}: no effect with "
                               f"{when[0]}={str(opts[when[0]]).lower()}")
    return router


# a float `--router-opt` at most this in size: weights times scores, costs and times summed stay
# far from a double's overflow (1.8e308), and any larger value means "never" or "always" anyway
MAX_FLOAT_OPTION = 1e15


def _convert(router: str, key: str, kind: type, text: str) -> Any:
    conv: Callable[[str], Any] = kind
    if kind is bool:
        low = text.strip().lower()
        if low not in ("true", "false", "1", "0", "yes", "no"):
            raise InputError(f"router {router} option {key}: expected true or false, got "
                             f"{text!r}", field="router_opt")
        return low in ("true", "1", "yes")
    try:
        value = conv(text)
    except ValueError:
        raise InputError(f"router {router} option {key}: expected {kind.__name__}, got "
                         f"{clipped(text)}", field="router_opt") from None
    if kind is int and not -(1 << 63) <= value < 1 << 63:
        # as every integer option: 10**30 was taken and written to the JSON as a string
        raise InputError(f"router {router} option {key}: must be a 64-bit integer (below 2**63 "
                         f"in size), got {clipped_int(value)}", field="router_opt")
    if kind is float and math.isnan(value):
        raise InputError(f"router {router} option {key}: not a number", field="router_opt")
    if kind is float and math.isinf(value):
        # a weight of inf scores inf * 0 = NaN somewhere, and the router then quietly ties
        raise InputError(f"router {router} option {key}: must be finite, got {text!r} (a large "
                         "number such as 1e9 stands for 'never' or 'always')",
                         field="router_opt")
    if kind is float and abs(value) > MAX_FLOAT_OPTION:
        # a finite one does too once a sum overflows: llmd's three weights at 1e308 scored
        # every replica inf and routed otherwise than at 1 (the same argmax), exit 0
        raise InputError(f"router {router} option {key}: must be at most "
                         f"1e15 in size, got {text!r} (a large number such as "
                         "1e9 stands for 'never' or 'always')", field="router_opt")
    return value


def _load_all() -> None:
    """Import every router module (each registers itself)."""
    from kvcore.cluster import routers  # noqa: F401  (the package imports them all)


@dataclass(slots=True)
class DecisionLog:
    """What the report keeps of the decisions: counts by reason, index disagreement."""

    reasons: dict[str, int] = field(default_factory=dict)
    predicted: int = 0          # decisions with a predicted hit
    false_hit: int = 0          # predicted more than the true hit
    false_miss: int = 0         # predicted less than the true hit
    regret_tokens: int = 0      # best true hit of any replica minus the chosen one's
