// Server-sent events read from a fetch() answer: each event's `id:` and its `data:` lines joined.
// Plain ES module, no DOM: the example pages and tests/web/page_clients.mjs (node) import it.

/** The events of `response`'s body, as `{ id, data }`, as they arrive. */
export async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = (buffer + value).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id = null;
        const data = [];
        for (const line of block.split("\n")) {
          const field = line.startsWith("data:") ? "data" : line.startsWith("id:") ? "id" : null;
          if (field === null) continue;
          const value = line.slice(field.length + 1).replace(/^ /, "");
          if (field === "data") data.push(value);
          else id = value;
        }
        if (data.length) yield { id, data: data.join("\n") };
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** A new random id (a conversation's, a message's). */
export function newId() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  return `id-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/** What an endpoint that refused a request said (its JSON `error`, else its status). */
export async function refusal(response) {
  try {
    const body = await response.json();
    if (typeof body?.error === "string") return `${response.status}: ${body.error}`;
  } catch {
    // not JSON: the status says it
  }
  return `${response.status} ${response.statusText}`;
}
