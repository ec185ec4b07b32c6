"""One way to get a SparkSession: embedded by default, unchanged on a cluster.

``get_spark()`` starts an embedded ``local[*]`` session; ``get_spark("spark://host:7077")``
(or any master URL) talks to a cluster; under ``spark-submit`` (or whenever a session is
already active) the existing session is reused and no master is forced on it.

Before starting a JVM it checks what a new user gets wrong most often and says how to fix
it: pyspark not installed (the ``rmqarrow[spark]`` extra), Java missing or too old
(``JAVA_HOME``, Java 17).  Spark's own log noise is kept off stdout/stderr by default: a
quiet log4j2 configuration (level ERROR, or ``RMQARROW_SPARK_LOG_LEVEL``) and no console
progress bars.  The JVM's console goes to a per-run log file, removed at exit unless a
failure kept it (:func:`spark_error`).

Nothing listens on the network unless asked: a session rmqarrow starts has no web UI
(``spark.ui.enabled=false``; the UI shows every statement, keys included), and a local
session binds its driver to the loopback interface (``spark.driver.host`` and
``spark.driver.bindAddress`` 127.0.0.1, ``SPARK_LOCAL_IP`` for the JVM, which binds the UI
there too when it is on).  ``ui=True`` (or :func:`configure`'s ``ui``, or the environment
variable ``RMQARROW_SPARK_UI=1``) turns the UI on; settings given in ``conf`` win over
these defaults.  A cluster master keeps Spark's network defaults (executors must reach
the driver), without the UI unless asked.

The executors' Python comes from Spark's own settings (``spark.pyspark.python`` in
``conf``, else ``PYSPARK_PYTHON``); only a local master defaults it to the interpreter
running this code (a cluster's workers may not have that path).  On a non-local master
rmqarrow itself is shipped to the executors (:mod:`rmqarrow.converters.spark.ship`), and
``py_files`` are added with ``addPyFile``.  :func:`configure` sets process-wide defaults
for ``conf``/``py_files``/``ship`` (the CLI's ``--conf``, ``--py-files``, ``--no-ship``).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow.converters.spark.ship import SHIP_CONF, package_zip, ship_enabled

from rmqarrow._optional import require
from rmqarrow.errors import EngineError, EngineUnavailableError, StoreNotFoundError, UsageError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "MIN_JAVA",
    "UI_ENV",
    "check_java",
    "check_master",
    "check_pyspark",
    "configure",
    "get_spark",
    "is_local_master",
    "jvm_log_path",
    "keep_jvm_log",
    "spark_error",
    "ui_wanted",
]

DEFAULT_MASTER = "local[*]"
MIN_JAVA = 17
_LOG_LEVEL_ENV = "RMQARROW_SPARK_LOG_LEVEL"
#: set to 1 (or true/yes/on) to start Spark's web UI (off by default)
UI_ENV = "RMQARROW_SPARK_UI"
LOOPBACK = "127.0.0.1"
_JAVA_HELP = (
    "install Java 17 (or 21) and set JAVA_HOME to it, e.g. "
    "`export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64`"
)


def check_pyspark() -> None:
    """Raise :class:`EngineUnavailableError` naming the extra when pyspark is missing."""
    require("pyspark", "the Spark engine")


def _java_executable(env: dict[str, str]) -> str:
    java_home = env.get("JAVA_HOME")
    if java_home:
        exe = Path(java_home) / "bin" / "java"
        if not exe.is_file():
            raise EngineUnavailableError(
                f"JAVA_HOME is {java_home!r} but {exe} does not exist; "
                f"Spark needs Java {MIN_JAVA}+: {_JAVA_HELP}"
            )
        return str(exe)
    found = shutil.which("java", path=env.get("PATH"))
    if found is None:
        raise EngineUnavailableError(
            f"Java not found: JAVA_HOME is not set and no `java` is on PATH; "
            f"Spark needs Java {MIN_JAVA}+: {_JAVA_HELP}"
        )
    return found


def _parse_java_major(text: str) -> int | None:
    """The major version from ``java -version`` output (``1.8.0_x`` -> 8, ``17.0.2`` -> 17)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if m is None:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2) is not None:
        major = int(m.group(2))
    return major


def check_java(env: dict[str, str] | None = None) -> int:
    """The major version of the Java Spark will use; raise with the fix if it cannot run.

    Looks at ``JAVA_HOME`` first (as spark-submit does), then ``java`` on ``PATH``.
    """
    env = dict(os.environ) if env is None else env
    exe = _java_executable(env)
    try:
        proc = subprocess.run(
            [exe, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineUnavailableError(
            f"cannot run {exe} -version ({exc}); Spark needs Java {MIN_JAVA}+: {_JAVA_HELP}"
        ) from None
    major = _parse_java_major(proc.stderr + proc.stdout)
    if proc.returncode != 0 or major is None:
        raise EngineUnavailableError(
            f"{exe} -version failed (exit {proc.returncode}): {proc.stderr.strip()[:200]!r}; "
            f"Spark needs Java {MIN_JAVA}+: {_JAVA_HELP}"
        )
    if major < MIN_JAVA:
        raise EngineUnavailableError(
            f"{exe} is Java {major}, expected Java {MIN_JAVA} or newer for Spark 4; {_JAVA_HELP}"
        )
    return major


def _quiet_log4j2(level: str) -> str:
    """Write (once) a log4j2 config sending only ``level`` and above to stderr."""
    path = Path(tempfile.gettempdir()) / f"rmqarrow-spark-log4j2-{level.lower()}.properties"
    text = (
        "# written by rmqarrow: keep Spark's log noise out of the output\n"
        f"rootLogger.level = {level}\n"
        "rootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\n"
        "appender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex\n"
        # the shell logger: without it pyspark announces "Setting default log level"
        "logger.repl.name = org.apache.spark.repl.Main\n"
        f"logger.repl.level = {level}\n"
    )
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return str(path)


def _running_under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands the Python driver its gateway port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


_log_state: dict[str, bool] = {"keep": False, "registered": False}


def jvm_log_path() -> Path:
    """Where the embedded JVM's stdout/stderr go: one file per run (driver process).

    The file is removed when the process exits, unless :func:`keep_jvm_log` was called
    (every Spark failure translated by :func:`spark_error` keeps it and names it).
    """
    return Path(tempfile.gettempdir()) / f"rmqarrow-spark-{os.getpid()}.log"


def keep_jvm_log() -> Path | None:
    """Keep this run's JVM log after exit (for a failure report); its path, if it exists."""
    _log_state["keep"] = True
    path = jvm_log_path()
    return path if path.is_file() else None


def _remove_log_at_exit() -> None:
    if not _log_state["keep"]:
        jvm_log_path().unlink(missing_ok=True)


def _register_log_cleanup() -> None:
    if not _log_state["registered"]:
        atexit.register(_remove_log_at_exit)
        _log_state["registered"] = True


def _quiet_query_context_logs() -> None:
    """pyspark logs each analysis error's query context (a JSON line holding the Java stack,
    about 10 KB) on stderr before the exception reaches the caller; with the JVM's console
    in :func:`jvm_log_path`, the error itself (translated by :func:`spark_error`) is the
    one line a user sees."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # a pyspark without its structured logger logs no contexts
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.addHandler(logging.NullHandler())


_MASTER_RE = re.compile(
    r"^(local(\[(\d+|\*)(,\s*\d+)?\])?|local-cluster\[.+\]|yarn|"
    r"(spark|k8s|mesos)://.+)$"
)


def check_master(master: str | None) -> None:
    """Refuse a master URL Spark cannot parse, before a JVM is started for it."""
    if master is not None and not _MASTER_RE.match(master):
        raise UsageError(
            f"master={master!r}: not a Spark master URL; expected local[*], local[N], "
            "spark://HOST:PORT, yarn or k8s://..."
        )


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "...", "JVM stacktrace", "Traceback")):
            return line[:400]
    return ""


def _log_error_line(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        if re.search(r"( ERROR |Error:|Exception|error:|refused|denied)", line):
            return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else ""


def spark_error(exc: BaseException) -> Exception:
    """An :class:`~rmqarrow.errors.EngineError` for a pyspark/py4j exception: Spark's own
    first line, and the path of the JVM log (kept for the report)."""
    log = keep_jvm_log()
    where = f"; Spark's log: {log}" if log is not None else ""
    name = type(exc).__name__
    text = _first_line(str(exc))
    if "JAVA_GATEWAY_EXITED" in str(exc) or "gateway process exited" in str(exc):
        cause = _log_error_line(log)
        return EngineError(
            f"Spark's JVM exited while starting ({text})" + (f": {cause}" if cause else "") + where
        )
    if name in ("Py4JNetworkError", "ConnectionRefusedError"):
        return EngineError(f"lost the connection to Spark's JVM ({text}){where}")
    if name == "Py4JJavaError":
        # the Java exception's own message, not py4j's "An error occurred while..."; the
        # JVM may be gone, then py4j's line stays
        with contextlib.suppress(Exception):
            text = _first_line(str(exc.java_exception)) or text  # type: ignore[attr-defined]
        cause = _log_error_line(log)
        if cause and cause not in text:
            text = f"{text}; the log says: {cause}"
    return EngineError(f"Spark {name}: {text or 'no message'}{where}")


_DEFAULTS: dict[str, Any] = {"conf": {}, "py_files": [], "ship": None, "ui": None}
_SHIPPED: dict[int, set[str]] = {}
PYTHON_CONF = "spark.pyspark.python"


def configure(
    conf: dict[str, str] | None = None,
    py_files: list[str] | None = None,
    ship: bool | None = None,
    ui: bool | None = None,
) -> None:
    """Defaults every later :func:`get_spark` of this process applies (the CLI's options).

    ``conf`` is added under an explicit ``conf=``; ``py_files`` are added to every
    session :func:`get_spark` returns; ``ship=False`` turns off shipping rmqarrow;
    ``ui=True`` starts Spark's web UI (off by default).
    """
    files: list[str] = []
    for raw in py_files or []:
        for item in (x for x in str(raw).split(",") if x):
            path = Path(item).absolute()
            if not path.exists():
                raise StoreNotFoundError(
                    f"py_files={item}: no such file (expected a .py, .zip or .egg file)"
                )
            files.append(str(path))
    _DEFAULTS["conf"] = dict(conf or {})
    _DEFAULTS["py_files"] = files
    _DEFAULTS["ship"] = ship
    _DEFAULTS["ui"] = ui


def ui_wanted(ui: bool | None = None) -> bool:
    """Whether a new session starts its web UI: ``ui``, else :func:`configure`'s, else
    ``$RMQARROW_SPARK_UI`` (1/true/yes/on), else no."""
    for choice in (ui, _DEFAULTS["ui"]):
        if choice is not None:
            return bool(choice)
    return os.environ.get(UI_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _network_defaults(settings: dict[str, str], master: str | None, ui: bool) -> None:
    """No UI unless asked; a local driver on loopback only.  ``settings`` (the user's
    ``conf`` included) win: only what they leave unset is filled in."""
    settings.setdefault("spark.ui.enabled", "true" if ui else "false")
    if is_local_master(master):
        settings.setdefault("spark.driver.host", LOOPBACK)
        settings.setdefault("spark.driver.bindAddress", LOOPBACK)
        # the JVM binds its UI (when on) and block manager to SPARK_LOCAL_IP
        os.environ.setdefault("SPARK_LOCAL_IP", settings["spark.driver.bindAddress"])


def _spark_at_least(major: int, minor: int) -> bool:
    import pyspark

    m = re.match(r"(\d+)\.(\d+)", pyspark.__version__)
    return m is not None and (int(m.group(1)), int(m.group(2))) >= (major, minor)


def is_local_master(master: str | None) -> bool:
    """True for in-process masters (``local``, ``local[N]``, ``local[*]``); None is local."""
    return master is None or master == "local" or master.startswith("local[")


def _add_py_files(spark: SparkSession, settings: dict[str, str], ship: bool | None) -> None:
    """addPyFile the rmqarrow zip (non-local masters) and the configured py files, once."""
    sc = spark.sparkContext
    done = _SHIPPED.setdefault(id(sc), set())
    wanted: list[str] = []
    if not is_local_master(sc.master) and ship_enabled(
        settings.get(SHIP_CONF) or sc.getConf().get(SHIP_CONF), ship
    ):
        wanted.append(str(package_zip()))
    wanted += list(_DEFAULTS["py_files"])
    for path in wanted:
        if path not in done:
            sc.addPyFile(path)
            done.add(path)


def get_spark(
    master: str | None = None,
    app_name: str = "rmqarrow",
    *,
    conf: dict[str, Any] | None = None,
    log_level: str | None = None,
    ship: bool | None = None,
    ui: bool | None = None,
) -> SparkSession:
    """A SparkSession: the active one, the spark-submit one, or a new one on ``master``.

    ``master=None`` reuses an active session (spark-submit, notebooks, tests) and otherwise
    starts ``local[*]``; an explicit master URL builds a session on that master (an active
    session on another master is an error: one JVM holds one SparkContext).  ``conf`` adds
    Spark settings to a new session.  ``log_level`` (default ERROR, or
    ``$RMQARROW_SPARK_LOG_LEVEL``) applies to the JVM's log4j and the SparkContext.  A JVM
    this function launches writes its console (JVM warnings, log4j) to :func:`jvm_log_path`,
    never to the caller's stdout/stderr; errors still reach Python as exceptions.
    ``ui`` starts Spark's web UI (see :func:`ui_wanted`); a new local session otherwise
    listens on loopback only and has no UI.
    """
    check_pyspark()
    check_master(master)
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    level = (log_level or os.environ.get(_LOG_LEVEL_ENV) or "ERROR").upper()
    ship = _DEFAULTS["ship"] if ship is None else ship
    settings: dict[str, str] = {
        "spark.app.name": app_name,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
    }
    if _spark_at_least(4, 1):  # filters reach the rocketmq_index data source
        settings["spark.sql.python.filterPushdown.enabled"] = "true"
    settings.update({k: str(v) for k, v in _DEFAULTS["conf"].items()})
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    master = master or settings.pop("spark.master", None)
    active = SparkSession.getActiveSession()
    if active is not None:
        if master is None or active.sparkContext.master == master:
            _add_py_files(active, settings, ship)
            return active
        raise EngineUnavailableError(
            f"a SparkSession on {active.sparkContext.master!r} is already running in this "
            f"process; cannot start another on {master!r} (stop it first)"
        )
    _network_defaults(settings, master, ui_wanted(ui))
    # Python on the executors: Spark's own settings; the driver's interpreter only locally.
    python = settings.get(PYTHON_CONF) or os.environ.get("PYSPARK_PYTHON")
    if python is None and is_local_master(master):
        python = sys.executable
    if python is not None:
        os.environ["PYSPARK_PYTHON"] = python  # pyspark reads the env var for its workers
        settings[PYTHON_CONF] = python
    # the driver-side Python workers (data source planning) run on this machine
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if _running_under_spark_submit() or SparkContext._active_spark_context is not None:
        builder = SparkSession.builder
        if master is not None:
            builder = builder.master(master)
        for key, value in settings.items():
            if key != "spark.app.name":
                builder = builder.config(key, value)
        spark = builder.getOrCreate()
    else:
        check_java()
        settings.setdefault("spark.master", master or DEFAULT_MASTER)
        log4j = f"-Dlog4j2.configurationFile=file:{_quiet_log4j2(level)}"
        extra = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = f"{extra} {log4j}" if extra else log4j
        spark_conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
        _register_log_cleanup()
        try:
            with open(jvm_log_path(), "wb") as log:
                gateway = launch_gateway(  # type: ignore[no-untyped-call]
                    spark_conf, popen_kwargs={"stdout": log, "stderr": log}
                )
            SparkContext(conf=spark_conf, gateway=gateway)
        except Exception as exc:  # a JVM that exits, a master that refuses: say why
            raise spark_error(exc) from exc
        spark = SparkSession.builder.getOrCreate()
        _quiet_query_context_logs()
    spark.sparkContext.setLogLevel(level)
    _add_py_files(spark, settings, ship)
    return spark
