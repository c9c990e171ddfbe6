// The example pages' own clients (toolrunner/web/static/agui.js and chat.js, plain ES modules the
// browser loads) against the official ones (tests/web/test_pages_node.py starts the apps):
//   node page_clients.mjs agui URL   EVENT names only @ag-ui/core's EventType values; the page's
//                                    Thread and @ag-ui/client's HttpAgent run the same conversation
//                                    (a tool, an approval answered after a reload) to the same messages
//   node page_clients.mjs chat URL   the page's Chat and the `ai` package's reader fold the same
//                                    conversation into the same message; GET /{id}/messages is
//                                    UIMessages the SDK validates, and the same message again
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";
import { EventType } from "@ag-ui/core";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema, validateUIMessages } from "ai";
import { EVENT, Thread } from "../../toolrunner/web/static/agui.js";
import { Chat, PART } from "../../toolrunner/web/static/chat.js";

const [mode, url] = process.argv.slice(2);
const ASK = "Pay Ada 3.";

// -- AG-UI ---------------------------------------------------------------------------------------

function aguiMessages(messages) {
  // what a page shows of AG-UI messages: ids differ between two threads, and so may they here
  return messages.map((m) => ({
    role: m.role,
    content: m.content || undefined,
    toolCallId: m.toolCallId,
    toolCalls: (m.toolCalls ?? []).map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]),
  }));
}

async function agui() {
  const known = new Set(Object.values(EventType));
  assert.deepEqual(Object.values(EVENT).filter((name) => !known.has(name)), []);

  const seen = {};
  // the official client: ask, then (as a reload would) a new agent on the thread approves
  const official = new HttpAgent({ url, threadId: "official", headers: { "X-Decided-By": "node" } });
  official.addMessage({ id: "u1", role: "user", content: ASK });
  await official.runAgent({});
  seen.official = { paused: aguiMessages(official.messages), interrupts: official.pendingInterrupts.map((i) => i.toolCallId) };
  const reloaded = new HttpAgent({ url, threadId: "official", headers: { "X-Decided-By": "node" } });
  await reloaded.runAgent({});
  seen.official.reloaded = aguiMessages(reloaded.messages);
  seen.official.waiting = reloaded.pendingInterrupts.map((i) => i.toolCallId);
  const done = await reloaded.runAgent({ resume: [{ interruptId: "pay-1", status: "resolved", payload: { approved: true } }] });
  seen.official.done = aguiMessages(reloaded.messages);
  seen.official.result = done.result;

  // the page's client, the same way
  const thread = new Thread(url, "page", { headers: { "X-Decided-By": "node" } });
  await thread.run({ messages: [{ id: "u1", role: "user", content: ASK }] });
  assert.equal(thread.error, null);
  seen.page = { paused: aguiMessages(thread.messages), interrupts: thread.interrupts.map((i) => i.toolCallId) };
  const again = new Thread(url, "page", { headers: { "X-Decided-By": "node" } });
  await again.run({});
  seen.page.reloaded = aguiMessages(again.messages);
  seen.page.waiting = again.interrupts.map((i) => i.toolCallId);
  await again.run({ resume: [{ interruptId: "pay-1", status: "resolved", payload: { approved: true } }] });
  assert.equal(again.error, null);
  assert.equal(again.outcome, "success");
  seen.page.done = aguiMessages(again.messages);
  seen.page.result = again.result;

  assert.deepEqual(seen.page, seen.official);
  assert.deepEqual(seen.page.waiting, ["pay-1"]);
  assert.equal(seen.page.result, "Ada is paid.");
  const unknown = new Thread(url, "nobody");
  await unknown.run({});
  assert.match(unknown.error, /^404/);
  return { events: Object.values(EVENT) };
}

// -- the AI SDK's UI message stream ------------------------------------------------------------

function uiParts(message) {
  // what a page shows of a UIMessage's parts
  return message.parts
    .filter((p) => p.type === "text" || p.type.startsWith("tool-"))
    .map((p) => (p.type === "text" ? ["text", p.text] : [p.type, p.state, p.input, p.output ?? p.errorText]));
}

async function official(messages, message) {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "X-Decided-By": "node" },
    body: JSON.stringify({ id: "official", messages, trigger: "submit-message" }),
  });
  assert.equal(answer.status, 200);
  const chunks = parseJsonEventStream({ stream: answer.body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw new Error(`a chunk does not parse: ${result.error}`);
        controller.enqueue(result.value);
      },
    }),
  );
  let final;
  for await (const snapshot of readUIMessageStream({ stream: chunks, message, terminateOnError: true })) final = snapshot;
  return final;
}

async function chat() {
  const user = { id: "u1", role: "user", parts: [{ type: "text", text: ASK }] };
  const paused = await official([user]);
  const pay = paused.parts.find((p) => p.type === "tool-pay");
  const answered = {
    ...paused,
    parts: paused.parts.map((p) => (p === pay ? { ...p, state: "approval-responded", approval: { id: pay.approval.id, approved: true } } : p)),
  };
  const done = await official([user, answered], answered);

  const page = new Chat(url, "page", { headers: { "X-Decided-By": "node" } });
  await page.send(ASK);
  assert.equal(page.error, null);
  assert.deepEqual(uiParts(page.messages.at(-1)), uiParts(paused));
  const reloaded = new Chat(url, "page", { headers: { "X-Decided-By": "node" } });
  assert.equal(await reloaded.reconnect(), false); // paused: nothing streams
  assert.equal(await reloaded.load(), false);
  await validateUIMessages({ messages: reloaded.messages });
  assert.deepEqual(uiParts(reloaded.messages.at(-1)), uiParts(paused));
  await reloaded.decide("pay-1", true);
  assert.equal(reloaded.error, null);
  assert.equal(reloaded.finishReason, "stop");
  assert.deepEqual(uiParts(reloaded.messages.at(-1)), uiParts(done));

  const stored = new Chat(url, "page");
  await stored.load();
  await validateUIMessages({ messages: stored.messages });
  assert.deepEqual(stored.messages.map((m) => m.role), ["user", "assistant"]);
  assert.deepEqual(uiParts(stored.messages.at(-1)), uiParts(done));
  return { parts: Object.values(PART) };
}

console.log(JSON.stringify(mode === "agui" ? await agui() : await chat()));
