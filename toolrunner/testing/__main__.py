"""`python -m toolrunner.testing serve --script FILE [--host 127.0.0.1] [--port 0] [--no-validate]`.

Serves the fake Messages API over HTTP until interrupted. The first line on stdout is the base URL
(e.g. `http://127.0.0.1:54321`), for `ANTHROPIC_BASE_URL` or the SDK's `base_url`. The script format
is described in `toolrunner/testing/_script_file.py` and in docs/testing.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ._fake import FakeMessagesAPI, answer_request_automatically
from ._script_file import load_script
from ._server import base_url_of, bind, make_server


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m toolrunner.testing", description="Serve a scripted fake Anthropic Messages API."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve a scripted fake Messages API over HTTP")
    serve.add_argument("--script", type=Path, required=True, help="a JSON file: a list of script entries")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="the port; 0 (default) picks a free one")
    serve.add_argument("--no-validate", action="store_true", help="do not reject invalid requests with 400")
    serve.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
    args = parser.parse_args(argv)

    try:
        entries, automatic = load_script(json.loads(args.script.read_text()))
    except (OSError, ValueError) as error:
        parser.error(f"cannot use the script {str(args.script)!r}: {error}")
    fake = FakeMessagesAPI(
        entries, responder=answer_request_automatically if automatic else None, validate=not args.no_validate
    )
    sock = bind(args.host, args.port)
    print(base_url_of(sock), flush=True)
    try:
        make_server(fake, log_level=args.log_level).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
