"""Replay saved runs with changes (another model, prompt, params, tools, output type or hooks), and
compare and score what the replays do against the record: evaluations from what production did,
with nothing a recorded run did done again (see docs/evals.md).

Modules: ``_replay`` (``replay_runs``: the replays run, resumed, budgeted and reported),
``_replay_tools`` (the tools a replay offers: answered from the journal), ``_trajectory`` (a run read as turns and calls), ``_journal`` (which recorded call
answers a replay's call), ``_compare`` (where a replay differs from its record), ``_results`` (the
report as data), ``_batch`` (the batch path: the requests of many replays as one Message Batch,
at batch rates) with ``_batch_client`` (the client whose ``messages.create`` queues). The pure ones (``_trajectory``, ``_journal``, ``_compare``, ``_results``) do no
I/O. It may import ``_core``, ``_tracing``, ``_tools``, ``_stores`` and ``_runner``.
"""

from ._batch import (
    BatchRequestError as BatchRequestError,
    BatchSender as BatchSender,
    batch_prices as batch_prices,
)
from ._compare import compare as compare
from ._journal import (
    Journal as Journal,
    Match as Match,
    Normalize as Normalize,
    call_key as call_key,
    match_call as match_call,
    normalize_input as normalize_input,
)
from ._replay import (
    Progress as Progress,
    Replay as Replay,
    estimate_cost as estimate_cost,
    replay_runs as replay_runs,
    select_runs as select_runs,
)
from ._replay_tools import DIVERGED as DIVERGED, Stub as Stub
from ._results import (
    Comparison as Comparison,
    ReplayReport as ReplayReport,
    ReplayStatus as ReplayStatus,
    RunReplay as RunReplay,
    Score as Score,
)
from ._trajectory import (
    Answered as Answered,
    Call as Call,
    Trajectory as Trajectory,
    Turn as Turn,
    trajectory_of as trajectory_of,
)

__all__ = [
    "DIVERGED",
    "Answered",
    "BatchRequestError",
    "BatchSender",
    "Call",
    "Comparison",
    "Journal",
    "Match",
    "Normalize",
    "Progress",
    "Replay",
    "ReplayReport",
    "ReplayStatus",
    "RunReplay",
    "Score",
    "Stub",
    "Trajectory",
    "Turn",
    "batch_prices",
    "call_key",
    "compare",
    "estimate_cost",
    "match_call",
    "normalize_input",
    "replay_runs",
    "select_runs",
    "trajectory_of",
]
