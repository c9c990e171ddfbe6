"""What only ``PostgresCheckpointer`` does, on a real server (``tests/support/postgres_server.py``): it never
shows the password, a server it cannot reach or a connection that breaks is the project's error
(and the run saves again once the server is back), and a schema whose tables are not its own is
refused. The contract every store keeps is in ``test_store_contract.py``.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.support.helpers import MODEL, USER
from tests.support.postgres_server import with_schema
from tests.support.stores import finished_run, look
from toolrunner import CheckpointError, ParamsError, Phase, PostgresCheckpointer, RunStatus, ToolRunner
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    user = parts.netloc.split("@")[0].split(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.netloc.split('@', 1)[1]}"))


async def test_the_password_is_never_shown(postgres_url: str) -> None:
    url = with_password(postgres_url, "s3cret-pw")  # the test server trusts local users: any password works
    store = PostgresCheckpointer(url)
    try:
        await finished_run(store, "r")
        assert "s3cret" not in repr(store)
        assert repr(store).startswith("PostgresCheckpointer(<postgres on ")
    finally:
        store.close()
    unreachable = PostgresCheckpointer(
        with_password("postgresql://ada@/db?host=/nonexistent/dir", "s3cret-pw"), timeout=0.2
    )
    try:
        with pytest.raises(CheckpointError) as raised:
            await unreachable.list_runs()
    finally:
        unreachable.close()
    assert "s3cret" not in str(raised.value)
    assert "the connection to PostgreSQL (db on /nonexistent/dir) failed" in str(raised.value)
    assert "No such file or directory" in str(raised.value)
    assert "check the server, then try again" in str(raised.value)


UNREADABLE_URLS = [
    "postgresql://app:p%ssw0rd-TOPSECRET@/db?host=/nonexistent",  # a raw '%' in the password
    "postgresql://app:TOPSECRET%@/db",
    "postgresql://app:TOPSECRET@/db?sslmode=%zz",
    "postgresql://app:TOPSECRET@[::1/db",
    "postgresql://app:TOP\udce9SECRET@/db",  # a lone surrogate, as sys.argv gives a byte that is not UTF-8
]


@pytest.mark.parametrize("url", UNREADABLE_URLS)
async def test_a_url_that_cannot_be_read_is_refused_without_quoting_any_of_it(url: str) -> None:
    """libpq's own message quotes the part it could not read, which may be the password."""
    with pytest.raises(ParamsError) as raised:
        PostgresCheckpointer(url)
    message = str(raised.value)
    assert "SECRET" not in message
    assert "p%ss" not in message
    assert "\n" not in message
    assert message.startswith("the PostgreSQL URL cannot be read (")
    assert "percent-encoded (a '%' as %25" in message


async def test_a_run_whose_connection_breaks_saves_again_once_the_server_answers(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url, max_connections=1)
    script = [tool_reply(tool_call("look", {"q": "a"}, id="toolu_1")), text_reply("Done.")]
    runner = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look],
        checkpointer=store,
        run_id="r",
    )
    try:
        async for _ in runner:
            break  # the first reply is saved; the pool holds its one connection, idle
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = '' AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )
        with pytest.raises(CheckpointError, match=r"the connection to PostgreSQL \(.*\) failed"):
            await runner.until_done()
        await runner.until_done()  # the pool opened a new connection: the run saves again and ends
        assert runner.state.phase is Phase.DONE
        summary = await store.get_run("r")
        assert summary is not None
        assert summary.status is RunStatus.FINISHED
    finally:
        store.close()


async def test_a_schema_with_a_table_of_another_shape_is_refused(postgres_server: str) -> None:
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute("CREATE SCHEMA IF NOT EXISTS foreign_tables")
        admin.execute("CREATE TABLE IF NOT EXISTS foreign_tables.toolrunner_runs (run_id TEXT, owner TEXT)")
    store = PostgresCheckpointer(with_schema(postgres_server, "foreign_tables"))
    try:
        with pytest.raises(
            CheckpointError, match="has a table 'toolrunner_runs' that toolrunner did not make"
        ):
            await store.list_runs()
    finally:
        store.close()


async def test_two_stores_on_one_database_share_its_runs(postgres_url: str) -> None:
    first, second = PostgresCheckpointer(postgres_url), PostgresCheckpointer(postgres_url)
    try:
        await finished_run(first, "r")
        summary = await second.get_run("r")
        assert summary is not None
        assert summary.status is RunStatus.FINISHED
        assert await second.delete_run("r")
        assert await first.load("r") is None
    finally:
        first.close()
        second.close()
