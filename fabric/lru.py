"""A thread-safe least-recently-used store bounded by the bytes its values hold: what the evaluation keeps across
builds of one cabling (a healthy fabric's cuts, its in-network tree placements), so that a search meeting a cabling
again after its fabric left the build cache does not find them again."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

__all__ = ["BytesLRU"]


class BytesLRU:
    """Values kept by key while the bytes ``size_of(value)`` of all of them add up to at most ``max_bytes`` (the
    most recently used value is always kept); the least recently used go first."""

    def __init__(self, max_bytes: int, size_of: Callable[[Any], int]):
        self.max_bytes = int(max_bytes)
        self.size_of = size_of
        self._d: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable):
        """The value kept under ``key`` (now the most recently used), or None."""
        with self._lock:
            hit = self._d.get(key)
            if hit is not None:
                self._d.move_to_end(key)
                return hit[0]
        return None

    def put(self, key: Hashable, value) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used values past the byte budget."""
        size = int(self.size_of(value))
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._d[key] = (value, size)
            self._bytes += size
            while len(self._d) > 1 and self._bytes > self.max_bytes:
                self._bytes -= self._d.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._d)

    @property
    def bytes(self) -> int:
        """Bytes of the values kept."""
        return self._bytes
