// @ag-ui/client's HttpAgent against toolrunner.web.agui_app (tests/web/test_agui_node.py starts it over
// an Agent, and over a TemporalAgent and a worker: the backend fixture of tests/web/conftest.py):
// a conversation with a tool, then a call that waits, approved through an interrupt's resume entry.
// Every event must parse (the client verifies each against the protocol) and the end state be right.
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
const agent = new HttpAgent({ url, threadId: "node-thread", headers: { "X-Decided-By": "node" } });
agent.addMessage({ id: "u1", role: "user", content: "Pay Ada 3." });
const seen = [];
const errors = [];
const outcomes = [];
const subscriber = {
  onEvent: ({ event }) => { seen.push(event.type); },
  onRunFinishedEvent: (params) => { outcomes.push(params.outcome); },
  onRunFailed: ({ error }) => { errors.push(String(error)); },
};

const first = await agent.runAgent({}, subscriber);
assert.deepEqual(errors, []);
assert.deepEqual(outcomes, ["interrupt"]);
assert.equal(first.result, undefined);
assert.equal(agent.pendingInterrupts.length, 1);
const [interrupt] = agent.pendingInterrupts;
assert.equal(interrupt.toolCallId, "pay-1");
assert.equal(interrupt.reason, "tool_approval");
const texts = agent.messages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content);
assert.deepEqual(texts, ["Let me look."]);
const looked = agent.messages.find((m) => m.role === "tool" && m.toolCallId === "look-1");
assert.equal(looked.content, "Ada: account 7");
const calls = agent.messages.flatMap((m) => m.toolCalls ?? []);
assert.deepEqual(calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]), [
  ["look-1", "look", { name: "Ada" }],
  ["pay-1", "pay", { amount: 3 }],
]);

const second = await agent.runAgent(
  { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] },
  subscriber,
);
assert.deepEqual(errors, []);
assert.deepEqual(outcomes, ["interrupt", "success"]);
assert.equal(second.result, "Ada is paid.");
assert.deepEqual(agent.pendingInterrupts, []);
const result = agent.messages.find((m) => m.role === "tool" && m.toolCallId === "pay-1");
assert.equal(result.content, "paid 3");
assert.equal(agent.messages.at(-1).content, "Ada is paid.");
console.log(JSON.stringify({ seen }));
