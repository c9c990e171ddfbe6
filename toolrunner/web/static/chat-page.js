// The AI SDK example page (chat.html): a chat of toolrunner.web.ui_message_stream_app, its id in ?chat=.
import { Chat } from "./chat.js";
import { conversationId, draw, headers, page } from "./page.js";
import { newId } from "./sse.js";

const STATES = {
  "input-streaming": "streaming",
  "input-available": "running",
  "approval-requested": "waiting",
  "approval-responded": "running",
  "output-available": "done",
  "output-error": "error",
  "output-denied": "denied",
};

const chat = new Chat(new URL(".", location.href).href, conversationId("chat", newId));
const parts = page((text) => {
  chat.headers = headers(parts.who);
  return chat.send(text, show);
});

function items() {
  const found = [];
  for (const message of chat.messages) {
    for (const part of message.parts) {
      if (part.type === "text" && part.text) found.push({ kind: "text", role: message.role, text: part.text });
      else if (part.type.startsWith("tool-")) {
        const result = part.output ?? part.errorText ?? (part.state === "output-denied" ? `denied${part.approval?.reason ? `: ${part.approval.reason}` : ""}` : undefined);
        found.push({ kind: "call", id: part.toolCallId, name: part.type.slice(5), input: part.input, result, state: STATES[part.state] ?? part.state });
      }
    }
  }
  return found;
}

function show() {
  draw(parts.list, items(), decide);
  const waiting = chat.messages.some((m) => m.parts.some((p) => p.state === "approval-requested"));
  const status = chat.error ? `error: ${chat.error}` : chat.streaming ? "running" : waiting ? "waiting for approval" : chat.finishReason || chat.messages.length ? "done" : "ready";
  parts.status.textContent = status;
  parts.status.dataset.state = chat.error ? "error" : waiting && !chat.streaming ? "waiting" : status;
}

function decide(id, approved) {
  chat.headers = headers(parts.who);
  return chat.decide(id, approved, approved ? undefined : "Denied in the page.", show);
}

// On load: follow the chat's run while it runs (its request's part as it streams), then show the
// chat as the server keeps it (a call that waits shows its approval prompt).
await chat.reconnect(show);
await chat.load();
show();
