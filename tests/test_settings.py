"""A bad configuration variable is named in one line by the CLI (exit 2) and raised as SettingsError."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from gateway.db.session import CassandraUnavailable, Database
from gateway.server.app import create_app
from gateway.settings import Settings, SettingsError
from tests.cli import run_cli


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("GATEWAY_PORT", "eighty", "GATEWAY_PORT must be an integer, got 'eighty'"),
        ("CASSANDRA_REQUEST_TIMEOUT", "soon", "CASSANDRA_REQUEST_TIMEOUT must be a number, got 'soon'"),
        ("GATEWAY_QUERY_METRICS", "maybe", "GATEWAY_QUERY_METRICS must be 1/0, true/false, yes/no or on/off"),
        ("GATEWAY_REDIS_PORT", "70000", "GATEWAY_REDIS_PORT must be a port number, got 70000"),
        ("MAIL_BUCKET", "week", "MAIL_BUCKET must be 'year', 'month', 'day' or '<N>s', got 'week'"),
        ("GATEWAY_BROKER_URL", "localhost:6379", "GATEWAY_BROKER_URL must be redis://host:port/db"),
        ("GATEWAY_DRAIN_SECONDS", "-1", "GATEWAY_DRAIN_SECONDS must be 0 or more, got -1.0"),
        ("GATEWAY_RATE_SENDS", "lots", "GATEWAY_RATE_SENDS: expected '<count>/<period>'"),
        ("GATEWAY_TRUSTED_PROXIES", "10.0.0.1,x", "GATEWAY_TRUSTED_PROXIES: not an IP address or CIDR: 'x'"),
        ("GATEWAY_PASSWORD_QUEUE", "-1", "GATEWAY_PASSWORD_QUEUE must be 0 or more, got -1"),
        ("CONTACTS_IDENTITY_PEPPER", "", "CONTACTS_IDENTITY_PEPPER must be set to a secret of your own"),
        ("CASSANDRA_IO", "epoll", "CASSANDRA_IO must be 'loop' or 'thread', got 'epoll'"),
        ("CASSANDRA_CONSISTENCY", "most", "CASSANDRA_CONSISTENCY must be one of ONE, TWO, THREE, QUORUM"),
        (
            "CASSANDRA_SERIAL_CONSISTENCY",
            "quorum",
            "CASSANDRA_SERIAL_CONSISTENCY must be LOCAL_SERIAL or SERIAL, got 'QUORUM'",
        ),
    ],
)
async def test_cli_names_the_bad_variable(
    base_settings: Settings, variable: str, value: str, message: str
) -> None:
    code, out = await run_cli(base_settings, "schema", env={variable: value})
    assert code == 2, out
    assert len(out.splitlines()) == 1, out
    assert out.startswith(f"error: {message}")


def test_from_env_raises_settings_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGON2_TIME_COST", "3.5")
    with pytest.raises(SettingsError) as raised:
        Settings.from_env()
    assert raised.value.variable == "ARGON2_TIME_COST"
    assert str(raised.value) == "ARGON2_TIME_COST must be an integer, got '3.5'"


def test_create_app_rejects_invalid_settings(base_settings: Settings) -> None:
    with pytest.raises(SettingsError) as raised:
        create_app(replace(base_settings, room_bucket="fortnight", redis_port=-1))
    assert raised.value.variable == "GATEWAY_REDIS_PORT"
    assert "ROOM_BUCKET must be 'year', 'month', 'day' or '<N>s', got 'fortnight'" in raised.value.message


def test_a_real_cluster_needs_a_pepper_of_its_own(base_settings: Settings) -> None:
    cluster = replace(base_settings, contact_points=("10.0.0.11",))
    with pytest.raises(SettingsError) as raised:
        create_app(replace(cluster, contacts_identity_pepper=Settings.contacts_identity_pepper))
    assert raised.value.variable == "CONTACTS_IDENTITY_PEPPER"
    create_app(replace(cluster, contacts_identity_pepper="a-secret-of-our-own"))
    default_pepper = Settings.contacts_identity_pepper
    # The embedded development node accepts the default.
    create_app(replace(base_settings, contact_points=(), contacts_identity_pepper=default_pepper))


async def test_statements_are_sent_at_the_configured_consistency(
    base_settings: Settings, server: object
) -> None:
    """TWO replicas cannot answer on the test keyspace's one: the setting reaches the statements."""
    points = base_settings.contact_points or ("127.0.0.1",)
    for level, answers in (("TWO", False), ("ONE", True)):
        db = Database(replace(base_settings, contact_points=points, consistency=level))
        await asyncio.to_thread(db.connect)
        db.use_keyspace(base_settings.keyspace)
        try:
            if answers:
                await db.execute("SELECT login FROM users WHERE login = ?", ("nobody-at-all",))
            else:
                with pytest.raises(CassandraUnavailable):
                    await db.execute("SELECT login FROM users WHERE login = ?", ("nobody-at-all",))
        finally:
            await asyncio.to_thread(db.shutdown)
