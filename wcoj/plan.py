"""A conjunctive query's atoms and its join plan: one level per variable.

An ``Atom`` pairs an extender with the terms of its columns. ``_plan`` lays a query out
in a variable order: per level the atoms holding its variable, their column depths, and
the filters first decidable there (``<`` between variables narrows the later variable's
candidate ranges, ``!=`` skips candidates in the kernels; any other predicate runs in
Python between levels, so its level is not ``in_kernel``). ``choose_order`` picks an
order greedily.

Relies on ``wcoj.extenders`` (the protocol) and ``wcoj.errors``. Used by
``wcoj.generic_join`` and the front ends that build atoms.

>>> choose_order([("a", "b"), ("b", "c")])
['b', 'a', 'c']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from wcoj.errors import ArityMismatchError, QueryError, UnboundVariableError
from wcoj.extenders import PrefixExtender

__all__ = ["Atom", "choose_order"]

I64 = npt.NDArray[np.int64]


def _is_var(t: object) -> bool:
    return isinstance(t, str)


@dataclass(frozen=True)
class Atom:
    """One atom of a conjunctive query: an extender and the terms of its columns.

    ``terms`` follow the extender's column order; a term is a variable name (``str``) or
    a constant (``int``). Constants come first, then variables in the order they are bound.
    """

    extender: PrefixExtender
    terms: tuple

    def __post_init__(self) -> None:
        if len(self.terms) != self.extender.arity:
            raise ArityMismatchError(f"atom {self}", self.extender.arity, len(self.terms))
        vs = [t for t in self.terms if _is_var(t)]
        if len(set(vs)) != len(vs):
            raise QueryError(f"variable repeated inside one atom {self}; join with an equality instead")
        n_const = len(self.terms) - len(vs)
        if any(_is_var(t) for t in self.terms[:n_const]):
            raise QueryError(f"atom {self}: constants must come before variables in its column order")

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(t for t in self.terms if _is_var(t))

    @property
    def constants(self) -> tuple[int, ...]:
        return tuple(int(t) for t in self.terms if not _is_var(t))

    def __repr__(self) -> str:
        return f"Atom({', '.join(map(str, self.terms))})"


@dataclass
class _Level:
    var: str
    atoms: list[int]                       # atoms containing var
    filters: list = field(default_factory=list)      # (columns, fn) first decidable here
    bounds: list = field(default_factory=list)       # (column, upper): var > col / var < col
    depth: list[int] = field(default_factory=list)   # per participating atom: its column index
    last: list[bool] = field(default_factory=list)   # per participating atom: last column?
    unequal: list = field(default_factory=list)      # columns var must differ from (!= filters)
    in_kernel: bool = True                           # every filter here is a bound or an !=


class _Plan(list):
    """The levels of a join, and the slot skeletons of ``_TrieRun`` cached per part layout
    (a cached plan is reused every tick; its skeleton changes only when runs do)."""

    def __init__(self, levels=()):
        super().__init__(levels)
        self.skeletons: dict = {}
        self.fusable = False  # set by IncrementalGenericJoin: its terms may run in ``run_terms``


def _plan(atoms: Sequence[Atom], order: Sequence[str], filters: Sequence = ()) -> _Plan:
    pos = {v: i for i, v in enumerate(order)}
    if len(pos) != len(order):
        raise QueryError(f"variable order {list(order)} repeats a variable")
    for a in atoms:
        missing = [v for v in a.variables if v not in pos]
        if missing:
            raise UnboundVariableError(a, missing, "not in the variable order")
        levels = [pos[v] for v in a.variables]
        if levels != sorted(levels):
            raise QueryError(f"{a}: its columns must follow the variable order {list(order)}")
    plan = _Plan()
    for v in order:
        inv = [i for i, a in enumerate(atoms) if v in a.variables]
        if not inv:
            raise UnboundVariableError(list(order), [v], "no atom binds it")
        lv = _Level(v, inv)
        for i in inv:
            a = atoms[i]
            col = a.terms.index(v)
            lv.depth.append(col)
            lv.last.append(col == len(a.terms) - 1)
        plan.append(lv)
    for f in filters:
        vars_, fn = (f[1:], np.less) if f[0] == "<" else f
        missing = [v for v in vars_ if v not in pos]
        if missing:
            raise UnboundVariableError(f"filter on {list(vars_)}", missing, "no atom binds it")
        cols = [pos[v] for v in vars_]
        lv = plan[max(cols)]
        if f[0] == "<" and cols[0] != cols[1]:
            # x < y narrows the candidate ranges of the later variable (a trie is sorted)
            x, y = cols
            lv.bounds.append((x, False) if y > x else (y, True))
        elif fn is np.not_equal and len(cols) == 2 and cols[0] != cols[1]:
            lv.unequal.append(min(cols))  # the whole-join kernel skips such candidates
        else:
            lv.in_kernel = False
        lv.filters.append((cols, fn, f[0] == "<" and cols[0] != cols[1]))
    return plan


def _apply_filters(lv: _Level, bound: I64, skip_bounds: bool = False) -> npt.NDArray[np.bool_] | None:
    """Mask of the rows that pass every filter first decidable at this level (None: all).

    With ``skip_bounds``, the ``<`` filters that narrowed this level's ranges are skipped.
    """
    keep = None
    for cols, fn, is_bound in lv.filters:
        if skip_bounds and is_bound:
            continue
        m = np.asarray(fn(*(bound[:, c] for c in cols)), dtype=bool)
        keep = m if keep is None else keep & m
    return keep


def choose_order(atoms: Sequence[Sequence[str]], start: Sequence[str] = (),
                 sizes: Sequence[float] | None = None) -> list[str]:
    """A variable order: ``start`` first, then greedily the variable most connected to the bound ones.

    Ties go to the variable in the most atoms, then to the smaller estimated atom size
    (``sizes``), then to the name. ``atoms`` are the variable lists of the atoms.

    >>> choose_order([("a", "b"), ("a", "c"), ("b", "c")], start=("b", "c"))
    ['b', 'c', 'a']
    """
    order = list(start)
    allv = sorted({v for a in atoms for v in a})
    sizes = sizes or [1.0] * len(atoms)
    while len(order) < len(allv):
        bound = set(order)

        def score(v: str) -> tuple:
            touching = [i for i, a in enumerate(atoms) if v in a]
            linked = sum(1 for i in touching if bound & set(atoms[i]))
            smallest = min(sizes[i] for i in touching)
            return (-linked, -len(touching), smallest, v)

        order.append(min((v for v in allv if v not in bound), key=score))
    return order
