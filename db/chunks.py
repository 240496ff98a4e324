"""Long `IN (...)` lists, one statement per chunk: every query that filters by many ids goes through
`in_chunks`, so the limit is set in one place. SQLite caps the bound parameters of one statement
(999 before 3.32) and other drivers have caps of their own; 500 leaves room for the statement's
other parameters."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

IN_CHUNK = 500


def in_chunks(items: Sequence, size: int = IN_CHUNK) -> Iterator[Sequence]:
    """Consecutive slices of `items`, each at most `size` long (none for an empty sequence)."""
    for i in range(0, len(items), size):
        yield items[i:i + size]
