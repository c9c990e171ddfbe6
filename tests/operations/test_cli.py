"""The command line (``toolrunner runs ...``): what it prints for people and for scripts, and the
exit status of each outcome, on an SQLite file and on PostgreSQL.

The commands run in this process through ``toolrunner._ops.cli.run`` (with the time given, so that
"saved 5m ago" is the same on every machine); one test starts ``python -m toolrunner`` itself.
"""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import stores
from tests.support.stores import Clock, finished_run, paid, paused_run, running_run, save_changed
from toolrunner import (
    AwaitingApprovalError,
    CheckpointError,
    ParamsError,
    RunState,
    RunStore,
    SQLiteCheckpointer,
    ToolRunner,
    open_store,
)
from toolrunner._ops.cli import ExitCode, _parser, run  # pyright: ignore[reportPrivateUsage]
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

NOW = 1_750_000_000.0  # 2025-06-15 15:06:40 UTC


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


class Cli:
    """Runs the command line on one store, as of ``NOW``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.out = ""
        self.err = ""

    def __call__(self, *argv: str, store: bool = True) -> int:
        out, err = io.StringIO(), io.StringIO()
        arguments = [*argv, "--store", self.url] if store else list(argv)
        code = run(arguments, out, err, now=lambda: NOW)
        self.out, self.err = out.getvalue(), err.getvalue()
        return code

    def json(self, *argv: str) -> Any:
        assert self(*argv, "--json") == ExitCode.OK, self.err
        return json.loads(self.out)


def fill(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, *makers: Callable[[RunStore], Awaitable[object]]
) -> None:
    """Run ``makers`` on the store, each a minute after the last, and close it."""
    clock = Clock(NOW - 3_600)
    monkeypatch.setattr(store, "_now", clock)

    async def main() -> None:
        for make in makers:
            clock.now += 60
            await make(store)

    anyio.run(main)
    close = getattr(store, "close", None)
    if callable(close):
        close()


def three_runs(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(
        store,
        monkeypatch,
        lambda store: finished_run(store, "done"),
        lambda store: paused_run(store, "order-42", 120, 80),
        lambda store: running_run(store, "mid"),
    )


@pytest.fixture
def sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    path = tmp_path / "runs.db"
    three_runs(SQLiteCheckpointer(path), monkeypatch)
    return Cli(str(path))


# -- list ---------------------------------------------------------------------------------------------


def test_list_prints_a_table_newest_first(sqlite: Cli) -> None:
    assert sqlite("runs", "list") == ExitCode.OK
    assert sqlite.out.splitlines() == [
        "RUN       STATUS    TURNS  COST     UPDATED (UTC)                  WAITING / ENDED",
        "mid       running   1      $0.0001  2025-06-15 14:09:40 (57m ago)",
        'order-42  awaiting  1      $0.0001  2025-06-15 14:08:40 (58m ago)  order-42_pay0: pay {"amount": 120} (+1 more)',
        "done      finished  2      $0.0002  2025-06-15 14:07:40 (59m ago)  model",
    ]
    assert sqlite.err == ""


def test_list_filters_and_pages_and_says_when_nothing_matches(sqlite: Cli) -> None:
    assert sqlite("runs", "list", "--status", "awaiting", "--status", "finished") == ExitCode.OK
    assert [line.split()[0] for line in sqlite.out.splitlines()[1:]] == ["order-42", "done"]
    assert sqlite("runs", "list", "--updated-before", "57m30s") == ExitCode.OK
    assert [line.split()[0] for line in sqlite.out.splitlines()[1:]] == ["order-42", "done"]
    assert (
        sqlite("runs", "list", "--updated-after", "2025-06-15T14:09:00") == ExitCode.OK
    )  # UTC without a zone
    assert [line.split()[0] for line in sqlite.out.splitlines()[1:]] == ["mid"]
    assert sqlite("runs", "list", "--status", "failed") == ExitCode.OK
    assert sqlite.out == "No runs match.\n"
    assert sqlite("runs", "list", "--limit", "2") == ExitCode.OK
    cursor = sqlite.out.splitlines()[-1].removeprefix("More runs: add --cursor ")
    assert sqlite("runs", "list", "--limit", "2", "--cursor", cursor) == ExitCode.OK
    assert [line.split()[0] for line in sqlite.out.splitlines()[1:]] == ["done"]


def test_list_as_json_gives_every_summary_field(sqlite: Cli) -> None:
    data = sqlite.json("runs", "list", "--status", "awaiting")
    assert data["cursor"] is None
    [run_] = data["runs"]
    assert run_ == {
        "run_id": "order-42",
        "status": "awaiting",
        "end_reason": "awaiting_approval",
        "waiting": [
            {"id": "order-42_pay0", "name": "pay", "input": {"amount": 120}},
            {"id": "order-42_pay1", "name": "pay", "input": {"amount": 80}},
        ],
        "created": "2025-06-15T14:08:40+00:00",
        "updated": "2025-06-15T14:08:40+00:00",
        "turns": 1,
        "cost": "0.000105",
        "failure": None,
        "lease": None,
    }


def test_wrong_arguments_are_usage_errors_that_say_what_to_give(sqlite: Cli) -> None:
    assert sqlite("runs", "list", "--status", "waiting") == ExitCode.USAGE
    assert "invalid choice: 'waiting'" in sqlite.err
    assert sqlite("runs", "list", "--updated-before", "last week") == ExitCode.USAGE
    assert "'last week' is neither a duration (30d, 12h, 45m) nor a time" in sqlite.err
    assert sqlite("runs", "list", "--limit", "0") == ExitCode.USAGE
    assert "limit must be an int from 1 to 1000" in sqlite.err
    assert sqlite("runs", "list", "--cursor", "nope") == ExitCode.USAGE
    assert sqlite("runs", store=False) == ExitCode.USAGE
    assert sqlite(store=False) == ExitCode.USAGE
    assert "usage: toolrunner" in sqlite.err


def test_the_store_comes_from_the_option_or_the_environment_and_must_exist(
    sqlite: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLRUNNER_STORE", raising=False)
    assert sqlite("runs", "list", store=False) == ExitCode.USAGE
    assert "say which store with --store URL or the TOOLRUNNER_STORE variable" in sqlite.err
    monkeypatch.setenv("TOOLRUNNER_STORE", f"sqlite:///{sqlite.url}")
    assert sqlite("runs", "list", store=False) == ExitCode.OK
    missing = Cli(str(tmp_path / "typo.db"))
    assert missing("runs", "list") == ExitCode.NOT_FOUND
    assert f"there is no store at {str(tmp_path / 'typo.db')!r}" in missing.err
    assert not (tmp_path / "typo.db").exists()
    other = Cli("redis://localhost/0")
    assert other("runs", "list") == ExitCode.USAGE
    assert "toolrunner has no store for URLs of the kind 'redis://'" in other.err
    assert open_cli_error("sqlite:///") == (  # was "no store at '.'": the working directory
        "toolrunner: the store URL 'sqlite:///' names no file; use sqlite:///relative/runs.db, "
        "sqlite:////absolute/runs.db, a path to an SQLite file, or postgresql://user:password@host/dbname.\n"
    )
    for nothing in ["sqlite:///", ""]:  # were SQLiteCheckpointer('.')
        with pytest.raises(ParamsError, match=f"the store URL {nothing!r} names no file"):
            open_store(nothing)


def open_cli_error(url: str) -> str:
    cli = Cli(url)
    assert cli("runs", "list") == ExitCode.USAGE
    return cli.err


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:p%ssw0rd-TOPSECRET@/db?host=/nonexistent",
        "postgresql://app:TOPSECRET%@/db",
        "postgresql://app:TOPSECRET@/db?sslmode=%zz",
    ],
)
def test_a_postgresql_url_that_cannot_be_read_is_a_usage_error_that_never_shows_the_password(
    url: str,
) -> None:
    cli = Cli(url)
    for command in (["runs", "list"], ["runs", "show", "r"], ["runs", "approve", "r", "c"]):
        assert cli(*command) == ExitCode.USAGE
        assert "SECRET" not in cli.out + cli.err
        assert cli.out == ""
        assert cli.err.startswith("toolrunner: the PostgreSQL URL cannot be read (")
        assert cli.err.count("\n") == 1


def test_a_file_that_is_not_a_store_is_a_failure_of_the_store(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database " * 100)
    cli = Cli(str(path))
    assert cli("runs", "list") == ExitCode.FAILED
    assert "cannot be used as a checkpoint database" in cli.err


# -- show ----------------------------------------------------------------------------------------------


def test_show_prints_the_conversation_and_the_calls_that_wait(sqlite: Cli) -> None:
    assert sqlite("runs", "show", "order-42") == ExitCode.OK
    assert sqlite.out.splitlines() == [
        "Run order-42: awaiting",
        "created 2025-06-15 14:08:40 UTC, last saved 2025-06-15 14:08:40 UTC (58m ago)",
        "1 turn, 10 input and 5 output tokens, $0.0001",
        "",
        "── user",
        "  Pay the invoices.",
        "",
        "── assistant (the latest reply)",
        '  → pay {"amount": 120}  [order-42_pay0]',
        '  → pay {"amount": 80}  [order-42_pay1]',
        "",
        "Waiting for a decision:",
        '  order-42_pay0  pay {"amount": 120}',
        "      Pay an amount.",
        '  order-42_pay1  pay {"amount": 80}',
        "      Pay an amount.",
        "",
        f"Decide with: toolrunner runs approve order-42 order-42_pay0 --store {sqlite.url}",
        f"         or: toolrunner runs deny order-42 order-42_pay0 --reason 'the reason' --store {sqlite.url}",
        f"         or: toolrunner runs answer order-42 order-42_pay0 'the result' --store {sqlite.url}",
    ]


@pytest.mark.parametrize(
    ("run_id", "call", "store"),
    [
        ("x; touch PWNED #", "toolu_1", "runs.db"),
        ('it\'s $(touch PWNED) `touch PWNED` "q" | &&', "toolu_1", "my $HOME runs.db"),
        ("-rf", "toolu_1", "-runs.db"),  # a run id, and a store, that look like options
        ("run", "-x", "runs.db"),  # a call id may start with "-"
        ("--store", "--store", "sqlite:///runs.db"),
        ("ünïcode run", "toolu_1", "sqlite:///my runs.db"),
    ],
)
def test_the_commands_show_prints_are_shell_quoted_and_give_back_the_run_call_and_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_id: str, call: str, store: str
) -> None:
    async def paused(store: RunStore) -> None:
        script = [tool_reply(tool_call("pay", {"amount": 5}, id=call)), text_reply("Paid.")]
        with pytest.raises(AwaitingApprovalError):
            await stores.runner(store, run_id, script).until_done()

    monkeypatch.chdir(tmp_path)
    fill(SQLiteCheckpointer(store.removeprefix("sqlite:///")), monkeypatch, paused)
    cli = Cli(store)
    assert cli("runs", "show", f"--store={store}", "--", run_id, store=False) == ExitCode.OK, cli.err
    lines = cli.out.splitlines()[-3:]
    assert [line[:13] for line in lines] == ["Decide with: ", "         or: ", "         or: "]
    dash = run_id.startswith("-") or call.startswith("-")
    store_option = [f"--store={store}"] if store.startswith("-") else ["--store", store]

    def argv(command: str, arguments: list[str], options: list[str]) -> list[str]:
        order = [*options, "--", *arguments] if dash else [*arguments, *options]
        return ["toolrunner", "runs", command, *order]

    expected: list[tuple[list[str], dict[str, str]]] = [
        (argv("approve", [run_id, call], store_option), {}),
        (argv("deny", [run_id, call], ["--reason", "the reason", *store_option]), {"reason": "the reason"}),
        (argv("answer", [run_id, call, "the result"], store_option), {"result": "the result"}),
    ]
    for line, (intended, fields) in zip(lines, expected, strict=True):
        assert shlex.split(line[13:]) == intended
        parsed = vars(_parser().parse_args(intended[1:]))
        assert parsed | {"run_id": run_id, "call_id": call, "store": store, **fields} == parsed
    assert not (tmp_path / "PWNED").exists()


def test_show_of_a_finished_run_shows_tool_calls_and_results(sqlite: Cli) -> None:
    assert sqlite("runs", "show", "done") == ExitCode.OK
    lines = sqlite.out.splitlines()
    assert lines[0] == "Run done: finished (model)"
    assert lines[4:] == [
        "── user",
        "  Pay the invoices.",
        "",
        "── assistant",
        '  → look {"q": "x"}  [done_look]',
        "",
        "── user",
        "  ← [done_look] found x",
        "",
        "── assistant",
        "  Done.",
    ]
    data = sqlite.json("runs", "show", "done")
    assert data["summary"]["status"] == "finished"
    assert RunState.from_dict(data["state"]).end_reason == "model"


def test_show_cuts_long_texts_and_inputs_unless_asked_for_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    long_text = "\n".join(f"line {n}: " + "word " * 30 for n in range(40))

    async def long_run(store: RunStore) -> None:
        script = [
            tool_reply(tool_call("look", {"q": "q" * 500}, id="toolu_long"), text=long_text),
            text_reply("x" * 2000),
        ]
        from tests.support.stores import look

        runner = ToolRunner(
            FakeMessagesAPI(script).async_client(),
            model="claude-sonnet-4-6",
            max_tokens=64,
            messages=[{"role": "user", "content": "Go."}],
            tools=[look],
            checkpointer=store,
            run_id="long",
        )
        await runner.until_done()

    fill(store, monkeypatch, long_run)
    cli = Cli(str(tmp_path / "runs.db"))
    assert cli("runs", "show", "long") == ExitCode.OK
    assert "… (" in cli.out
    assert "more characters)" in cli.out
    assert max(len(line) for line in cli.out.splitlines()) < 700
    assert "x" * 2000 not in cli.out
    assert cli("runs", "show", "long", "--full") == ExitCode.OK
    assert "x" * 2000 in cli.out
    assert "q" * 500 in cli.out
    assert "line 39:" in cli.out


def test_show_of_a_run_that_is_not_there_says_so(sqlite: Cli) -> None:
    assert sqlite("runs", "show", "ghost") == ExitCode.NOT_FOUND
    assert (
        sqlite.err
        == "toolrunner: no run named 'ghost' in the store; list them with `toolrunner runs list`.\n"
    )


# -- deciding ------------------------------------------------------------------------------------------


def resume_and_finish(path: str) -> ToolRunner:
    async def main() -> ToolRunner:
        from tests.support.stores import look, pay

        store = SQLiteCheckpointer(path)
        runner = await ToolRunner.resume(
            FakeMessagesAPI([text_reply("Paid.")]).async_client(),
            checkpointer=store,
            run_id="order-42",
            tools=[pay, look],
        )
        await runner.until_done()
        store.close()
        return runner

    return anyio.run(main)


def test_approve_deny_and_answer_decide_the_calls_and_the_run_goes_on(sqlite: Cli) -> None:
    assert (
        sqlite("runs", "approve", "order-42", "order-42_pay0", "--input", '{"amount": 100}', "--by", "ada")
        == ExitCode.OK
    )
    assert sqlite.out.startswith("Approved order-42_pay0 (pay) of run order-42 by ada at 2")
    assert "The run still waits for 1 call to be decided." in sqlite.out
    assert sqlite("runs", "answer", "order-42", "order-42_pay1", "paid by hand", "--by", "bob") == ExitCode.OK
    assert "The run is ready: it goes on when a resumer takes it up (toolrunner resume)" in sqlite.out
    assert sqlite("runs", "list", "--status", "ready") == ExitCode.OK
    assert "order-42  ready" in sqlite.out
    assert "decided: goes on once a resumer takes it up, or the app resumes it" in sqlite.out
    assert sqlite("runs", "show", "order-42") == ExitCode.OK
    assert sqlite.out.startswith("Run order-42: ready\n")
    assert sqlite("runs", "list", "--status", "running") == ExitCode.OK
    assert "order-42" not in sqlite.out  # never listed as running
    runner = resume_and_finish(sqlite.url)
    assert paid == [100]
    assert runner.state.end_reason == "model"


def test_decisions_as_json_give_the_record(sqlite: Cli) -> None:
    data = sqlite.json("runs", "deny", "order-42", "order-42_pay1", "--reason", "Too much.", "--by", "ada")
    assert data["decision"] == "denied"
    assert data["decided_by"] == "ada"
    assert data["status"] == "finished"
    assert data["result"] == {
        "type": "tool_result",
        "tool_use_id": "order-42_pay1",
        "content": "Too much.",
        "is_error": True,
    }
    data = sqlite.json(
        "runs", "answer", "order-42", "order-42_pay0", '{"paid": 120}', "--json-result", "--error"
    )
    assert data["result"]["is_error"] is True
    assert data["result"]["content"] == '{"paid": 120}'


def test_a_decision_that_cannot_be_taken_says_why_with_its_own_exit_status(sqlite: Cli) -> None:
    assert sqlite("runs", "approve", "ghost", "x") == ExitCode.NOT_FOUND
    assert sqlite("runs", "approve", "order-42", "nope") == ExitCode.NOT_FOUND
    assert "the calls that wait are ['order-42_pay0', 'order-42_pay1']" in sqlite.err
    assert sqlite("runs", "approve", "done", "done_look") == ExitCode.NOT_FOUND
    assert sqlite("runs", "approve", "order-42", "order-42_pay0", "--input", "{amount: 1}") == ExitCode.USAGE
    assert "--input is not JSON" in sqlite.err
    assert (
        sqlite("runs", "approve", "order-42", "order-42_pay0", "--input", '{"amount": "lots"}')
        == ExitCode.USAGE
    )
    assert "does not fit the input schema of 'pay': amount: 'lots' is not of type 'integer'" in sqlite.err
    assert sqlite("runs", "answer", "order-42", "order-42_pay0", "{", "--json-result") == ExitCode.USAGE
    assert (
        sqlite("runs", "deny", "order-42", "order-42_pay0", "--reason", "No.", "--by", "ada") == ExitCode.OK
    )
    assert sqlite("runs", "approve", "order-42", "order-42_pay0", "--by", "bob") == ExitCode.CONFLICT
    assert "the call 'order-42_pay0' of run 'order-42' was denied by 'ada' at 2" in sqlite.err
    assert "it cannot be decided again" in sqlite.err


def test_bad_input_to_a_decision_is_a_usage_error_and_the_call_still_waits(sqlite: Cli) -> None:
    """Exit 4 says someone decided first: a reason, input or result that cannot be used is exit 2,
    whichever of the command line or the store finds it (a reason, before the run is read)."""
    call = ["order-42", "order-42_pay0"]
    for reason in ["", "   "]:
        assert sqlite("runs", "deny", *call, "--reason", reason) == ExitCode.USAGE
        assert "needs a reason the model can read" in sqlite.err
    assert sqlite("runs", "approve", *call, "--input", "null") == ExitCode.USAGE  # was: approved, unedited
    assert sqlite.err == (
        "toolrunner: --input is null, not a JSON object: give the tool's whole input as an object "
        "(--input '{\"amount\": 100}'), or leave --input out to approve the call as it is.\n"
    )
    for given, kind in [("[1]", "a list"), ('"x"', "a string"), ("7", "a number"), ("true", "true or false")]:
        assert sqlite("runs", "approve", *call, "--input", given) == ExitCode.USAGE
        assert f"--input is {kind}, not a JSON object" in sqlite.err
    for given in ['{"amount": NaN}', '{"amount": 1e999}', "[" * 100_000 + "]" * 100_000]:
        assert sqlite("runs", "approve", *call, "--input", given) == ExitCode.USAGE
        assert "--input is not JSON (" in sqlite.err
    assert sqlite("runs", "answer", *call, "Infinity", "--json-result") == ExitCode.USAGE
    assert "the result is not JSON (Infinity is not a JSON number" in sqlite.err
    waiting = sqlite.json("runs", "list", "--status", "awaiting")["runs"]
    assert [item["id"] for item in waiting[0]["waiting"]] == ["order-42_pay0", "order-42_pay1"]
    assert sqlite("runs", "deny", *call, "--reason", "No.") == ExitCode.OK
    # A reason no denial can give is refused before the run is read: whether the call waits, was
    # decided, or the run is there at all, the command line is wrong first.
    assert sqlite("runs", "deny", *call, "--reason", "  ") == ExitCode.USAGE
    assert sqlite("runs", "deny", "no-such-run", "c", "--reason", "") == ExitCode.USAGE
    assert "needs a reason the model can read" in sqlite.err
    assert sqlite("runs", "deny", *call, "--reason", "Again.") == ExitCode.CONFLICT  # decided first


def test_a_duration_too_long_for_a_date_is_a_usage_error(sqlite: Cli) -> None:
    for command in (["list", "--updated-before"], ["list", "--updated-after"], ["prune", "--older-than"]):
        for duration in ["99999999999d", "999999999d", "800000d", "9" * 5_000 + "s"]:
            assert sqlite("runs", *command, duration) == ExitCode.USAGE, sqlite.err
            assert sqlite.err.startswith(f"toolrunner: {command[1]} '{duration[:20]}")
            assert "reaches back before the year 1; give a shorter duration" in sqlite.err
    assert sqlite("runs", "prune", "--older-than", "9000w") == ExitCode.OK  # 172 years: nothing is that old
    assert sqlite.out.startswith("Deleted 0 runs last saved before 1852-")


# -- delete and prune -----------------------------------------------------------------------------------


def test_delete_removes_runs_and_names_those_that_were_not_there(sqlite: Cli) -> None:
    assert sqlite("runs", "delete", "done", "ghost", "mid") == ExitCode.NOT_FOUND
    assert sqlite.out == "Deleted done.\nDeleted mid.\n"
    assert sqlite.err == "toolrunner: no run named 'ghost' in the store.\n"
    assert sqlite.json("runs", "list")["runs"][0]["run_id"] == "order-42"
    assert sqlite("runs", "delete", "order-42") == ExitCode.OK


def test_prune_deletes_old_runs_and_a_dry_run_only_lists_them(sqlite: Cli) -> None:
    assert (
        sqlite(
            "runs",
            "prune",
            "--older-than",
            "57m30s",
            "--dry-run",
            "--status",
            "finished",
            "--status",
            "awaiting",
        )
        == ExitCode.OK
    )
    assert sqlite.out.splitlines()[0] == "Would delete 2 runs last saved before 2025-06-15 14:09:10 UTC."
    assert [line.split()[0] for line in sqlite.out.splitlines()[2:]] == ["order-42", "done"]
    assert sqlite("runs", "prune", "--older-than", "57m30s", "--status", "finished") == ExitCode.OK
    assert sqlite.out == "Deleted 1 run (finished) last saved before 2025-06-15 14:09:10 UTC.\n"
    data = sqlite.json("runs", "prune", "--older-than", "1d")
    assert data == {"deleted": 0, "kept": 0, "updated_before": "2025-06-14T15:06:40+00:00"}
    assert sqlite("runs", "prune", "--status", "finished") == ExitCode.USAGE  # --older-than is required
    assert [run_["run_id"] for run_ in sqlite.json("runs", "list")["runs"]] == ["mid", "order-42"]


# -- PostgreSQL, and the real entry points ---------------------------------------------------------------


def test_the_commands_work_on_postgresql(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrunner import PostgresCheckpointer

    three_runs(PostgresCheckpointer(postgres_url), monkeypatch)
    cli = Cli(postgres_url)
    assert [run_["run_id"] for run_ in cli.json("runs", "list")["runs"]] == ["mid", "order-42", "done"]
    # A URL holding a password: the lines to paste leave --store out rather than print it.
    parts = urllib.parse.urlsplit(postgres_url)
    netloc = f"{parts.username or 'postgres'}:TOPSECRET@{parts.netloc.rpartition('@')[2]}"
    secret = Cli(urllib.parse.urlunsplit(parts._replace(netloc=netloc)))
    assert secret("runs", "show", "order-42") == ExitCode.OK, secret.err
    assert "TOPSECRET" not in secret.out + secret.err
    assert "Decide with: toolrunner runs approve order-42 order-42_pay0\n" in secret.out
    assert "its URL holds a password, which is not printed" in secret.out
    assert cli("runs", "approve", "order-42", "order-42_pay0", "--by", "ada") == ExitCode.OK
    assert cli("runs", "approve", "order-42", "order-42_pay0", "--by", "bob") == ExitCode.CONFLICT
    assert cli("runs", "show", "order-42") == ExitCode.OK
    assert "order-42_pay0  pay" in cli.out
    assert "approved by ada" in cli.out
    assert cli("runs", "prune", "--older-than", "0s") == ExitCode.OK  # the decision saved order-42 just now
    assert cli.out.startswith("Deleted 2 runs")


def test_python_dash_m_toolrunner_runs_the_command_line(sqlite: Cli) -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "toolrunner", "runs", "list", "--json", "--store", sqlite.url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [run_["run_id"] for run_ in json.loads(done.stdout)["runs"]] == ["mid", "order-42", "done"]
    done = subprocess.run(
        [sys.executable, "-m", "toolrunner", "runs", "show", "ghost", "--store", sqlite.url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == ExitCode.NOT_FOUND
    assert "no run named 'ghost'" in done.stderr


def failing(state: RunState) -> RunState:
    return state.replace(failure={"type": "APIError", "message": "overloaded"})


def test_a_run_whose_last_step_failed_is_listed_and_shown_with_its_failure(sqlite: Cli) -> None:
    store = SQLiteCheckpointer(sqlite.url)
    anyio.run(save_changed, store, "mid", failing)
    store.close()
    assert sqlite("runs", "list", "--status", "failed") == ExitCode.OK
    assert "APIError: overloaded" in sqlite.out
    assert sqlite("runs", "show", "mid") == ExitCode.OK
    assert sqlite.out.splitlines()[2] == "failed: APIError: overloaded"


def test_what_a_model_or_a_tool_wrote_cannot_steer_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An escape sequence in the history is shown, not sent to the terminal; a lone surrogate is
    shown as U+FFFD (text) or escaped (JSON), instead of failing to print."""
    store = SQLiteCheckpointer(tmp_path / "runs.db")

    async def hostile(store: RunStore) -> None:
        from tests.support.stores import look

        script = [
            tool_reply(
                tool_call("look", {"q": "caf\udce9\x1b]0;pwned\x07"}, id="toolu_x"),
                text="\x1b[2J\x1b[Hcleared",
            ),
            text_reply("done \x9b31m"),
        ]
        runner = ToolRunner(
            FakeMessagesAPI(script).async_client(),
            model="claude-sonnet-4-6",
            max_tokens=64,
            messages=[{"role": "user", "content": "Go."}],
            tools=[look],
            checkpointer=store,
            run_id="hostile",
        )
        await runner.until_done()

    fill(store, monkeypatch, hostile)
    cli = Cli(str(tmp_path / "runs.db"))
    assert cli("runs", "show", "hostile") == ExitCode.OK
    assert "\x1b" not in cli.out
    assert "\x9b" not in cli.out
    assert "\\x1b[2J\\x1b[Hcleared" in cli.out
    assert "caf\ufffd\\x1b]0;pwned\\x07" in cli.out
    assert cli("runs", "show", "hostile", "--json") == ExitCode.OK
    data = json.loads(cli.out)
    assert data["state"]["messages"][1]["content"][1]["input"]["q"].endswith("]0;pwned\x07")


def test_a_store_in_a_directory_that_does_not_exist_is_named(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteCheckpointer(tmp_path / "missing" / "runs.db")
        with pytest.raises(CheckpointError, match=r"cannot be opened .*; check that its directory exists"):
            await store.list_runs()

    anyio.run(main)


def test_the_toolrunner_console_script_is_the_command_line() -> None:
    from importlib.metadata import entry_points

    from toolrunner._ops.cli import main

    [script] = [point for point in entry_points(group="console_scripts") if point.name == "toolrunner"]
    assert script.value == "toolrunner._ops.cli:main"
    assert script.load() is main


def test_show_keeps_every_decision_after_the_run_went_on_as_text_and_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The audit outlives the turn: who decided, the model's input and the one that ran, a denial's reason.
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)

    async def decided_and_resumed(store: RunStore) -> None:
        await paused_run(store, "order-42", 120, 80)
        await store.approve_call("order-42", "order-42_pay0", input={"amount": 100}, by="ada")
        await store.deny_call("order-42", "order-42_pay1", "Not this month.", by="bob")
        resumed = await ToolRunner.resume(
            FakeMessagesAPI([text_reply("Paid 100.")]).async_client(),
            checkpointer=store,
            run_id="order-42",
            tools=[stores.pay, stores.look],
        )
        await resumed.until_done()

    fill(store, monkeypatch, decided_and_resumed)
    cli = Cli(str(path))
    assert cli("runs", "show", "order-42") == ExitCode.OK
    text = cli.out.split("── decisions\n", 1)[1].splitlines()
    assert text == [
        '  order-42_pay0  pay {"amount": 120}: approved by ada at 2025-06-15T14:07:40.000+00:00, through the store',
        '      ran with the input {"amount": 100}',
        '  order-42_pay1  pay {"amount": 80}: denied by bob at 2025-06-15T14:07:40.000+00:00, through the store',
        "      the model read: Not this month.",
    ]
    data = cli.json("runs", "show", "order-42")
    assert data["state"]["calls"] == []  # the journal holds the current turn only
    assert [
        (d["id"], d["input"], d["approved_input"], d["by"], d["via"]) for d in data["state"]["decisions"]
    ] == [
        ("order-42_pay0", {"amount": 120}, {"amount": 100}, "ada", "store"),
        ("order-42_pay1", {"amount": 80}, None, "bob", "store"),
    ]


HELP_WRAPPER = """
import runpy, sys
sys.argv = ["toolrunner", *sys.argv[1:]]
try:
    runpy.run_module("toolrunner", run_name="__main__", alter_sys=True)
except SystemExit as exit_:
    code = exit_.code
heavy = sorted(name for name in ("anthropic", "pydantic", "anyio", "toolrunner._stores.runs", "toolrunner._stores.open") if name in sys.modules)
print("imported:", heavy, "exit:", code, file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--help"], ["runs", "--help"], ["runs"], []])
def test_the_help_of_the_command_line_imports_neither_the_sdk_nor_the_stores(argv: list[str]) -> None:
    """``python -m toolrunner --help`` (and ``toolrunner runs --help``, which run the same code) reads
    no store and sends nothing: it imports only the command line, not the SDK (seconds, cold)."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", HELP_WRAPPER, *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "usage: toolrunner" in done.stdout + done.stderr
    assert done.stderr.splitlines()[-1] == f"imported: [] exit: {0 if '--help' in argv else 2}"
