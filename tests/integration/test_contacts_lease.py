"""The upload lease lives as long as the upload: a slow upload renews it, so a second
upload of the same book is refused for the whole time, not only the lease's first term."""

from __future__ import annotations

import asyncio

from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.contacts import UPLOAD, all_contacts, e164, fresh_phone
from tests.support.tcp_proxy import TcpProxy


async def test_a_slow_upload_keeps_its_lease_past_the_lease_time(
    make_server: ServerFactory, base_settings: Settings
) -> None:
    # 20 ms each way per request and one request in flight: the 300 index writes alone
    # take at least 300 x 40 ms = 12 s, several terms of the 2 s lease.
    proxy = TcpProxy("127.0.0.1", base_settings.cassandra_port, latency=0.02)
    await proxy.start()
    try:
        slow, app = await make_server(
            contact_points=("127.0.0.1",),
            cassandra_port=proxy.port,
            contacts_upload_lease_seconds=2,
            contacts_max_in_flight=1,
        )
        user = await slow.sign_up("slowbook")
        book = [{"networkId": fresh_phone(), "name": f"Slow {i}"} for i in range(300)]
        first = asyncio.create_task(slow.call(UPLOAD, {"network": "tel", "contacts": book}, token=user.token))
        db = app[SERVICES].db
        lease = "SELECT upload_id FROM contact_upload_leases WHERE login = ? AND network = 'tel'"
        for _ in range(500):
            if (await db.execute(lease, (user.login,))).one() is not None:
                break
            await asyncio.sleep(0.01)
        held = (await db.execute(lease, (user.login,))).one()
        assert held is not None
        blocked = 0
        # Three lease terms later the first upload is still running and still holds the
        # same lease: a second upload is refused every time.
        for _ in range(3):
            await asyncio.sleep(2.5)
            assert not first.done(), first.result()
            second = await slow.call(UPLOAD, {"network": "tel", "contacts": []}, token=user.token)
            assert second.codes == ["CONFLICT"]
            assert (await db.execute(lease, (user.login,))).one() == held
            blocked += 1
        response = await first
        assert not response.errors, response.errors
        assert blocked == 3
        # Released at the end: the next upload runs, and the book is the first one whole.
        assert (await db.execute(lease, (user.login,))).one() is None
        stored = sorted(c["networkId"] for c in await all_contacts(slow, user.token, "tel"))
        assert stored == sorted(e164(c["networkId"]) for c in book)
    finally:
        await proxy.cut()
