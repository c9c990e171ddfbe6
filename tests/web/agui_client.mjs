// @ag-ui/client's HttpAgent against toolrunner.web.agui_app (tests/web/test_agui_node.py starts it over
// an Agent, and over a TemporalAgent and a worker: the backend fixture of tests/web/conftest.py):
// a conversation with a tool, then a call that waits, approved through an interrupt's resume entry.
// Every event must parse (the client verifies each against the protocol) and the end state be right.
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
if (process.argv[3] === "--cut") {
  // a reply cut off (max_tokens) inside a call's input: the call ends, the run finishes, and the
  // client takes every event (it rejects a run that finishes with a call still open)
  const cut = new HttpAgent({ url, threadId: "cut-thread" });
  cut.addMessage({ id: "u1", role: "user", content: "Pay Ada 3." });
  const kinds = [];
  let finished;
  await cut.runAgent({}, {
    onEvent: ({ event }) => { kinds.push(event.type); if (event.type === "RUN_FINISHED") finished = event; },
  });
  assert.deepEqual(kinds.slice(-2), ["TOOL_CALL_END", "RUN_FINISHED"]);
  console.log(JSON.stringify({ kinds, metadata: finished.metadata }));
  process.exit(0);
}
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

const numbered = [];
const first = await agent.runAgent({}, {
  ...subscriber,
  onEvent: (params) => { subscriber.onEvent(params); numbered.push([params.event.type, params.event.metadata?.index]); },
});
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
// each event of the run's log carries its number (metadata.index), through the client, in order
const indexes = numbered.filter(([type]) => type !== "RUN_STARTED").map(([, index]) => index);
assert.ok(indexes.every((index, at) => Number.isInteger(index) && (at === 0 || index > indexes[at - 1])), JSON.stringify(numbered));
// a client that reconnects with the number of an event inside a call starts at the call's start
const [, inside] = numbered.find(([type]) => type === "TOOL_CALL_ARGS");
const again = new HttpAgent({ url, threadId: "node-thread" });
const replayed = [];
await again.runAgent(
  { forwardedProps: { after: inside } },
  { onEvent: ({ event }) => { replayed.push(event.type); }, onRunFailed: ({ error }) => { errors.push(String(error)); } },
);
assert.deepEqual(errors, []);
assert.deepEqual(replayed.slice(0, 3), ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS"]);
console.log(JSON.stringify({ seen }));
