"""Two datacenters in the settings, the keyspace's replication and the local ring's layout:
CASSANDRA_REPLICATION and CASSANDRA_LOCAL_DC checked alone and together, each refusal naming
the variable; the replication map the keyspace is created with; the ring over datacenters."""

from __future__ import annotations

from pathlib import Path

import pytest

from devnode.cassandra import CassandraRing, parse_datacenters
from devnode.cassandra.configure import NodeConfig, Placement
from devnode.common import DevNodeError
from gateway.db.migrations import replication_map
from gateway.settings import Settings, SettingsError
from gateway.settings.tooling import ToolingSettings
from gateway.settings.values import replication_datacenters


def settings(**env: str) -> Settings:
    return Settings.from_env(env).validate()


@pytest.mark.parametrize(
    ("text", "datacenters"),
    [
        ("SimpleStrategy", None),
        ("SimpleStrategy:3", None),
        ("dc1:3", {"dc1": 3}),
        ("dc1:3, eu-west.2:2", {"dc1": 3, "eu-west.2": 2}),
    ],
)
def test_replication_reads_as_datacenters(text: str, datacenters: dict[str, int] | None) -> None:
    assert replication_datacenters(text) == datacenters


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dc1:3,dc1:2", "datacenter 'dc1' is named twice"),
        ("dc1:3,dc2:0", "datacenter 'dc2' needs 1 replica or more; leave out one that keeps none"),
        ("SimpleStrategy:0", "SimpleStrategy's replication factor must be 1 or more"),
        ("dc1=3", "expected 'SimpleStrategy:N' or 'dc1:3,dc2:3'"),
        ("dc 1:3", "expected 'SimpleStrategy:N' or 'dc1:3,dc2:3'"),
    ],
)
def test_a_bad_replication_names_the_variable_and_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        settings(CASSANDRA_REPLICATION=text)
    assert raised.value.message == (
        f"CASSANDRA_REPLICATION must be 'SimpleStrategy:N' or 'dc1:3,dc2:3' ({message}), got {text!r}"
    )


def test_several_datacenters_need_the_local_one() -> None:
    with pytest.raises(SettingsError) as raised:
        settings(CASSANDRA_REPLICATION="dc1:3,dc2:3")
    assert raised.value.message.startswith(
        "CASSANDRA_LOCAL_DC must be set when CASSANDRA_REPLICATION names several datacenters (dc1, dc2)"
    )


def test_the_local_datacenter_must_hold_replicas() -> None:
    with pytest.raises(SettingsError) as raised:
        settings(CASSANDRA_REPLICATION="dc1:3,dc2:3", CASSANDRA_LOCAL_DC="dc3")
    assert raised.value.message == (
        "CASSANDRA_LOCAL_DC is 'dc3', which CASSANDRA_REPLICATION (dc1:3,dc2:3) gives no replica: "
        "it must be one of dc1, dc2"
    )


def test_a_bad_datacenter_name_is_refused() -> None:
    with pytest.raises(SettingsError) as raised:
        settings(CASSANDRA_LOCAL_DC="dc1;drop")
    assert raised.value.message.startswith("CASSANDRA_LOCAL_DC must be a datacenter's name")


def test_accepted_layouts_and_their_keyspace_replication() -> None:
    two = settings(CASSANDRA_REPLICATION="dc1:3,dc2:3", CASSANDRA_LOCAL_DC="dc2")
    assert (two.local_dc, two.consistency, two.serial_consistency) == ("dc2", "LOCAL_QUORUM", "LOCAL_SERIAL")
    assert replication_map(two) == "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3}"
    # One datacenter needs no CASSANDRA_LOCAL_DC (the driver takes the contact points'), and a
    # local datacenter with SimpleStrategy is the operator's business.
    one = settings(CASSANDRA_REPLICATION="dc1:3")
    assert replication_map(one) == "{'class': 'NetworkTopologyStrategy', 'dc1': 3}"
    simple = settings(CASSANDRA_LOCAL_DC="datacenter1")
    assert replication_map(simple) == "{'class': 'SimpleStrategy', 'replication_factor': 1}"


def test_the_ring_layout() -> None:
    assert parse_datacenters("dc1:2,dc2:1") == ("dc1", "dc1", "dc2")
    for text in ("dc1:2,dc1:1", "dc1:0", "dc1", "d c:1"):
        with pytest.raises(DevNodeError):
            parse_datacenters(text)


def test_a_node_in_a_datacenter_is_configured_for_the_gossiping_snitch(tmp_path: Path) -> None:
    placement = Placement(host="127.0.0.13", datacenter="dc2", compact=True)
    config = NodeConfig(tmp_path, tmp_path / "lib", 9042, "256M", placement)
    config.write()
    assert (
        "endpoint_snitch: GossipingPropertyFileSnitch\n" in (tmp_path / "conf" / "cassandra.yaml").read_text()
    )
    rackdc = (tmp_path / "conf" / "cassandra-rackdc.properties").read_text()
    assert rackdc.splitlines()[:2] == ["dc=dc2", "rack=rack1"]
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "jamm-0.4.0.jar").write_text("")
    args = config.jvm_args("java")
    assert f"-Dcassandra-rackdc.properties=file://{tmp_path}/conf/cassandra-rackdc.properties" in args
    single = NodeConfig(tmp_path / "single", tmp_path / "lib", 9042, "256M")
    single.write()
    assert "endpoint_snitch: SimpleSnitch\n" in (tmp_path / "single" / "conf" / "cassandra.yaml").read_text()
    assert not (tmp_path / "single" / "conf" / "cassandra-rackdc.properties").exists()


def test_ring_members_sync_their_commit_log_before_they_acknowledge(tmp_path: Path) -> None:
    """A counter update's leader that loses its commit log's unsynced tail to a kill would lead
    the next update from an older shard (``Placement.durable``); the ring's nodes are killed on
    purpose, the lone node is not."""
    ring = CassandraRing(ToolingSettings(cassandra_home=tmp_path), 9042, nodes=3)
    for node in ring.members:
        assert node.placement.durable
    member = NodeConfig(tmp_path / "member", tmp_path / "lib", 9042, "256M", ring.members[0].placement)
    single = NodeConfig(tmp_path / "single", tmp_path / "lib", 9042, "256M")
    for config in (member, single):
        assert not config.current()  # nothing written yet
        config.write()
        assert config.current()
    member_yaml = (tmp_path / "member" / "conf" / "cassandra.yaml").read_text()
    single_yaml = (tmp_path / "single" / "conf" / "cassandra.yaml").read_text()
    assert "commitlog_sync: batch\n" in member_yaml and "commitlog_sync_period" not in member_yaml
    assert "commitlog_sync: periodic\n" in single_yaml
    # A node configured by an earlier version of the project is told apart (and a ring member
    # restarted with the current file).
    (tmp_path / "member" / "conf" / "cassandra.yaml").write_text(
        member_yaml.replace("commitlog_sync: batch\n", "commitlog_sync: periodic\n")
    )
    assert not member.current()
