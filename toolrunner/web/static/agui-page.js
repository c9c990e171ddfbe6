// The AG-UI example page (agui.html): a thread of toolrunner.web.agui_app, its id in ?thread=.
import { Thread } from "./agui.js";
import { conversationId, draw, headers, page, parsed } from "./page.js";
import { newId } from "./sse.js";

const endpoint = new URL(".", location.href).href;
const thread = new Thread(endpoint, conversationId("thread", newId));
const parts = page((text) => go({ messages: [{ id: newId(), role: "user", content: text }] }));

function items() {
  const results = new Map(thread.messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m.content]));
  const waiting = new Set(thread.interrupts.map((i) => i.toolCallId ?? i.id));
  const found = [];
  for (const message of thread.messages) {
    if (message.role === "user" || message.role === "assistant") {
      const content = typeof message.content === "string" ? message.content : (message.content ?? []).map((p) => p.text ?? "").join("");
      if (content) found.push({ kind: "text", role: message.role, text: content });
    }
    for (const call of message.toolCalls ?? []) {
      const done = results.has(call.id);
      const state = done ? "done" : waiting.has(call.id) ? "waiting" : thread.running ? "running" : "stopped";
      found.push({ kind: "call", id: call.id, name: call.function.name, input: parsed(call.function.arguments), result: results.get(call.id), state });
    }
  }
  return found;
}

function show() {
  draw(parts.list, items(), decide);
  const status = thread.error
    ? `error: ${thread.error}`
    : thread.running
      ? "running"
      : thread.outcome === "interrupt"
        ? "waiting for approval"
        : thread.outcome === "success"
          ? "done"
          : "ready";
  parts.status.textContent = status;
  parts.status.dataset.state = thread.error ? "error" : status === "waiting for approval" ? "waiting" : status;
}

async function go(input) {
  thread.headers = headers(parts.who);
  await thread.run(input, show);
}

function decide(id, approved) {
  const payload = approved ? { approved: true } : { approved: false, reason: "Denied in the page." };
  return go({ resume: [{ interruptId: id, status: "resolved", payload }] });
}

// On load: follow the thread where it stands (a run that runs: its request's part as it streams,
// then the whole thread's snapshot); a thread the server does not know is a new one.
await thread.run({}, show);
if (thread.error?.startsWith("404")) thread.error = null;
else if (!thread.error && thread.snapshots === 0) await thread.run({}, show);
show();
