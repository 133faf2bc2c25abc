"""Command line: ``gateway serve [--workers N] | cassandra start|stop|kill|status
[--nodes N | --datacenters DC:N,...] [--node I] | redis start|stop|status [--cluster]
[--node I] | migrate | schema | seed | settings [--markdown]``, the counter repairs
``mail-recount``, ``blog-recount`` and ``rooms-recount``, and ``backfill [<domain> ...]``.

The ``cassandra`` and ``redis`` commands, and the others without contact points, use the
development tooling in ``devnode`` and its settings (``gateway.settings.tooling``); both are
imported only then, so the running gateway never loads them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from gateway.settings import Settings, SettingsError
from gateway.settings.declare import alias_warnings

if TYPE_CHECKING:
    from gateway.db.session import Database
    from gateway.settings.tooling import ToolingSettings


class _CommandFailed(Exception):
    """An expected failure whose message is the whole story (exit code 1)."""


@contextmanager
def _dev_tooling() -> Iterator[None]:
    """Around uses of ``devnode``: its expected failures become one error message."""
    try:
        from devnode.common import DevNodeError
    except ModuleNotFoundError as exc:
        raise _CommandFailed(
            "the development tooling (devnode) is not installed here; "
            "set CASSANDRA_CONTACT_POINTS to use a Cassandra cluster"
        ) from exc
    try:
        yield
    except DevNodeError as exc:
        raise _CommandFailed(str(exc)) from exc


def _tooling() -> ToolingSettings:
    """Read only by the commands that start or stop a local server (a bad value: exit code 2)."""
    from gateway.settings.tooling import ToolingSettings

    return ToolingSettings.from_env().validate()


def _ensure_cassandra(settings: Settings) -> None:
    """Start (or reuse) the embedded node unless a cluster was configured."""
    if settings.embedded:
        tooling = _tooling()
        with _dev_tooling():
            from devnode.cassandra import CassandraNode

            CassandraNode(tooling, settings.cassandra_port).start()


def _connected(settings: Settings) -> tuple[Database, list[str]]:
    from gateway.db.migrations import migrate
    from gateway.db.session import Database

    _ensure_cassandra(settings)
    db = Database(settings)
    db.connect()
    applied = migrate(db, settings.keyspace)
    return db, applied


def cmd_serve(settings: Settings, seed: bool, workers: int, worker: bool) -> int:
    """One process, or (``--workers N``) a supervisor of N. ``--worker`` marks a process the
    supervisor started: the node and the broker are set up already, and the port is shared."""
    if workers > 1:
        return _serve_workers(settings, seed, workers)

    from aiohttp import web

    from gateway.seed import seed_demo
    from gateway.server.app import READY, SERVICES, create_app
    from gateway.server.serve import run

    if not worker:
        _ensure_cassandra(settings)
    app = create_app(settings)

    if seed or settings.seed:
        seed_task = web.AppKey("seed_task", asyncio.Task[None])

        async def seed_when_ready(app: web.Application) -> None:
            async def run() -> None:
                await app[READY].wait()
                services = app[SERVICES]
                try:
                    await seed_demo(services.db, settings)
                except Exception:
                    logging.getLogger("gateway.seed").exception("seeding failed")

            app[seed_task] = asyncio.create_task(run())

        app.on_startup.append(seed_when_ready)

    if not worker:
        print(f"GraphiQL on http://{settings.host}:{settings.port}/graphql", file=sys.stderr)
    run(app, settings, reuse_port=worker)
    return 0


def _serve_workers(settings: Settings, seed: bool, workers: int) -> int:
    """Workers need a broker. Without ``GATEWAY_BROKER_URL``, the embedded setup (no
    ``CASSANDRA_CONTACT_POINTS``) starts the local Redis of ``gateway redis start``, as it
    starts the Cassandra node; against a real cluster the command refuses, since a broker
    started on one host would not be shared by the gateways of the others."""
    import os
    import shutil

    from gateway.server.workers import Supervisor

    if settings.port == 0:
        raise _CommandFailed("--workers needs a fixed GATEWAY_PORT (the workers share it)")
    env = dict(os.environ)
    if not settings.broker_url:
        if not settings.embedded:
            raise _CommandFailed(
                f"--workers {workers} needs GATEWAY_BROKER_URL (redis://host:port/db): the workers share "
                "subscriptions through it. Set it to the Redis your gateways share, or run one worker."
            )
        tooling = _tooling()
        with _dev_tooling():
            from devnode.redis import RedisServer

            server = RedisServer(tooling)
            server.start()
        env["GATEWAY_BROKER_URL"] = server.url
        print(f"workers share subscriptions through the local Redis on {server.url}", file=sys.stderr)
    metrics_env = _multiprocess_metrics()
    env.update(metrics_env)
    db, _ = _connected(settings)
    db.shutdown()
    print(f"GraphiQL on http://{settings.host}:{settings.port}/graphql ({workers} workers)", file=sys.stderr)
    supervisor = Supervisor(
        workers, env, seed=seed or settings.seed, grace_seconds=settings.drain_seconds + 60
    )
    try:
        return supervisor.run()
    finally:
        shutil.rmtree(next(iter(metrics_env.values())), ignore_errors=True)


def _multiprocess_metrics() -> dict[str, str]:
    """The workers write their metrics to files that one scrape of any of them adds up:
    ``PROMETHEUS_MULTIPROC_DIR`` when set, else a directory of this run's own."""
    import os
    import tempfile

    from gateway.server.metrics import MULTIPROCESS_ENV, prepare_multiprocess_metrics

    directory = os.environ.get(MULTIPROCESS_ENV) or tempfile.mkdtemp(prefix="gateway-metrics-")
    return prepare_multiprocess_metrics(directory)


def cmd_cassandra(
    settings: Settings, action: str, nodes: int | None, node: int | None, datacenters: str | None = None
) -> int:
    """The single node, or with ``--nodes N`` / ``--node I`` the local ring (or one member of it),
    or with ``--datacenters dc1:2,dc2:1`` the local ring over datacenters."""
    if nodes is not None and nodes < 1:
        raise _CommandFailed(f"--nodes must be 1 or more, got {nodes}")
    if nodes is not None and datacenters is not None:
        raise _CommandFailed("--nodes and --datacenters: give one (--datacenters counts the nodes)")
    if action == "kill" and node is None:
        raise _CommandFailed("kill needs --node I: it kills one member of the local ring")
    if datacenters is not None or node is not None or (nodes or 1) > 1:
        return _cmd_ring(settings, action, nodes or 3, node, datacenters)
    tooling = _tooling()
    with _dev_tooling():
        from devnode.cassandra import CassandraNode

        single = CassandraNode(tooling, settings.cassandra_port)
        if action == "start":
            single.start()
        elif action == "stop":
            single.stop()
        status = single.status()
    state = "running" if status.running else "stopped"
    ready = ", CQL port ready" if status.cql_ready else ""
    pid = f" (pid {status.pid})" if status.pid else ""
    print(f"Cassandra {status.version}: {state}{pid}{ready}; home {status.home}")
    return 0 if action != "status" or status.running else 3


def _cmd_ring(settings: Settings, action: str, nodes: int, node: int | None, datacenters: str | None) -> int:
    tooling = _tooling()
    with _dev_tooling():
        from devnode.cassandra import CassandraRing, parse_datacenters

        layout = parse_datacenters(datacenters) if datacenters is not None else None
        ring = CassandraRing(tooling, settings.cassandra_port, nodes, datacenters=layout)
        if action == "start" and node is None:
            ring.start()
        elif action == "start":
            ring.start_node(node or 1)
        elif action == "stop":
            ring.stop(node)
        elif action == "kill" and node is not None:
            ring.kill(node)
        members = [ring.node(node)] if node is not None else ring.members
        statuses = [member.status() for member in members]
    for member, status in zip(members, statuses, strict=True):
        state = "running" if status.running else "stopped"
        ready = ", CQL port ready" if status.cql_ready else ""
        pid = f" (pid {status.pid})" if status.pid else ""
        where = f"{member.host}:{member.port}"
        print(f"{member.name} ({status.version}) on {where}: {state}{pid}{ready}; home {status.home}")
    return 0 if action != "status" or all(status.running for status in statuses) else 3


def cmd_redis(action: str) -> int:
    tooling = _tooling()
    with _dev_tooling():
        from devnode.redis import RedisServer

        server = RedisServer(tooling)
        if action == "start":
            server.start()
        elif action == "stop":
            server.stop()
        status = server.status()
    state = "running" if status.running else "stopped"
    ready = ", answers PING" if status.ping else ""
    pid = f" (pid {status.pid})" if status.pid else ""
    print(f"Redis on {server.url}: {state}{pid}{ready}; home {status.home}")
    return 0 if action != "status" or status.running else 3


def cmd_redis_cluster(action: str, node: int | None) -> int:
    """The local Redis Cluster, or one master of it; prints its ``GATEWAY_BROKER_URL``."""
    tooling = _tooling()
    with _dev_tooling():
        from devnode.redis import LocalRedisCluster

        cluster = LocalRedisCluster(tooling)
        if node is not None:
            cluster.master(node)
        if action == "start" and node is None:
            cluster.start()
        elif action == "start":
            cluster.start_node(node or 1)
        elif action == "stop":
            cluster.stop(node)
        status = cluster.status()
    shown = range(len(cluster.masters)) if node is None else [node - 1]
    for index in shown:
        master, state = status.nodes[index], status.states[index]
        running = "running" if master.running else "stopped"
        pid = f" (pid {master.pid})" if master.pid else ""
        slots = f", cluster_state:{state}" if state else ""
        print(f"master {index + 1} on 127.0.0.1:{master.port}: {running}{pid}{slots}; home {master.home}")
    print(f"GATEWAY_BROKER_URL={cluster.url}")
    wanted = [status.nodes[index].running for index in shown]
    return 0 if action != "status" or all(wanted) else 3


def cmd_migrate(settings: Settings) -> int:
    db, applied = _connected(settings)
    db.shutdown()
    print("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))
    return 0


def cmd_seed(settings: Settings) -> int:
    from gateway.seed import seed_demo

    db, _ = _connected(settings)
    try:
        asyncio.run(seed_demo(db, settings))
    finally:
        db.shutdown()
    return 0


def cmd_mail_recount(settings: Settings, login: str) -> int:
    from gateway.mail.recount import recount

    db, _ = _connected(settings)
    try:
        return asyncio.run(recount(db, settings, login))
    finally:
        db.shutdown()


def cmd_rooms_recount(settings: Settings, names: list[str]) -> int:
    from gateway.rooms.recount import recount

    db, _ = _connected(settings)
    try:
        return asyncio.run(recount(db, settings, names))
    finally:
        db.shutdown()


def cmd_blog_recount(settings: Settings, slugs: list[str]) -> int:
    from gateway.blog.recount import recount

    db, _ = _connected(settings)
    try:
        return asyncio.run(recount(db, settings, slugs))
    finally:
        db.shutdown()


#: ``gateway backfill <domain>``: the module of each domain whose ``backfill(db, settings)``
#: fills its new tables from the old ones (idempotent) and returns a one-line summary.
BACKFILLS: dict[str, str] = {
    "blog": "gateway.blog.backfill",
    "messenger": "gateway.messenger.backfill",
    "rooms": "gateway.rooms.backfill",
}


def cmd_backfill(settings: Settings, domains: list[str]) -> int:
    import importlib

    db, _ = _connected(settings)
    try:
        for domain in domains or sorted(BACKFILLS):
            module = importlib.import_module(BACKFILLS[domain])
            print(f"{domain}: {asyncio.run(module.backfill(db, settings))}")
    finally:
        db.shutdown()
    return 0


def cmd_settings(settings: Settings) -> int:
    """The values this environment gives, as they would be written (secrets hidden)."""
    from gateway.settings.declare import current_values

    for variable, value in current_values(settings) + current_values(_tooling()):
        print(f"{variable}={value}")
    return 0


def cmd_schema(settings: Settings) -> int:
    from gateway.schema import build_schema

    print(build_schema(settings).as_str())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gateway", description="GraphQL gateway over Apache Cassandra")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gateway (starts the embedded Cassandra unless configured)")
    serve.add_argument("--seed", action="store_true", help="load demo data once Cassandra is ready")
    serve.add_argument(
        "--workers",
        default="1",
        metavar="N",
        help="processes serving the one port (a number, or 'auto': one per core); default 1",
    )
    serve.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    cassandra = sub.add_parser(
        "cassandra", help="manage the embedded Cassandra node, or a local ring of several (--nodes)"
    )
    cassandra.add_argument(
        "action",
        choices=["start", "stop", "kill", "status"],
        help="kill: SIGKILL one ring member (--node I), as a crash would; start brings it back",
    )
    cassandra.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="a ring of N nodes on 127.0.0.2 and up instead of the single node (default 1; 3 with --node)",
    )
    cassandra.add_argument("--node", type=int, metavar="I", help="only node I (1-based) of the ring")
    cassandra.add_argument(
        "--datacenters",
        metavar="DC:N,...",
        help="the ring over datacenters on 127.0.0.11 and up instead (dc1:2,dc2:1: two nodes in dc1, "
        "one in dc2), beside the other ring",
    )
    redis = sub.add_parser(
        "redis",
        help="manage the local Redis server (GATEWAY_REDIS_PORT), or a local Redis Cluster (--cluster)",
    )
    redis.add_argument("action", choices=["start", "stop", "status"])
    redis.add_argument(
        "--cluster",
        action="store_true",
        help="a Redis Cluster of three masters from GATEWAY_REDIS_CLUSTER_PORT on, instead of the one server",
    )
    redis.add_argument("--node", type=int, metavar="I", help="only master I (1-based) of the cluster")
    sub.add_parser("migrate", help="apply pending cql/ migrations")
    sub.add_parser("seed", help="load demo data")
    sub.add_parser("schema", help="print the GraphQL SDL")
    settings_command = sub.add_parser(
        "settings", help="print every setting's variable and value (secrets hidden)"
    )
    settings_command.add_argument(
        "--markdown", action="store_true", help="print the configuration reference (docs/configuration.md)"
    )
    recount = sub.add_parser("mail-recount", help="rebuild a user's unread mail counters from the folders")
    recount.add_argument("login")
    rooms_recount = sub.add_parser(
        "rooms-recount", help="set rooms' participant counts to their participant rows"
    )
    rooms_recount.add_argument("names", nargs="*", help="rooms to recount (default: every room)")
    blog_recount = sub.add_parser(
        "blog-recount", help="rebuild comment and post counters from the stored comments and posts"
    )
    blog_recount.add_argument("slugs", nargs="*", help="posts to recount (default: every post)")
    backfill = sub.add_parser("backfill", help="fill new tables from the old ones (idempotent)")
    backfill.add_argument("domains", nargs="*", choices=sorted(BACKFILLS), help="default: every domain")
    args = parser.parse_args(argv)
    if args.command == "settings" and args.markdown:
        from gateway.settings.reference import configuration_reference

        sys.stdout.write(configuration_reference())
        return 0

    try:
        settings = Settings.from_env().validate()
    except SettingsError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    from gateway.server.logs import configure_logging

    configure_logging(settings)
    if not getattr(args, "worker", False):
        for warning in alias_warnings(Settings):
            logging.getLogger("gateway.settings").warning(warning)

    from gateway.db.session import CassandraUnavailable

    try:
        return _run(args, settings)
    except SettingsError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except (_CommandFailed, CassandraUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "serve":
        from gateway.server.workers import worker_count

        try:
            workers = worker_count(args.workers)
        except ValueError as exc:
            raise _CommandFailed(str(exc)) from exc
        return cmd_serve(settings, args.seed, workers, args.worker)
    if args.command == "cassandra":
        return cmd_cassandra(settings, args.action, args.nodes, args.node, args.datacenters)
    if args.command == "redis":
        if args.node is not None and not args.cluster:
            raise _CommandFailed("--node needs --cluster")
        if args.cluster:
            return cmd_redis_cluster(args.action, args.node)
        return cmd_redis(args.action)
    if args.command == "settings":
        return cmd_settings(settings)
    if args.command == "migrate":
        return cmd_migrate(settings)
    if args.command == "seed":
        return cmd_seed(settings)
    if args.command == "blog-recount":
        return cmd_blog_recount(settings, args.slugs)
    if args.command == "backfill":
        return cmd_backfill(settings, args.domains)
    if args.command == "mail-recount":
        return cmd_mail_recount(settings, args.login)
    if args.command == "rooms-recount":
        return cmd_rooms_recount(settings, args.names)
    if args.command == "backfill":
        return cmd_backfill(settings, args.domains)
    return cmd_schema(settings)


if __name__ == "__main__":
    sys.exit(main())
