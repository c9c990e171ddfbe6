// A small AG-UI client for the example page (static/agui.html): a thread's runs over HTTP and SSE,
// folded into AG-UI messages as @ag-ui/client's HttpAgent folds them. Plain ES module, no DOM, no
// dependency: tests/web/page_clients.mjs checks EVENT against @ag-ui/core's EventType and runs this
// client and HttpAgent through the same conversation, which must end in the same messages.
import { newId, refusal, serverSentEvents } from "./sse.js";

/** The AG-UI event types this client reads (toolrunner.web.agui_app sends these). */
export const EVENT = Object.freeze({
  RUN_STARTED: "RUN_STARTED",
  RUN_FINISHED: "RUN_FINISHED",
  RUN_ERROR: "RUN_ERROR",
  TEXT_MESSAGE_START: "TEXT_MESSAGE_START",
  TEXT_MESSAGE_CONTENT: "TEXT_MESSAGE_CONTENT",
  TEXT_MESSAGE_END: "TEXT_MESSAGE_END",
  TOOL_CALL_START: "TOOL_CALL_START",
  TOOL_CALL_ARGS: "TOOL_CALL_ARGS",
  TOOL_CALL_END: "TOOL_CALL_END",
  TOOL_CALL_RESULT: "TOOL_CALL_RESULT",
  MESSAGES_SNAPSHOT: "MESSAGES_SNAPSHOT",
});

/** One AG-UI thread: `messages` (AG-UI's), and how its last run ended. */
export class Thread {
  constructor(url, threadId, { headers = {} } = {}) {
    this.url = url;
    this.threadId = threadId;
    this.headers = headers;
    this.messages = [];
    this.interrupts = [];
    this.running = false;
    this.outcome = null; // "success" | "interrupt" once a run finished
    this.result = undefined;
    this.error = null;
    this.snapshots = 0; // MESSAGES_SNAPSHOT events seen: the thread's whole history came
  }

  /** One run: `messages` added to the thread's, or `resume` entries answering its interrupts;
   * neither follows the thread where it stands (a reload). `onChange(thread)` after each event. */
  async run({ messages = [], resume } = {}, onChange = () => {}) {
    this.messages.push(...messages);
    const input = {
      threadId: this.threadId,
      runId: newId(),
      state: {},
      messages: this.messages,
      tools: [],
      context: [],
      forwardedProps: {},
      ...(resume ? { resume } : {}),
    };
    Object.assign(this, { running: true, interrupts: [], outcome: null, result: undefined, error: null });
    onChange(this);
    try {
      const response = await fetch(this.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", ...this.headers },
        body: JSON.stringify(input),
      });
      if (!response.ok) {
        this.error = await refusal(response);
        return this;
      }
      for await (const { data } of serverSentEvents(response)) {
        this.apply(JSON.parse(data));
        onChange(this);
      }
    } catch (error) {
      this.error = String(error);
    } finally {
      this.running = false;
      onChange(this);
    }
    return this;
  }

  /** An AG-UI event folded into the thread. */
  apply(event) {
    switch (event.type) {
      case EVENT.TEXT_MESSAGE_START:
        this.messages.push({ id: event.messageId, role: event.role ?? "assistant", content: "" });
        break;
      case EVENT.TEXT_MESSAGE_CONTENT:
        this.#message(event.messageId).content += event.delta;
        break;
      case EVENT.TOOL_CALL_START: {
        let parent = this.messages.at(-1);
        if (parent?.id !== event.parentMessageId || parent.role !== "assistant") {
          parent = { id: event.parentMessageId ?? event.toolCallId, role: "assistant" };
          this.messages.push(parent);
        }
        parent.toolCalls = [
          ...(parent.toolCalls ?? []),
          { id: event.toolCallId, type: "function", function: { name: event.toolCallName, arguments: "" } },
        ];
        break;
      }
      case EVENT.TOOL_CALL_ARGS: {
        const call = this.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === event.toolCallId);
        if (call) call.function.arguments += event.delta;
        break;
      }
      case EVENT.TOOL_CALL_RESULT:
        this.messages.push({
          id: event.messageId,
          role: "tool",
          toolCallId: event.toolCallId,
          content: event.content,
        });
        break;
      case EVENT.MESSAGES_SNAPSHOT:
        this.messages = event.messages;
        this.snapshots += 1;
        break;
      case EVENT.RUN_FINISHED:
        this.outcome = event.outcome?.type ?? "success";
        this.interrupts = event.outcome?.interrupts ?? [];
        this.result = event.result;
        break;
      case EVENT.RUN_ERROR:
        this.error = event.message;
        break;
      default: // RUN_STARTED, TEXT_MESSAGE_END, TOOL_CALL_END, and what this client does not read
    }
  }

  #message(id) {
    let message = this.messages.find((m) => m.id === id);
    if (!message) {
      message = { id, role: "assistant", content: "" };
      this.messages.push(message);
    }
    message.content ??= "";
    return message;
  }
}
