"""``toolrunner resume --store URL --app module:function``: a process that serves a ``Resumer``
with the app's factory until it gets SIGTERM or SIGINT (Ctrl-C).

The first signal stops it taking runs up, and gives the runs in hand ``--grace`` seconds to end or
pause; then (or at a second signal) they stop where they are, and their leases are handed over so
that another resumer takes them up at once. It logs what it does to standard error.
"""

from __future__ import annotations

import logging
import signal
from typing import TextIO

import anyio

from .._core.errors import ParamsError
from .app_loader import Wanted, load_object
from .resumer import Factory, Resumer

__all__ = ["load_factory", "serve"]

logger = logging.getLogger("toolrunner.resumer")


_APP = Wanted(
    option="--app",
    form="module:function",
    command="resume",
    example="myapp.agents:resume_run",
    what="its factory",
    described="async def (run_id, store) -> ToolRunner",
)


def load_factory(spec: str) -> Factory:
    """The app's factory that ``--app module:function`` names, imported as ``python -m`` would
    (the working directory first on the path).

    Raises:
        ParamsError: It is not ``module:function``, or the module or the function cannot be found
            or imported (the message names which).
    """
    found = load_object(spec, _APP)
    if not callable(found):
        module_name, _, name = spec.partition(":")
        raise ParamsError(
            f"--app {spec!r}: {name!r} of the module {module_name!r} is {type(found).__name__!r}, not a function; "
            f"give the name of its factory, {_APP.described}."
        )
    return found  # pyright: ignore[reportReturnType] - a callable of the app; its results are checked as they come


async def serve(resumer: Resumer, *, grace: float, err: TextIO) -> None:
    """Serve ``resumer`` until SIGTERM or SIGINT (see the module's docstring), logging to ``err``."""
    await resumer.store.list_runs(limit=1)  # a store that cannot be reached fails now, not in the log
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(asctime)s toolrunner resume: %(message)s"))
    package = logging.getLogger("toolrunner")
    level = package.level
    package.addHandler(handler)
    package.setLevel(logging.INFO)
    try:
        logger.info("%r serves; stop it with SIGTERM or Ctrl-C", resumer)
        await _serve_until_signalled(resumer, grace)
        logger.info("%s stopped", resumer.owner)
    finally:
        package.removeHandler(handler)
        package.setLevel(level)


async def _serve_until_signalled(resumer: Resumer, grace: float) -> None:
    serving = anyio.CancelScope()
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with anyio.create_task_group() as group:

            async def run() -> None:
                with serving:
                    await resumer.run()
                group.cancel_scope.cancel()  # done: stop listening for signals

            async def cut_short() -> None:
                await anyio.sleep(grace)
                serving.cancel()

            group.start_soon(run)
            stopping = False
            async for number in signals:
                name = signal.Signals(number).name
                if stopping:
                    logger.info("%s got %s again: the runs in hand stop now", resumer.owner, name)
                    serving.cancel()
                    continue
                stopping = True
                logger.info(
                    "%s got %s: it takes no more runs up; the %d in hand have %gs to end or pause",
                    resumer.owner,
                    name,
                    len(resumer.in_hand),
                    grace,
                )
                resumer.stop()
                group.start_soon(cut_short)
