"""Every message declaration the kit knows, gathered from the modules of this package."""

from __future__ import annotations

import importlib
import pkgutil

from ..schema import MessageSpec


def all_specs() -> list[MessageSpec]:
    """Each declared MessageSpec once, in module order (declaration modules stay independent)."""
    specs: list[MessageSpec] = []
    seen: set[int] = set()
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, MessageSpec) and id(value) not in seen:
                seen.add(id(value))
                specs.append(value)
    return specs
