"""A local ring of Cassandra nodes on loopback, for replication and node-failure tests.

Node ``i`` (1-based) listens on ``127.0.0.<i+1>`` with the standard ports, so the ring never
touches the single node on 127.0.0.1; its JMX port is ``7200 + i``. Its files live under the
cache directory next to the single node's::

    ring/node<i>/   conf/, data/, logs/, cassandra.pid, .lock (as the single node's home)
    ring/.lock      flock held while the ring as a whole starts or stops

A ring over datacenters (``datacenters=("dc1", "dc1", "dc2")``: node ``i`` in the ``i``-th) is
another ring beside it, so both can exist: node ``i`` on ``127.0.0.<10+i>``, JMX ``7210 + i``,
files under ``ring-dc/node<i>``, cluster ``gateway-ring-dc``, each node's datacenter and rack
given to ``GossipingPropertyFileSnitch``.

Node 1 is the seed. Nodes start one after the other, each joining (bootstrapping into) the
ring before the next one starts, since Cassandra refuses two joining at once; the ring is
ready when every node sees every node as NORMAL. Like the single node, it is started once,
reused, and keeps running until stopped (as a whole or one node at a time).
"""

from __future__ import annotations

import re
import time

from devnode.cassandra.configure import Placement
from devnode.cassandra.install import Installer
from devnode.cassandra.run import CassandraNode, NodeStatus
from devnode.common import DevNodeError, Progress, locked, print_progress
from gateway.settings.tooling import ToolingSettings

CLUSTER_NAME = "gateway-ring"
MAX_NODES = 9
JMX_BASE_PORT = 7200
#: The ring over datacenters: its own addresses (127.0.0.11 and up), JMX ports, home and name.
DC_CLUSTER_NAME = "gateway-ring-dc"
DC_HOST_BASE = 10
DC_JMX_BASE_PORT = 7210
# Long enough for a joining node to hear the ring's tokens and schema from the seed under load.
RING_DELAY_MS = 3000


def ring_hosts(nodes: int, base: int = 1) -> list[str]:
    """The loopback addresses of a ring of ``nodes`` nodes (its contact points)."""
    return [f"127.0.0.{index + base}" for index in range(1, nodes + 1)]


def parse_datacenters(text: str) -> tuple[str, ...]:
    """``dc1:2,dc2:1`` -> ``("dc1", "dc1", "dc2")``: each node's datacenter, in start order."""
    layout: list[str] = []
    for part in text.split(","):
        name, _, count = part.strip().partition(":")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or not count.isdigit() or int(count) < 1:
            raise DevNodeError(
                f"--datacenters wants 'dc1:2,dc2:1' (a name and 1 node or more each), got {text!r}"
            )
        if name in layout:
            raise DevNodeError(f"--datacenters names {name!r} twice")
        layout += [name] * int(count)
    return tuple(layout)


class CassandraRing:
    """The first ``nodes`` members of the local ring kept under ``tooling.cassandra_home/ring``,
    each serving CQL on ``cql_port`` of its own address."""

    def __init__(
        self,
        tooling: ToolingSettings,
        cql_port: int,
        nodes: int = 3,
        progress: Progress = print_progress,
        *,
        datacenters: tuple[str, ...] | None = None,
    ) -> None:
        nodes = len(datacenters) if datacenters else nodes
        if not 2 <= nodes <= MAX_NODES:
            raise DevNodeError(f"A local ring has 2 to {MAX_NODES} nodes, not {nodes}.")
        self._tooling = tooling
        self._progress = progress
        self._root = tooling.cassandra_home.expanduser().resolve()
        self.datacenters = datacenters
        self.home = self._root / ("ring-dc" if datacenters else "ring")
        self.hosts = ring_hosts(nodes, DC_HOST_BASE if datacenters else 1)
        self.port = cql_port
        self.members = [self._member(index) for index in range(1, nodes + 1)]

    def hosts_in(self, datacenter: str) -> list[str]:
        """The addresses of the members in ``datacenter``."""
        return [
            host for host, dc in zip(self.hosts, self.datacenters or (), strict=False) if dc == datacenter
        ]

    def _member(self, index: int) -> CassandraNode:
        datacenter = self.datacenters[index - 1] if self.datacenters else None
        in_dc = self.datacenters.count(datacenter) if self.datacenters and datacenter else len(self.hosts)
        placement = Placement(
            host=self.hosts[index - 1],
            jmx_port=(DC_JMX_BASE_PORT if datacenter else JMX_BASE_PORT) + index,
            seeds=self.hosts[0],
            cluster_name=DC_CLUSTER_NAME if datacenter else CLUSTER_NAME,
            # Tokens are allocated for the replicas of the node's own datacenter.
            replication_factor=min(3, in_dc),
            hinted_handoff=True,
            ring_delay_ms=RING_DELAY_MS,
            compact=True,
            datacenter=datacenter,
            durable=True,
        )
        return CassandraNode(
            self._tooling,
            self.port,
            self._progress,
            home=self.home / f"node{index}",
            placement=placement,
            heap=("GATEWAY_CASSANDRA_RING_HEAP", self._tooling.cassandra_ring_heap),
            name=f"Cassandra ring node {index}" + (f" ({datacenter})" if datacenter else ""),
        )

    def node(self, index: int) -> CassandraNode:
        if not 1 <= index <= len(self.members):
            raise DevNodeError(f"The ring has nodes 1 to {len(self.members)}, not {index}.")
        return self.members[index - 1]

    def start(self, node_timeout: float = 300.0, settle_timeout: float = 120.0) -> None:
        """Start every member that is not running, in order, and wait until all are Up and Normal.

        ``node_timeout`` bounds each node's start (a first start includes its bootstrap).
        """
        started = time.monotonic()
        with locked(self.home, self.home / ".lock", self._progress):
            self._ensure_installed()
            for member in self.members:
                member.start(timeout=node_timeout, restart_outdated=True)
            self.wait_normal(settle_timeout)
        where = ", ".join(
            f"{host} ({dc})" if dc else host
            for host, dc in zip(self.hosts, self.datacenters or [None] * len(self.hosts), strict=True)
        )
        self._progress(
            f"Cassandra ring of {len(self.members)} nodes ready on {where} "
            f"({time.monotonic() - started:.0f}s)"
        )

    def start_node(self, index: int, timeout: float = 300.0) -> None:
        """Start one member (it rejoins the ring it joined before) and wait until the ring is whole
        again if every other member is running."""
        member = self.node(index)
        with locked(self.home, self.home / ".lock", self._progress):
            self._ensure_installed()
            member.start(timeout=timeout, restart_outdated=True)
            if all(other.status().running for other in self.members):
                self.wait_normal(120.0)

    def stop(self, index: int | None = None, timeout: float = 60.0) -> None:
        """Stop one member, or every member (the seed last)."""
        if index is not None:
            self.node(index).stop(timeout)
            return
        with locked(self.home, self.home / ".lock", self._progress):
            for member in reversed(self.members):
                member.stop(timeout)

    def kill(self, index: int) -> None:
        """Kill one member with SIGKILL (``CassandraNode.kill``); ``start_node`` brings it back."""
        self.node(index).kill()

    def status(self) -> list[NodeStatus]:
        return [member.status() for member in self.members]

    def _ensure_installed(self) -> None:
        """Under the single node's lock, so the two never fetch Cassandra at the same time."""
        with locked(self._root, self._root / ".lock", self._progress):
            Installer(self._root, self._progress).ensure_installed()

    def wait_normal(self, timeout: float) -> None:
        """Returns once each member, asked over CQL, lists every member as NORMAL in its gossip."""
        deadline = time.monotonic() + timeout
        missing: dict[str, list[str]] = {}
        while True:
            missing = self._not_normal()
            if not missing:
                return
            if time.monotonic() >= deadline:
                seen = "; ".join(f"{host} sees {', '.join(bad)}" for host, bad in missing.items())
                raise DevNodeError(f"The Cassandra ring did not settle within {timeout:.0f}s: {seen}.")
            time.sleep(1.0)

    def settle_schema(self, timeout: float = 60.0) -> None:
        """Returns once every member reports the same schema version. A member still apart
        after ``timeout`` is restarted once (a node that missed a table's creation while it
        was down can fail every schema merge after, until it reloads its schema from disk),
        then the wait starts again; DevNodeError if it is still apart."""
        for attempt in range(2):
            deadline = time.monotonic() + timeout
            while True:
                versions = self._schema_versions()
                counts: dict[str, int] = {}
                for version in versions.values():
                    counts[version] = counts.get(version, 0) + 1
                if len(counts) == 1:
                    return
                if time.monotonic() >= deadline:
                    break
                time.sleep(1.0)
            common = max(counts, key=lambda version: counts[version])
            apart = [index for index, host in enumerate(self.hosts, 1) if versions.get(host) != common]
            if attempt:
                raise DevNodeError(f"Ring nodes {apart} disagree on the schema: {versions}.")
            self._progress(f"ring nodes {apart} disagree on the schema after {timeout:.0f}s; restarting them")
            for index in apart:
                self.stop(index)
            self.start()

    def _schema_versions(self) -> dict[str, str]:
        """Each member's own schema version, asked over CQL ("no answer" when it gives none)."""
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import WhiteListRoundRobinPolicy

        versions: dict[str, str] = {}
        for host in self.hosts:
            only_this = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
            cluster = Cluster(
                [host],
                port=self.port,
                protocol_version=5,
                execution_profiles={EXEC_PROFILE_DEFAULT: only_this},
                connect_timeout=5,
            )
            try:
                row = cluster.connect().execute("SELECT schema_version FROM system.local", timeout=5).one()
                versions[host] = str(row.schema_version)
            except Exception as exc:  # the driver's request errors share no base class worth naming
                versions[host] = f"no answer ({type(exc).__name__})"
            finally:
                cluster.shutdown()
        return versions

    def _not_normal(self) -> dict[str, list[str]]:
        """For each member that does not (yet) see the whole ring NORMAL: what it sees instead."""
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
        from cassandra.policies import WhiteListRoundRobinPolicy

        missing: dict[str, list[str]] = {}
        for host in self.hosts:
            only_this = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
            cluster = Cluster(
                [host],
                port=self.port,
                protocol_version=5,
                execution_profiles={EXEC_PROFILE_DEFAULT: only_this},
                connect_timeout=5,
            )
            try:
                session = cluster.connect()
                rows = session.execute(
                    "SELECT address, status, status_with_port FROM system_views.gossip_info", timeout=5
                )
                states = {
                    str(row.address): str(row.status_with_port or row.status or "").split(",")[0]
                    for row in rows
                }
            except (NoHostAvailable, OSError) as exc:
                missing[host] = [f"no answer ({type(exc).__name__})"]
                continue
            except Exception as exc:  # the driver's request errors share no base class worth naming
                missing[host] = [f"an error ({exc})"]
                continue
            finally:
                cluster.shutdown()
            bad = [
                f"{peer} {states.get(peer, 'absent')}" for peer in self.hosts if states.get(peer) != "NORMAL"
            ]
            if bad:
                missing[host] = bad
        return missing
