"""Log-structured state cached on the executors: a base RDD, a driver log, background compaction.

Holds :class:`CachedState`: one state object per RDD partition, persisted (memory, then
disk) and locally checkpointed so its lineage stays short; the changes since the last
compaction kept on the driver as a small log, one ``{key: [chunks]}`` per tick; jobs that
read the base with the log and a tick's payload broadcast (:meth:`CachedState.run`, on
the partitions the tick reaches only); and compaction every ``compact_every`` ticks in a
background thread, adopted by the next tick (never while a job of the tick thread reads
the old base). Relies on pyspark. Used by :class:`queries.spark.cells.CellStore` (the
routed HyperCube cells) and :class:`queries.spark.edgeset.FactStore` (set semantics of
the edges or datoms).

Resident state. Reading a cached partition ships its bytes from the JVM to a Python
worker on every tick (about 0.6 s a tick for the cells of a 1M-edge graph on two cores).
So the tasks that build a base also write each partition's state to a snapshot file, and
a tick's tasks (over a tiny RDD of partition numbers) find the state already unpickled
in their Python worker, which Spark reuses from task to task, or load the snapshot once.
The persisted RDD stays the source of compactions. Snapshots need a directory every
executor can read: the session's temporary directory in local mode; on a cluster a
shared path (``WCOJ_SPARK_SNAPSHOTS``), else ticks read the cached RDD.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from wcoj.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD, SparkContext

__all__ = ["CachedState", "log_by_key", "task_slots", "shuffle_to_parts", "SNAPSHOTS_ENV"]

SNAPSHOTS_ENV = "WCOJ_SPARK_SNAPSHOTS"
# In each Python worker: (store uid, partition) -> (version, state). Workers are reused
# from task to task, so a tick finds the state its predecessors loaded.
_RESIDENT: dict[tuple[str, int], tuple[int, Any]] = {}
_RESIDENT_MAX = 32  # entries kept per worker, least recently used dropped first


def _snapshot_path(root: str, uid: str, version: int, part: int) -> str:
    return os.path.join(root, f"{uid}-v{version}", f"part-{part:05d}.pkl")


def _resident(root: str, uid: str, version: int, part: int) -> Any:
    """The state of ``part`` at ``version`` in this worker (loaded from its snapshot once)."""
    got = _RESIDENT.pop((uid, part), None)
    if got is None or got[0] != version:
        got = None  # the old version goes before the new one is read
        with open(_snapshot_path(root, uid, version, part), "rb") as fh:
            got = (version, pickle.load(fh))
    _RESIDENT[(uid, part)] = got  # now the most recently used
    while len(_RESIDENT) > _RESIDENT_MAX:
        del _RESIDENT[next(iter(_RESIDENT))]
    return got[1]


def _snapshot_root(sc: SparkContext) -> str | None:
    if os.environ.get(SNAPSHOTS_ENV):
        return os.environ[SNAPSHOTS_ENV]
    if not sc.master.startswith("local"):
        return None
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    tmp = getattr(spark, "_wcoj_tmpdir", None) if spark is not None else None
    return str(tmp) if tmp is not None else tempfile.gettempdir()


def task_slots(sc: SparkContext) -> int:
    """Tasks that run at once: N of ``local[N]`` (cores for ``local[*]``), else the
    default parallelism. A tick's job needs no more partitions than this: every Spark
    task costs tens of milliseconds whatever it does."""
    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", sc.master)
    if m is None:
        return max(1, sc.defaultParallelism)
    n = m.group(1)
    return 1 if n is None else (os.cpu_count() or 1) if n == "*" else int(n)


def _parts_udf(columns: list[str], split: Callable):
    """mapInArrow body: Arrow batches -> ``(part, blob)`` rows, one per part ``split`` gives."""

    def run(batches):
        import numpy as np
        import pyarrow as pa

        for batch in batches:
            if not batch.num_rows:
                continue
            keys = np.column_stack([batch.column(c).to_numpy().astype(np.int64)
                                    for c in columns])
            weights = (batch.column("weight").to_numpy().astype(np.int64)
                       if "weight" in batch.schema.names else None)
            per_part = split(keys, weights)
            if per_part:
                parts = list(per_part)
                yield pa.RecordBatch.from_pydict({
                    "part": pa.array(parts, pa.int32()),
                    "blob": pa.array([pickle.dumps(per_part[p], protocol=5) for p in parts],
                                     pa.binary())})

    return run


def shuffle_to_parts(frames: Sequence[tuple[Any, list[str], Callable]], n_parts: int,
                     build: Callable[[list], Any]) -> RDD:
    """Integer DataFrames -> an RDD of ``n_parts`` partitions, each one ``build(objects)``.

    ``frames`` holds ``(DataFrame, key columns, split)``: ``split(keys, weights or None)``
    gives ``{part: object}`` for each Arrow batch, in numpy on the executors; the objects
    are shuffled once (part ``p`` to partition ``p``) and each partition builds its state
    from the list of objects it received.
    """
    routed = None
    for df, columns, split in frames:
        blobs = df.mapInArrow(_parts_udf(columns, split), "part INT, blob BINARY")
        routed = blobs if routed is None else routed.unionByName(blobs)
    pairs = routed.rdd.map(lambda r: (int(r[0]), bytes(r[1])))
    return pairs.partitionBy(n_parts, lambda p: p).mapPartitions(
        lambda it: [build([pickle.loads(b) for _, b in it])], True)


def log_by_key(log: Sequence[dict], keys: set | None = None) -> dict:
    """The log's chunks per key, oldest first (only ``keys`` when given)."""
    out: dict = {}
    for tick in log:
        for k, chunks in tick.items():
            if keys is None or k in keys:
                out.setdefault(k, []).extend(chunks)
    return out


def _persist(rdd: RDD, root: str | None, uid: str, version: int) -> RDD:
    """Persist and checkpoint ``rdd``; in the same job write each partition's snapshot."""
    from pyspark import StorageLevel

    rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK)
    rdd.localCheckpoint()  # cut the lineage: the log's broadcasts can go

    def write(part, it):
        for state in it:
            if root is not None:
                path = _snapshot_path(root, uid, version, part)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path + ".tmp", "wb") as fh:
                    pickle.dump(state, fh, protocol=5)
                os.replace(path + ".tmp", path)
            yield 1

    rdd.mapPartitionsWithIndex(write).collect()
    return rdd


class CachedState:
    """A persisted RDD of per-partition state plus a driver-side log of recent changes.

    Parameters
    ----------
    sc : SparkContext
    base : RDD
        One state object per partition (not yet persisted).
    n_parts : int
        Its partitions; key ``k`` of the log lives in partition ``k % n_parts``.
    merge : callable
        ``merge(part, state, chunks_by_key) -> state``: fold log chunks into a partition's
        state (runs on the executors during compaction).
    compact_every : int
        Start a compaction after this many ticks in the log.
    """

    def __init__(self, sc: SparkContext, base: RDD, n_parts: int,
                 merge: Callable[[int, Any, dict], Any], compact_every: int = 8):
        if compact_every < 1:
            raise InputError(f"compact_every must be at least 1, got {compact_every}")
        self.sc = sc
        self.n_parts = n_parts
        self.merge = merge
        self.compact_every = compact_every
        self.uid = uuid.uuid4().hex[:12]
        self.root = _snapshot_root(sc)
        self.version = 0
        self.base = _persist(base, self.root, self.uid, self.version)
        self.log: list[dict] = []
        self.n_compactions = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._done: tuple | None = None
        self._error: BaseException | None = None
        # The compaction broadcast of the current base: its RDD object (checkpointed, so its
        # ancestors are not) is serialized with every task that reads it, so the broadcast
        # may go only when the base is replaced.
        self._base_bc: Any = None

    def run(self, keys: Sequence, payload: Any,
            fn: Callable[[int, Any, dict, Any], list]) -> list:
        """Run ``fn(part, state, log_chunks_by_key, payload)`` on the partitions of ``keys``.

        The log (of those keys only) and ``payload`` travel in one broadcast. Returns the
        concatenated lists that ``fn`` returned.
        """
        self.adopt()
        keys = set(keys)
        if not keys:
            return []
        parts = sorted({k % self.n_parts for k in keys})
        bc = self.sc.broadcast((log_by_key(self.log, keys), payload))
        try:
            if self.root is None:  # no shared snapshots: read the cached partitions
                def task(part, it):
                    logs, data = bc.value
                    for state in it:
                        yield from fn(part, state, logs, data)

                rdd = self.base.mapPartitionsWithIndex(task, True)
                return self.sc.runJob(rdd, lambda it: list(it), parts)
            root, uid, version = self.root, self.uid, self.version

            def resident_task(it):
                logs, data = bc.value
                for part in it:
                    yield from fn(part, _resident(root, uid, version, part), logs, data)

            return self.sc.parallelize(parts, len(parts)).mapPartitions(resident_task).collect()
        finally:
            bc.destroy()

    def append(self, tick: dict) -> None:
        """Record one tick's ``{key: [chunks]}``; start a compaction when the log is full."""
        self.log.append(tick)
        if len(self.log) >= self.compact_every and self._thread is None:
            self._start()

    def _start(self) -> None:
        folded = len(self.log)
        logs = log_by_key(self.log[:folded])
        base, merge, n = self.base, self.merge, self.n_parts
        root, uid, version = self.root, self.uid, self.version + 1

        def work() -> None:
            try:
                bc = self.sc.broadcast(logs)

                def task(part, it):
                    mine = {k: c for k, c in bc.value.items() if k % n == part}
                    for state in it:
                        yield merge(part, state, mine)

                new = _persist(base.mapPartitionsWithIndex(task, True), root, uid, version)
                with self._lock:
                    self._done = (new, folded, bc)
            except BaseException as exc:  # noqa: BLE001 - re-raised by the tick thread
                with self._lock:
                    self._error = exc

        self._thread = threading.Thread(target=work, name="wcoj-compaction", daemon=True)
        self._thread.start()

    def adopt(self, wait: bool = False) -> None:
        """Swap in a finished compaction. Called by the tick thread only, so no job of
        it is reading the old base when that is unpersisted."""
        if self._thread is None:
            return
        if wait:
            self._thread.join()
        with self._lock:
            done, error = self._done, self._error
        if error is not None:
            self._thread, self._error = None, None
            raise error
        if done is None:
            return
        new, folded, bc = done
        old, self.base, self.log = self.base, new, self.log[folded:]
        old_bc, self._base_bc = self._base_bc, bc
        self._thread, self._done = None, None
        self.n_compactions += 1
        self.version += 1
        old.unpersist()
        if self.root is not None:
            shutil.rmtree(os.path.join(self.root, f"{self.uid}-v{self.version - 1}"),
                          ignore_errors=True)
        if old_bc is not None:
            old_bc.destroy()

    def compact(self) -> None:
        """Fold the whole log into the base now, and wait for it."""
        self.adopt(wait=True)
        if self.log:
            self._start()
            self.adopt(wait=True)

    def close(self) -> None:
        """Wait for a running compaction; release every cached base."""
        if self._thread is not None:
            self._thread.join()
            with self._lock:
                done = self._done
            if done is not None:
                done[0].unpersist()
                done[2].destroy()
            self._thread, self._done, self._error = None, None, None
        self.base.unpersist()
        if self.root is not None:
            for v in range(self.version + 2):  # and a finished, unadopted compaction's
                shutil.rmtree(os.path.join(self.root, f"{self.uid}-v{v}"), ignore_errors=True)
        if self._base_bc is not None:
            self._base_bc.destroy()
            self._base_bc = None
        self.log = []
