// The search page of hybrid-rag serve: plain JS over the /v1 API, no dependencies, no CDN.
// The API key is typed once, kept in sessionStorage (this tab only) and sent as the Bearer header;
// it is never put in a URL. Text from the server is always inserted as text, never as HTML.
"use strict";

const KEY_NAME = "hybrid-rag-api-key";
// features.* of configs/default.yaml, each a per-call switch (a test keeps this list equal to FeatureFlags)
const STAGES = ["expansion", "multi_query", "dense", "bm25", "rerank", "mmr", "filters", "routing",
  "thresholds", "priors", "parent_context", "symbols", "path_roles", "path_match", "file_coherence",
  "definition_first", "member_symbols", "implementation", "hubness", "question_hubness",
  "paired_sources", "self_check"];
const SOURCE_MARGIN = 30; // lines shown around a cited range

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "style") node.style.cssText = v; // CSSOM: allowed by the page's style-src 'self'
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

class Unauthorized extends Error {}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_NAME);
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
  });
  let data = null;
  try { data = await response.json(); } catch { data = null; }
  if (response.status === 401) throw new Unauthorized(data?.error?.message || "the API key was refused");
  if (!response.ok) {
    const message = data?.error?.message || `${response.status} ${response.statusText}`;
    throw new Error(message);
  }
  return data;
}

// -- the key ---------------------------------------------------------------------------------------

function askForKey(message) {
  $("app").hidden = true;
  $("key-panel").hidden = false;
  $("forget-key").hidden = true;
  $("key-error").hidden = !message;
  $("key-error").textContent = message || "";
  $("api-key").value = "";
  $("api-key").focus();
}

async function start() {
  try {
    await loadLibrary();
  } catch (err) {
    if (err instanceof Unauthorized) {
      askForKey(sessionStorage.getItem(KEY_NAME) ? err.message : "");
      return;
    }
    showError(err);
  }
  $("key-panel").hidden = true;
  $("app").hidden = false;
  const keyed = Boolean(sessionStorage.getItem(KEY_NAME));
  $("key-status").textContent = keyed ? "key set for this tab" : "no key needed by this server";
  $("forget-key").hidden = !keyed;
  $("query").focus();
}

$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY_NAME, $("api-key").value.trim());
  $("api-key").value = "";
  start();
});

$("forget-key").addEventListener("click", () => {
  sessionStorage.removeItem(KEY_NAME);
  askForKey("");
});

// -- search ----------------------------------------------------------------------------------------

for (const stage of STAGES) {
  const select = el("select", { id: `stage-${stage}`, "data-stage": stage },
    el("option", { value: "", text: "default" }), el("option", { value: "on", text: "on" }),
    el("option", { value: "off", text: "off" }));
  $("stages").append(el("label", {}, stage.replace("_", " "), select));
}

function requestBody() {
  const body = { query: $("query").value };
  if ($("mode").value) body.mode = $("mode").value;
  if ($("top-k").value) body.top_k = Number($("top-k").value);
  const filters = $("filters").value.split("\n").map((f) => f.trim()).filter(Boolean);
  if (filters.length) body.filters = filters.length === 1 ? filters[0] : filters;
  const features = {};
  for (const select of $("stages").querySelectorAll("select")) {
    if (select.value) features[select.dataset.stage] = select.value === "on";
  }
  if (Object.keys(features).length) body.features = features;
  return body;
}

function showError(err) {
  $("error").hidden = false;
  $("context-meta").textContent = "";
  $("error").textContent = err.message || String(err);
}

// what the previous search showed: cleared when a search starts, and again when it fails
function clearSearch() {
  $("error").hidden = true;
  $("error").textContent = "";
  $("copy-context").disabled = true;
  $("copy-status").textContent = "";
  $("results").replaceChildren();
  $("notes").replaceChildren();
  $("timings").replaceChildren();
  $("total-ms").textContent = "";
  $("context-text").textContent = "";
  $("context-meta").textContent = "";
}

let searches = 0; // the latest search's number: a slower, older answer is not shown over it

// results are shown as soon as /v1/query answers; the context (slower: it embeds lines) follows
$("search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = requestBody();
  const current = ++searches;
  clearSearch();
  $("search").disabled = true;
  $("result-count").textContent = "searching…";
  $("context-meta").textContent = "building…";
  const contextDone = api("POST", "/v1/context", body).then(
    (context) => { if (current === searches && $("error").hidden) showContext(context); },
    (err) => {
      if (current !== searches) return;
      if (err instanceof Unauthorized) askForKey(err.message);
      else if ($("error").hidden) $("context-meta").textContent = err.message;
    });
  try {
    const result = await api("POST", "/v1/query", body);
    if (current !== searches) return;
    showResults(result);
    loadLibrary().catch(showError);
  } catch (err) {
    if (current !== searches) return;
    if (err instanceof Unauthorized) { askForKey(err.message); return; }
    clearSearch();
    $("result-count").textContent = "";
    showError(err);
  } finally {
    if (current === searches) $("search").disabled = false;
  }
  await contextDone;
});

function showResults(data) {
  $("result-count").textContent = `${data.results.length} for “${data.query}”, mode ${data.mode}, index v${data.index_version}`
    + (data.dense ? ` · dense ${data.dense} (BM25 alone finds the chunks not embedded yet)` : "");
  const items = data.results.map((hit, i) => {
    const citation = hit.citation; // path:start-end, plus a converted document's place: "(p.3)"
    const chips = Object.entries(hit.breakdown).map(([name, value]) =>
      el("span", { class: "chip", text: `${name} ${Number.isInteger(value) ? value : value.toFixed(3)}` }));
    return el("li", { "data-rank": String(i + 1) },
      el("div", {},
        el("button", { type: "button", class: "citation", text: citation,
          onclick: () => openSource(hit.path, hit.start_line, hit.end_line) }),
        el("span", { class: "score", text: hit.score.toFixed(4) }),
        el("span", { class: "muted", text: `  ${hit.source_type}/${hit.language} · ${hit.collection}` })),
      ...(hit.stale ? [staleNote(hit)] : []),
      el("div", { class: "chips breakdown" }, ...chips),
      preview(hit));
  });
  $("results").replaceChildren(...items);
  const warning = data.unread ? [el("div", { class: "error", text: `warning: ${data.unread}` })] : [];
  $("notes").replaceChildren(...warning, ...data.trace.notes.map((n) => el("div", { text: `note: ${n}` })));
  showTimings(data.trace.timings);
}

// a hit whose file changed or was deleted on disk since it was indexed (the API's "stale")
function staleNote(hit) {
  const how = hit.stale_reason === "missing" ? "deleted from disk" : "changed on disk";
  return el("div", { class: "stale", text: `stale: ${hit.path} ${how} since indexed; run hybrid-rag ingest` });
}

// the lines of a hit that match the query (the API's "match"), highlighted, with a line around them
function preview(hit) {
  const lines = hit.text.split("\n");
  const match = hit.match || { start_line: hit.start_line, end_line: hit.start_line };
  const from = Math.max(match.start_line - 1, hit.start_line);
  const to = Math.min(match.end_line + 1, hit.end_line);
  const rows = [];
  for (let n = from; n <= to; n++) {
    const text = lines[n - hit.start_line] ?? "";
    const hl = n >= match.start_line && n <= match.end_line;
    rows.push(el("span", { class: hl ? "match" : "", "data-line": String(n), text: `${text}\n` }));
  }
  return el("pre", { class: "preview", "data-start": String(match.start_line),
    "data-end": String(match.end_line) }, ...rows);
}

function showTimings(timings) {
  const max = Math.max(...timings.map((t) => t.ms), 0.001);
  const total = timings.reduce((sum, t) => sum + t.ms, 0);
  $("total-ms").textContent = `${total.toFixed(1)} ms in all`;
  $("timings").replaceChildren(...timings.map((t) => el("div", { class: "bar-row", "data-stage": t.stage, title: t.note || "" },
    el("span", { text: t.stage }),
    el("div", {}, el("div", { class: "bar", style: `width: ${(100 * t.ms / max).toFixed(1)}%` })),
    el("span", { class: "bar-ms", text: `${t.ms.toFixed(2)} ms` }))));
}

function showContext(context) {
  $("context-text").textContent = context.text;
  const weak = context.weak_evidence ? ", weak evidence" : "";
  $("context-meta").textContent = `${context.token_count}/${context.max_tokens} tokens, confidence ${context.confidence.toFixed(2)}${weak}`;
  $("copy-context").disabled = !context.text;
}

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = el("textarea", { style: "position: fixed; opacity: 0" });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("the browser refused to copy");
}

$("copy-context").addEventListener("click", async () => {
  try {
    await copyText($("context-text").textContent);
    $("copy-status").textContent = "copied";
  } catch (err) {
    $("copy-status").textContent = `not copied: ${err.message}`;
  }
});

// -- a citation in its file ------------------------------------------------------------------------

async function openSource(path, start, end) {
  const params = new URLSearchParams({ path, start_line: String(Math.max(1, start - SOURCE_MARGIN)),
    end_line: String(end + SOURCE_MARGIN) });
  try {
    const data = await api("GET", `/v1/lines?${params}`);
    $("source-path").textContent = data.path;
    $("source-range").textContent = `lines ${start}-${end} of ${data.total_lines}`;
    const rows = data.lines.map((row) => {
      const cited = row.line >= start && row.line <= end;
      const missing = row.text === null;
      // a line no chunk holds: a blank line between two chunks, or a dropped near-duplicate
      const props = { class: `line${cited ? " hl" : ""}${missing ? " gap" : ""}`, "data-line": String(row.line) };
      if (missing) props.title = "not in any stored chunk";
      return el("div", props, el("span", { class: "n", text: String(row.line) }),
        el("span", { class: "t", text: missing ? "" : row.text }));
    });
    $("source-lines").replaceChildren(...rows);
    $("source-panel").hidden = false;
    const first = $("source-lines").querySelector(".hl");
    $("source-panel").scrollIntoView({ block: "start" });
    if (first) $("source-lines").scrollTop = first.offsetTop - $("source-lines").offsetTop - 40;
  } catch (err) {
    if (err instanceof Unauthorized) askForKey(err.message);
    else showError(err);
  }
}

$("close-source").addEventListener("click", () => { $("source-panel").hidden = true; });

// -- documents, versions, the query log ------------------------------------------------------------

function row(cells, tag = "td") {
  return el("tr", {}, ...cells.map((c) => el(tag, { text: String(c ?? "") })));
}

async function loadLibrary() {
  const [stats, versions, documents] = await Promise.all([api("GET", "/v1/stats"), api("GET", "/v1/versions"),
    api("GET", "/v1/documents?limit=1000")]);
  const facts = [["documents", stats.documents], ["chunks", stats.chunks], ["live version", stats.live_version ?? "none"],
    ["model", stats.model], ["queries logged", stats.queries.queries]];
  $("stats").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));
  const latency = Object.entries(stats.queries.latency_ms);
  $("latency").replaceChildren(row(["stage", "p50", "p95"], "th"),
    ...latency.map(([stage, p]) => row([stage, p.p50, p.p95])));
  $("versions").replaceChildren(row(["version", "live", "chunks", "built", "reason"], "th"),
    ...versions.slice().reverse().map((v) => row([`v${v.version}`, v.live ? "live" : "", v.chunks,
      (v.built_at || "").replace("T", " ").slice(0, 19), v.reason])));
  $("doc-count").textContent = `${documents.total}`;
  $("documents").replaceChildren(...documents.documents.map((d) =>
    el("li", { title: `${d.collection} · ${d.source_type}/${d.language} · ${d.size} bytes`, text: d.path })));
}

$("refresh-library").addEventListener("click", () => loadLibrary().catch(showError));

start();
