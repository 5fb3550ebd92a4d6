"""`--router-opt [ROUTER.]KEY=VALUE` entries to each chosen router's options (`kvcli cluster`,
`kvcli sweep` over cluster runs)."""

from __future__ import annotations

from kvcore.errors import InputError


def parse_router_opts(names: list[str], raw: list[str], field: str = "router") -> tuple:
    """`--router-opt [ROUTER.]KEY=VALUE` entries to ((router, ((key, value), ...)), ...): a
    bare KEY goes to every chosen router that takes it (and must fit at least one). `field`: the
    option the names came from, for the error."""
    from kvcore.cluster.router import REGISTRY, router_names, unknown_router

    known = router_names()
    for name in names:
        if name not in known:
            raise unknown_router(name, known, field)
    if len(set(names)) != len(names):
        raise InputError(f"a router named twice in {','.join(names)}", field="routers")
    per: dict[str, dict[str, str]] = {n: {} for n in names}
    for item in raw:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InputError(f"expected [ROUTER.]KEY=VALUE, got {item!r}", field="router_opt")
        target, dot, bare = key.partition(".")
        if dot and target in per:
            per[target][bare] = value
            continue
        takers = [n for n in names if key in REGISTRY[n].OPTIONS]
        if not takers:
            raise InputError(f"no chosen router takes option {key!r} ({item!r})",
                             field="router_opt")
        for n in takers:
            per[n][key] = value
    return tuple((n, tuple(per[n].items())) for n in names)
