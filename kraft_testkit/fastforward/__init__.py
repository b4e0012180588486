"""The idle warp (``Cluster(fast_forward=True)``): pieces that compute idle traffic instead of
stepping it, each checked against stepping, byte for byte (docs/simulation.md)."""
