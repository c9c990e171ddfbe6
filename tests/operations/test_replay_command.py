"""``toolrunner replay``, in process, against the fake Messages API served over HTTP (the command
makes its own ``anthropic.AsyncAnthropic()`` from the environment): runs replayed by id, by a query
and from an export file, into the store itself (so the same command goes on with the evaluation)
or another; the estimate and the question before it starts; and each exit status with its message.

The recorded runs and the change (``--replay tests.support.replay_worker:REPLAY``, whose tools fail
the test if they run) are ``tests/support/replay_worker.py``.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.replay_worker import LEDGER_VARIABLE, order_ids, record, respond
from toolrunner._ops.cli import ExitCode, run
from toolrunner.testing import FakeMessagesAPI, serve

REPLAY = "tests.support.replay_worker:REPLAY"


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Replayer:
    """Runs ``toolrunner replay`` on the recorded runs of ``runs.db``, against the served fake."""

    def __init__(self, directory: Path, fake: FakeMessagesAPI) -> None:
        self.directory = directory
        self.fake = fake
        self.url = f"sqlite:///{directory / 'runs.db'}"
        self.out = self.err = ""

    def __call__(
        self, *argv: str, store: bool = True, stdin: io.StringIO | None = None, err: io.StringIO | None = None
    ) -> int:
        out, err = io.StringIO(), err if err is not None else io.StringIO()
        options = ["--store", self.url] if store else []
        code = run(["replay", *options, *argv], out, err, stdin=stdin)
        self.out, self.err = out.getvalue(), err.getvalue()
        return code

    def report(self, *argv: str, code: ExitCode = ExitCode.OK, store: bool = True) -> Any:
        assert self(*argv, "--json", store=store) == code, self.err
        return json.loads(self.out)

    @property
    def ledger(self) -> list[str]:
        path = self.directory / "ledger.txt"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def replayer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Replayer]:
    monkeypatch.setattr(sys, "path", list(sys.path))  # --replay puts the working directory on the path
    monkeypatch.setenv(LEDGER_VARIABLE, str(tmp_path / "ledger.txt"))
    monkeypatch.delenv("TOOLRUNNER_STORE", raising=False)
    anyio.run(record, tmp_path / "runs.db", 3)
    (tmp_path / "ledger.txt").unlink()  # the recorded tools' lines: what follows must add none
    fake = FakeMessagesAPI(responder=respond, batch_polls=1)  # a batch ends at its first retrieve (--batch)
    with serve(fake) as served:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", served.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key")
        yield Replayer(tmp_path, fake)
    assert replayer_ran_nothing(tmp_path)


def replayer_ran_nothing(directory: Path) -> bool:
    path = directory / "ledger.txt"
    return not path.exists() or not path.read_text()


def statuses(report: Any) -> dict[str, str]:
    return {run["source_id"]: run["status"] for run in report["runs"]}


# -- which runs -------------------------------------------------------------------------------------


def test_runs_by_id_are_replayed_and_the_report_is_json(replayer: Replayer) -> None:
    report = replayer.report("--replay", REPLAY, "--run", "order-2", "--run", "order-0")
    assert report["name"] == "brief"
    assert statuses(report) == {"order-2": "replayed", "order-0": "replayed"}
    for run_ in report["runs"]:
        assert run_["replay_id"] == f"brief.{run_['source_id']}"
        assert run_["comparison"]["first_divergent_turn"] is None  # the same calls, from the journal
        assert run_["comparison"]["final_answer_changed"] is True
        assert run_["replayed"]["final_answer"] == f"Order {run_['source_id'][-1]}: refunded."
    assert len(replayer.fake.requests) == 6
    assert replayer.fake.requests[0].body["system"].endswith("Answer in one short sentence.")
    err = replayer.err
    assert "Evaluation 'brief': 2 runs to replay." in err
    assert (
        "Estimated cost: $0.0006, if each replay uses the tokens its record used, at the prices of its model."
        in err
    )
    assert f"Replays are saved as brief.RUN in {replayer.url}." in err
    assert "[1/2] order-" in err  # not a terminal: a line per run
    assert "[2/2] order-" in err
    assert "2 runs replayed (0 the same as the record), cost $0.0006." in err


def test_a_query_selects_the_newest_finished_runs_but_the_evaluations_own_replays(replayer: Replayer) -> None:
    report = replayer.report("--replay", REPLAY, "--status", "finished", "--limit", "2")
    assert len(report["runs"]) == 2
    everything = replayer.report("--replay", REPLAY)  # by default: the finished runs, 50 at most
    assert sorted(statuses(everything)) == order_ids(3)  # not brief.order-N, saved in the store by now
    assert "(2 replayed already: read back, at no cost)" in replayer.err
    assert len(replayer.fake.requests) == 9


def test_the_same_command_again_goes_on_with_the_evaluation_and_sends_nothing_for_what_was_done(
    replayer: Replayer,
) -> None:
    first = replayer.report("--replay", REPLAY, "--run", "order-1")
    assert len(replayer.fake.requests) == 3
    again = replayer.report("--replay", REPLAY, "--run", "order-1")
    assert len(replayer.fake.requests) == 3
    assert "1 run to replay (1 replayed already: read back, at no cost)." in replayer.err
    assert "Estimated cost" not in replayer.err
    assert again["runs"][0]["replayed"] == first["runs"][0]["replayed"]


def test_the_replays_may_go_into_another_store(replayer: Replayer) -> None:
    other = f"sqlite:///{replayer.directory / 'replays.db'}"
    replayer.report("--replay", REPLAY, "--run", "order-0", "--into", other)
    assert f"in {other}." in replayer.err
    replayer.report("--replay", REPLAY, "--run", "order-0", "--into", other)
    assert len(replayer.fake.requests) == 3
    assert "(1 replayed already" in replayer.err


def export(replayer: Replayer, run_id: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    assert run(["runs", "show", "--json", run_id, "--store", replayer.url], out, err) == ExitCode.OK, err
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


@pytest.mark.parametrize("form", ["object", "list", "json lines", "bare states"])
def test_runs_exported_by_runs_show_json_are_replayed_from_the_file(replayer: Replayer, form: str) -> None:
    exported = [export(replayer, run_id) for run_id in ("order-0", "order-1")]
    if form == "object":
        exported = exported[:1]
        text = json.dumps(exported[0], indent=2)
    elif form == "list":
        text = json.dumps(exported)
    elif form == "json lines":
        text = "\n".join(json.dumps(entry) for entry in exported) + "\n\n"
    else:
        text = json.dumps([entry["state"] for entry in exported])
    path = replayer.directory / "export.json"
    path.write_text(text)
    into = f"sqlite:///{replayer.directory / 'replays.db'}"
    report = replayer.report("--replay", REPLAY, "--from-file", str(path), "--into", into, store=False)
    assert statuses(report) == {entry["summary"]["run_id"]: "replayed" for entry in exported}


# -- before it starts ------------------------------------------------------------------------------


def test_on_a_terminal_it_asks_first_and_no_is_exit_7_with_nothing_sent(replayer: Replayer) -> None:
    code = replayer("--replay", REPLAY, "--run", "order-0", "--max-cost", "5", stdin=Terminal("n\n"))
    assert code == ExitCode.DECLINED == 7
    assert "Budget: $5 (--max-cost): the evaluation stops once its replays cost that much" in replayer.err
    assert replayer.err.rstrip().endswith("Go on? [y/N] toolrunner: nothing was replayed.")
    assert replayer.fake.requests == []
    assert replayer.out == ""

    assert replayer("--replay", REPLAY, "--run", "order-0", "--json", stdin=Terminal("yes\n")) == ExitCode.OK
    assert "Go on? [y/N] " in replayer.err
    assert len(replayer.fake.requests) == 3


def test_yes_or_no_terminal_starts_without_asking(replayer: Replayer) -> None:
    assert (
        replayer("--replay", REPLAY, "--run", "order-0", "--yes", "--json", stdin=Terminal("")) == ExitCode.OK
    )
    assert "Go on?" not in replayer.err
    assert replayer("--replay", REPLAY, "--run", "order-1", "--json", stdin=io.StringIO("n\n")) == ExitCode.OK
    assert "Go on?" not in replayer.err


def test_on_a_terminal_the_progress_bar_is_redrawn_in_place(replayer: Replayer) -> None:
    code = replayer(
        "--replay", REPLAY, "--run", "order-0", "--run", "order-1", "--yes", "--json", err=Terminal()
    )
    assert code == ExitCode.OK
    assert "\r[###############---------------] 1/2 (1 replayed) $0.0003" in replayer.err
    assert "\r[##############################] 2/2 (2 replayed) $0.0006\n" in replayer.err


# -- what goes wrong -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "tests.support.replay_worker",
            "--replay 'tests.support.replay_worker' is not module:name; name the module and its Replay",
        ),
        ("no_such_module:REPLAY", "--replay 'no_such_module:REPLAY': there is no module 'no_such_module'"),
        ("tests.support.replay_worker:NOTHING", "the module 'tests.support.replay_worker' has no 'NOTHING'"),
        ("tests.support.replay_worker:MODEL", "'MODEL' of the module 'tests.support.replay_worker' is 'str'"),
        ("tests.support.replay_worker:order_ids", "calling 'order_ids' failed: TypeError:"),
        ("tests.support.replay_worker:Job", "'Job' of the module 'tests.support.replay_worker' is 'type'"),
    ],
)
def test_a_replay_that_cannot_be_found_is_a_usage_error_naming_it(
    replayer: Replayer, spec: str, message: str
) -> None:
    assert replayer("--replay", spec, "--run", "order-0") == ExitCode.USAGE
    assert message in replayer.err
    assert replayer.fake.requests == []


def test_a_function_that_returns_the_replay_will_do(replayer: Replayer) -> None:
    report = replayer.report("--replay", "tests.support.replay_worker:make_replay", "--run", "order-0")
    assert statuses(report) == {"order-0": "replayed"}


def test_an_unknown_run_is_exit_3_and_nothing_is_replayed(replayer: Replayer) -> None:
    assert replayer("--replay", REPLAY, "--run", "order-0", "--run", "nope") == ExitCode.NOT_FOUND
    assert "toolrunner: no run named 'nope' in the store" in replayer.err
    assert replayer.fake.requests == []
    missing = f"sqlite:///{replayer.directory / 'missing.db'}"
    assert replayer("--replay", REPLAY, "--store", missing, store=False) == ExitCode.NOT_FOUND
    assert "there is no store at" in replayer.err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty; expected a run as `toolrunner runs show --json RUN` prints it"),
        ('{\n  "summary": {},\n', "is not JSON: Expecting"),
        ('{"a": 1}\nnot json\n', "line 2 is not JSON (Expecting value"),
        ("[1]", "entry 0 of the list is an int; expected a run"),
        ("[]", "holds no run"),
        ('"text"', "the object is a string; expected a run"),
        ('{"summary": {}, "state": {"run_id": "x"}}', "the object: "),
    ],
)
def test_a_malformed_export_file_is_a_usage_error_saying_where_and_what_was_expected(
    replayer: Replayer, text: str, message: str
) -> None:
    path = replayer.directory / "export.json"
    path.write_text(text)
    assert replayer("--replay", REPLAY, "--from-file", str(path)) == ExitCode.USAGE
    assert f"--from-file {str(path)!r}" in replayer.err
    assert message in replayer.err
    assert replayer.fake.requests == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--concurrency", "0"], "--concurrency must be 1 or more, not 0."),
        (["--max-cost", "free"], "--max-cost must be a positive amount of US dollars (5, 0.50), not 'free'."),
        (["--limit", "0"], "--limit must be 1 or more, not 0."),
        (["--run", "order-0", "--status", "finished"], "--run and --status select runs two ways"),
        (["--from-file", "x.json", "--run", "order-0"], "--run and --from-file select runs two ways"),
        (["--updated-after", "yesterday"], "--updated-after 'yesterday' is neither a duration"),
    ],
)
def test_wrong_options_are_usage_errors(replayer: Replayer, argv: list[str], message: str) -> None:
    assert replayer("--replay", REPLAY, *argv) == ExitCode.USAGE
    assert message in replayer.err


def test_without_a_store_or_an_api_key_it_says_what_to_give(
    replayer: Replayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert replayer("--replay", REPLAY, store=False) == ExitCode.USAGE
    assert "say which store with --store URL" in replayer.err
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    assert replayer("--replay", REPLAY, "--run", "order-0") == ExitCode.USAGE
    assert "set ANTHROPIC_API_KEY" in replayer.err


def test_a_replay_that_fails_is_exit_5_after_the_report(replayer: Replayer) -> None:
    report = replayer.report(
        "--replay", "tests.support.replay_worker:BARE", "--run", "order-0", code=ExitCode.INCOMPLETE
    )
    assert statuses(report) == {"order-0": "failed"}
    assert "the recorded run's tools ['lookup', 'notify'] are code" in report["runs"][0]["error"]
    assert (
        "toolrunner: 1 run of 1 not replayed; the first, 'order-0', failed: the recorded run's tools"
        in replayer.err
    )


def test_the_budget_stops_it_with_exit_6_and_a_larger_one_goes_on(replayer: Replayer) -> None:
    argv = ["--replay", REPLAY, "--concurrency", "1"]
    report = replayer.report(*argv, "--max-cost", "0.0001", code=ExitCode.STOPPED)
    assert report["stopped_by_budget"] is True
    assert sorted(statuses(report).values()) == ["stopped"] * 3
    assert "toolrunner: the budget (--max-cost) stopped the evaluation: 3 runs not replayed" in replayer.err
    sent = len(replayer.fake.requests)
    assert 0 < sent < 9
    report = replayer.report(*argv, "--max-cost", "1")
    assert sorted(statuses(report).values()) == ["replayed"] * 3
    assert len(replayer.fake.requests) == 9  # what was sent before is not sent again


def test_batch_sends_the_replays_as_message_batches_and_estimates_and_prices_them_at_batch_rates(
    replayer: Replayer,
) -> None:
    plain = replayer.report(
        "--replay", REPLAY, "--run", "order-0", "--into", f"sqlite:///{replayer.directory / 'a.db'}"
    )
    batched = replayer.report(
        "--replay", REPLAY, "--run", "order-0", "--batch", "--poll-interval", "0.01",
        "--into", f"sqlite:///{replayer.directory / 'b.db'}",
    )  # fmt: skip
    assert "at Message Batches rates (--batch)" in replayer.err
    assert Decimal(batched["cost"]) == Decimal(plain["cost"]) / 2
    messages = [request for request in replayer.fake.requests if request.url.endswith("/v1/messages")]
    assert [request.batch_id is not None for request in messages] == [False] * 3 + [True] * 3
