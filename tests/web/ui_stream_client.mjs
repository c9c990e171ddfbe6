// The `ai` package's own reader against toolrunner.web.ui_message_stream_app
// (tests/web/test_ui_stream_node.py starts it). Each chunk is parsed and checked against the SDK's
// schema (parseJsonEventStream with uiMessageChunkSchema), then folded into a UIMessage by
// readUIMessageStream, as useChat does: a conversation with a tool and a call that waits, approved
// with the SDK's approval response, then the run's end.
//   node ui_stream_client.mjs URL          the conversation
//   node ui_stream_client.mjs --check FILE every chunk of an SSE file must parse
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const finishes = [];

function chunksOf(body) {
  const parsed = parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema });
  const types = [];
  const checked = parsed.pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw new Error(`a chunk does not parse: ${result.error} (${JSON.stringify(result.rawValue)})`);
        types.push(result.value.type);
        if (result.value.type === "finish") finishes.push(result.value.finishReason);
        controller.enqueue(result.value);
      },
    }),
  );
  return { checked, types };
}

async function last(stream, message) {
  let final;
  for await (const snapshot of readUIMessageStream({ stream, message, terminateOnError: true })) final = snapshot;
  return final;
}

if (process.argv[2] === "--check") {
  const body = new Response(readFileSync(process.argv[3])).body;
  const { checked, types } = chunksOf(body);
  for await (const _ of checked);
  console.log(JSON.stringify({ types }));
  process.exit(0);
}

const url = process.argv[2];
if (process.argv[3] === "--cut") {
  // a reply cut off (max_tokens) inside a call's input: the part ends as an input error, and the
  // finish says why
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: "cut-chat", messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Pay Ada 3." }] }] }),
  });
  const { checked, types } = chunksOf(answer.body);
  const cut = await last(checked);
  const tool = cut.parts.find((part) => part.type.startsWith("tool-"));
  assert.equal(tool.state, "output-error");
  console.log(JSON.stringify({ types, finishes, state: tool.state }));
  process.exit(0);
}
const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Pay Ada 3." }] };
async function post(messages) {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "X-Decided-By": "node" },
    body: JSON.stringify({ id: "node-chat", messages, trigger: "submit-message" }),
  });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get("x-vercel-ai-ui-message-stream"), "v1");
  return answer.body;
}

const first = chunksOf(await post([user]));
const paused = await last(first.checked);
assert.equal(paused.role, "assistant");
const tools = paused.parts.filter((part) => part.type.startsWith("tool-"));
assert.deepEqual(tools.map((part) => [part.type, part.state]), [
  ["tool-look", "output-available"],
  ["tool-pay", "approval-requested"],
]);
assert.equal(tools[0].output, "Ada: account 7");
assert.deepEqual(tools[1].input, { amount: 3 });
assert.equal(paused.parts.find((part) => part.type === "text").text, "Let me look.");

// addToolApprovalResponse, as useChat does it: the part answered, the messages sent again
const pay = tools[1];
const answered = {
  ...paused,
  parts: paused.parts.map((part) =>
    part === pay ? { ...part, state: "approval-responded", approval: { id: pay.approval.id, approved: true } } : part,
  ),
};
const second = chunksOf(await post([user, answered]));
const done = await last(second.checked, answered);
const paid = done.parts.find((part) => part.type === "tool-pay");
assert.equal(paid.state, "output-available");
assert.equal(paid.output, "paid 3");
assert.equal(done.parts.filter((part) => part.type === "text").at(-1).text, "Ada is paid.");
console.log(JSON.stringify({ types: [...first.types, ...second.types] }));
