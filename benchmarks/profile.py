"""Profile one contender on one conversation with pyinstrument (``pip install pyinstrument``).

    python benchmarks/profile.py                       # toolrunner, 400 tool turns
    python benchmarks/profile.py --contender raw --turns 100 --html profile.html

Starts the benchmark server, runs the conversation once untimed (imports, first-use caches), then
once under the profiler, and prints the call tree (or writes it as HTML) and the run's wall and CPU
time (both inflated by the profiler).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _contenders import CONTENDERS, Conversation, run_once
from run import fake_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--contender", choices=CONTENDERS, default="toolrunner")
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--html", type=Path, help="write an HTML report here instead of printing text")
    parser.add_argument("--show-all", action="store_true", help="show library frames too (the SDK's)")
    parser.add_argument("--interval", type=float, default=0.0005, help="sampling interval in seconds")
    args = parser.parse_args()

    from pyinstrument import Profiler

    conversation = Conversation(args.turns, 1, "noop")
    with fake_server(max_requests=2 * (args.turns + 1) + 10) as port:
        run_once(args.contender, Conversation(2, 1, "noop"), port)
        profiler = Profiler(interval=args.interval, async_mode="disabled")
        with profiler:
            run = run_once(args.contender, conversation, port)
    if args.html:
        args.html.write_text(profiler.output_html())
        print(f"Wrote {args.html}")
    else:
        print(profiler.output_text(unicode=True, color=False, show_all=args.show_all))
    print(
        f"{args.contender}, {args.turns} turns: {run.seconds:.3f} s wall, {run.cpu_seconds:.3f} s CPU (profiled)"
    )


if __name__ == "__main__":
    main()
