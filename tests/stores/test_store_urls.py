"""A store URL's secret is never shown, in any form libpq reads one (``toolrunner._stores.urls``): not by
the command line (its output, its errors, the lines ``runs show`` gives to paste), not by
``open_store``'s errors or a store's ``repr``, not by the inbox; libpq's keyword/value settings
given where a URL is expected are refused without being repeated; ``sqlite://runs.db`` says to use
three slashes.
"""

from __future__ import annotations

import io
import urllib.parse

import anyio
import psycopg.conninfo
import pytest
from hypothesis import given, settings, strategies as st

from tests.support.stores import paused_run
from toolrunner import ParamsError, PostgresCheckpointer, open_store
from toolrunner._ops.cli import ExitCode, run
from toolrunner._stores.urls import holds_secret, is_conninfo, shown_url

SECRET = "S3CR3T"


def forms(password: str) -> dict[str, str]:
    """``password`` in each form libpq reads a secret from, around host ``db`` and database ``agents``."""
    quoted = urllib.parse.quote(password, safe="")
    kv = "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return {
        "user information": f"postgresql://app:{quoted}@db/agents",
        "user information, no user": f"postgresql://:{quoted}@db:5432/agents",
        "user information, several hosts": f"postgres://app:{quoted}@h1:5432,h2:5433/agents",
        "query": f"postgresql://db/agents?password={quoted}",
        "query among others": f"postgresql://db/agents?user=app&password={quoted}&sslmode=prefer",
        "query, name percent-encoded": f"postgresql://db/agents?pass%77ord={quoted}",
        "sslpassword": f"postgresql://app@db/agents?sslpassword={quoted}",
        "sslpassword, name percent-encoded": f"postgresql://db/agents?%73slpassword={quoted}",
        "keyword/value": f"host=db dbname=agents password={kv}",
        "keyword/value, spaces around =": f"host=db   password = {kv} dbname=agents",
        "keyword/value, first": f"password={kv} host=db",
        "keyword/value, sslpassword": f"host=db sslpassword={kv}",
    }


def secrets_libpq_reads(text: str) -> list[str]:
    parts = psycopg.conninfo.conninfo_to_dict(text)
    return [str(parts[key]) for key in ("password", "sslpassword") if parts.get(key)]


@pytest.mark.parametrize("form", list(forms(SECRET)))
def test_each_form_libpq_reads_a_secret_from_is_shown_with_the_secret_masked(form: str) -> None:
    text = forms(SECRET + " it's @/%\\x")[form]
    assert secrets_libpq_reads(text) == [SECRET + " it's @/%\\x"]  # libpq reads the secret there
    shown = shown_url(text)
    assert SECRET not in shown
    assert "***" in shown
    assert holds_secret(text)
    assert "db" in shown or "h1" in shown  # the rest is shown as it was


@given(
    password=st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]), min_size=1, max_size=12),
    form=st.sampled_from(list(forms(SECRET))),
)
@settings(max_examples=300, deadline=None)
def test_no_secret_libpq_reads_is_shown_whatever_it_holds(password: str, form: str) -> None:
    text = forms(SECRET + password)[form]
    assert secrets_libpq_reads(text) == [SECRET + password]
    assert SECRET not in shown_url(text)


def test_a_url_or_a_path_without_a_secret_is_shown_as_it_is() -> None:
    for text in [
        "postgresql://app@db/agents?options=-csearch_path%3Dtoolrunner",
        "postgresql:///agents?host=/var/run/postgresql",
        "sqlite:////var/lib/app/runs.db",
        "runs.db",
        "/var/lib/app/a=b.db",
        "host-is-not-a-keyword=1.db",
    ]:
        assert shown_url(text) == text
        assert not holds_secret(text)
    assert not is_conninfo("/var/lib/app/a=b.db")
    assert is_conninfo("dbname=agents")
    assert shown_url("host=db password='unterminated S3CR3T") == "<connection settings that cannot be read>"


def test_open_store_refuses_keyword_value_settings_and_a_two_slash_sqlite_url_without_a_secret() -> None:
    for text in [forms(SECRET)[form] for form in forms(SECRET) if form.startswith("keyword/value")]:
        with pytest.raises(ParamsError, match="keyword/value connection settings") as raised:
            open_store(text)
        assert SECRET not in str(raised.value)
    with pytest.raises(ParamsError, match=r"'sqlite://runs.db' is not an SQLite URL .* use three slashes"):
        open_store("sqlite://runs.db")
    with pytest.raises(ParamsError, match="use three slashes") as raised:
        open_store(f"sqlite://app:{SECRET}@host/runs.db")
    assert SECRET not in str(raised.value)
    with pytest.raises(ParamsError, match="begins with postgresql:// ") as raised:
        open_store(f"postgresql:app:{SECRET}@db/agents")
    assert SECRET not in str(raised.value)
    for form in forms(SECRET).values():
        if "://" in form:
            assert SECRET not in repr(open_store(form))  # not opened: its repr names the database and host


def cli(url: str, *argv: str) -> tuple[int, str]:
    """The command line on ``url``; its exit status and everything it printed."""
    out, err = io.StringIO(), io.StringIO()
    code = run([*argv, "--store", url], out, err)
    return code, out.getvalue() + err.getvalue()


def with_secret(url: str, form: str) -> str:
    """``url`` (of the test server, which trusts every connection) with ``SECRET`` in ``form``."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or "postgres"
    parts = parts._replace(netloc=f"{user}@{host}")  # the server's URL has an empty password: none
    if form == "user information":
        return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:{SECRET}@{host}"))
    if form == "query":
        return urllib.parse.urlunsplit(parts._replace(query=f"{parts.query}&password={SECRET}"))
    if form == "query, name percent-encoded":
        return urllib.parse.urlunsplit(parts._replace(query=f"{parts.query}&pass%77ord={SECRET}"))
    if form == "sslpassword":
        return urllib.parse.urlunsplit(parts._replace(query=f"{parts.query}&sslpassword={SECRET}"))
    raise AssertionError(form)


@pytest.mark.parametrize("form", ["user information", "query", "query, name percent-encoded", "sslpassword"])
def test_no_command_prints_the_secret_of_a_url_that_works(
    postgres_url: str, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = with_secret(postgres_url, form)
    anyio.run(paused_run, PostgresCheckpointer(url), "order-42", 120, 80)
    printed: list[str] = []
    commands: list[list[str]] = [
        ["runs", "list"],
        ["runs", "list", "--json"],
        ["runs", "show", "order-42"],
        ["runs", "show", "order-42", "--json"],
        ["runs", "show", "ghost"],
        ["runs", "approve", "order-42", "order-42_pay0", "--by", "ada"],
        ["runs", "approve", "order-42", "order-42_pay0", "--by", "bob"],  # decided already: exit 4
        ["runs", "deny", "order-42", "nope"],
        ["runs", "prune", "--older-than", "30d", "--dry-run"],
        ["runs", "list", "--cursor", "forged"],
    ]
    for command in commands:
        code, output = cli(url, *command)
        assert code in (ExitCode.OK, ExitCode.USAGE, ExitCode.NOT_FOUND, ExitCode.CONFLICT), output
        printed.append(output)
    assert "Decide with: toolrunner runs approve order-42 order-42_pay0\n" in printed[2]
    assert "its URL holds a password, which is not printed" in printed[2]
    assert SECRET not in "".join(printed)


def test_keyword_value_settings_are_refused_by_every_command_and_the_inbox_without_being_repeated(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings_ = psycopg.conninfo.make_conninfo(postgres_url, password=SECRET)
    assert is_conninfo(settings_)
    outputs: list[str] = []
    for command in (["runs", "list"], ["runs", "show", "r"], ["runs", "delete", "r"], ["inbox"]):
        code, output = cli(settings_, *command)
        assert code == ExitCode.USAGE, output
        assert "keyword/value connection settings" in output
        outputs.append(output)
    monkeypatch.setenv("TOOLRUNNER_STORE", settings_)
    monkeypatch.setenv("TOOLRUNNER_INBOX_TOKEN", "t" * 32)
    from toolrunner.inbox import app_from_environment

    with pytest.raises(ParamsError, match="keyword/value connection settings") as raised:
        app_from_environment()
    outputs.append(str(raised.value))
    assert SECRET not in "".join(outputs)


def test_a_two_slash_sqlite_url_is_a_usage_error_that_says_use_three() -> None:
    code, output = cli("sqlite://runs.db", "runs", "list")
    assert code == ExitCode.USAGE
    assert output == (
        "toolrunner: 'sqlite://runs.db' is not an SQLite URL toolrunner reads (sqlite://runs.db would name a host, "
        "not a file): use three slashes before a relative path (sqlite:///runs.db) and four before an absolute one "
        "(sqlite:////var/lib/app/runs.db).\n"
    )
