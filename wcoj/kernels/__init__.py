"""The compiled kernels, split by concept: ``memory`` (raw access, the decorators),
``search``, ``store`` (tries changed in place), ``program`` (the join program), ``count``
(its count mode), ``tick`` (the change-by-change tick's helpers; ``wcoj.tickgen`` writes
the rest), ``zsets`` (Z-set rows), ``runs`` (a trace's runs read by address: compared,
sought, gathered per box of times, packed) and ``lattice`` (the nested-time join,
distinct and next-busy of child circuits, over those runs). Each has a pure-Python twin
in the tests, which run again under ``NUMBA_DISABLE_JIT=1``.

Keeping a cold start short (``./dev bench first_use``; Numba's compile events,
"numba:compile" in ``numba.core.event``, time each function):

* decorate with ``memory.kernel`` (allocates) or ``memory.row_kernel`` (per row, no
  allocation), not ``numba.njit``: they compile one version per argument types, where
  Numba's own dispatcher compiles another for every constant a caller passes;
* give a kernel the arrays it only reads through ``memory.read_only`` (a view, no copy):
  Numba types a read-only array (a frozen Z-set's) apart from a writable one and compiles
  a version for each;
* copy rows and slices with loops: ``out[:m] = a[:m]`` or ``out[m] = row`` compiles
  Numba's shape-mismatch message, seconds of string formatting per kernel;
* leave inlining to LLVM (a row kernel called from another is linked in and inlined
  there); ``inline="always"`` retypes the callee at every call site and is kept only for
  a few one-line helpers on the hottest paths;
* a helper only kernels call is a ``row_kernel``: it gets no wrapper for calls from
  Python, which for helpers of many array arguments cost as much to compile as the
  helper (tests call one through a shim made on first use);
* keep call chains short: a kernel links in everything it calls and LLVM optimises that
  code again at every level, so each level between the generated tick's terms and its
  ``run`` cost seconds on a cold start.

Keeping a hot loop fast: a ``memory.kernel`` allocates, so Numba counts references in it,
and in a long loop it does so per iteration, two atomic operations for each array passed
to a helper or assigned in the loop (Numba's pruning of those pairs gives up on long
paths). The loop over keys of ``lattice.lattice_join`` spent half its time there. Put such
a loop in a ``row_kernel`` that allocates nothing and returns to its caller when it needs
room (``lattice._join_keys``, ``lattice._distinct_rows``); find the cost with ``perf
record`` (the hot addresses are Numba's ``NRT_incref``/``NRT_decref``, a ``lock incq``/``lock
decq`` each).
"""
