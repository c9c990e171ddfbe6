"""Every program in examples/ runs offline, as a reader would run it, and prints what it should.

Each example runs in a subprocess without ANTHROPIC_API_KEY, so it talks to the fake Messages API.
``examples/test_*.py`` are pytest files: they run through pytest in a subprocess.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TIMEOUT = 120  # seconds; a hung example fails instead of hanging the suite

# Lines (or parts of lines) each example must print; an example not listed must print something.
EXPECTED: dict[str, list[str]] = {
    "quickstart.py": ["-> get_weather(", "Done after"],
    "steering.py": [
        "1. Look at the tool results inside the loop",
        "<- [error] There is no page at 'https://example.com/tide-tables'",
        "pushed the reply and 1 result(s) with a note",
        "instead of 2940",
        "Approve sending email to 'all@example.com'? no",
        "Sent to: ['science@team.example.com']; 3 requests.",
    ],
    "errors.py": [
        "<- [is_error] ZeroDivisionError('division by zero')",
        "- party_size: Input should be a valid integer",
        "<- [is_error] Chez Nous is fully booked at 19:00.",
        "<- [ok] Booked a table for 4 at Chez Nous at 18:30",
        "Done after 4 requests.",
    ],
    "approval.py": [
        "Delete 'build.log'? [y/N] y",
        "Delete 'notes.txt'? [y/N] n",
        "Claude: I deleted build.log; notes.txt stays, as you asked.",
        "Left in the folder: ['cache.tmp', 'notes.txt']",
    ],
    "sync.py": ["-> read_file({'name': 'app.py'})", "<- 3 result(s) in", "the history holds 6 messages"],
    "mcp_client.py": [
        "The server offers: notes_search_notes, notes_add_note",
        '<- Call Ada about the launch | {"result": ["Call Ada about the launch"]}',
        "Approve notes_add_note({'text': 'Ask Ada for the launch date'})? yes",
        "<- Added note 4: Ask Ada for the launch date",
        "Done after 3 requests; the server has stopped.",
    ],
    "durable.py": [
        "[child] <- charge_card finished",
        "the child was killed by SIGKILL; charges.txt has 1 line(s).",
        "charge_card: answered from the journal, not run again: 'charged 30.00 EUR for order 42'",
        "book_courier: [is_error] The call to 'book_courier' was interrupted",
        "may or may not have taken effect",
        "The card was charged 1 time(s); the run ended (model) after 2 requests.",
    ],
    "operating.py": [
        'waits    refund {"order": "A-1047", "amount": 120}: needs a decision',
        "The run stopped: awaiting_approval.",
        "support-A-1047  awaiting  2",
        "── assistant (the latest reply)",
        "Approved toolu_fake_0002 (refund) of run support-A-1047 by ada at",
        "Refunds made: [('A-1047', 120)]",
        "ended (model): 3 replies, 30 in and 15 out tokens",
        "Deleted 1 run (finished) last saved before",
    ],
    "resuming.py": [
        "The run waits for a person: refund({'order': 'A-1047', 'amount': 120})",
        "refund-A-1047  awaiting  1",
        "The run is ready: it goes on when a resumer takes it up (toolrunner resume)",
        "takes up the run 'refund-A-1047'",
        "the run 'refund-A-1047' ended (model)",
        "got SIGTERM: it takes no more runs up",
        "Run refund-A-1047: finished (model)",
        "← [toolu_fake_0001] Refunded 120 EUR for order A-1047.",
        "I refunded 120 EUR for order A-1047.",
    ],
    "temporal_agent.py": [
        "started support-",
        "  [worker] -> order_history",
        "waits for approval: refund({'amount': 120, 'order': 'A-1047'})",
        "a day later, a person approves it for 80 EUR",
        "Claude: I refunded 80 EUR for order A-1047",
        "3 requests, ended by model; workflow history:",
        "KB order history is in the payload store",
    ],
}


def programs() -> list[str]:
    return sorted(path.name for path in EXAMPLES.glob("*.py") if not path.name.startswith(("_", "test_")))


def pytest_files() -> list[str]:
    return sorted(path.name for path in EXAMPLES.glob("test_*.py"))


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-W", "error", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_the_examples_are_found() -> None:
    assert {"steering.py", "errors.py", "sync.py"} <= set(programs())
    assert "test_agent.py" in pytest_files()


@pytest.mark.parametrize("name", programs())
def test_example_runs_offline(name: str) -> None:
    result = run(str(EXAMPLES / name))
    assert result.returncode == 0, f"examples/{name} exited {result.returncode}:\n{result.stderr}"
    assert result.stdout.strip(), f"examples/{name} printed nothing"
    missing = [line for line in EXPECTED.get(name, []) if line not in result.stdout]
    assert not missing, f"examples/{name} did not print {missing!r}; it printed:\n{result.stdout}"


def test_the_approval_example_follows_the_answers_typed_at_its_prompt() -> None:
    result = run(str(EXAMPLES / "approval.py"), stdin="n\ny\n")
    assert result.returncode == 0, result.stderr
    assert "Delete 'build.log'? [y/N] n" in result.stdout
    assert "Delete 'notes.txt'? [y/N] y" in result.stdout
    assert "Left in the folder: ['build.log', 'cache.tmp']" in result.stdout
    # Claude's last words follow the answers too (they used to be canned: "notes.txt stays").
    assert "Claude: I deleted notes.txt; build.log stays, as you asked." in result.stdout


def test_the_quickstarts_answer_states_the_time_its_tool_gave() -> None:
    result = run(str(EXAMPLES / "quickstart.py"))
    assert result.returncode == 0, result.stderr
    [clock] = re.findall(r"<- Berlin: (\d\d:\d\d)", result.stdout)
    assert f"The local time in Berlin is {clock}." in result.stdout


@pytest.mark.parametrize("name", pytest_files())
def test_example_test_file_passes(name: str) -> None:
    result = run("-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLES / name))
    assert result.returncode == 0, f"pytest examples/{name} failed:\n{result.stdout}\n{result.stderr}"
    assert " passed" in result.stdout
