"""A sub-agent's ``params`` are checked at construction, as a run's own params are (audit F1): a
typo, a param the installed SDK does not take, one a sub-run cannot take, or a value JSON cannot
carry is a ``ParamsError`` naming it and what to do, before any request is sent (it used to pass,
and the sub-run's first request raised the SDK's bare ``TypeError`` mid-run)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.subagents import searcher
from toolrunner import ParamsError, ToolRunner
from toolrunner._tools.request_params import TRANSPORT, known_param_names
from toolrunner.testing import FakeMessagesAPI

REFUSED_IN_A_SUB_RUN = {"tool_choice", "thread", "compaction"}
"""The request params a runner takes that a sub-run cannot (yet): refused at construction."""


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"temprature": 0.5}, "'temprature' is not a parameter of client.messages.create"),
        ({"max_iteration": 3}, "Did you mean 'max_iterations'?"),
        ({"max_cost": "1"}, "give it as SubAgent's own argument (SubAgent(..., max_cost=...))"),
        ({"model": "other"}, "give it as SubAgent's own argument (SubAgent(..., model=...))"),
        ({"tool_choice": {"type": "any"}}, "'tool_choice': a sub-run's model chooses among its tools itself"),
        ({"tool_choice": {"type": "any"}}, "leave tool_choice out"),
        ({"output_format": dict}, "give it as SubAgent's own argument (SubAgent(..., output_format=...))"),
        ({"output_retries": 2}, "give it as SubAgent's own argument (SubAgent(..., output_retries=...))"),
        ({"stream": True}, "leave stream out"),
        ({"messages": []}, "the task its parent's model gives"),
        ({"compaction": {"type": "x"}}, "leave compaction out"),
        (
            {"stop_sequences": object()},
            "params['stop_sequences'] holds a 'object', which a saved state cannot carry",
        ),
        ({"metadata": {"user_id": {1, 2}}}, "params['metadata']['user_id'] holds a 'set'"),
        ({"stop_sequences": ["\ud800"]}, "the param 'stop_sequences' holds text with lone surrogates"),
        ({7: "x"}, "params must be keyed by param names (str), not 7"),
    ],
)
def test_a_param_a_sub_run_cannot_send_is_refused_at_construction(params: dict[Any, Any], words: str) -> None:
    with pytest.raises(ParamsError) as raised:
        searcher(params=params)
    message = str(raised.value)
    assert message.startswith("the SubAgent 'searcher': ")
    assert words in message


def test_a_system_prompt_json_cannot_carry_is_a_params_error() -> None:
    with pytest.raises(ParamsError, match=r"system\[0\]\['extra'\] holds a 'object'"):
        searcher(system=[{"type": "text", "text": "Search.", "extra": object()}])


def test_the_names_checked_are_the_runners() -> None:
    # One check, not two copies: a name the runner refuses as no param of the SDK, a sub-agent
    # refuses with the same words; every param the runner takes, a sub-agent takes too, but those
    # a sub-run cannot take (refused above with what to do instead).
    client = FakeMessagesAPI().async_client()
    for name in ("temprature", "top_q", "max_token"):
        with pytest.raises(ParamsError) as by_runner:
            wrong: dict[str, Any] = {name: 1}
            ToolRunner(
                client, model="m", max_tokens=10, messages=[{"role": "user", "content": "Hi."}], **wrong
            )
        with pytest.raises(ParamsError) as by_agent:
            searcher(params={name: 1})
        said = str(by_runner.value).split(". ")[0]
        assert said in str(by_agent.value)
    own = {"model", "max_tokens", "system", "tools", "messages"}
    for name in sorted(known_param_names() - own - REFUSED_IN_A_SUB_RUN):
        assert name in searcher(params={name: None}).params or name in TRANSPORT, name


def test_the_params_the_docs_name_are_taken() -> None:
    # docs/agents.md names these as a sub-agent's params: valid for the installed SDK (they are
    # at the floor, anthropic 2.12, too; `temperature` is in neither).
    agent = searcher(
        params={
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "stop_sequences": ["END"],
            "metadata": {"user_id": "u1"},
        }
    )
    assert set(agent.params) == {"thinking", "stop_sequences", "metadata"}
