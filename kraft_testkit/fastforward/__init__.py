"""Towards an exact idle fast-forward (issue 12): pieces that compute idle traffic instead of
stepping it, each checked against stepping. Nothing here changes a run yet."""
