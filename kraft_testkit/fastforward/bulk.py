"""The fast path's error: what a computed stretch raises where it cannot reproduce stepping.

(The guard-event fast-forward that lived here was superseded by the idle warp,
``fastforward/warp.py``; the bulk primitives, ``fastforward/noop_run.py``, raise this too.)
"""

from __future__ import annotations

from kraft_testkit.errors import KraftError


class InexactFastForward(KraftError):
    """The fast-forward met something it cannot reproduce exactly (a bug, or a case to step)."""
