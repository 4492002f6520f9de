"""The Bloom filter the provenance index keeps of outside content it evicted: never forgets.

Pure and deterministic (it runs inside workflow code). A token hash added is always found
again; a false positive only ever makes a value look like outside content (stricter).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

from ._provenance import BLOOM_BYTES, BLOOM_HASHES


class Bloom:
    """A fixed-size Bloom filter of 64-bit token hashes, carried as base64."""

    def __init__(self, encoded: str = "") -> None:
        self._bits = bytearray(base64.b64decode(encoded)) if encoded else None

    @property
    def empty(self) -> bool:
        """Nothing was ever added (no bytes are carried)."""
        return self._bits is None

    def encoded_size(self) -> int:
        """What :meth:`encoded` takes, in bytes."""
        return 0 if self._bits is None else (len(self._bits) + 2) // 3 * 4

    def add(self, hashes: Iterable[int]) -> None:
        if self._bits is None:
            self._bits = bytearray(BLOOM_BYTES)
        bits, size = self._bits, BLOOM_BYTES * 8
        for h in hashes:
            a, b = h & 0xFFFFFFFF, (h >> 32) | 1
            for i in range(BLOOM_HASHES):
                p = (a + i * b) % size
                bits[p >> 3] |= 1 << (p & 7)

    def __contains__(self, h: int) -> bool:
        bits = self._bits
        if bits is None:
            return False
        size = len(bits) * 8
        a, b = h & 0xFFFFFFFF, (h >> 32) | 1
        for i in range(BLOOM_HASHES):
            p = (a + i * b) % size
            if not bits[p >> 3] & (1 << (p & 7)):
                return False
        return True

    def encoded(self) -> str:
        return "" if self._bits is None else base64.b64encode(bytes(self._bits)).decode()
