"""Fetch, configure, start and stop the local Apache Cassandra node used for development and tests.

One real single-node Cassandra lives in a per-user cache (``Settings.cassandra_home``)::

    <version>/lib/   the jars: the tarball's lib/, or cassandra-all and its runtime dependencies
    conf/            cassandra.yaml and logback.xml, rewritten on every start
    data/            data, commitlog, hints, saved_caches, cdc_raw
    logs/            system.log (Cassandra's log) and stdout.log (the JVM's own output)
    cassandra.pid    pid of the running node
    .lock            flock held around every check-and-start and stop

The node is started once and reused by later runs and test sessions; it keeps running after
the Python process that started it exits.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from gateway.settings import Settings

CASSANDRA_VERSION = "5.0.9"

_HOST = "127.0.0.1"
_STORAGE_PORT = 7000
_JMX_PORT = 7199
_MAIN_CLASS = "org.apache.cassandra.service.CassandraDaemon"
_CENTRAL = "https://repo.maven.apache.org/maven2"
_POM_TEMPLATE = Path(__file__).with_name("cassandra-node.pom.xml")
_LOG_TAIL_LINES = 30
_MVN_TIMEOUT = 1800.0
_REPORT_EVERY = 10.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Runs "$@" in the background with output to $1 and prints its pid.
_DETACH = 'log="$1"; shift; "$@" </dev/null >"$log" 2>&1 & echo $!'

# From Cassandra's conf/jvm17-server.options.
_ADD_EXPORTS = (
    "java.base/jdk.internal.misc",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
    "java.base/java.lang.ref",
    "jdk.unsupported/sun.misc",
    "jdk.compiler/com.sun.tools.javac.file",
    "jdk.attach/sun.tools.attach",
)
_ADD_OPENS = (
    "java.base/java.lang.module",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar",
    "jdk.management/com.sun.management.internal",
    "java.base/sun.nio.ch",
    "java.base/java.io",
    "java.base/java.lang.reflect",
    "jdk.compiler/com.sun.tools.javac",
    "java.base/java.lang",
    "java.base/java.util",
)

_LOGBACK_XML = """\
<configuration scan="false">
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>${cassandra.logdir}/system.log</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.FixedWindowRollingPolicy">
      <fileNamePattern>${cassandra.logdir}/system.log.%i.zip</fileNamePattern>
      <minIndex>1</minIndex>
      <maxIndex>3</maxIndex>
    </rollingPolicy>
    <triggeringPolicy class="ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy">
      <maxFileSize>20MB</maxFileSize>
    </triggeringPolicy>
    <encoder>
      <pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="SYSTEMLOG"/>
  </root>
</configuration>
"""


class LocalNodeError(Exception):
    """An expected failure; the message is for a human and may end with lines of Cassandra's log."""


@dataclass(frozen=True)
class NodeStatus:
    running: bool
    pid: int | None
    cql_ready: bool
    home: Path
    version: str


def _print_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _port_open(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((_HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def _pid_alive(pid: int) -> bool:
    """True for a live process; a zombie counts as dead (nobody may have reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return False
    except OSError:
        pass
    else:
        return stat.rpartition(")")[2].split()[:1] != ["Z"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cmdline(pid: int) -> list[str] | None:
    """The process's argv, or None where /proc is unavailable."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")


def _tail(path: Path, offset: int = 0, lines: int = _LOG_TAIL_LINES) -> str:
    """The last lines of path written at or after offset ('' if none)."""
    try:
        size = path.stat().st_size
        start = offset if offset <= size else 0
        start = max(start, size - 256 * 1024)
        with path.open("rb") as fh:
            fh.seek(start)
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _output_tail(output: str, lines: int = _LOG_TAIL_LINES) -> str:
    return "\n".join(_ANSI.sub("", output).strip().splitlines()[-lines:])


def _first_error(output: str) -> str:
    """Maven's first [ERROR] line, which names the cause; the rest is generic advice."""
    lines = [line.strip() for line in _ANSI.sub("", output).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("[ERROR]")]
    return (errors or lines or ["(no output)"])[0]


def _java_major(java: str) -> int | None:
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    return major


class LocalNode:
    """The local Cassandra node kept in ``settings.cassandra_home``.

    The node runs ``CassandraDaemon`` directly with the JVM options Cassandra's
    ``conf/jvm17-server.options`` would give, whether its jars came from the binary tarball or
    were assembled from ``cassandra-all`` with Maven. The tarball's ``bin/cassandra`` refuses to
    run as root unless given ``-R``; starting the daemon class directly has no such check, so
    the node starts the same way as root (e.g. in containers and CI) as for a normal user.
    """

    def __init__(self, settings: Settings, progress: Callable[[str], None] = _print_progress) -> None:
        self._settings = settings
        self._progress = progress
        self.home = settings.cassandra_home.expanduser().resolve()
        self._install = self.home / CASSANDRA_VERSION
        self._lib = self._install / "lib"
        self._conf = self.home / "conf"
        self._data = self.home / "data"
        self._logs = self.home / "logs"
        self._system_log = self._logs / "system.log"
        self._stdout_log = self._logs / "stdout.log"
        self._pid_file = self.home / "cassandra.pid"
        self._lock_file = self.home / ".lock"

    @property
    def port(self) -> int:
        return self._settings.cassandra_port

    # Public API

    def start(self, timeout: float = 180.0) -> None:
        """Start the node (downloading it on first use) or reuse the running one.

        Returns once the CQL port accepts connections. ``timeout`` bounds the wait for the
        CQL port, not the one-off download.
        """
        try:
            with self._locked():
                pid = self._live_pid(clean=True)
                if pid is not None:
                    if _port_open(self.port):
                        self._progress(
                            f"Cassandra {CASSANDRA_VERSION} already running (pid {pid}, "
                            f"CQL on {_HOST}:{self.port})"
                        )
                        return
                    self._progress(f"Cassandra (pid {pid}) is still starting")
                    self._wait_for_cql(pid, timeout, log_offset=0)
                    return
                self._heap()
                self._check_ports_free()
                java = self._find_java()
                self._ensure_installed()
                self._configure()
                log_offset = self._system_log.stat().st_size if self._system_log.exists() else 0
                pid = self._launch(java)
                self._wait_for_cql(pid, timeout, log_offset)
        except OSError as exc:
            raise LocalNodeError(f"Local Cassandra node in {self.home}: {exc}") from exc

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the node: SIGTERM (Cassandra drains and flushes), then SIGKILL after ``timeout``."""
        try:
            with self._locked():
                pid = self._live_pid(clean=True)
                if pid is None:
                    self._progress(f"Cassandra is not running (home {self.home})")
                    return
                self._progress(f"stopping Cassandra (pid {pid})")
                started = time.monotonic()
                self._terminate(pid, timeout)
                self._pid_file.unlink(missing_ok=True)
                self._progress(f"Cassandra stopped after {time.monotonic() - started:.0f}s")
        except OSError as exc:
            raise LocalNodeError(f"Local Cassandra node in {self.home}: {exc}") from exc

    def status(self) -> NodeStatus:
        """A snapshot without side effects; ``cql_ready`` is true whoever listens on the port."""
        pid = self._live_pid(clean=False)
        return NodeStatus(
            running=pid is not None,
            pid=pid,
            cql_ready=_port_open(self.port),
            home=self.home,
            version=CASSANDRA_VERSION,
        )

    # Process bookkeeping

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise check-and-start across processes, so one JVM runs and one download happens."""
        self.home.mkdir(parents=True, exist_ok=True)
        with self._lock_file.open("a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._progress(f"waiting for another process using {self.home} (lock {self._lock_file})")
                fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _live_pid(self, *, clean: bool) -> int | None:
        """The pid in the pid file if it is this home's live Cassandra; a stale file is removed."""
        try:
            pid = int(self._pid_file.read_text().strip())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            pid = 0
        if pid > 0 and _pid_alive(pid) and self._is_our_node(pid):
            return pid
        if clean:
            self._pid_file.unlink(missing_ok=True)
        return None

    def _is_our_node(self, pid: int) -> bool:
        """Guards against a recycled pid: it must be CassandraDaemon running this home's config."""
        argv = _cmdline(pid)
        if argv is None:
            return True
        return _MAIN_CLASS in argv and self._config_arg() in argv

    def _config_arg(self) -> str:
        return f"-Dcassandra.config=file://{self._conf / 'cassandra.yaml'}"

    def _terminate(self, pid: int, timeout: float) -> None:
        """SIGTERM, then SIGKILL after timeout; returns once the process and its ports are gone."""
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        except PermissionError as exc:
            raise LocalNodeError(f"Not allowed to stop Cassandra (pid {pid}): {exc}") from exc
        if not self._wait_exit(pid, timeout):
            self._progress(f"Cassandra (pid {pid}) did not stop within {timeout:.0f}s; killing it")
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if not self._wait_exit(pid, 10.0):
                raise LocalNodeError(f"Cassandra (pid {pid}) survived SIGKILL")
        for port in (self.port, _STORAGE_PORT, _JMX_PORT):
            self._wait_port_closed(port, 10.0)

    @staticmethod
    def _wait_exit(pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while _pid_alive(pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    # Preconditions

    def _check_ports_free(self) -> None:
        ports = (
            (
                self.port,
                "CQL native transport",
                "stop it, or choose another port with CASSANDRA_PORT",
            ),
            (
                _STORAGE_PORT,
                "Cassandra storage (internode)",
                "another Cassandra node may be running; stop it",
            ),
            (_JMX_PORT, "Cassandra JMX", "another Cassandra node may be running; stop it"),
        )
        for port, role, advice in ports:
            if not self._wait_port_closed(port, 5.0):
                raise LocalNodeError(
                    f"Port {_HOST}:{port} ({role}) is already in use by a process other than the "
                    f"Cassandra node of {self.home}: {advice}."
                )

    @staticmethod
    def _wait_port_closed(port: int, timeout: float) -> bool:
        """Also covers a node that just exited: its sockets can outlive its pid by a moment."""
        deadline = time.monotonic() + timeout
        while _port_open(port, timeout=0.5):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    def _find_java(self) -> str:
        java_home = os.environ.get("JAVA_HOME")
        candidate = Path(java_home) / "bin" / "java" if java_home else None
        java = str(candidate) if candidate is not None and candidate.is_file() else shutil.which("java")
        if java is None:
            raise LocalNodeError(
                f"Java 17 is needed to run Cassandra {CASSANDRA_VERSION}, but no `java` was found "
                "on PATH (nor in JAVA_HOME). Install it, e.g. "
                "`apt-get install openjdk-17-jre-headless` "
                "(Debian/Ubuntu) or `brew install openjdk@17` (macOS)."
            )
        major = _java_major(java)
        if major is None:
            raise LocalNodeError(f"Could not tell the version of {java} (`{java} -version` failed).")
        if major < 17:
            raise LocalNodeError(
                f"{java} is Java {major}; Cassandra {CASSANDRA_VERSION} is run here with Java 17. "
                "Install it, e.g. `apt-get install openjdk-17-jre-headless`, and put it first on "
                "PATH or point JAVA_HOME at it."
            )
        if major > 17:
            self._progress(
                f"warning: {java} is Java {major}; Cassandra {CASSANDRA_VERSION} supports Java 11 "
                "and 17. Trying anyway; set JAVA_HOME to a Java 17 if it fails."
            )
        return java

    # Installation

    def _ensure_installed(self) -> None:
        """Populate <home>/<version>/lib once; renaming a temp dir into place makes it atomic."""
        if self._lib.is_dir():
            return
        if self._install.exists():
            shutil.rmtree(self._install)
        for stale in self.home.glob(".download-*"):
            shutil.rmtree(stale, ignore_errors=True)
        mvn = shutil.which("mvn")
        tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=self.home))
        started = time.monotonic()
        try:
            tarball = self._fetch_tarball(mvn, tmp)
            if tarball is not None:
                node_dir = self._unpack(tarball, tmp / "unpacked")
            elif mvn is None:
                raise LocalNodeError(
                    f"Maven (`mvn`) is needed to fetch Cassandra {CASSANDRA_VERSION}: its binary "
                    "tarball is not on Maven Central, so the node is assembled from cassandra-all "
                    "and its dependencies. Install it, e.g. `apt-get install maven` "
                    "(Debian/Ubuntu) or `brew install maven` (macOS)."
                )
            else:
                node_dir = self._assemble(mvn, tmp)
            if not any((node_dir / "lib").glob("jamm-*.jar")):
                raise LocalNodeError(f"The fetched Cassandra {CASSANDRA_VERSION} has no lib/jamm-*.jar.")
            os.rename(node_dir, self._install)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        jars = len(list(self._lib.glob("*.jar")))
        self._progress(
            f"Cassandra {CASSANDRA_VERSION} installed in {self._install} "
            f"({jars} jars, {time.monotonic() - started:.0f}s)"
        )

    def _fetch_tarball(self, mvn: str | None, tmp: Path) -> Path | None:
        """The binary tarball from Maven Central, or None when Central does not have it."""
        coordinates = f"org.apache.cassandra:apache-cassandra:{CASSANDRA_VERSION}:tar.gz:bin"
        out = tmp / "tarball"
        if mvn is not None:
            self._progress(f"downloading {coordinates} with Maven")
            done = self._mvn(
                mvn,
                ["dependency:copy", f"-Dartifact={coordinates}", f"-DoutputDirectory={out}"],
                tmp,
            )
            found = sorted(out.glob("*.tar.gz")) if done.returncode == 0 else []
            if not found and re.search(r"Could not find artifact|was not found in", done.stdout):
                self._progress(f"{coordinates} is not on Maven Central")
            elif not found:
                self._progress(f"Maven could not fetch {coordinates}: {_first_error(done.stdout)}")
            return found[0] if found else None
        name = f"apache-cassandra-{CASSANDRA_VERSION}-bin.tar.gz"
        url = f"{_CENTRAL}/org/apache/cassandra/apache-cassandra/{CASSANDRA_VERSION}/{name}"
        self._progress(f"downloading {url}")
        out.mkdir()
        try:
            with urllib.request.urlopen(url, timeout=60) as response, (out / name).open("wb") as fh:
                shutil.copyfileobj(response, fh, 1 << 20)
        except urllib.error.HTTPError as exc:
            self._progress(f"{url}: HTTP {exc.code}")
            return None
        except (urllib.error.URLError, TimeoutError) as exc:
            self._progress(f"{url}: {exc}")
            return None
        return out / name

    def _unpack(self, tarball: Path, dest: Path) -> Path:
        self._progress(f"unpacking {tarball.name}")
        with tarfile.open(tarball) as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(dest, filter="data")
            else:
                archive.extractall(dest)
        tops = [p for p in dest.iterdir() if (p / "lib").is_dir()]
        if len(tops) != 1:
            raise LocalNodeError(f"Unexpected layout in {tarball.name}: no single top directory with lib/.")
        return tops[0]

    def _assemble(self, mvn: str, tmp: Path) -> Path:
        self._progress(
            f"assembling Cassandra {CASSANDRA_VERSION} from org.apache.cassandra:cassandra-all and "
            "its runtime dependencies (Maven)"
        )
        pom = tmp / "pom.xml"
        pom.write_text(_POM_TEMPLATE.read_text().replace("@CASSANDRA_VERSION@", CASSANDRA_VERSION))
        node_dir = tmp / "node"
        done = self._mvn(
            mvn,
            [
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={node_dir / 'lib'}",
            ],
            tmp,
        )
        if done.returncode != 0 or not (node_dir / "lib").is_dir():
            raise LocalNodeError(
                f"Maven could not fetch org.apache.cassandra:cassandra-all:{CASSANDRA_VERSION} "
                f"and its dependencies (exit {done.returncode}). Check network access to "
                f"{_CENTRAL} and ~/.m2/settings.xml. Maven said:\n{_output_tail(done.stdout)}"
            )
        return node_dir

    @staticmethod
    def _mvn(mvn: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [mvn, "-B", "-q", "-Dstyle.color=never", *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=_MVN_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise LocalNodeError(
                f"Maven did not finish within {_MVN_TIMEOUT:.0f}s: mvn {' '.join(args)}"
            ) from exc

    # Configuration and launch

    def _configure(self) -> None:
        self._progress(f"configuring the node in {self.home}")
        for directory in (self._conf, self._logs, *self._data_dirs().values()):
            directory.mkdir(parents=True, exist_ok=True)
        (self._conf / "cassandra.yaml").write_text(self._cassandra_yaml())
        (self._conf / "logback.xml").write_text(_LOGBACK_XML)

    def _data_dirs(self) -> dict[str, Path]:
        names = ("data", "commitlog", "saved_caches", "hints", "cdc_raw")
        return {name: self._data / name for name in names}

    def _cassandra_yaml(self) -> str:
        """Single node on loopback, no auth, sized for a developer machine with a couple of cores.

        Server-side request timeouts stay below the driver's default of 5 s, so clients see
        Cassandra's own timeout errors (which say what timed out) rather than a client timeout.
        """
        dirs = {name: json.dumps(str(path)) for name, path in self._data_dirs().items()}
        return f"""\
cluster_name: "gateway-local"
num_tokens: 16
allocate_tokens_for_local_replication_factor: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
data_file_directories: [{dirs["data"]}]
commitlog_directory: {dirs["commitlog"]}
saved_caches_directory: {dirs["saved_caches"]}
hints_directory: {dirs["hints"]}
cdc_raw_directory: {dirs["cdc_raw"]}
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_total_space: 1024MiB
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{_HOST}:{_STORAGE_PORT}"
listen_address: {_HOST}
rpc_address: {_HOST}
storage_port: {_STORAGE_PORT}
native_transport_port: {self.port}
start_native_transport: true
endpoint_snitch: SimpleSnitch
hinted_handoff_enabled: false
auto_snapshot: false
snapshot_on_duplicate_row_detection: false
concurrent_reads: 8
concurrent_writes: 8
concurrent_counter_writes: 8
concurrent_compactors: 1
compaction_throughput: 64MiB/s
read_request_timeout: 4000ms
range_request_timeout: 4000ms
write_request_timeout: 3000ms
counter_write_request_timeout: 3000ms
cas_contention_timeout: 2000ms
truncate_request_timeout: 60000ms
"""

    def _heap(self) -> str:
        heap = self._settings.cassandra_heap
        if not re.fullmatch(r"\d+[kKmMgG]?", heap):
            raise LocalNodeError(
                f"Invalid Cassandra heap size {heap!r} (GATEWAY_CASSANDRA_HEAP); use e.g. 1G or 512M."
            )
        return heap

    def _jvm_args(self, java: str) -> list[str]:
        heap = self._heap()
        jamm = sorted(self._lib.glob("jamm-*.jar"))
        if not jamm:
            raise LocalNodeError(
                f"{self._lib} has no jamm-*.jar; delete {self._install} to fetch Cassandra again."
            )
        return [
            java,
            f"-Xms{heap}",
            f"-Xmx{heap}",
            "-Xss256k",
            "-XX:+UseG1GC",
            "-XX:+ParallelRefProcEnabled",
            "-XX:MaxTenuringThreshold=1",
            "-XX:G1HeapRegionSize=16m",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.net.preferIPv4Stack=true",
            "-Djdk.attach.allowAttachSelf=true",
            *(arg for module in _ADD_EXPORTS for arg in ("--add-exports", f"{module}=ALL-UNNAMED")),
            *(arg for module in _ADD_OPENS for arg in ("--add-opens", f"{module}=ALL-UNNAMED")),
            "-Dio.netty.tryReflectionSetAccessible=true",
            "-Dio.netty.allocator.useCacheForAllThreads=true",
            "-Dio.netty.allocator.maxOrder=11",
            f"-javaagent:{jamm[-1]}",
            self._config_arg(),
            f"-Dcassandra.logdir={self._logs}",
            f"-Dlogback.configurationFile=file://{self._conf / 'logback.xml'}",
            f"-Dcassandra.storagedir={self._data}",
            f"-Dcassandra.jmx.local.port={_JMX_PORT}",
            "-Dcassandra-foreground=yes",
            "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            # A lone loopback node has no ring to wait for; the default costs 30 s on first start.
            "-Dcassandra.ring_delay_ms=1000",
            "-cp",
            f"{self._lib}/*",
            _MAIN_CLASS,
        ]

    def _launch(self, java: str) -> int:
        """Start the JVM detached and return its pid.

        A throwaway ``sh`` starts it in the background and exits, so the JVM is not a child of
        this process: it outlives us, and stopping it from here leaves no zombie to reap.
        """
        args = self._jvm_args(java)
        self._progress(
            f"starting Cassandra {CASSANDRA_VERSION} (heap {self._settings.cassandra_heap}, "
            f"CQL on {_HOST}:{self.port}, log {self._system_log})"
        )
        done = subprocess.run(
            ["/bin/sh", "-c", _DETACH, "sh", str(self._stdout_log), *args],
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            start_new_session=True,
            check=False,
        )
        try:
            pid = int(done.stdout.strip())
        except ValueError as exc:
            detail = done.stderr.strip() or done.stdout.strip()
            raise LocalNodeError(f"Could not start the JVM: {detail}") from exc
        tmp_pid = self._pid_file.with_suffix(".pid.tmp")
        tmp_pid.write_text(f"{pid}\n")
        tmp_pid.replace(self._pid_file)
        return pid

    def _wait_for_cql(self, pid: int, timeout: float, log_offset: int) -> None:
        started = time.monotonic()
        next_report = _REPORT_EVERY
        while True:
            elapsed = time.monotonic() - started
            if _port_open(self.port):
                self._progress(f"Cassandra ready on {_HOST}:{self.port} (pid {pid}, {elapsed:.0f}s)")
                return
            if not _pid_alive(pid):
                self._pid_file.unlink(missing_ok=True)
                raise LocalNodeError(
                    f"Cassandra (pid {pid}) exited during start after {elapsed:.0f}s."
                    + self._logs_excerpt(log_offset)
                )
            if elapsed >= timeout:
                self._progress(f"CQL port not open after {timeout:.0f}s; stopping Cassandra (pid {pid})")
                excerpt = self._logs_excerpt(log_offset)
                self._terminate(pid, 30.0)
                self._pid_file.unlink(missing_ok=True)
                raise LocalNodeError(
                    f"Cassandra did not open its CQL port {_HOST}:{self.port} "
                    f"within {timeout:.0f}s "
                    f"and was stopped.{excerpt}"
                )
            if elapsed >= next_report:
                self._progress(f"waiting for the CQL port {self.port}... {elapsed:.0f}s")
                next_report += _REPORT_EVERY
            time.sleep(0.5)

    def _logs_excerpt(self, log_offset: int) -> str:
        parts = []
        system = _tail(self._system_log, log_offset)
        if system:
            parts.append(f"\n--- last lines of {self._system_log} ---\n{system}")
        stdout = _tail(self._stdout_log)
        if stdout:
            parts.append(f"\n--- last lines of {self._stdout_log} ---\n{stdout}")
        return "".join(parts) or f"\n(nothing in {self._system_log} or {self._stdout_log})"
