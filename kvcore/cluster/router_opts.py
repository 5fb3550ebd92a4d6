"""`--router-opt [ROUTER.]KEY=VALUE` entries to each chosen router's options (`kvcli cluster`,
`kvcli sweep` over cluster runs)."""

from __future__ import annotations

from kvcore.errors import InputError, clipped


def parse_router_opts(names: list[str], raw: list[str], field: str = "router") -> tuple:
    """`--router-opt [ROUTER.]KEY=VALUE` entries to ((router, ((key, value), ...)), ...): a
    bare KEY goes to every chosen router that takes it (and must fit at least one), and
    ROUTER.KEY wins over it whatever their order; the same key given twice the same way is
    refused (the last one won, unsaid). `field`: the option the names came from, for the
    error."""
    from kvcore.cluster.router import REGISTRY, router_names, unknown_router

    known = router_names()
    for name in names:
        if name not in known:
            raise unknown_router(name, known, field)
    if len(set(names)) != len(names):
        given = ",".join(names) if field == "routers" else "--router " + " --router ".join(names)
        raise InputError(f"a router named twice in {given}", field=field)
    per: dict[str, dict[str, str]] = {n: {} for n in names}
    said: dict[tuple[str, str, bool], str] = {}     # (router, key, qualified) -> the entry
    for item in raw:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InputError(f"expected [ROUTER.]KEY=VALUE, got {clipped(item)}", field="router_opt")
        target, dot, bare = key.partition(".")
        qualified = bool(dot) and target in per
        takers = [target] if qualified else [n for n in names if key in REGISTRY[n].OPTIONS]
        if not takers:
            raise InputError(f"no chosen router takes option {key!r} ({item!r})",
                             field="router_opt")
        opt = bare if qualified else key
        for n in takers:
            if (n, opt, qualified) in said:
                raise InputError(f"{n}'s option {opt!r} given twice ({said[n, opt, qualified]!r}"
                                 f" and {item!r})", field="router_opt")
            said[n, opt, qualified] = item
            if qualified or (n, opt, True) not in said:
                per[n][opt] = value
    return tuple((n, tuple(per[n].items())) for n in names)
