"""``GATEWAY_BROKER_URL`` names one Redis or a Redis Cluster: the cluster's URL parsed, and
the URL of each node it gives the subscriber connections."""

from __future__ import annotations

import pytest

from gateway.settings.values import ClusterUrl, broker_url_problem, cluster_url


def test_a_cluster_url_names_its_masters() -> None:
    parsed = cluster_url("redis+cluster://10.0.0.31:6379,10.0.0.32:6380,redis-c:7000")
    nodes = (("10.0.0.31", 6379), ("10.0.0.32", 6380), ("redis-c", 7000))
    assert parsed == ClusterUrl(nodes, False, None, None)
    assert parsed.node_url("10.0.0.32", 6380) == "redis://10.0.0.32:6380/0"


def test_credentials_tls_and_ipv6_reach_every_node() -> None:
    parsed = cluster_url("rediss+cluster://app:p%40ss%3Aword@[::1]:7001,[::1]:7002/0")
    assert parsed is not None
    assert (parsed.nodes, parsed.tls, parsed.username, parsed.password) == (
        (("::1", 7001), ("::1", 7002)),
        True,
        "app",
        "p@ss:word",
    )
    assert parsed.node_url("10.0.0.5", 7001) == "rediss://app:p%40ss%3Aword@10.0.0.5:7001/0"


def test_other_urls_are_no_cluster() -> None:
    assert cluster_url("redis://127.0.0.1:6379/0") is None
    assert cluster_url("unix:///run/redis.sock") is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis+cluster://", "it names no node"),
        ("redis+cluster://a:1,b", "'b' is not host:port"),
        ("redis+cluster://a:1/2", "a cluster URL has no path but /0"),
        ("redis+cluster://a:1?x=1", "a cluster URL has no path but /0"),
        ("redis+cluster://a:70000", "'a:70000' is not host:port"),
    ],
)
def test_a_malformed_cluster_url_is_refused_naming_the_variable(url: str, problem: str) -> None:
    message = broker_url_problem("GATEWAY_BROKER_URL", url)
    assert message is not None and message.startswith("GATEWAY_BROKER_URL must be redis+cluster://")
    assert problem in message
    assert broker_url_problem("GATEWAY_BROKER_URL", "redis+cluster://a:1,b:2") is None
