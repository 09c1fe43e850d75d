"""The PrefixExtender protocol: what Generic Join needs from an atom's storage.

An extender stores the rows of one atom in the order its variables are bound. The joins
call it over whole frontiers: ``prefix`` is ``int64[n, d]``, the values of the atom's first
``d`` columns for ``n`` frontier rows, and the methods answer for all rows at once.

``tries()`` says how the joins read it: a list of tries (``wcoj.tables`` objects whose
sum is the extender's rows) lets the join program's kernels read it directly, every atom
of a level in one loop; ``None`` makes the joins use the batched methods, with numpy
between levels (any storage can be an extender that way).

``wcoj`` never imports ``indexes``; ``indexes.trie.TrieView`` implements this protocol.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["PrefixExtender", "IncrementalSource"]

I64 = npt.NDArray[np.int64]


@runtime_checkable
class PrefixExtender(Protocol):
    """One atom's rows, in binding order, answering batched prefix questions."""

    @property
    def arity(self) -> int:
        """Number of columns."""
        ...

    def count(self, prefix: I64) -> I64:
        """Per row of ``prefix`` (``int64[n, d]``), an upper bound on the candidates for column ``d``."""
        ...

    def propose(self, prefix: I64) -> tuple[I64, I64]:
        """All candidates for column ``d``: ``(row, value)`` pairs, by row then value, unique."""
        ...

    def intersect(self, prefix: I64, candidates: I64) -> npt.NDArray[np.bool_]:
        """Mask: is ``candidates[i]`` a value of column ``d`` under ``prefix[i]``?"""
        ...

    def weight(self, rows: I64) -> I64:
        """Weights of complete rows (``int64[n, arity]``), 0 where absent."""
        ...

    def tries(self) -> list | None:
        """The rows as a sum of tries the kernels read (``wcoj.tables``), or ``None``."""
        ...


@runtime_checkable
class IncrementalSource(Protocol):
    """A relation that serves the three views of a tick in any column order.

    ``view(kind, columns)`` returns a ``PrefixExtender`` over the relation's columns taken
    in the order ``columns`` (a permutation), where ``kind`` is ``"prev"`` (z^-1 of the
    integral: the state before this tick), ``"delta"`` (this tick's change) or ``"curr"``
    (``prev + delta``). In the delta rule, atom *i*'s term sees ``curr`` for atoms before
    it and ``prev`` for atoms after it.
    """

    @property
    def arity(self) -> int:
        ...

    def view(self, kind: str, columns: tuple[int, ...]) -> PrefixExtender:
        ...

    def delta_is_empty(self) -> bool:
        ...
