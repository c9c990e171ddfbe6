"""``toolrunner resume``'s usage errors, in process: an ``--app`` that is not ``module:function``, a
module or a function that cannot be found or imported (each named), and numbers out of range, are
exit 2 before any run is touched; a store file that is not there is exit 3. Serving is tested
across processes in ``test_resumer_processes.py``.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from toolrunner._ops.cli import ExitCode, run


@pytest.fixture
def url(tmp_path: Path) -> str:
    path = tmp_path / "runs.db"
    path.touch()  # a store (an empty SQLite file)
    return f"sqlite:///{path}"


@pytest.fixture(autouse=True)
def _own_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--app`` puts the working directory on the path, as ``python -m`` does: not for the next test."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def resume(url: str, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["resume", "--store", url, *argv], out, err)
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("app", "message"),
    [
        (
            "tests.support.resumer_app",
            "--app 'tests.support.resumer_app' is not module:function; name the module and its factory",
        ),
        (":factory", "is not module:function"),
        (
            "no_such_app_module:factory",
            "--app 'no_such_app_module:factory': there is no module 'no_such_app_module' (looked in ",
        ),
        ("tests.no_such_module:factory", "there is no module 'tests.no_such_module'"),
        (
            "tests.support.resumer_app:nothing",
            "--app 'tests.support.resumer_app:nothing': the module 'tests.support.resumer_app' has no 'nothing'",
        ),
        (
            "tests.support.resumer_app:__doc__",
            "'__doc__' of the module 'tests.support.resumer_app' is 'str', not a function",
        ),
    ],
)
def test_an_app_that_cannot_be_found_is_a_usage_error_naming_it(url: str, app: str, message: str) -> None:
    code, err = resume(url, "--app", app)
    assert code == ExitCode.USAGE
    assert message in err


def test_an_app_whose_module_fails_to_import_says_why(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the app's directory: --app imports from it
    (tmp_path / "broken_app.py").write_text("raise RuntimeError('no API key in the environment')\n")
    (tmp_path / "needy_app.py").write_text("import no_such_dependency_of_the_app\n")
    code, err = resume(url, "--app", "broken_app:factory")
    assert code == ExitCode.USAGE
    assert "importing the module 'broken_app' failed: RuntimeError: no API key in the environment" in err
    code, err = resume(url, "--app", "needy_app:factory")
    assert code == ExitCode.USAGE
    assert (
        "importing the module 'needy_app' failed: ModuleNotFoundError: No module named "
        "'no_such_dependency_of_the_app'" in err
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--concurrency", "0"], "concurrency must be an int of 1 or more"),
        (["--lease", "0"], "lease must be a number of seconds above 0"),
        (["--lease", "nan"], "lease must be a number of seconds above 0"),
        (["--poll-interval", "-1"], "poll_interval must be a number of seconds above 0"),
        (["--grace", "-1"], "--grace must be 0 or more seconds"),
    ],
)
def test_numbers_out_of_range_are_usage_errors(url: str, option: list[str], message: str) -> None:
    code, err = resume(url, "--app", "tests.support.resumer_app:factory", *option)
    assert code == ExitCode.USAGE
    assert message in err


def test_a_store_that_is_not_there_is_not_made(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    code, err = resume(f"sqlite:///{missing}", "--app", "tests.support.resumer_app:factory")
    assert code == ExitCode.NOT_FOUND
    assert "there is no store at" in err
    assert not missing.exists()
    code, err = resume(f"sqlite:///{missing}")
    assert code == ExitCode.USAGE  # argparse: --app is required
    assert "the following arguments are required: --app" in err


def test_list_and_show_say_which_resumer_holds_a_run_and_when_one_stopped(tmp_path: Path) -> None:
    import json
    import time

    import anyio

    from tests.support.stores import paused_run
    from toolrunner import SQLiteCheckpointer

    path = tmp_path / "runs.db"

    async def held() -> None:
        store = SQLiteCheckpointer(path)
        [call] = await paused_run(store, "r", 120)
        await store.approve_call("r", call, by="ada")
        assert await store.lease_runs("worker-1:42:abc", lease=60) == ("r",)
        store.close()

    anyio.run(held)
    url = f"sqlite:///{path}"

    def cli(*argv: str, later: float = 0.0) -> str:
        out, err = io.StringIO(), io.StringIO()
        assert run([*argv, "--store", url], out, err, now=lambda: time.time() + later) == ExitCode.OK, (
            err.getvalue()
        )
        return out.getvalue()

    assert "r    ready" in cli("runs", "list")
    assert "decided: resumer worker-1:42:abc takes it up" in cli("runs", "list")
    shown = cli("runs", "show", "r")
    assert shown.startswith("Run r: ready\n")
    assert "decided: resumer worker-1:42:abc takes it up (lease until " in shown
    [data] = json.loads(cli("runs", "list", "--json"))["runs"]
    assert data["status"] == "ready"
    assert data["lease"]["owner"] == "worker-1:42:abc"
    assert data["lease"]["expires"].endswith("+00:00")
    # An hour later, as the command line sees it: the lease ran out, its resumer stopped.
    assert "its resumer worker-1:42:abc stopped; the next resumer takes the run over" in cli(
        "runs", "list", later=3_600
    )


@pytest.mark.parametrize(
    ("status", "lease", "said"),
    [
        ("ready", None, "decided: goes on once a resumer takes it up, or the app resumes it"),
        ("ready", 60, "decided: resumer w:1:a takes it up"),
        ("running", 60, "in resumer w:1:a"),
        ("running", -60, "its resumer w:1:a stopped; the next resumer takes the run over"),
        ("running", None, ""),  # an app's runner's
        ("failed", 60, "a resumer tries it again once the lease runs out"),
        ("failed", None, ""),  # for good
        ("awaiting", 60, ""),
        ("finished", None, ""),
    ],
)
def test_what_takes_a_run_on_is_said_from_its_status_and_lease(
    status: str, lease: float | None, said: str
) -> None:
    from datetime import UTC, datetime, timedelta
    from decimal import Decimal

    from toolrunner import Lease, RunStatus, RunSummary
    from toolrunner._ops.render import going_on

    now = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)
    summary = RunSummary(
        run_id="r",
        status=RunStatus(status),
        end_reason=None,
        waiting=(),
        created=now,
        updated=now,
        turns=1,
        cost=Decimal(0),
        lease=None if lease is None else Lease("w:1:a", now + timedelta(seconds=lease)),
    )
    assert going_on(summary, now) == said
