"""Free lists of a rank: state slots, KV blocks and snapshot slots (pure Python, no torch).

Every `take` checks capacity before it changes anything, so a `CapacityError` leaves the lists as they were.
"""

from __future__ import annotations

import heapq

from mcache.core.errors import CapacityError
from mcache.core.sizing.layout import blocks_per_seq


class FreeList:
    """Ids `0 .. size` minus `reserved`; `take` hands out the lowest free ids, `give` returns them.

    A set answers "is it free?" and a heap gives the lowest free id (ids taken out of order by
    `take_id` are dropped from the heap lazily), so every operation is O(log n) per id.
    """

    def __init__(self, size: int, what: str, reserved: range | tuple[int, ...] = ()):
        self.size, self.what, self.reserved = size, what, tuple(reserved)
        self._reserved = frozenset(self.reserved)
        self._free = set(range(size)) - self._reserved
        self._heap = sorted(self._free)

    @property
    def free(self) -> list[int]:
        """Free ids, lowest first."""
        return sorted(self._free)

    @property
    def capacity(self) -> int:
        """Ids that can ever be handed out (reserved ones excluded)."""
        return self.size - len(self.reserved)

    def check(self, n: int, detail: str = "") -> None:
        """Raise `CapacityError` unless `n` ids are free."""
        if n > len(self._free):
            raise CapacityError(f"out of {self.what}: {n} needed, {len(self._free)} of {self.capacity} free{detail}")

    def take(self, n: int = 1, detail: str = "") -> list[int]:
        """The `n` lowest free ids, removed from the list."""
        self.check(n, detail)
        taken: list[int] = []
        while len(taken) < n:
            i = heapq.heappop(self._heap)
            if i in self._free:  # else: taken earlier by take_id
                self._free.discard(i)
                taken.append(i)
        return taken

    def take_id(self, i: int) -> None:
        """Remove the free id `i`; `ValueError` if it is reserved, out of range or in use."""
        if i in self._reserved or not 0 <= i < self.size:
            raise ValueError(f"{self.what} {i} is reserved or out of range (0..{self.size - 1})")
        if i not in self._free:
            raise ValueError(f"{self.what} {i} is in use")
        self._free.discard(i)

    def give(self, ids: list[int]) -> None:
        """Return ids to the list; returning a free or reserved id is a bug and raises `ValueError`."""
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.what}: an id is returned twice in {ids}")
        for i in ids:
            if i in self._reserved or i in self._free or not 0 <= i < self.size:
                raise ValueError(f"{self.what} {i} returned twice, reserved or out of range")
        for i in ids:
            self._free.add(i)
            heapq.heappush(self._heap, i)


class BlockGroup:
    """The KV blocks of every per-token pool with one `window`: one block table per request.

    A windowed group keeps at most `ceil(window / block)` blocks per request, used as a ring.
    """

    def __init__(self, window: int | None, num_blocks: int, block: int):
        self.window, self.block = window, block
        self.blocks = FreeList(num_blocks, f"KV blocks (window {window})" if window else "KV blocks")

    def needed(self, tokens: int) -> int:
        """Blocks a sequence of `tokens` tokens holds."""
        return blocks_per_seq(tokens, self.window, self.block)
