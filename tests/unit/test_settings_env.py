"""Every declared setting is read from its variable and its old names, and checked, by the one
generic reader and validator; the local tooling's settings are apart from the gateway's."""

from __future__ import annotations

import re
import secrets
import typing
from dataclasses import Field, fields, replace
from pathlib import Path
from typing import Any

import pytest

from gateway.settings import CLUSTER_REPLICATION, TRACING, Settings, SettingsError
from gateway.settings.declare import Setting, alias_warnings, current_values, declared
from gateway.settings.tooling import ToolingSettings
from gateway.settings.values import (
    broker_url_problem,
    bucket_problem,
    country_code_problem,
    datacenter_problem,
    file_problem,
    heap_size_problem,
    http_url_problem,
    keyspace_problem,
    networks_problem,
    origins_problem,
    public_url_problem,
    rate_problem,
    replication_problem,
    signing_secret_problem,
    trace_exporters_problem,
)

CLASSES: tuple[type, ...] = (Settings, ToolingSettings)
DECLARED = [(cls, item, spec) for cls in CLASSES for item, spec in declared(cls)]


def _cases(keep: Any = lambda spec: True) -> list[Any]:
    """The declared settings ``keep`` selects, as parameters named by their variable."""
    return [pytest.param(cls, item, spec, id=spec.variable) for cls, item, spec in DECLARED if keep(spec)]


#: A valid text for each syntax check, and what it reads as (``None``: the text itself).
GOOD: dict[Any, tuple[str, Any]] = {
    origins_problem: ("https://a.example, https://b.example", ("https://a.example", "https://b.example")),
    networks_problem: ("10.0.0.0/8, ::1", ("10.0.0.0/8", "::1")),
    broker_url_problem: ("redis://broker:6379/1", None),
    replication_problem: ("dc1:3", None),
    datacenter_problem: ("eu-west.1", None),
    keyspace_problem: ("other_keyspace", None),
    rate_problem: ("7/m", None),
    bucket_problem: ("3600s", None),
    public_url_problem: ("https://api.example.com/mail", None),
    signing_secret_problem: ("s" * 40, None),
    country_code_problem: ("31", None),
    heap_size_problem: ("512M", None),
    trace_exporters_problem: ("otlp, console", ("otlp", "console")),
    http_url_problem: ("http://collector:4318", None),
}
#: A value each syntax check refuses, and the start of its message after the variable.
BAD: dict[Any, tuple[Any, str]] = {
    origins_problem: (("https://a.example/path",), ": Invalid origin 'https://a.example/path'"),
    networks_problem: (("10.0.0.1", "x"), ": not an IP address or CIDR: 'x'"),
    file_problem: (Path("/nonexistent/manifest.json"), ": no such file /nonexistent/manifest.json"),
    broker_url_problem: (
        "localhost:6379",
        " must be redis://host:port/db or redis+cluster://host:port,host:port,..., got 'localhost:6379'",
    ),
    replication_problem: ("three please", " must be 'SimpleStrategy:N' or 'dc1:3,dc2:3'"),
    datacenter_problem: ("dc 1", " must be a datacenter's name (letters, digits, '_', '.', '-'), got 'dc 1'"),
    keyspace_problem: ("1-bad", " is not a valid keyspace name: '1-bad'"),
    rate_problem: ("lots", ": expected '<count>/<period>'"),
    bucket_problem: ("week", " must be 'year', 'month', 'day' or '<N>s', got 'week'"),
    public_url_problem: ("ftp://x", " must be an http(s) URL without query, got 'ftp://x'"),
    signing_secret_problem: ("short", " must be at least 32 characters"),
    country_code_problem: ("12345", " must be 1-3 digits or empty"),
    heap_size_problem: ("lots", " must be a heap size such as 1G or 512M, got 'lots'"),
    trace_exporters_problem: (("otlp", "jaeger"), " may name otlp, console or none, got 'jaeger'"),
    http_url_problem: ("collector:4318", " must be an http(s) URL, got 'collector:4318'"),
}


def _kind(cls: type, item: Field[Any]) -> Any:
    return typing.get_type_hints(cls)[item.name]


def _default(cls: type, item: Field[Any]) -> Any:
    return getattr(cls(), item.name)


def _sample(cls: type, item: Field[Any], spec: Setting, tmp_path: Path) -> tuple[str, Any]:
    """A text for the variable other than the default, and the value it reads as."""
    kind = _kind(cls, item)
    default = _default(cls, item)
    if spec.check is file_problem:
        manifest = tmp_path / "manifest.json"
        manifest.write_text("{}")
        return str(manifest), manifest
    if spec.check is not None:
        text, value = GOOD[spec.check]
        return text, text if value is None else value
    if spec.choices:
        choice = next(c for c in spec.choices if c and c != default)
        return (choice.lower() if spec.case == "upper" else choice.upper()), choice
    if kind is bool:
        return ("off" if default else "on"), not default
    if kind == bool | None:
        return "no", False
    if kind is int:
        return str(default + 1), default + 1
    if kind is float:
        return str(default + 1.5), default + 1.5
    if kind in (Path, Path | None):
        return str(tmp_path / "elsewhere"), tmp_path / "elsewhere"
    if typing.get_origin(kind) is tuple:
        return " a , b ,", ("a", "b")
    return "sample-value", "sample-value"


@pytest.mark.parametrize(("cls", "item", "spec"), _cases())
def test_every_setting_reads_its_variable(cls: Any, item: Field[Any], spec: Setting, tmp_path: Path) -> None:
    text, value = _sample(cls, item, spec, tmp_path)
    assert value != _default(cls, item)
    assert getattr(cls.from_env({spec.variable: text}), item.name) == value
    assert getattr(cls.from_env({spec.variable: "  "}), item.name) == _default(cls, item)


@pytest.mark.parametrize(
    ("cls", "item", "spec", "alias"),
    [pytest.param(c, i, s, alias, id=alias) for c, i, s in DECLARED for alias in s.aliases],
)
def test_every_alias_reads_its_setting_and_the_new_name_wins(
    cls: Any, item: Field[Any], spec: Setting, alias: str, tmp_path: Path
) -> None:
    text, value = _sample(cls, item, spec, tmp_path)
    assert getattr(cls.from_env({alias: text}), item.name) == value
    both = cls.from_env({alias: "not even valid", spec.variable: text})
    assert getattr(both, item.name) == value
    assert alias_warnings(cls, {alias: text}) == [f"{alias} is deprecated: rename it to {spec.variable}"]
    ignored = alias_warnings(cls, {alias: text, spec.variable: text})
    assert ignored == [f"{alias} is ignored: {spec.variable} is set and replaces it; unset {alias}"]


def test_aliases_follow_the_prefix_policy() -> None:
    """New names carry the policy's prefix (OpenTelemetry's standard ones keep theirs); each
    old name belongs to one setting only."""
    names = [name for _, _, spec in DECLARED for name in (spec.variable, *spec.aliases)]
    assert len(names) == len(set(names))
    for _, _, spec in DECLARED:
        assert spec.variable.startswith(("GATEWAY_", "CASSANDRA_", "OTEL_")), spec.variable
        assert (
            spec.variable.startswith("GATEWAY_")
            or (spec.variable.startswith("CASSANDRA_") and spec.group == "Cassandra")
            or (spec.variable.startswith("OTEL_") and spec.group == TRACING)
        ), spec.variable
        assert all(not alias.startswith(("GATEWAY_", "CASSANDRA_")) for alias in spec.aliases)
        assert "\n" not in spec.description and spec.description, spec.variable
    assert alias_warnings(Settings, {}) == []


TYPE_ERRORS = {
    int: "must be an integer",
    float: "must be a number",
    bool: "must be 1/0, true/false, yes/no or on/off",
}
TYPED = [
    pytest.param(c, i, s, id=s.variable)
    for c, i, s in DECLARED
    if typing.get_type_hints(c)[i.name] in (*TYPE_ERRORS, bool | None)
]


@pytest.mark.parametrize(("cls", "item", "spec"), TYPED)
def test_a_value_not_of_the_type_names_its_variable(cls: Any, item: Field[Any], spec: Setting) -> None:
    kind = _kind(cls, item)
    for variable in (spec.variable, *spec.aliases):
        with pytest.raises(SettingsError) as raised:
            cls.from_env({variable: "Maybe"})
        assert raised.value.variable == variable
        expected = TYPE_ERRORS[bool if kind == bool | None else kind]
        assert (
            raised.value.message
            == f"{variable} {expected}, got {'maybe' if 'bool' in str(kind) else 'Maybe'!r}"
        )
        assert "\n" not in str(raised.value)


@pytest.mark.parametrize("text", ["nan", "inf", "-infinity"])
def test_a_number_is_finite(text: str) -> None:
    with pytest.raises(SettingsError, match=r"^GATEWAY_DRAIN_SECONDS must be a number"):
        Settings.from_env({"GATEWAY_DRAIN_SECONDS": text})


@pytest.mark.parametrize("word", ["1", "true", "YES", "On"])
def test_booleans_take_every_spelling(word: str) -> None:
    assert Settings.from_env({"GATEWAY_QUERY_METRICS": word}).query_metrics is True
    negative = {"1": "0", "true": "false", "YES": "NO", "On": "Off"}[word]
    assert Settings.from_env({"GATEWAY_PLAIN_FIELDS": negative}).plain_fields is False


@pytest.mark.parametrize(("cls", "item", "spec"), _cases(lambda spec: spec.bounds is not None))
def test_bounds_are_enforced(cls: Any, item: Field[Any], spec: Setting) -> None:
    bounds = spec.bounds
    assert bounds is not None and bounds.minimum is not None
    integral = _kind(cls, item) is int
    outside = [bounds.minimum if bounds.exclusive_minimum else bounds.minimum - 1]
    inside = [bounds.minimum + 1 if bounds.exclusive_minimum else bounds.minimum]
    if bounds.maximum is not None:
        outside.append(bounds.maximum + 1)
        inside.append(bounds.maximum)
    for value in outside:
        value = int(value) if integral else float(value)
        with pytest.raises(SettingsError) as raised:
            replace(cls(), **{item.name: value}).validate()
        assert raised.value.variable == spec.variable
        assert raised.value.message == f"{spec.variable} must be {bounds.text}, got {value}"
        with pytest.raises(SettingsError) as read:
            cls.from_env({spec.variable: str(value)})
        assert read.value.message == f"{spec.variable} must be {bounds.text}, got {value}"
    for value in inside:
        replace(cls(), **{item.name: int(value) if integral else float(value)}).validate()


def test_bound_messages_read_as_before() -> None:
    cases = {
        "GATEWAY_PORT": ("70000", "GATEWAY_PORT must be a port number, got 70000"),
        "GATEWAY_DRAIN_SECONDS": ("-1", "GATEWAY_DRAIN_SECONDS must be 0 or more, got -1.0"),
        "GATEWAY_MAX_COST": ("0", "GATEWAY_MAX_COST must be positive, got 0"),
        "GATEWAY_SESSION_TTL_DAYS": (
            "0.00001",
            "GATEWAY_SESSION_TTL_DAYS must be at least one second, got 1e-05",
        ),
        "CONTACTS_UPLOAD_LEASE_SECONDS": ("1", "CONTACTS_UPLOAD_LEASE_SECONDS must be at least 2, got 1"),
    }
    for variable, (text, message) in cases.items():
        with pytest.raises(SettingsError) as raised:
            Settings.from_env({variable: text})
        assert (raised.value.variable, raised.value.message) == (variable, message)


@pytest.mark.parametrize(("cls", "item", "spec"), _cases(lambda spec: spec.choices))
def test_allowed_values_are_enforced(cls: Any, item: Field[Any], spec: Setting) -> None:
    with pytest.raises(SettingsError) as raised:
        cls.from_env({spec.variable: "sideways"})
    assert raised.value.variable == spec.variable
    assert raised.value.message.startswith(f"{spec.variable} must be ")
    assert raised.value.message.endswith(", got 'SIDEWAYS'" if spec.case == "upper" else ", got 'sideways'")


def test_allowed_values_read_as_before() -> None:
    expected = {
        "CASSANDRA_IO": ("epoll", "CASSANDRA_IO must be 'loop' or 'thread', got 'epoll'"),
        "GATEWAY_LOG_FORMAT": ("xml", "GATEWAY_LOG_FORMAT must be 'json' or 'text', got 'xml'"),
        "CASSANDRA_SERIAL_CONSISTENCY": (
            "quorum",
            "CASSANDRA_SERIAL_CONSISTENCY must be LOCAL_SERIAL or SERIAL, got 'QUORUM'",
        ),
        "CASSANDRA_CONSISTENCY": (
            "most",
            "CASSANDRA_CONSISTENCY must be one of ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM, "
            "LOCAL_ONE, ANY, got 'MOST'",
        ),
    }
    for variable, (text, message) in expected.items():
        with pytest.raises(SettingsError) as raised:
            Settings.from_env({variable: text})
        assert raised.value.message == message


@pytest.mark.parametrize(("cls", "item", "spec"), _cases(lambda spec: spec.check is not None))
def test_syntax_checks_name_the_variable(cls: Any, item: Field[Any], spec: Setting) -> None:
    value, message = BAD[spec.check]
    with pytest.raises(SettingsError) as raised:
        replace(cls(), **{item.name: value}).validate()
    assert raised.value.variable == spec.variable
    assert raised.value.message.startswith(spec.variable + message)
    assert "\n" not in raised.value.message
    for alias in spec.aliases:
        text = ",".join(value) if isinstance(value, tuple) else str(value)
        with pytest.raises(SettingsError) as read:
            cls.from_env({alias: text})
        assert read.value.message.startswith(alias + message), "named as it was set"


def test_every_problem_is_reported_in_one_line_named_after_the_first() -> None:
    with pytest.raises(SettingsError) as raised:
        replace(Settings(), room_bucket="fortnight", port=-1, rate_sends="lots").validate()
    assert raised.value.variable == "GATEWAY_PORT"
    assert raised.value.message == (
        "GATEWAY_PORT must be a port number, got -1; "
        "GATEWAY_RATE_SENDS: expected '<count>/<period>' such as '20/h' or '5/10m', or 'off', got 'lots'; "
        "GATEWAY_ROOM_BUCKET must be 'year', 'month', 'day' or '<N>s', got 'fortnight'"
    )


def test_defaults_pass_their_own_checks() -> None:
    Settings().validate()
    ToolingSettings().validate()
    assert Settings.from_env({}) == Settings()


def test_words_are_stored_in_one_case() -> None:
    read = Settings.from_env(
        {"GATEWAY_LOG_LEVEL": "warning", "CASSANDRA_IO": "Thread", "GATEWAY_LOG_FORMAT": "JSON"}
    )
    assert (read.log_level, read.cassandra_io, read.log_format) == ("WARNING", "thread", "json")


def test_credentials_are_taken_as_given() -> None:
    read = Settings.from_env({"CASSANDRA_USERNAME": " app ", "CASSANDRA_PASSWORD": " pass word "})
    assert (read.username, read.password) == (" app ", " pass word ")
    assert Settings.from_env({"CASSANDRA_PASSWORD": ""}).password is None


def test_a_real_cluster_defaults_to_replicas_in_a_datacenter() -> None:
    cluster = Settings.from_env({"CASSANDRA_CONTACT_POINTS": "10.0.0.1, 10.0.0.2"})
    assert cluster.contact_points == ("10.0.0.1", "10.0.0.2")
    assert not cluster.embedded
    assert cluster.replication == CLUSTER_REPLICATION
    given = Settings.from_env({"CASSANDRA_CONTACT_POINTS": "10.0.0.1", "CASSANDRA_REPLICATION": "dc1:5"})
    assert given.replication == "dc1:5"
    assert Settings.from_env({}).embedded


def test_a_real_cluster_needs_a_pepper_and_a_signing_secret_of_its_own() -> None:
    cluster = replace(
        Settings(),
        contact_points=("10.0.0.11",),
        url_signing_secret=secrets.token_hex(32),
        verification_webhook_url="https://sms.example/codes",
    )
    with pytest.raises(SettingsError) as raised:
        cluster.validate()
    assert raised.value.variable == "GATEWAY_CONTACTS_IDENTITY_PEPPER"
    assert raised.value.message.startswith(
        "GATEWAY_CONTACTS_IDENTITY_PEPPER must be set to a secret of your own on a real cluster"
    )
    own = secrets.token_hex(32)
    replace(cluster, contacts_identity_pepper=own).validate()
    with pytest.raises(SettingsError) as unsigned:
        replace(cluster, contacts_identity_pepper=own, url_signing_secret="").validate()
    assert unsigned.value.message == (
        "GATEWAY_URL_SIGNING_SECRET must be set with CASSANDRA_CONTACT_POINTS (gateways share it)"
    )
    # The embedded development node accepts the default pepper and a random signing key.
    replace(
        Settings(), contact_points=(), contacts_identity_pepper=Settings.contacts_identity_pepper
    ).validate()


#: A secret of the length ``openssl rand -hex 32`` gives, made once per run.
OWN_SECRET = secrets.token_hex(32)
COMPOSE = (Path(__file__).resolve().parents[2] / "compose.yaml").read_text()


def test_a_real_cluster_refuses_published_and_short_secrets() -> None:
    cluster = replace(
        Settings(),
        contact_points=("10.0.0.11",),
        url_signing_secret=OWN_SECRET,
        contacts_identity_pepper=secrets.token_hex(32),
        verification_webhook_url="https://sms.example/codes",
    )
    cluster.validate()
    published = [
        ("GATEWAY_URL_SIGNING_SECRET", "url_signing_secret", "compose-demo-secret-replace-me-0123456789"),
        (
            "GATEWAY_CONTACTS_IDENTITY_PEPPER",
            "contacts_identity_pepper",
            "compose-demo-secret-replace-me-0123456789",
        ),
    ]
    # Whatever default compose.yaml offers for a secret is refused too.
    for variable in ("GATEWAY_URL_SIGNING_SECRET", "GATEWAY_CONTACTS_IDENTITY_PEPPER"):
        for default in re.findall(rf"{variable}:-([^}}]*)\}}", COMPOSE):
            field = "url_signing_secret" if "SIGNING" in variable else "contacts_identity_pepper"
            if not default.startswith("$"):  # a literal, not another variable
                published.append((variable, field, default))
    for variable, field, value in published:
        with pytest.raises(SettingsError) as raised:
            changes: dict[str, Any] = {field: value}
            replace(cluster, **changes).validate()
        assert raised.value.variable == variable
        assert raised.value.message.startswith(f"{variable} is a value published with the gateway"), raised
        assert "\n" not in raised.value.message
    for variable, field in (
        ("GATEWAY_CONTACTS_IDENTITY_PEPPER", "contacts_identity_pepper"),
        ("GATEWAY_URL_SIGNING_SECRET", "url_signing_secret"),
    ):
        with pytest.raises(SettingsError) as short:
            short_one: dict[str, Any] = {field: "x"}
            replace(cluster, **short_one).validate()
        assert short.value.variable == variable
        assert short.value.message.startswith(f"{variable} must be at least 32 characters")
    # The embedded development node takes them: its data is nobody's.
    replace(
        Settings(),
        url_signing_secret="compose-demo-secret-replace-me-0123456789",
        contacts_identity_pepper="x",
    ).validate()


def test_any_origin_is_the_only_origin() -> None:
    replace(Settings(), cors_origins=("*",)).validate()
    replace(Settings(), cors_origins=("https://a.example", "https://b.example")).validate()
    with pytest.raises(SettingsError) as raised:
        replace(Settings(), cors_origins=("*", "https://a.example")).validate()
    assert raised.value.message == "GATEWAY_CORS_ORIGINS: '*' (any origin) must be the only entry"


def test_rate_variables_are_the_declared_rates() -> None:
    rates = Settings().rate_variables()
    assert rates["GATEWAY_RATE_SIGN_IN"] == "30/m"
    assert sorted(rates) == sorted(
        spec.variable
        for _, spec in declared(Settings)
        if spec.group == "Rate limits" and spec.variable.startswith("GATEWAY_RATE_")
    )


def test_the_gateway_settings_hold_no_local_tooling() -> None:
    tooling = {"cassandra_home", "cassandra_heap", "cassandra_ring_heap", "redis_port", "redis_cluster_port"}
    assert {item.name for item in fields(ToolingSettings)} == tooling
    assert not tooling & {item.name for item in fields(Settings)}
    environ = {
        "GATEWAY_CASSANDRA_HOME": "/srv/node",
        "GATEWAY_CASSANDRA_HEAP": "2G",
        "GATEWAY_CASSANDRA_RING_HEAP": "256M",
        "GATEWAY_REDIS_PORT": "6391",
    }
    assert ToolingSettings.from_env(environ) == ToolingSettings(Path("/srv/node"), "2G", "256M", 6391)
    # The running gateway does not even read them.
    assert Settings.from_env({**environ, "GATEWAY_REDIS_PORT": "many"}) == Settings()
    with pytest.raises(SettingsError, match=r"^GATEWAY_REDIS_PORT must be an integer, got 'many'$"):
        ToolingSettings.from_env({"GATEWAY_REDIS_PORT": "many"})


def test_the_embedded_home_follows_the_cache_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ToolingSettings().cassandra_home == tmp_path / "cassandra-gateway"
    assert ToolingSettings.from_env({}).cassandra_home == tmp_path / "cassandra-gateway"


def test_current_values_hide_secrets() -> None:
    shown = dict(current_values(replace(Settings(), password="hunter2", cors_origins=("https://a.example",))))
    assert shown["CASSANDRA_PASSWORD"] == "(hidden)"
    assert shown["GATEWAY_URL_SIGNING_SECRET"] == ""
    assert shown["GATEWAY_CORS_ORIGINS"] == "https://a.example"
    assert shown["GATEWAY_PLAIN_FIELDS"] == "1"
    assert shown["GATEWAY_DRAIN_SECONDS"] == "10"
