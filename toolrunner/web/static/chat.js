// A small client of the Vercel AI SDK's UI message stream for the example page (static/chat.html):
// a chat's UIMessages, its stream's parts folded in as the `ai` package's readUIMessageStream folds
// them, tool approvals answered as useChat's addToolApprovalResponse does. Plain ES module, no DOM,
// no dependency: tests/web/page_clients.mjs checks PART against the installed `ai`'s chunk types
// (with tests/web/test_pages_node.py) and runs this client and the SDK's reader through the same
// conversation, which must end in the same message.
import { newId, refusal, serverSentEvents } from "./sse.js";

/** The part types this client reads (toolrunner.web.ui_message_stream_app sends these). */
export const PART = Object.freeze({
  START: "start",
  TEXT_START: "text-start",
  TEXT_DELTA: "text-delta",
  TEXT_END: "text-end",
  TOOL_INPUT_START: "tool-input-start",
  TOOL_INPUT_DELTA: "tool-input-delta",
  TOOL_INPUT_AVAILABLE: "tool-input-available",
  TOOL_INPUT_ERROR: "tool-input-error",
  TOOL_OUTPUT_AVAILABLE: "tool-output-available",
  TOOL_OUTPUT_ERROR: "tool-output-error",
  TOOL_OUTPUT_DENIED: "tool-output-denied",
  TOOL_APPROVAL_REQUEST: "tool-approval-request",
  ERROR: "error",
  FINISH: "finish",
});

/** One chat: `messages` (the SDK's UIMessages), and how its last request ended. */
export class Chat {
  constructor(url, id, { headers = {} } = {}) {
    this.url = url.endsWith("/") ? url : `${url}/`;
    this.id = id;
    this.headers = headers;
    this.messages = [];
    this.streaming = false;
    this.finishReason = null;
    this.error = null;
  }

  /** The chat as the server keeps it (GET /{id}/messages); whether its run is running. */
  async load() {
    const response = await fetch(`${this.url}${encodeURIComponent(this.id)}/messages`);
    if (response.status === 404) return false;
    if (!response.ok) throw new Error(await refusal(response));
    const { messages, running } = await response.json();
    this.messages = messages;
    return running;
  }

  /** Follow the chat's run while it runs (GET /{id}/stream); false if it does not run. */
  async reconnect(onChange = () => {}) {
    const response = await fetch(`${this.url}${encodeURIComponent(this.id)}/stream`);
    if (response.status === 204) return false;
    await this.#follow(response, onChange);
    return true;
  }

  /** A person's message, and the answer as it streams. */
  async send(text, onChange = () => {}) {
    this.messages.push({ id: newId(), role: "user", parts: [{ type: "text", text }] });
    await this.#post(onChange);
  }

  /** A decision on a call that waits (the SDK's approval response), and the run going on. */
  async decide(toolCallId, approved, reason, onChange = () => {}) {
    const part = this.#part(toolCallId);
    if (part?.state !== "approval-requested") throw new Error(`no call ${toolCallId} waits here`);
    part.state = "approval-responded";
    part.approval = { id: part.approval.id, approved, ...(reason ? { reason } : {}) };
    await this.#post(onChange);
  }

  async #post(onChange) {
    let response;
    try {
      response = await fetch(this.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...this.headers },
        body: JSON.stringify({ id: this.id, messages: this.messages, trigger: "submit-message" }),
      });
    } catch (error) {
      this.error = String(error);
      onChange(this);
      return;
    }
    if (!response.ok) {
      this.error = await refusal(response);
      onChange(this);
      return;
    }
    await this.#follow(response, onChange);
  }

  async #follow(response, onChange) {
    let message = this.messages.at(-1);
    if (message?.role !== "assistant") {
      message = { id: newId(), role: "assistant", parts: [] };
      this.messages.push(message);
    }
    Object.assign(this, { streaming: true, finishReason: null, error: null });
    onChange(this);
    try {
      for await (const { data } of serverSentEvents(response)) {
        if (data === "[DONE]") break;
        this.apply(message, JSON.parse(data));
        onChange(this);
      }
    } catch (error) {
      this.error = String(error);
    } finally {
      this.streaming = false;
      onChange(this);
    }
  }

  /** A part of the stream folded into `message`. */
  apply(message, chunk) {
    const call = (id) => message.parts.find((p) => p.toolCallId === id);
    switch (chunk.type) {
      case PART.TEXT_START:
        message.parts.push({ type: "text", text: "", state: "streaming", _id: chunk.id });
        break;
      case PART.TEXT_DELTA:
        message.parts.findLast((p) => p._id === chunk.id).text += chunk.delta;
        break;
      case PART.TEXT_END: {
        const part = message.parts.findLast((p) => p._id === chunk.id);
        part.state = "done";
        delete part._id;
        break;
      }
      case PART.TOOL_INPUT_START:
        if (!call(chunk.toolCallId)) {
          message.parts.push({ type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, state: "input-streaming" });
        }
        break;
      case PART.TOOL_INPUT_DELTA:
        break; // the input is shown once it is complete
      case PART.TOOL_INPUT_AVAILABLE: {
        const part = call(chunk.toolCallId);
        if (part) Object.assign(part, { state: "input-available", input: chunk.input });
        else message.parts.push({ type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, state: "input-available", input: chunk.input });
        break;
      }
      case PART.TOOL_INPUT_ERROR: {
        // a call whose input the reply cut off: as the SDK's reader, an error with the raw input
        const part = call(chunk.toolCallId);
        const cut = { state: "output-error", input: undefined, rawInput: chunk.input, errorText: chunk.errorText };
        if (part) Object.assign(part, cut);
        else message.parts.push({ type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, ...cut });
        break;
      }
      case PART.TOOL_APPROVAL_REQUEST:
        Object.assign(call(chunk.toolCallId), { state: "approval-requested", approval: { id: chunk.approvalId } });
        break;
      case PART.TOOL_OUTPUT_AVAILABLE:
        Object.assign(call(chunk.toolCallId), { state: "output-available", output: chunk.output });
        break;
      case PART.TOOL_OUTPUT_ERROR:
        Object.assign(call(chunk.toolCallId), { state: "output-error", errorText: chunk.errorText });
        break;
      case PART.TOOL_OUTPUT_DENIED: {
        const part = call(chunk.toolCallId);
        part.state = "output-denied";
        part.approval = { ...(part.approval ?? { id: chunk.toolCallId }), approved: false };
        break;
      }
      case PART.ERROR:
        this.error = chunk.errorText;
        break;
      case PART.FINISH:
        this.finishReason = chunk.finishReason ?? "other";
        break;
      default: // start, and what this client does not read
    }
  }

  #part(toolCallId) {
    return this.messages.flatMap((m) => m.parts).find((p) => p.toolCallId === toolCallId);
  }
}
