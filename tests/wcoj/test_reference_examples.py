"""The operator examples of ../shared/reference/ as literal tests.

Sources: ``dbsp-notes-rhizomedb.txt`` (RhizomeDB "Notes on DBSP", §2.9) and
``dataflow-runtime-spec.md`` (Dialog dataflow runtime, §2.9); the examples are the same in
both where both have them. The engine holds int64 values only, so atoms and strings are
interned by hand: ``:a -> 1``, ``:b -> 2``, ``:c -> 3``, ``"foo" -> 100``, ``"bar" -> 101``,
``"baz" -> 102``. The examples write ``{element, timestamp, weight}``; timestamps that
only label the batch are dropped (our Z-sets are untimed; traces carry the times).
"""

import reference  # noqa: F401  (project root first on sys.path)

from wcoj.indexed import IndexedZSet
from wcoj.operators import (
    Aggregate,
    Consolidate,
    Inspect,
    distinct_incremental,
    distinct_trace,
    join_stream,
    join_trace,
)
from wcoj.trace import Trace
from wcoj.zset import ZSet

A, B, C = 1, 2, 3
FOO, BAR, BAZ = 100, 101, 102


def z(d: dict) -> ZSet:
    out = ZSet.from_dict({(k if isinstance(k, tuple) else (k,)): w for k, w in d.items()})
    out.check()
    return out


def flat(zs: ZSet) -> dict:
    zs.check()
    return {(k[0] if len(k) == 1 else k): w for k, w in zs.to_dict().items()}


def test_aggregate_count():
    # {{1, "foo"}, 0, 1}, {{1, "bar"}, 0, 1}, {{2, "baz"}, 0, 1} => {{1, 2}, nil, 1}, {{2, 1}, nil, 1}
    iz = IndexedZSet.from_pairs([[1], [1], [2]], [[FOO], [BAR], [BAZ]])
    out, _ = Aggregate("count", incremental=False).eval([iz], None, None)
    assert flat(out) == {(1, 2): 1, (2, 1): 1}


def test_consolidate():
    # Trace rows {key, value, time, weight}, all at time 0.
    entries = [(0, 0, 1), (0, 0, -1), (0, 1, 1), (0, 1, 1), (1, 2, 2), (1, 3, 1), (1, 3, -1),
               (1, 4, -1), (2, 2, 1), (2, 4, 1)]
    tr = Trace(arity=2, n_key=1)
    for k, v, w in entries:  # one insert per entry: equal (row, time) entries add up
        tr = tr.insert(IndexedZSet.from_pairs([[k]], [[v]], [w]), 0)
    out, _ = Consolidate().eval([tr], None, None)
    assert flat(out) == {(0, 1): 2, (1, 2): 2, (1, 4): -1, (2, 2): 1, (2, 4): 1}


def test_distinct():
    # {3, 0, 0} has weight 0: absent from a consolidated Z-set.
    assert flat(z({0: 1, 1: 2, 2: -1, 3: 0}).distinct()) == {0: 1, 1: 1}


def test_filter():
    out = z({0: 1, 1: 2, 2: -3}).filter(lambda k: k[:, 0] >= 1)
    assert flat(out) == {1: 2, 2: -3}


def test_index_with():
    # key_function = fn {src, dst, cost} -> src
    data = z({(0, 1, 1): 1, (1, 2, 1): 1, (1, 3, 2): -1})
    out = data.index_with([0])
    assert out.n_key == 1
    assert flat(out.zset) == {(0, 0, 1, 1): 1, (1, 1, 2, 1): 1, (1, 1, 3, 2): -1}


def test_inspect_returns_its_input_and_calls_back():
    seen = []
    data = z({0: 1, 1: 1})
    out, _ = Inspect(seen.append).eval([data], None, None)
    assert out is data and seen == [data]


def test_negate():
    assert flat(-z({0: 1, 1: -1, 2: -2})) == {0: -1, 1: 1, 2: 2}


def test_minus_and_plus():
    a = z({0: 1, 1: 1, 2: 2, 3: 1})
    b = z({0: 1, 1: -1, 2: 1})
    assert flat(a - b) == {1: 2, 2: 1, 3: 1}
    assert flat(a + b) == {0: 2, 2: 3, 3: 1}


def test_join_stream():
    a = IndexedZSet.from_pairs([[A], [B], [C]], [[1], [2], [2]], [1, 2, 1])
    b = IndexedZSet.from_pairs([[A], [B], [B]], [[1], [3], [4]], [1, 1, -1])
    assert flat(join_stream(a, b)) == {(A, 1, 1): 1, (B, 2, 3): 2, (B, 2, 4): -2}


def test_join_trace():
    # zset {{:a, 0}, 1} and {{:a, 0}, -1} cancel; the trace holds {key, value, time, weight}.
    batch = IndexedZSet.from_pairs([[A], [A], [A], [B], [C]], [[0], [0], [1], [2], [2]], [1, -1, 1, 2, 1])
    tr = Trace(arity=2, n_key=1).insert(
        IndexedZSet.from_pairs([[A], [B], [B], [B], [C]], [[1], [-3], [3], [4], [4]], [1, -1, 1, -1, 1]), 0)
    assert flat(join_trace(batch, tr)) == {
        (A, 1, 1): 1, (B, 2, -3): -2, (B, 2, 3): 2, (B, 2, 4): -2, (C, 2, 4): 1}


def test_distinct_incremental():
    # The trace rows are {element, time, weight}; the operator sums each element over all
    # times. The notes describe the rule as "elements whose weight has the opposite sign
    # as the sum of matching weights in the trace"; the examples follow the precise rule
    # H(old + w) - H(old), which is what we test.
    batch = z({0: 2, 2: 1, 3: -1})
    t1 = Trace.from_batches([(0, z({0: 1}))])
    t2 = Trace.from_batches([(1, z({2: 1, 3: 1}))])
    t3 = Trace.from_batches([(2, z({0: -1}))])
    assert flat(distinct_incremental(batch, t1)) == {2: 1}
    assert flat(distinct_incremental(batch, t2)) == {0: 1, 3: -1}
    assert flat(distinct_incremental(batch, t3)) == {0: 1, 2: 1}


def test_distinct_trace_over_four_nested_times():
    """distinct_trace at (0,0), (0,1), (1,0), (1,1), the trace growing by each batch.

    The notes' prose says an element absent from the trace "is returned with weight 1";
    taken literally that would output 3 at (0,0) and 4 at (1,1), whose batch weights are
    -1. Their own outputs omit them, as the rule does (H(-1) - H(0) = 0), and their d0/d1
    conditions carry typos ("w1 <= ∧", "w4"). We test the corrected rule
    d = [H(w1+w2+w3+w) - H(w1+w3)] - [H(w1+w2) - H(w1)], and all four published outputs
    agree with it. At (1,1), element 5: w1 = 0, w2 = 1 (from (0,1)), w3 = 1 (from (1,0)),
    w = 0, so d1 = H(2) - H(1) = 0 and d0 = H(1) - H(0) = 1: output -1, as published
    (5 entered at (0,1) and at (1,0), and the corner sum must not count it twice).
    """
    b00 = z({0: 1, 2: 1, 3: -1})
    b01 = z({5: 1})
    b10 = z({5: 1})
    b11 = z({0: 1, 1: 1, 2: -1, 3: 1, 4: -1})
    t00 = Trace(arity=1, n_dims=2)
    t01 = t00.insert(b00, (0, 0))
    t10 = t01.insert(b01, (0, 1))
    t11 = t10.insert(b10, (1, 0))
    assert flat(distinct_trace(b00, t00, (0, 0))) == {0: 1, 2: 1}
    assert flat(distinct_trace(b01, t01, (0, 1))) == {5: 1}
    assert flat(distinct_trace(b10, t10, (1, 0))) == {5: 1}
    assert flat(distinct_trace(b11, t11, (1, 1))) == {1: 1, 2: -1, 5: -1}


def test_distinct_trace_after_epoch_compaction_is_unchanged():
    # The child circuit advances its traces to (e, 0) after epoch e; the (1, 1) answer
    # must not notice that epoch 0 was collapsed.
    b00, b01, b10 = z({0: 1, 2: 1, 3: -1}), z({5: 1}), z({5: 1})
    b11 = z({0: 1, 1: 1, 2: -1, 3: 1, 4: -1})
    tr = Trace(arity=1, n_dims=2).insert(b00, (0, 0)).insert(b01, (0, 1)).advance((0, 0))
    tr = tr.insert(b10, (1, 0))
    assert flat(distinct_trace(b11, tr, (1, 1))) == {1: 1, 2: -1, 5: -1}
