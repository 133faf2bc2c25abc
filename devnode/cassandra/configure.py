"""The node's configuration: cassandra.yaml, logback.xml and the JVM command line."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from devnode.common import HOST, DevNodeError

STORAGE_PORT = 7000
JMX_PORT = 7199
MAIN_CLASS = "org.apache.cassandra.service.CassandraDaemon"

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


def check_heap(heap: str, variable: str = "GATEWAY_CASSANDRA_HEAP") -> str:
    if not re.fullmatch(r"\d+[kKmMgG]?", heap):
        raise DevNodeError(f"Invalid Cassandra heap size {heap!r} ({variable}); use e.g. 1G or 512M.")
    return heap


@dataclass(frozen=True)
class Placement:
    """The address a node listens on and the cluster it belongs to.

    The default is the lone development node on 127.0.0.1. Members of a local ring each
    listen on their own loopback address with the standard storage and CQL ports (on Linux
    every 127.x.y.z is a distinct local address), so only the JMX port, which Cassandra
    binds on 127.0.0.1 whatever the listen address, differs per node. ``compact`` selects
    the small-machine sizing of a ring member: serial GC, smaller caches and thread pools.
    ``datacenter``: the node's datacenter and rack through ``GossipingPropertyFileSnitch``
    (``conf/cassandra-rackdc.properties``); None, ``SimpleSnitch``'s one ``datacenter1``.

    ``durable``: a write is acknowledged only once the node's commit log is on disk
    (``commitlog_sync: batch``), as on a ring whose nodes are killed on purpose. With
    ``periodic`` a node killed with SIGKILL replays its commit log only up to the last sync
    marker (written every 100 ms), and what it loses matters for counters: a counter update's
    leader keeps the only authoritative copy of its own shard, so after the restart it leads
    the next update from the older shard at a clock the other replicas already hold, and one
    acknowledged increment is gone (a mail counter one short until ``gateway mail-recount``).
    The lone development node keeps ``periodic``: nothing kills it, and the suite's writes
    would wait on the disk.
    """

    host: str = HOST
    jmx_port: int = JMX_PORT
    seeds: str = HOST
    cluster_name: str = "gateway-local"
    replication_factor: int = 1
    hinted_handoff: bool = False
    ring_delay_ms: int = 1000
    compact: bool = False
    datacenter: str | None = None
    durable: bool = False
    rack: str = "rack1"


class NodeConfig:
    """Where the node's files live under ``home`` and what it is started with."""

    def __init__(
        self, home: Path, lib: Path, cql_port: int, heap: str, placement: Placement | None = None
    ) -> None:
        self.home = home
        self.lib = lib
        self.cql_port = cql_port
        self.heap = heap
        self.placement = placement or Placement()
        self.conf = home / "conf"
        self.data = home / "data"
        self.logs = home / "logs"

    @property
    def config_arg(self) -> str:
        """The JVM argument that names this home's cassandra.yaml; it identifies our node's process."""
        return f"-Dcassandra.config=file://{self.conf / 'cassandra.yaml'}"

    def write(self) -> None:
        for directory in (self.conf, self.logs, *self._data_dirs().values()):
            directory.mkdir(parents=True, exist_ok=True)
        (self.conf / "cassandra.yaml").write_text(self._cassandra_yaml())
        (self.conf / "logback.xml").write_text(_LOGBACK_XML)
        if self.placement.datacenter is not None:
            (self.conf / "cassandra-rackdc.properties").write_text(
                f"dc={self.placement.datacenter}\nrack={self.placement.rack}\nprefer_local=true\n"
            )

    def current(self) -> bool:
        """Whether the node's cassandra.yaml is the one :meth:`write` would write now."""
        path = self.conf / "cassandra.yaml"
        return path.exists() and path.read_text() == self._cassandra_yaml()

    def _data_dirs(self) -> dict[str, Path]:
        names = ("data", "commitlog", "saved_caches", "hints", "cdc_raw")
        return {name: self.data / name for name in names}

    def _cassandra_yaml(self) -> str:
        """A node on loopback, no auth, sized for a developer machine with a couple of cores.

        Server-side request timeouts stay below the driver's default of 5 s, so clients see
        Cassandra's own timeout errors (which say what timed out) rather than a client timeout.
        """
        dirs = {name: json.dumps(str(path)) for name, path in self._data_dirs().items()}
        where = self.placement
        threads = 4 if where.compact else 8
        caches = (
            "file_cache_size: 32MiB\nnetworking_cache_size: 16MiB\nkey_cache_size: 8MiB\n"
            "native_transport_max_threads: 32\n"
            if where.compact
            else ""
        )
        commitlog = (
            "commitlog_sync: batch\n"
            if where.durable
            else "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n"
        )
        return f"""\
cluster_name: "{where.cluster_name}"
num_tokens: 16
allocate_tokens_for_local_replication_factor: {where.replication_factor}
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
data_file_directories: [{dirs["data"]}]
commitlog_directory: {dirs["commitlog"]}
saved_caches_directory: {dirs["saved_caches"]}
hints_directory: {dirs["hints"]}
cdc_raw_directory: {dirs["cdc_raw"]}
{commitlog}commitlog_total_space: 1024MiB
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{where.seeds}:{STORAGE_PORT}"
listen_address: {where.host}
rpc_address: {where.host}
storage_port: {STORAGE_PORT}
native_transport_port: {self.cql_port}
start_native_transport: true
endpoint_snitch: {"SimpleSnitch" if where.datacenter is None else "GossipingPropertyFileSnitch"}
hinted_handoff_enabled: {"true" if where.hinted_handoff else "false"}
auto_snapshot: false
snapshot_on_duplicate_row_detection: false
concurrent_reads: {threads}
concurrent_writes: {threads}
concurrent_counter_writes: {threads}
concurrent_compactors: 1
{caches}compaction_throughput: 64MiB/s
read_request_timeout: 4000ms
range_request_timeout: 4000ms
write_request_timeout: 3000ms
counter_write_request_timeout: 3000ms
cas_contention_timeout: 2000ms
truncate_request_timeout: 60000ms
"""

    def jvm_args(self, java: str) -> list[str]:
        heap = check_heap(self.heap)
        jamm = sorted(self.lib.glob("jamm-*.jar"))
        if not jamm:
            raise DevNodeError(
                f"{self.lib} has no jamm-*.jar; delete {self.lib.parent} to fetch Cassandra again."
            )
        where = self.placement
        # A ring member has a small heap and shares a couple of cores with two others: the
        # serial collector and the client compiler cost the least CPU and memory there.
        gc = (
            ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
            if where.compact
            else (
                "-XX:+UseG1GC",
                "-XX:+ParallelRefProcEnabled",
                "-XX:MaxTenuringThreshold=1",
                "-XX:G1HeapRegionSize=16m",
            )
        )
        return [
            java,
            f"-Xms{heap}",
            f"-Xmx{heap}",
            "-Xss256k",
            *gc,
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.net.preferIPv4Stack=true",
            "-Djdk.attach.allowAttachSelf=true",
            *(arg for module in _ADD_EXPORTS for arg in ("--add-exports", f"{module}=ALL-UNNAMED")),
            *(arg for module in _ADD_OPENS for arg in ("--add-opens", f"{module}=ALL-UNNAMED")),
            "-Dio.netty.tryReflectionSetAccessible=true",
            "-Dio.netty.allocator.useCacheForAllThreads=true",
            "-Dio.netty.allocator.maxOrder=11",
            f"-javaagent:{jamm[-1]}",
            self.config_arg,
            *(
                [f"-Dcassandra-rackdc.properties=file://{self.conf / 'cassandra-rackdc.properties'}"]
                if where.datacenter is not None
                else []
            ),
            f"-Dcassandra.logdir={self.logs}",
            f"-Dlogback.configurationFile=file://{self.conf / 'logback.xml'}",
            f"-Dcassandra.storagedir={self.data}",
            f"-Dcassandra.jmx.local.port={where.jmx_port}",
            "-Dcassandra-foreground=yes",
            "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            # Nodes on one host's loopback hear each other's gossip at once; the default
            # delay (30 s, spent on every first start and again by each joining node) buys nothing.
            f"-Dcassandra.ring_delay_ms={where.ring_delay_ms}",
            "-cp",
            f"{self.lib}/*",
            MAIN_CLASS,
        ]
