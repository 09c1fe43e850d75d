"""The session-scoped SparkSession fixture of the Spark tests, and where the real graphs are.

Import the fixture into a test module (``from spark_session import spark``); pyspark and
psutil are imported only inside it, so collecting this file needs neither. One session
(serial GC, C1 only) serves every Spark test module (``get_session`` returns the running
one); the fixture that started it stops it at the end and checks that no JVM of ours
is left.
"""

from pathlib import Path

import pytest

__all__ = ["spark", "GRAPHS"]

GRAPHS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "graphs"


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    psutil = pytest.importorskip("psutil")
    from queries.spark.session import JavaNotFoundError, find_java, get_session, stop_session

    try:
        find_java()
    except JavaNotFoundError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"no Java for Spark: {exc}")

    from pyspark import SparkContext

    owned = SparkContext._active_spark_context is None  # else another fixture owns it
    session = get_session(app_name="wcoj-tests", test_jvm=True)
    jvm_pid = session.sparkContext._gateway.proc.pid
    yield session
    if not owned or SparkContext._gateway is None:  # the owner stops it (or already did)
        return
    stop_session(session)
    if psutil.pid_exists(jvm_pid) and psutil.Process(jvm_pid).status() != psutil.STATUS_ZOMBIE:
        psutil.Process(jvm_pid).kill()
        pytest.fail(f"JVM {jvm_pid} left after stop_session")
