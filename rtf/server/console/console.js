// The rtf serve console (docs/console.md): plain modern JavaScript, no framework.
//
// Everything the server answers is written as text (text nodes, textContent):
// an id, a literal or an error holding markup shows as that markup and runs
// nothing. The page's Content-Security-Policy requires Trusted Types, so the
// browser itself would refuse any HTML made from a string. The token lives in
// this tab's session storage and travels only in the Authorization header.

const $ = (id) => document.getElementById(id);
const seg = encodeURIComponent;
const TOKEN_KEY = "rtf-console-token";
const PAGE_SIZE = 20;
const LIVE_KEPT = 200;          // matches shown in the live list
const CONTEXT = 80;             // characters shown around a highlight in a long literal
const STATUS_EVERY_MS = 3000;

/** An element of class `cls` holding `children` (strings become text nodes). */
function el(tag, cls, ...children) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

// ------------------------------------------------------------------ the API

class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

const session = { token: sessionStorage.getItem(TOKEN_KEY), who: null };

/** A request to the API (paths are relative: the page may live under a prefix). */
async function api(method, path, { json, body, type, params } = {}) {
  const headers = {};
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  if (json !== undefined) {
    body = JSON.stringify(json);
    type = "application/json";
  }
  if (type) headers["Content-Type"] = type;
  const query = new URLSearchParams(Object.entries(params || {})
    .filter(([, v]) => v !== null && v !== undefined && v !== "")).toString();
  const response = await fetch(query ? `${path}?${query}` : path,
    { method, headers, body, credentials: "omit", cache: "no-store" });
  if (!response.ok) {
    let payload;
    try { payload = await response.json(); } catch { payload = {}; }
    const message = payload.error || `${response.status} ${response.statusText}`;
    if (response.status === 401 && session.who && session.who.tokens) signOut(message);
    throw new ApiError(response.status, message, payload);
  }
  return response;
}

// ------------------------------------------------------------------ signing in

async function signIn(token) {
  session.token = token || null;
  const who = await (await api("GET", "whoami")).json();
  session.who = who;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  showApp();
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  session.token = null;
  session.who = null;
  stopStream();
  clearInterval(status.timer);
  $("app").hidden = true;
  $("sign-out").hidden = true;
  $("who-name").textContent = "";
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
  $("token").focus();
}

function showApp() {
  const who = session.who;
  const subscriber = who.role === "subscriber" ? who.subscriber : null;
  $("who-name").textContent = who.tokens
    ? `signed in: ${who.role}${subscriber !== null ? ` ${subscriber}` : ""}`
    : "single-user mode (no --tokens)";
  $("sign-out").hidden = !who.tokens;
  $("sign-in").hidden = true;
  $("app").hidden = false;
  for (const id of ["subscriber", "watch"]) {
    $(id).readOnly = subscriber !== null;
    if (subscriber !== null) $(id).value = subscriber;
  }
  $("filter-subscriber").hidden = who.role !== "admin";
  refreshQueries(true);
  refreshStatus();
  clearInterval(status.timer);
  status.timer = setInterval(refreshStatus, STATUS_EVERY_MS);
  if (subscriber !== null) watch(subscriber, false);
  if ($("query").value.trim()) runCheck();
}

// ------------------------------------------------------------------ the editor

let checkSeq = 0;
let checkTimer = null;

function scheduleCheck() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(runCheck, 250);
}

/** Ask the server what `rtf check` says of the editor's text (the last answer wins). */
async function runCheck() {
  const text = $("query").value;
  const seq = ++checkSeq;
  if (!text.trim()) {
    showCheck(null, text);
    return;
  }
  try {
    const result = await (await api("POST", "check", { json: { query: text } })).json();
    if (seq === checkSeq) showCheck(result, text);
  } catch (e) {
    if (seq === checkSeq) $("check").replaceChildren(el("p", "error", `cannot check: ${e.message}`));
  }
}

function showCheck(result, text) {
  const box = $("check");
  box.replaceChildren();
  markError(text, result && !result.valid ? result : null);
  if (!result) return;
  box.dataset.valid = String(result.valid);
  if (!result.valid) {
    const where = result.line !== null ? `line ${result.line}, column ${result.column}: ` : "";
    box.append(el("p", "error", el("span", "where", where), result.message));
    return;
  }
  const n = result.branches;
  box.append(el("p", "ok", `valid ${result.form} query, ${n} branch${n === 1 ? "" : "es"}`));
  for (const warning of result.warnings) box.append(el("p", "warning", `warning: ${warning}`));
  box.append(el("details", null, el("summary", null, "decomposition (rtf check)"),
    el("pre", null, result.description)));
}

/** Mark the character at the error's line and column (1-based, in characters) behind the text. */
function markError(text, error) {
  const backdrop = $("backdrop");
  $("query").parentElement.classList.toggle("invalid", Boolean(error));
  if (!error || error.line === null || error.line === undefined) {
    backdrop.replaceChildren(`${text}\n`);
    return;
  }
  const at = offsetOf(text, error.line, error.column || 1);
  const width = at < text.length && text[at] !== "\n" ? String.fromCodePoint(text.codePointAt(at)).length : 0;
  backdrop.replaceChildren(text.slice(0, at), el("mark", null, width ? text.slice(at, at + width) : " "),
    `${text.slice(at + width)}\n`);
  syncScroll();
}

function offsetOf(text, line, column) {
  let at = 0;
  for (let l = 1; l < line; l++) {
    const end = text.indexOf("\n", at);
    if (end < 0) return text.length;
    at = end + 1;
  }
  for (let c = 1; c < column && at < text.length && text[at] !== "\n"; c++) {
    at += String.fromCodePoint(text.codePointAt(at)).length;
  }
  return at;
}

function syncScroll() {
  $("backdrop").scrollTop = $("query").scrollTop;
  $("backdrop").scrollLeft = $("query").scrollLeft;
}

function say(id, cls, text) {
  $(id).className = cls;
  $(id).textContent = text;
}

async function register(event) {
  event.preventDefault();
  const id = $("query-id").value;
  const text = $("query").value;
  let metadata;
  try {
    metadata = JSON.parse($("metadata").value.trim() || "{}");
  } catch (e) {
    say("register-result", "error", `the metadata is not JSON: ${e.message}`);
    return;
  }
  if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
    say("register-result", "error", "the metadata must be a JSON object");
    return;
  }
  const body = { query: text, metadata };
  if ($("subscriber").value) body.subscriber = $("subscriber").value;
  try {
    const answer = await (await api("PUT", `queries/${seg(id)}`, { json: body })).json();
    const whose = answer.subscriber === null ? "no subscriber" : `subscriber ${answer.subscriber}`;
    say("register-result", "ok", `${answer.created ? "registered" : "replaced"} ${id} (${whose})`);
    if (answer.subscriber !== null && stream.name === null) watch(answer.subscriber, false);
    refreshQueries(false);
  } catch (e) {
    say("register-result", "error", e.message);
    if (e.body && e.body.line !== undefined) markError(text, e.body);
  }
}

async function unregister() {
  const id = $("query-id").value;
  try {
    await api("DELETE", `queries/${seg(id)}`);
    say("register-result", "ok", `unregistered ${id}`);
    refreshQueries(false);
  } catch (e) {
    say("register-result", "error", e.message);
  }
}

// ------------------------------------------------------------------ the queries list

const listing = { cursors: [0], page: 0 };

async function refreshQueries(fromStart) {
  if (fromStart) {
    listing.cursors = [0];
    listing.page = 0;
  }
  const body = $("queries").tBodies[0];
  const params = { limit: PAGE_SIZE, after: listing.cursors[listing.page], contains: $("filter").value };
  if (session.who.role === "admin") params.subscriber = $("filter-subscriber").value;
  let page;
  try {
    page = await (await api("GET", "queries", { params })).json();
  } catch (e) {
    body.replaceChildren(el("tr", "error", cell(e.message, 4)));
    $("next-page").disabled = true;
    return;
  }
  body.replaceChildren(...page.queries.map(queryRow));
  if (!page.queries.length) body.append(el("tr", "empty", cell("no queries", 4)));
  listing.cursors[listing.page + 1] = page.next;
  $("prev-page").disabled = listing.page === 0;
  $("next-page").disabled = page.next === null;
  $("page-label").textContent = `page ${listing.page + 1}`;
}

function cell(text, span) {
  const td = el("td", null, text);
  td.title = text;
  if (span) td.colSpan = span;
  return td;
}

function queryRow(q) {
  const metadata = JSON.stringify(q.metadata);
  const row = el("tr", null, cell(q.id), cell(q.subscriber ?? ""), cell(q.query),
    cell(metadata === "{}" ? "" : metadata));
  row.dataset.id = q.id;
  row.addEventListener("click", () => {
    for (const r of row.parentElement.rows) r.classList.toggle("selected", r === row);
    $("query").value = q.query;
    $("query-id").value = q.id;
    if (!$("subscriber").readOnly) $("subscriber").value = q.subscriber ?? "";
    $("metadata").value = JSON.stringify(q.metadata, null, 1);
    runCheck();
  });
  return row;
}

function turnPage(step) {
  listing.page += step;
  refreshQueries(false);
}

let filterTimer = null;

function scheduleFilter() {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => refreshQueries(true), 300);
}

// ------------------------------------------------------------------ matches

/** A match line (`rtf match`'s) as a list item: query, subscriber, publication, answer. */
function matchItem(line, eventId) {
  const item = el("li", "match");
  if (eventId !== undefined) item.dataset.event = String(eventId);
  item.append(el("div", "head",
    eventId !== undefined ? el("span", "event", `#${eventId}`) : null,
    el("span", "query", line.query),
    line.subscriber !== null ? el("span", "subscriber", line.subscriber) : null,
    el("span", "publication", line.publication)));
  item.append(answer(line));
  if (line.metadata && Object.keys(line.metadata).length) {
    item.append(el("div", "metadata mono", `metadata ${JSON.stringify(line.metadata)}`));
  }
  if (line.explain) item.append(explanation(line.explain));
  return item;
}

/** The bindings (a row per solution), a CONSTRUCT's triples, or an ASK's true. */
function answer(line) {
  if (Array.isArray(line.triples)) {
    return el("table", "triples", ...line.triples.map((t) => el("tr", null, ...t.map((term) => el("td", null, term)))));
  }
  const rows = line.bindings || [];
  if (!rows.length) return el("p", "ask", "ASK: true");
  const names = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  return el("table", "bindings",
    el("tr", null, ...names.map((n) => el("th", null, `?${n}`))),
    ...rows.map((row) => el("tr", null, ...names.map((n) => el("td", null, row[n] ?? "")))));
}

/** `rtf match --explain`'s entries: per solution the branch, and each ftcontains with its
 *  literal, the words that satisfied it highlighted. */
function explanation(solutions) {
  const box = el("div", "explain");
  solutions.forEach((solution, i) => {
    box.append(el("div", "branch", solution.branch === null
      ? `solution ${i + 1}: no witness found`
      : `solution ${i + 1}: branch ${solution.branch}`));
    for (const ft of solution.ftcontains) {
      box.append(el("div", "ft", `${ft.variable ?? "(a constant)"} ftcontains ${ft.ftcontains}`));
      box.append(highlighted(ft.literal, ft.hits));
    }
  });
  return box;
}

const ESCAPES = { t: "\t", b: "\b", n: "\n", r: "\r", f: "\f", '"': '"', "'": "'", "\\": "\\" };

/** The lexical form of an N-Triples literal, and what follows it (@lang, ^^datatype). */
function lexicalForm(term) {
  if (!term.startsWith('"')) return { text: term, suffix: "" };
  let text = "";
  let i = 1;
  for (; i < term.length && term[i] !== '"'; i++) {
    if (term[i] !== "\\") {
      text += term[i];
    } else if (term[i + 1] === "u" || term[i + 1] === "U") {
      const n = term[i + 1] === "u" ? 4 : 8;
      text += String.fromCodePoint(parseInt(term.slice(i + 2, i + 2 + n), 16));
      i += n + 1;
    } else {
      text += ESCAPES[term[i + 1]] ?? term[i + 1];
      i += 1;
    }
  }
  return { text, suffix: term.slice(i + 1) };
}

/** The literal with the hits' spans marked (character offsets, as the server counts them);
 *  of a long literal, the passages around its highlights. */
function highlighted(literal, hits) {
  const { text, suffix } = lexicalForm(literal);
  const chars = Array.from(text);
  const spans = hits.flatMap((h) => h.spans).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const long = chars.length > 4 * CONTEXT && spans.length > 0;
  const passages = [];   // [from, to): all of a short literal, else CONTEXT around each span
  for (const [start, end] of long ? spans : [[0, chars.length]]) {
    const from = long ? Math.max(0, start - CONTEXT) : start;
    const to = long ? Math.min(chars.length, end + CONTEXT) : end;
    const last = passages.at(-1);
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else passages.push([from, to]);
  }
  const quote = el("blockquote");
  passages.forEach(([from, to], i) => {
    if (from > 0) quote.append(i ? " … " : "… ");
    let at = from;
    for (const [start, end] of spans) {
      const s = Math.max(start, at);
      const e = Math.min(end, to);
      if (e <= s) continue;
      quote.append(chars.slice(at, s).join(""), el("mark", null, chars.slice(s, e).join("")));
      at = e;
    }
    quote.append(chars.slice(at, to).join(""));
  });
  if (passages.at(-1)[1] < chars.length) quote.append(" …");
  if (suffix) quote.append(el("span", "suffix", ` ${suffix}`));
  return quote;
}

// ------------------------------------------------------------------ the live stream

// `generation` counts the watch() and stop calls: a connection begun before one is dropped.
const stream = { name: null, source: null, last: null, retry: null, delay: 100, attempts: 0, generation: 0 };

function watch(name, retained) {
  stopStream();
  $("watch").value = name;
  stream.name = name;
  stream.last = retained ? 0 : null;   // null: from now on; 0: everything the outbox holds
  stream.attempts = 0;
  stream.delay = 100;
  $("live").replaceChildren();
  connect();
}

function stopStream() {
  stream.generation += 1;
  if (stream.source) stream.source.close();
  clearTimeout(stream.retry);
  stream.source = null;
  stream.name = null;
  setStreamState("closed", "");
}

function setStreamState(state, note) {
  $("stream-state").dataset.state = state;
  $("stream-state").textContent = state;
  $("stream-note").textContent = note;
}

function notice(cls, text) {
  $("live").prepend(el("li", `match notice ${cls}`, text));
}

/** Open the stream with a new ticket (an EventSource cannot send the token), resuming
 *  after the last event shown: each match is shown once, whatever the reconnections. */
async function connect() {
  const { name, generation } = stream;
  if (name === null) return;
  const current = () => stream.generation === generation;
  setStreamState(stream.attempts ? "reconnecting" : "connecting",
    stream.attempts ? `attempt ${stream.attempts}` : "");
  let ticket;
  try {
    ticket = (await (await api("POST", `subscribers/${seg(name)}/tickets`)).json()).ticket;
  } catch (e) {
    if (!current()) return;
    if ([400, 401, 403].includes(e.status)) setStreamState("refused", e.message);
    else retry(`no ticket (${e.message})`, "reconnecting");
    return;
  }
  if (!current()) return;
  const params = new URLSearchParams({ ticket });
  if (stream.last !== null) params.set("last_event_id", String(stream.last));
  const source = new EventSource(`subscribers/${seg(name)}/matches?${params}`);
  stream.source = source;
  // every handler of this connection does nothing once another one replaced it
  const on = (type, handle) => source.addEventListener(type, (e) => stream.source === source && handle(e));
  on("open", (e) => {
    if (!(e instanceof MessageEvent)) return;   // (the connection's own open event)
    const data = JSON.parse(e.data);
    if (Number.isInteger(data.last_event_id)) stream.last = data.last_event_id;
    stream.attempts = 0;
    stream.delay = 100;
    setStreamState("live", `from event ${stream.last}`);
  });
  on("match", (e) => {
    const id = Number(e.lastEventId);
    if (stream.last !== null && id <= stream.last) return;   // shown already
    stream.last = id;
    if ($("stream-state").dataset.state !== "live") setStreamState("live", `after event ${id}`);
    showLiveMatch(name, id, JSON.parse(e.data));
  });
  on("gap", (e) => {
    const data = JSON.parse(e.data);
    if (stream.last !== null && data.to <= stream.last) return;
    stream.last = data.to;
    const text = `events ${data.from} to ${data.to} were dropped from the outbox (retention) before they were read`;
    notice("gap", `gap: ${text}`);
    setStreamState("gap", text);
  });
  on("cut", (e) => {
    const data = JSON.parse(e.data);
    if (stream.last === null && Number.isInteger(data.last_event_id)) stream.last = data.last_event_id;
    source.close();
    notice("cut", `cut: ${data.reason}`);
    retry(data.reason, "cut");
  });
  on("error", () => {
    source.close();
    retry("the connection was lost", "reconnecting");
  });
}

function retry(why, state) {
  stream.source = null;
  stream.attempts += 1;
  const delay = stream.delay;
  stream.delay = Math.min(stream.delay * 2, 5000);
  const after = stream.last === null ? "from now" : `after event ${stream.last}`;
  setStreamState(state, `${why}; attempt ${stream.attempts} in ${(delay / 1000).toFixed(1)} s, resuming ${after}`);
  clearTimeout(stream.retry);
  stream.retry = setTimeout(connect, delay);
}

async function showLiveMatch(name, id, line) {
  const list = $("live");
  const item = matchItem(line, id);
  list.prepend(item);
  while (list.children.length > LIVE_KEPT) list.lastElementChild.remove();
  try {
    const path = `subscribers/${seg(name)}/matches/${id}/explanation`;
    const explained = await (await api("GET", path)).json();
    if (explained.metadata && Object.keys(explained.metadata).length) {
      item.append(el("div", "metadata mono", `metadata ${JSON.stringify(explained.metadata)}`));
    }
    item.append(explanation(explained.explain));
  } catch (e) {
    item.append(el("p", "explain unavailable", `no explanation: ${e.message}`));
  }
}

// ------------------------------------------------------------------ try a publication

async function tryPublication(event) {
  event.preventDefault();
  const list = $("try-results");
  try {
    const response = await api("POST", "match", { body: $("try-rdf").value, type: $("try-format").value,
      params: { explain: "true", with_metadata: "true" } });
    // one JSON object a line; split on "\n" only (a literal may hold U+2028)
    const lines = (await response.text()).split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    list.replaceChildren(...lines.map((line) => matchItem(line)));
    const pubs = response.headers.get("X-RTF-Publications");
    say("try-summary", "ok", `${pubs} publication(s), ${lines.length} match(es); nobody was notified`);
  } catch (e) {
    list.replaceChildren();
    say("try-summary", "error", e.message);
  }
}

// ------------------------------------------------------------------ status

const status = { timer: null, previous: null };

function parseMetrics(text) {
  const values = new Map();
  const buckets = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const [, name, labels, value] = m;
    if (name === "rtf_filter_seconds_bucket") {
      const le = /le="([^"]+)"/.exec(labels)[1];
      buckets.push([le === "+Inf" ? Infinity : Number(le), Number(value)]);
    } else if (!labels) {
      values.set(name, Number(value));
    }
  }
  return { values, buckets, at: performance.now() };
}

/** The 99th percentile's bucket bound, of cumulative bucket counts. */
function p99(buckets) {
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (!total) return null;
  const found = buckets.find(([, count]) => count >= 0.99 * total);
  return found[0];
}

function seconds(s) {
  if (s === Infinity) return "> 5 s";
  return s >= 1 ? `≤ ${s} s` : `≤ ${+(s * 1000).toPrecision(3)} ms`;
}

async function refreshStatus() {
  if (!session.who) return;
  const set = (id, text, title) => { $(id).textContent = text; $(id).title = title || ""; };
  if (!["admin", "metrics"].includes(session.who.role)) {
    try {
      const health = await (await api("GET", "health")).json();
      set("stat-queries", String(health.queries), "all subscribers' queries (/health)");
    } catch { set("stat-queries", "?"); }
    for (const id of ["stat-subscribers", "stat-rate", "stat-p99", "stat-streams"]) {
      set(id, "–", "/metrics needs an admin or metrics token");
    }
    return;
  }
  let now;
  try {
    now = parseMetrics(await (await api("GET", "metrics")).text());
  } catch (e) {
    set("stat-queries", "?", e.message);
    return;
  }
  const before = status.previous;
  status.previous = now;
  const value = (name) => now.values.get(name) ?? 0;
  set("stat-queries", String(value("rtf_queries")));
  set("stat-subscribers", String(value("rtf_subscribers")));
  set("stat-streams", String(value("rtf_streams")));
  if (!before) return;
  const elapsed = (now.at - before.at) / 1000;
  const published = value("rtf_publications_total") - (before.values.get("rtf_publications_total") ?? 0);
  set("stat-rate", (published / elapsed).toFixed(1), `over the last ${elapsed.toFixed(0)} s`);
  const recent = now.buckets.map(([le, count], i) => [le, count - (before.buckets[i]?.[1] ?? 0)]);
  const latest = p99(recent);
  const overall = p99(now.buckets);
  if (latest !== null) set("stat-p99", seconds(latest), `time to match one publication, last ${elapsed.toFixed(0)} s`);
  else set("stat-p99", overall === null ? "–" : seconds(overall), "time to match one publication, since the start");
}

// ------------------------------------------------------------------ wiring

function wire() {
  $("sign-in-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await signIn($("token").value.trim());
      $("token").value = "";
    } catch (err) {
      session.token = null;
      $("sign-in-error").textContent = err.message;
    }
  });
  $("sign-out").addEventListener("click", () => signOut(""));
  $("query").addEventListener("input", () => {
    markError($("query").value, null);
    scheduleCheck();
  });
  $("query").addEventListener("scroll", syncScroll);
  $("register-form").addEventListener("submit", register);
  $("unregister").addEventListener("click", unregister);
  $("filter-form").addEventListener("submit", (e) => { e.preventDefault(); refreshQueries(true); });
  $("filter").addEventListener("input", scheduleFilter);
  $("filter-subscriber").addEventListener("input", scheduleFilter);
  $("prev-page").addEventListener("click", () => turnPage(-1));
  $("next-page").addEventListener("click", () => turnPage(1));
  $("watch-form").addEventListener("submit", (e) => {
    e.preventDefault();
    watch($("watch").value, $("watch-retained").checked);
  });
  $("try-form").addEventListener("submit", tryPublication);
}

async function start() {
  wire();
  try {
    await signIn(session.token);
  } catch (e) {
    signOut(e.status === 401 ? (session.token ? e.message : "") : e.message);
  }
}

start();
