"""What the differential sweep scripts share: this checkout and its cluster tests importable
(the sweeps run the tests' scenarios and compare their state), and ``--seeds lo:hi``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "tests" / "cluster", ROOT):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def parser(default_seeds: str) -> argparse.ArgumentParser:
    """An argument parser with ``--seeds lo:hi``."""
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", default=default_seeds, help="lo:hi, the seeds to run")
    return p


def bounds(seeds: str) -> tuple[int, int]:
    """``lo:hi`` as two ints."""
    lo, hi = map(int, seeds.split(":"))
    return lo, hi
