"""A bad configuration variable is named in one line by the CLI (exit 2), before anything starts;
an old variable name still works and is reported once."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from gateway.__main__ import main
from gateway.server.app import create_app
from gateway.settings import Settings, SettingsError
from gateway.settings.declare import declared
from gateway.settings.tooling import ToolingSettings

#: A real cluster's settings that pass, so each case below is the only problem.
CLUSTER = {
    "CASSANDRA_CONTACT_POINTS": "127.0.0.1",
    "GATEWAY_URL_SIGNING_SECRET": "3f9a" * 16,
    "GATEWAY_CONTACTS_IDENTITY_PEPPER": "b71c" * 16,
    "GATEWAY_VERIFICATION_WEBHOOK_URL": "https://sms.example/codes",
}


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The process environment without any setting of ours but CLUSTER's."""
    for cls in (Settings, ToolingSettings):
        for _, spec in declared(cls):
            for name in (spec.variable, *spec.aliases):
                monkeypatch.delenv(name, raising=False)
    for name, value in CLUSTER.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def _clean_env(**extra: str) -> dict[str, str]:
    names = {
        n for cls in (Settings, ToolingSettings) for _, s in declared(cls) for n in (s.variable, *s.aliases)
    }
    return {**{k: v for k, v in os.environ.items() if k not in names}, **CLUSTER, **extra}


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("GATEWAY_PORT", "eighty", "GATEWAY_PORT must be an integer, got 'eighty'"),
        ("CASSANDRA_REQUEST_TIMEOUT", "soon", "CASSANDRA_REQUEST_TIMEOUT must be a number, got 'soon'"),
        ("GATEWAY_QUERY_METRICS", "maybe", "GATEWAY_QUERY_METRICS must be 1/0, true/false, yes/no or on/off"),
        ("GATEWAY_PORT", "70000", "GATEWAY_PORT must be a port number, got 70000"),
        (
            "GATEWAY_MAIL_BUCKET",
            "week",
            "GATEWAY_MAIL_BUCKET must be 'year', 'month', 'day' or '<N>s', got 'week'",
        ),
        ("MAIL_BUCKET", "week", "MAIL_BUCKET must be 'year', 'month', 'day' or '<N>s', got 'week'"),
        ("GATEWAY_BROKER_URL", "localhost:6379", "GATEWAY_BROKER_URL must be redis://host:port/db"),
        ("GATEWAY_DRAIN_SECONDS", "-1", "GATEWAY_DRAIN_SECONDS must be 0 or more, got -1.0"),
        ("GATEWAY_RATE_SENDS", "lots", "GATEWAY_RATE_SENDS: expected '<count>/<period>'"),
        ("GATEWAY_TRUSTED_PROXIES", "10.0.0.1,x", "GATEWAY_TRUSTED_PROXIES: not an IP address or CIDR: 'x'"),
        ("GATEWAY_PASSWORD_QUEUE", "-1", "GATEWAY_PASSWORD_QUEUE must be 0 or more, got -1"),
        (
            "GATEWAY_CONTACTS_IDENTITY_PEPPER",
            "",
            "GATEWAY_CONTACTS_IDENTITY_PEPPER must be set to a secret of your own",
        ),
        (
            "GATEWAY_URL_SIGNING_SECRET",
            "compose-demo-secret-replace-me-0123456789",
            "GATEWAY_URL_SIGNING_SECRET is a value published with the gateway",
        ),
        (
            "GATEWAY_CONTACTS_IDENTITY_PEPPER",
            "x",
            "GATEWAY_CONTACTS_IDENTITY_PEPPER must be at least 32 characters on a real cluster",
        ),
        ("CASSANDRA_IO", "epoll", "CASSANDRA_IO must be 'loop' or 'thread', got 'epoll'"),
        ("CASSANDRA_CONSISTENCY", "most", "CASSANDRA_CONSISTENCY must be one of ONE, TWO, THREE, QUORUM"),
        (
            "CASSANDRA_SERIAL_CONSISTENCY",
            "quorum",
            "CASSANDRA_SERIAL_CONSISTENCY must be LOCAL_SERIAL or SERIAL, got 'QUORUM'",
        ),
    ],
)
def test_cli_names_the_bad_variable(
    environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str, value: str, message: str
) -> None:
    environ.setenv(variable, value)
    assert main(["schema"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1, captured.err
    assert captured.err.startswith(f"error: {message}")


def test_cli_names_a_bad_tooling_variable_where_tooling_is_used() -> None:
    """The redis command reads the tooling's settings and stops before it touches anything."""
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "redis", "status"],
        env=_clean_env(GATEWAY_REDIS_PORT="70000", GATEWAY_LOG_FORMAT="text"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == "error: GATEWAY_REDIS_PORT must be a port number, got 70000\n"


def test_an_old_name_still_works_and_is_reported_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "settings"],
        env=_clean_env(
            MAIL_BUCKET="day",
            SESSION_TTL_DAYS="7",
            ROOM_BUCKET="3600s",
            GATEWAY_ROOM_BUCKET="month",
            GATEWAY_LOG_FORMAT="text",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    values = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert values["GATEWAY_MAIL_BUCKET"] == "day"
    assert values["GATEWAY_SESSION_TTL_DAYS"] == "7"
    assert values["GATEWAY_ROOM_BUCKET"] == "month", "the new name wins"
    assert values["GATEWAY_CONTACTS_IDENTITY_PEPPER"] == "(hidden)"
    assert "GATEWAY_REDIS_PORT" in values
    warnings = [line for line in done.stderr.splitlines() if "gateway.settings" in line]
    assert len(warnings) == 3, done.stderr
    assert sum("MAIL_BUCKET is deprecated: rename it to GATEWAY_MAIL_BUCKET" in w for w in warnings) == 1
    assert (
        sum("SESSION_TTL_DAYS is deprecated: rename it to GATEWAY_SESSION_TTL_DAYS" in w for w in warnings)
        == 1
    )
    assert sum("ROOM_BUCKET is ignored: GATEWAY_ROOM_BUCKET is set" in w for w in warnings) == 1


def test_from_env_raises_settings_error(environ: pytest.MonkeyPatch) -> None:
    environ.setenv("GATEWAY_ARGON2_TIME_COST", "3.5")
    with pytest.raises(SettingsError) as raised:
        Settings.from_env()
    assert raised.value.variable == "GATEWAY_ARGON2_TIME_COST"
    assert str(raised.value) == "GATEWAY_ARGON2_TIME_COST must be an integer, got '3.5'"


def test_create_app_rejects_invalid_settings() -> None:
    with pytest.raises(SettingsError) as raised:
        create_app(replace(Settings(), room_bucket="fortnight", port=-1))
    assert raised.value.variable == "GATEWAY_PORT"
    assert (
        "GATEWAY_ROOM_BUCKET must be 'year', 'month', 'day' or '<N>s', got 'fortnight'"
        in raised.value.message
    )
