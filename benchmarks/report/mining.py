"""The blocks of the end-to-end mining page (docs/benchmarks/mining.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from . import shared


def e2e_table() -> str:
    """Mining end to end against the example (``bench_mining_e2e.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from bench_mining_e2e import e2e_table as table

    return table(shared.load("mining_e2e.json"))


TABLES: dict[str, Callable[[], str]] = {
    "mining-e2e": e2e_table,
}
