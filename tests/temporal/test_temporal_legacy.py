"""The legacy body is frozen: ``toolrunner/temporal/_legacy/`` holds these files, with this text.

A run started by toolrunner 0.1.0 replays through that package for as long as it lives, so what the
package asks Temporal for must not change (``test_temporal_replay.py`` replays the recorded
histories). Its imports are checked in ``tests/test_layout.py`` (``frozen_violations``); this pins
its text, so that no edit slips in by accident (a reformat, a rename carried into it by a tool).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

FROZEN = Path(__file__).resolve().parents[2] / "toolrunner" / "temporal" / "_legacy"

PINNED = {
    "__init__.py": "cecdcf2c4bd232dd054ba07d2e3e9854abfc4bcc0b68a1e53355b06b8f1939ff",
    "body.py": "c3e8c54b09dcd57c75de1b3030285addc2740d21da1af3de60ef6cb5615ac711",
    "data.py": "9ffc1f12ad0ac56c21a56f2348c1993f3186caeb780e17cb4dc554ec4abb9404",
    "errors.py": "30bdb50f23dc898a3c15f8c3f7624b1ef4391bc42b094cae8472666f1a8db070",
    "log.py": "9abdb2adfce8e41ddab1af9a2f98aae37f863f5d0267b385d6ce8899de5c3bc4",
    "messages.py": "dd741c85759213e790c55debf48a57ca6bc4e36883dab4f58273fa6fc7c7c99f",
    "names.py": "1ac65f8d9473e75498392ffbfca5c1e7dafb9eb765f2c82d747a086e074e38f6",
    "plan.py": "9d966ae6cbd0bf8fac516a9498e3f603b205fcd7934a908722b04a2905f7c799",
    "result_blocks.py": "1f66e684f552feb8a3489e0da30e3e0b7edb662ae8dfa5e16e7ebe392143b6e4",
    "results.py": "b7c4f2acc96617a86ffdc3cd0db30c5cd47ef97ddb378e64980be7fab8f858e2",
    "state.py": "11cd2ca30dbea2de14e835d19b5b16f76d139e0222c790e3ee17ec33fe5df5d6",
    "state_schema.py": "cf03d7235cfa99e7a97544c441ff97d99b0165b42906b3cef1d5823fe36e2cf7",
    "transitions.py": "55a5c0e9e7699e54d33aa12657d851c48b74ec18998ab47cf2bd690808e88818",
    "types.py": "c5759a8d4feb76294bec7857515e701e17cb2543ab0836633871d7879ab58d7b",
    "unicode.py": "bd11d7c9c39246e07abbe1428ebba7a235c5d36e933443874e5fecc89f16eacf",
    "usage.py": "44332ce77054e96635bc3cfc1817b5f17be0e08b614bfa3c8ddc44ab4a38b8d9",
}
"""Each frozen file and the SHA-256 of its text (line ends as ``\\n``)."""

CHANGED = (
    "{name} changed, and the legacy body is frozen (toolrunner/temporal/_legacy/__init__.py): nothing "
    "but a security fix may change it. Revert the change; for such a fix, keep the commands of every "
    "recorded history (test_temporal_replay.py), and update PINNED here on purpose, saying why."
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def test_the_frozen_package_holds_the_pinned_files() -> None:
    found = sorted(str(path.relative_to(FROZEN)) for path in FROZEN.rglob("*.py"))
    assert found == sorted(PINNED), "files were added to or removed from the frozen legacy body"


def test_each_frozen_file_has_its_pinned_text() -> None:
    changed = [name for name, pinned in PINNED.items() if digest(FROZEN / name) != pinned]
    assert not changed, "\n".join(CHANGED.format(name=name) for name in changed)


def test_an_edit_of_a_frozen_file_fails_the_pin(tmp_path: Path) -> None:
    # The control: a one-character edit (a space at the end) gives another digest.
    copy = tmp_path / "body.py"
    copy.write_bytes((FROZEN / "body.py").read_bytes() + b" ")
    assert digest(FROZEN / "body.py") == PINNED["body.py"]
    assert digest(copy) != PINNED["body.py"]
