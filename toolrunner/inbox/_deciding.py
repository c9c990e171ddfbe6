"""A run's page in the inbox, and the decisions taken on it: ``GET /run`` shows the run's
conversation and its waiting calls with a form for each; ``POST /run/approve``, ``/run/deny`` and
``/run/answer`` decide a call through the store, as the person logged in (``by=``). A decision
that fails shows the page again, with the person's drafts and what was wrong next to its field."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from .._core.errors import ApprovalError, CheckpointConflictError, CheckpointError, ToolInputError
from .._core.nested import record_in_tree
from .._core.state import CallRecord, plain_data
from .._core.tree_usage import spent, spent_by_agent
from .._ops.figures import agent_name, usage_text
from .._ops.render import printable
from .._stores.deciding import input_problems, parse_json
from .._stores.runs import waiting_calls
from ._auth import Session
from ._pages import Problem, ShownRecord, cost, outcome, shown_record, shown_run, when
from ._web import Pages, form_text, redirect, run_url

__all__ = ["Deciding"]


@dataclass
class _Form:
    """What a run's page shows again after a decision failed: the person's drafts, and the
    problems next to each field."""

    drafts: dict[str, dict[str, str]]
    problems: dict[tuple[str, str], list[Problem]]
    notices: dict[str, str]
    alert: str = ""
    taken: ShownRecord | None = None  # the call someone else decided first


@dataclass(frozen=True)
class _Asked:
    """A decision a person posted: the request, who, the form, and the call it decides."""

    request: Request
    session: Session
    form: FormData
    run_id: str
    call_id: str

    @classmethod
    def of(cls, request: Request, session: Session, form: FormData) -> _Asked:
        return cls(request, session, form, form_text(form, "run"), form_text(form, "call"))


class Deciding(Pages):
    """A run's page, and the handlers of its decision forms."""

    async def run(self, request: Request, session: Session) -> Response:
        return await self._run_page(request, session, request.query_params.get("id", ""))

    async def _run_page(
        self, request: Request, session: Session, run_id: str, form: _Form | None = None, status: int = 200
    ) -> Response:
        summary = await self.store.get_run(run_id)
        loaded = await self.store.load(run_id)
        if summary is None or loaded is None:
            return self._no_run(request, session, run_id)
        state = loaded.state
        total = spent(state).total  # the tree's, as the summary's turns and cost
        now = datetime.now(UTC)
        by_agent = spent_by_agent(state)
        run = {
            "run_id": summary.run_id,
            "status": summary.status.value,
            "turns": summary.turns,
            "tokens": f"{total.input_tokens:,} input and {total.output_tokens:,} output tokens",
            "by_agent": [
                {"agent": agent_name(path), "figures": usage_text(figures)}
                for path, figures in by_agent.items()
            ]
            if len(by_agent) > 1
            else [],
            "cost": cost(summary) if summary.cost is not None else "cost unknown",
            "created": when(summary.created, now),
            "updated": when(summary.updated, now),
            "outcome": printable(outcome(summary, now)),
        }
        form = form or _Form({}, {}, {})
        return self.render(
            request,
            session,
            "run.html",
            status=status,
            run=run,
            shown=shown_run(state),
            drafts=form.drafts,
            problem_lists=form.problems,
            notices=form.notices,
            alert=form.alert,
            taken=form.taken,
        )

    def _no_run(self, request: Request, session: Session, run_id: str) -> Response:
        return self.error(
            request, session, "No such run", f"The store has no run named {run_id!r}.", status=404
        )

    # -- deciding ----------------------------------------------------------------------------------

    async def approve(self, request: Request, session: Session, form: FormData) -> Response:
        asked = _Asked.of(request, session, form)
        text = form.get("input")
        edited: object = None
        record = await self._waiting_record(asked.run_id, asked.call_id)
        if isinstance(text, str) and record is not None:  # else the store says why it cannot be decided
            edited, problems = _edited_input(record, text)
            if problems:
                return await self._failed(asked, "input", problems)
        return await self._decide(
            asked,
            "input",
            lambda: self.store.approve_call(asked.run_id, asked.call_id, input=edited, by=session.name),
        )

    async def deny(self, request: Request, session: Session, form: FormData) -> Response:
        asked = _Asked.of(request, session, form)
        given = form_text(form, "reason")
        reason = given.strip() or None  # left empty: the default reason
        if given and reason is None:  # only spaces: a reason the model cannot read, as the store says
            problem = Problem(
                "", "The reason holds only spaces; write one the model can read, or leave it empty."
            )
            return await self._failed(asked, "reason", [problem])
        return await self._decide(
            asked,
            "reason",
            lambda: self.store.deny_call(asked.run_id, asked.call_id, reason, by=session.name),
        )

    async def answer(self, request: Request, session: Session, form: FormData) -> Response:
        asked = _Asked.of(request, session, form)
        result: object = form_text(form, "result")
        if form.get("json"):
            try:
                result = parse_json(str(result))
            except ValueError as error:
                problem = Problem(
                    "", f"This is not JSON: {error}; untick “the result is JSON” to send it as text."
                )
                return await self._failed(asked, "result", [problem])
        is_error = bool(form.get("error"))
        return await self._decide(
            asked,
            "result",
            lambda: self.store.answer_call(
                asked.run_id, asked.call_id, result, is_error=is_error, by=session.name
            ),
        )

    async def _waiting_record(self, run_id: str, call_id: str) -> CallRecord | None:
        loaded = await self.store.load(run_id)
        if loaded is None or not any(call.id == call_id for call in waiting_calls(loaded.state)):
            return None
        return record_in_tree(loaded.state, call_id)  # the run's own, or one in a sub-agent's run

    async def _decide(
        self, asked: _Asked, field: str, decide: Callable[[], Awaitable[CallRecord]]
    ) -> Response:
        request, session, run_id, call_id = asked.request, asked.session, asked.run_id, asked.call_id
        try:
            await decide()
        except ToolInputError as error:
            return await self._failed(asked, field, [Problem("", str(error))])
        except (ApprovalError, CheckpointConflictError) as error:
            # Decided by someone else first (the page says who and when), or no longer waiting.
            loaded = await self.store.load(run_id)
            record = None if loaded is None else record_in_tree(loaded.state, call_id)
            alert = f"Nothing was decided: {error}"
            page = _Form({}, {}, {call_id: alert}, alert=alert)
            if record is not None and record.decision is not None:
                page.taken = shown_record(record)
            return await self._run_page(request, session, run_id, page, status=409)
        except CheckpointError as error:
            if await self.store.get_run(run_id) is None:
                return self._no_run(request, session, run_id)
            raise error
        return redirect(request, f"{run_url(run_id)}#call-{quote(call_id, safe='')}")

    async def _failed(self, asked: _Asked, field: str, problems: Sequence[Problem]) -> Response:
        draft: dict[str, str] = {}
        for key in ("input", "reason", "result", "json", "error"):
            value = asked.form.get(key)
            if isinstance(value, str):
                draft[key] = value
        page = _Form(
            {asked.call_id: draft},
            {(asked.call_id, field): [Problem(p.path, printable(p.message)) for p in problems]},
            {},
        )
        return await self._run_page(asked.request, asked.session, asked.run_id, page, status=400)


def _edited_input(record: CallRecord, text: str) -> tuple[object, list[Problem]]:
    """The input an approval edited (``None``: as the call has it) and what is wrong with it: the
    store checks it again, and refuses an edit it cannot check."""
    try:
        data = parse_json(text)
    except ValueError as error:
        return None, [Problem("", f"This is not JSON: {error}.")]
    if data == plain_data(record.call.input, "input"):
        return None, []
    if (record.tool or {}).get("input_schema") is None:
        return data, []
    try:
        return data, [Problem(path, message) for path, message in input_problems(record, data)]
    except ToolInputError as error:
        return data, [Problem("", str(error))]
