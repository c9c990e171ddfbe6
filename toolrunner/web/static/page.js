// What both example pages draw: a conversation as plain items, every value put in as text
// (textContent, never innerHTML), and the approval prompt's buttons.
//   { kind: "text", role: "user" | "assistant", text }
//   { kind: "call", id, name, input, result, state }   state: "streaming" | "running" | "waiting"
//                                                              | "done" | "error" | "denied"

/** An element with attributes and children (strings become text nodes). */
export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

/** Draw `items` in `list`; `decide(id, approved)` is what the buttons of a waiting call do. */
export function draw(list, items, decide) {
  list.replaceChildren(...items.map((item) => (item.kind === "text" ? text(item) : call(item, decide))));
}

function text(item) {
  return element("li", { class: `message ${item.role}` }, element("span", { class: "role" }, item.role), element("p", {}, item.text));
}

function call(item, decide) {
  const input = typeof item.input === "string" ? item.input : JSON.stringify(item.input ?? {});
  const node = element(
    "li",
    { class: `call ${item.state}`, "data-call": item.id, "data-state": item.state },
    element("span", { class: "name" }, item.name),
    element("code", { class: "input" }, input),
    element("span", { class: "state" }, item.state),
  );
  if (item.result !== undefined && item.result !== null) node.append(element("pre", { class: "result" }, String(item.result)));
  if (item.state === "waiting") {
    const approve = element("button", { type: "button", class: "approve" }, "Approve");
    const deny = element("button", { type: "button", class: "deny" }, "Deny");
    approve.addEventListener("click", () => decide(item.id, true));
    deny.addEventListener("click", () => decide(item.id, false));
    node.append(element("div", { class: "approval", role: "group", "aria-label": `Approve ${item.name}?` }, approve, deny));
  }
  return node;
}

/** The conversation's id from `?NAME=` of the page's URL; a new one put there if it has none. */
export function conversationId(name, makeId) {
  const url = new URL(location.href);
  let id = url.searchParams.get(name);
  if (!id) {
    id = makeId();
    url.searchParams.set(name, id);
    history.replaceState(null, "", url);
  }
  return id;
}

/** The page's parts, by id; the form calls `send(text)`; `who` is the X-Decided-By header's value. */
export function page(send) {
  const parts = {
    list: document.getElementById("conversation"),
    status: document.getElementById("status"),
    form: document.getElementById("ask"),
    prompt: document.getElementById("prompt"),
    who: document.getElementById("who"),
  };
  parts.form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = parts.prompt.value.trim();
    if (!value) return;
    parts.prompt.value = "";
    send(value);
  });
  return parts;
}

/** The headers a request carries: who decides, if the page was told. */
export function headers(who) {
  const name = who?.value.trim();
  return name ? { "X-Decided-By": encodeURIComponent(name) } : {};
}

/** A call's input from the JSON text it streamed in (as is, while it is incomplete). */
export function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
