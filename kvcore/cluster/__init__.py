"""`kvcli cluster`: N replicas of the engine behind a router, on one simulated clock
(docs/cluster.md)."""
