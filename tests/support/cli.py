"""Run the ``gateway`` command line against the test run's keyspace, as an operator would."""

from __future__ import annotations

import asyncio
import os
import sys

from gateway.settings import Settings


async def run_cli(settings: Settings, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """(exit status, stdout and stderr) of ``python -m gateway <args>``; env adds variables."""
    secret = settings.url_signing_secret
    secrets = {"GATEWAY_URL_SIGNING_SECRET": secret} if secret else {}
    full_env = {
        **os.environ,
        "CASSANDRA_KEYSPACE": settings.keyspace,
        "CASSANDRA_CONTACT_POINTS": ",".join(settings.contact_points) or "127.0.0.1",
        "CASSANDRA_PORT": str(settings.cassandra_port),
        "CASSANDRA_REPLICATION": settings.replication,
        "GATEWAY_CONTACTS_IDENTITY_PEPPER": settings.contacts_identity_pepper,
        "GATEWAY_VERIFICATION_WEBHOOK_URL": settings.verification_webhook_url,
        "GATEWAY_LOG_LEVEL": "WARNING",
        **secrets,
        **(env or {}),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        *args,
        env=full_env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    return process.returncode or 0, out.decode()
