"""The routers, one file each; importing this package registers them all
(`kvcore.cluster.router.REGISTRY`)."""

from kvcore.cluster.routers import (  # noqa: F401
    aibrix,
    dynamo,
    least_request,
    llmd,
    llmd_precise,
    oracle,
    power_of_two,
    random_router,
    round_robin,
    sglang,
    vllm_dp,
)
