"""Replay saved runs with changes (another model, prompt, params, tools, output type or hooks), and
compare and score what the replays do against the record: evaluations from what production did,
with nothing a recorded run did done again (see docs/evals.md).

Modules: ``_replay`` (``replay_runs``: the replays run, resumed, budgeted and reported),
``_replay_tools`` (the tools a replay offers: answered from the journal), ``_export`` (runs read
from an export file), ``_trajectory`` (a run
read as turns and calls), ``_journal`` (which recorded call answers a replay's call), ``_compare``
(where a replay differs from its record), ``_results`` (the report as data), ``_scorers``
(scorers: how one runs, and the built-in ones), ``_report`` (the report as a terminal table and as
an HTML page), ``_batch`` (the batch path: the requests of many replays as one Message Batch, at
batch rates) with ``_batch_client`` (the client whose ``messages.create`` queues). The pure ones
(``_trajectory``, ``_journal``, ``_compare``, ``_results``, ``_report``) do no I/O; of
``_scorers``, only ``model_graded``'s scorer does (a request). It may import ``_core``,
``_tracing``, ``_tools``, ``_stores`` and ``_runner``.
"""

from ._batch import (
    BatchRequestError as BatchRequestError,
    BatchSender as BatchSender,
    batch_prices as batch_prices,
)
from ._compare import compare as compare
from ._estimate import estimate_cost as estimate_cost
from ._export import read_runs as read_runs
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
    replay_runs as replay_runs,
    select_runs as select_runs,
)
from ._replay_tools import DIVERGED as DIVERGED, Stub as Stub
from ._report import render_html as render_html, render_table as render_table
from ._results import (
    Comparison as Comparison,
    ReplayReport as ReplayReport,
    ReplayStatus as ReplayStatus,
    RunReplay as RunReplay,
    Score as Score,
)
from ._scorers import (
    Scorer as Scorer,
    final_answer_equal as final_answer_equal,
    model_graded as model_graded,
    output_fields as output_fields,
    run_scorer as run_scorer,
    same_calls as same_calls,
    scorer_name as scorer_name,
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
    "Scorer",
    "Stub",
    "Trajectory",
    "Turn",
    "batch_prices",
    "call_key",
    "compare",
    "estimate_cost",
    "final_answer_equal",
    "match_call",
    "model_graded",
    "normalize_input",
    "output_fields",
    "read_runs",
    "render_html",
    "render_table",
    "replay_runs",
    "run_scorer",
    "same_calls",
    "scorer_name",
    "select_runs",
    "trajectory_of",
]
