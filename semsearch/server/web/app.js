// semsearch web page: plain JavaScript, no build step, no network beyond this server.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child != null) node.append(child);
    return node;
  };

  const MODE_HELP = {
    keyword: "Keyword: instant results as you type; matched words are highlighted.",
    semantic: "Semantic: finds items by meaning; press Enter. Each card shows its similarity.",
    hybrid: "Hybrid: combines keyword and semantic ranking; press Enter.",
  };
  const TITLE_FIELDS = ["name", "title", "label"];
  const KEY_STORE = "semsearch.apiKey";
  const state = { collections: [], current: null, seq: 0, controller: null, timer: null, poll: null };

  // -- API ----------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `request failed (${status})`);
      this.status = status;
      this.code = (body && body.error) || "error";
      this.hint = (body && body.hint) || "";
    }
  }

  async function api(method, path, body, signal) {
    const headers = { Accept: "application/json" };
    const key = $("api-key").value.trim();
    if (key) headers.Authorization = `Bearer ${key}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new ApiError(0, { message: "The server cannot be reached.", hint: "Check that `semsearch serve` is running, then reload." });
    }
    const data = await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  const collPath = (suffix = "") => `/collections/${encodeURIComponent(state.current.name)}${suffix}`;

  function explain(err) {
    if (err.status === 401) {
      return $("api-key").value.trim()
        ? ["The API key was not accepted.", "Check the key in the API key box above, or ask an administrator for one."]
        : ["This server needs an API key.", "Enter your key in the API key box above."];
    }
    return [err.message, err.hint];
  }

  // One line for a panel: the message as a sentence, then the hint, each capitalised.
  const upper = (text) => (text ? text[0].toUpperCase() + text.slice(1) : text);
  const sentence = ([title, detail]) =>
    [title && !/[.!?]$/.test(title) ? `${title}.` : title, detail].filter(Boolean).map(upper).join(" ");

  // -- status line and messages ---------------------------------------------------------

  function showStatus(kind, title, detail) {
    const box = $("status");
    box.replaceChildren();
    box.className = `status status-${kind}`;
    if (!title) return;
    box.append(el("p", { class: "status-title", text: title }));
    if (detail) box.append(el("p", { class: "status-detail", text: detail }));
  }

  function setPanel(id, kind, text) {
    const node = $(id);
    node.className = `panel-status panel-${kind}`;
    node.textContent = text;
  }

  async function refreshStats() {
    if (!state.current) return;
    try {
      const s = await api("GET", collPath("/stats"));
      const parts = [`${s.records.toLocaleString()} items`];
      if (s.pending) parts.push(`${s.pending.toLocaleString()} waiting for embedding`);
      if (s.failed) parts.push(`${s.failed.toLocaleString()} failed to embed`);
      parts.push(`model ${s.model_id}`);
      $("stats").textContent = parts.join(" · ");
      clearTimeout(state.poll);
      if (s.pending && !s.failed) state.poll = setTimeout(refreshStats, 2000);
    } catch (err) {
      $("stats").textContent = "";
    }
  }

  // -- collections, filters and the add form -----------------------------------------------

  async function loadCollections() {
    const select = $("collection");
    try {
      state.collections = await api("GET", "/collections");
    } catch (err) {
      select.replaceChildren(el("option", { text: "—" }));
      const [title, detail] = explain(err);
      showStatus("error", title, detail);
      return;
    }
    select.replaceChildren(...state.collections.map((c) => el("option", { value: c.name, text: c.name })));
    select.disabled = state.collections.length === 0;
    if (!state.collections.length) {
      showStatus("empty", "There are no collections yet.", "An admin creates one with POST /collections (see API documentation), or load data with the recipe in docs/recipes.");
      return;
    }
    const wanted = new URLSearchParams(location.search).get("collection");
    const pick = state.collections.find((c) => c.name === wanted) || state.collections[0];
    select.value = pick.name;
    selectCollection(pick.name);
  }

  function selectCollection(name) {
    state.current = state.collections.find((c) => c.name === name) || null;
    if (!state.current) return;
    // the address names the collection, so a reload or a shared link opens the same one
    const params = new URLSearchParams(location.search);
    if (params.get("collection") !== name) {
      params.set("collection", name);
      history.replaceState(null, "", `${location.pathname}?${params}`);
    }
    buildFilters(state.current);
    buildAddForm(state.current);
    $("results").replaceChildren();
    refreshStats();
    runSearch();
  }

  function buildFilters(coll) {
    const box = $("filter-fields");
    box.replaceChildren();
    const names = Object.keys(coll.fields);
    $("filters").hidden = names.length === 0;
    for (const name of names) {
      const type = coll.fields[name];
      const id = `filter-${name}`;
      if (type === "int" || type === "float") {
        const step = type === "int" ? "1" : "any";
        box.append(el("div", { class: "filter range" },
          el("span", { class: "filter-name", id: `${id}-label`, text: name }),
          el("label", { for: `${id}-min`, class: "visually-hidden", text: `${name} at least` }),
          el("input", { id: `${id}-min`, type: "number", step, placeholder: "min", "data-field": name, "data-op": "$gte", "data-type": type }),
          el("label", { for: `${id}-max`, class: "visually-hidden", text: `${name} at most` }),
          el("input", { id: `${id}-max`, type: "number", step, placeholder: "max", "data-field": name, "data-op": "$lte", "data-type": type })));
      } else if (type === "bool") {
        const select = el("select", { id, "data-field": name, "data-op": "$eq", "data-type": type },
          el("option", { value: "", text: "any" }), el("option", { value: "true", text: "yes" }),
          el("option", { value: "false", text: "no" }));
        box.append(el("div", { class: "filter" }, el("label", { for: id, text: name }), select));
      } else {
        const op = type === "list[str]" ? "$contains" : "$eq";
        const hint = type === "list[str]" ? "contains…" : "equals…";
        box.append(el("div", { class: "filter" }, el("label", { for: id, text: name }),
          el("input", { id, type: "text", placeholder: hint, "data-field": name, "data-op": op, "data-type": type })));
      }
    }
  }

  function currentWhere() {
    const clauses = [];
    for (const input of $("filter-fields").querySelectorAll("[data-field]")) {
      const raw = input.value.trim();
      if (!raw) continue;
      const type = input.dataset.type;
      let value = raw;
      if (type === "int" || type === "float") {
        value = Number(raw);
        if (!Number.isFinite(value)) continue;
        // a whole-number field: "at least 1.5" is "at least 2", "at most 2.5" is "at most 2"
        if (type === "int") value = input.dataset.op === "$gte" ? Math.ceil(value) : Math.floor(value);
      } else if (type === "bool") value = raw === "true";
      clauses.push({ [input.dataset.field]: { [input.dataset.op]: value } });
    }
    if (!clauses.length) return null;
    return clauses.length === 1 ? clauses[0] : { $and: clauses };
  }

  function buildAddForm(coll) {
    const box = $("add-fields");
    box.replaceChildren();
    const field = (id, label, input) => box.append(el("div", { class: "form-field" }, el("label", { for: id, text: label }), input));
    field("add-id", "Id (optional)", el("input", { id: "add-id", type: "text", placeholder: "generated if empty" }));
    const textPaths = coll.text.filter((p) => !p.includes("."));
    textPaths.forEach((path, i) => {
      const id = `add-text-${path}`;
      const input = i === 0 && textPaths.length > 1
        ? el("input", { id, type: "text", "data-path": path, required: "" })
        : el("textarea", { id, rows: "3", "data-path": path, ...(i === 0 ? { required: "" } : {}) });
      field(id, path, input);
    });
    for (const [name, type] of Object.entries(coll.fields)) {
      if (textPaths.includes(name)) continue;
      const id = `add-field-${name}`;
      if (type === "bool") {
        box.append(el("div", { class: "form-field checkbox" },
          el("input", { id, type: "checkbox", "data-field": name, "data-type": type }),
          el("label", { for: id, text: name })));
        continue;
      }
      const attrs = { id, "data-field": name, "data-type": type };
      if (type === "int" || type === "float") Object.assign(attrs, { type: "number", step: type === "int" ? "1" : "any" });
      else Object.assign(attrs, { type: "text" });
      if (type === "list[str]") attrs.placeholder = "comma-separated";
      field(id, `${name} (${type})`, el("input", attrs));
    }
  }

  function newId() {
    const rand = (window.crypto && crypto.randomUUID) ? crypto.randomUUID().slice(0, 8) : Math.random().toString(16).slice(2, 10);
    return `item-${Date.now().toString(36)}-${rand}`;
  }

  function readAddForm() {
    const record = { id: $("add-id").value.trim() || newId() };
    for (const input of $("add-fields").querySelectorAll("[data-path]")) {
      if (input.value.trim()) record[input.dataset.path] = input.value.trim();
    }
    for (const input of $("add-fields").querySelectorAll("[data-field]")) {
      const type = input.dataset.type;
      if (type === "bool") { record[input.dataset.field] = input.checked; continue; }
      const raw = input.value.trim();
      if (!raw) continue;
      if (type === "int") record[input.dataset.field] = parseInt(raw, 10);
      else if (type === "float") record[input.dataset.field] = Number(raw);
      else if (type === "list[str]") record[input.dataset.field] = raw.split(",").map((s) => s.trim()).filter(Boolean);
      else record[input.dataset.field] = raw;
    }
    return record;
  }

  async function addItem(event) {
    event.preventDefault();
    if (!state.current) return;
    const record = readAddForm();
    setPanel("add-status", "busy", "Adding…");
    try {
      const report = await api("POST", collPath("/records"), { records: [record] });
      const what = report.added ? "Added" : report.updated ? "Updated" : "Unchanged:";
      const title = TITLE_FIELDS.map((f) => record[f]).find(Boolean) || record.id;
      const wait = report.chunks_pending ? " Searchable by keyword now; semantic search follows after embedding." : "";
      setPanel("add-status", "ok", `${what} “${title}” (id ${record.id}).${wait}`);
      $("add-form").reset();
      refreshStats();
      if ($("query").value.trim()) runSearch();
    } catch (err) {
      setPanel("add-status", "error", sentence(explain(err)));
    }
  }

  async function reindex() {
    if (!state.current) return;
    const button = $("reindex");
    button.disabled = true;
    setPanel("reindex-status", "busy", "Re-indexing… this can take a while for many items.");
    try {
      const r = await api("POST", collPath("/reindex"));
      setPanel("reindex-status", "ok",
        `Re-index finished: ${r.embedded.toLocaleString()} newly embedded, ${r.pending} still pending, ${r.failed} failed.`);
      refreshStats();
    } catch (err) {
      setPanel("reindex-status", "error", sentence(explain(err)));
    } finally {
      button.disabled = false;
    }
  }

  // -- search --------------------------------------------------------------------------------

  const mode = () => document.querySelector('input[name="mode"]:checked').value;

  async function runSearch() {
    if (!state.current) return;
    const query = $("query").value.trim();
    const where = currentWhere();
    const seq = ++state.seq;
    if (state.controller) state.controller.abort();
    if (!query && !where) {
      $("results").replaceChildren();
      showStatus("empty", `Search ${state.current.records.toLocaleString()} items in “${state.current.name}”.`,
        "Type what you are looking for. Keyword mode answers as you type; semantic mode finds items by meaning.");
      return;
    }
    state.controller = new AbortController();
    showStatus("loading", "Searching…");
    $("results").setAttribute("aria-busy", "true");
    const body = { query, mode: mode(), limit: 20, where };
    const typed = $("min-score").value.trim();  // empty: the model's calibrated default
    if (body.mode === "semantic" && typed !== "") {
      const percent = Number(typed);
      if (Number.isFinite(percent)) body.min_score = Math.min(100, Math.max(-100, percent)) / 100;
    }
    try {
      const result = await api("POST", collPath("/search"), body, state.controller.signal);
      if (seq !== state.seq) return;
      render(result, query);
    } catch (err) {
      if (err.name === "AbortError" || seq !== state.seq) return;
      $("results").replaceChildren();
      const [title, detail] = explain(err);
      const extra = err.code === "embedder_unavailable" ? " Keyword mode still works." : "";
      showStatus("error", title, `${detail || ""}${extra}`.trim());
    } finally {
      if (seq === state.seq) $("results").removeAttribute("aria-busy");
    }
  }

  function scheduleSearch() {
    clearTimeout(state.timer);
    state.timer = setTimeout(runSearch, 120);
  }

  function render(result, query) {
    const list = $("results");
    list.replaceChildren(...result.hits.map((hit) => card(hit, result.mode, query)));
    if (!result.hits.length) {
      const tip = result.mode === "keyword"
        ? "Try other words, or switch to semantic mode to search by meaning."
        : result.mode === "semantic" && result.min_score > 0
          ? `Lower the minimum similarity (now ${Math.round(result.min_score * 100)} %), try different words or remove filters.`
          : "Try different words or remove filters.";
      const floored = (result.notes || []).some((n) => n.startsWith("no confident match"));
      const title = floored
        ? `No confident match for “${query}”.`
        : `Nothing found for “${query || "these filters"}”.`;
      showStatus("empty", title, floored ? `Nothing in “${state.current.name}” is close enough to be an answer. ${tip}` : tip);
      return;
    }
    const n = result.hits.length;
    const note = result.degraded ? ` (${result.degraded_reason})` : "";
    showStatus(result.degraded ? "warning" : "done", `${n} result${n === 1 ? "" : "s"} (${result.mode})${note}`);
  }

  function titleOf(hit) {
    for (const f of TITLE_FIELDS) if (typeof hit.fields[f] === "string" && hit.fields[f]) return hit.fields[f];
    return hit.id;
  }

  function card(hit, mode, query) {
    const title = titleOf(hit);
    const head = el("div", { class: "card-head" }, el("h3", { class: "card-title", text: title }), scoreBadge(hit, mode));
    const snippetText = hit.chunk ? snippetOf(hit.chunk.text, title, query, mode) : "";
    const snippet = el("p", { class: "snippet" });
    if (hit.highlight && hit.chunk) sentenceInto(snippet, hit.chunk.text, hit.highlight);
    else if (mode === "keyword") highlightInto(snippet, snippetText, query);
    else snippet.textContent = snippetText;
    return el("li", { class: "card", "data-id": hit.id }, head, place(hit), snippetText ? snippet : null,
      fieldList(hit, title), mode === "hybrid" ? legs(hit) : null);
  }

  // Where the chunk sits in its file: PDF pages, else markdown lines (null when neither is known).
  function place(hit) {
    const c = hit.chunk;
    if (!c) return null;
    let text = null;
    if (c.page_start != null) {
      text = c.page_end != null && c.page_end !== c.page_start ? `pages ${c.page_start}–${c.page_end}` : `page ${c.page_start}`;
    } else if (c.line_start != null) {
      text = c.line_end != null && c.line_end !== c.line_start ? `lines ${c.line_start}–${c.line_end}` : `line ${c.line_start}`;
    }
    return text ? el("p", { class: "place", text }) : null;
  }

  function scoreBadge(hit, mode) {
    const rerank = hit.components && hit.components.rerank;
    if (rerank) {  // the server reranked: its score (sigmoid of a cross-encoder logit) is shown
      return el("span", { class: "badge badge-rank", title: `reranker score ${hit.score.toFixed(3)} (0 to 1)`, text: `rerank ${hit.score.toFixed(2)}` });
    }
    if (mode === "semantic" && hit.percent != null) {
      return el("span", { class: "badge badge-percent", title: `cosine similarity ${hit.score.toFixed(3)}`, "aria-label": `${hit.percent} percent similar`, text: `${hit.percent}%` });
    }
    if (mode === "hybrid") return el("span", { class: "badge badge-rank", "aria-label": `fused rank ${hit.rank}`, text: `#${hit.rank}` });
    if (mode === "keyword") {
      // Words in nearly every item get almost no weight (Lucene's IDF, ln(1 + 0.5 / N) for all N).
      const tiny = hit.score > 0 && hit.score < 0.005;
      const title = tiny
        ? "BM25 keyword score: the matched words are in nearly every item, so they barely count"
        : "BM25 keyword score (higher is better)";
      return el("span", { class: "badge badge-bm25", title, text: `BM25 ${tiny ? "< 0.01" : hit.score.toFixed(2)}` });
    }
    return null;
  }

  function legs(hit) {
    const c = hit.components || {};
    const part = (name, leg, fmt) => {
      if (!leg || leg.rank == null) return `${name}: not matched`;
      return `${name}: ${fmt(leg)} (#${leg.rank})`;
    };
    const text = [
      `fused rank #${hit.rank}`,
      part("semantic", c.semantic, (l) => `${l.percent}%`),
      part("keyword", c.keyword, (l) => `BM25 ${l.score.toFixed(2)}`),
    ].join(" · ");
    return el("p", { class: "legs", text });
  }

  function fieldList(hit, title) {
    const declared = state.current ? Object.keys(state.current.fields) : [];
    const shown = declared.filter((name) => hit.fields[name] != null && hit.fields[name] !== title);
    if (!shown.length) return null;
    const dl = el("dl", { class: "fields" });
    for (const name of shown) {
      const value = hit.fields[name];
      dl.append(el("dt", { text: name }), el("dd", { text: Array.isArray(value) ? value.join(", ") : String(value) }));
    }
    return dl;
  }

  // -- snippets and highlighting --------------------------------------------------------------

  const WORD = /[\p{L}\p{N}]+/gu;
  // A light stemmer, so the forms FTS5's Porter stemmer matched are highlighted: case, cases
  // and cased -> "cas"; glass and glasses -> "glass" (no "s" is stripped after an "s").
  const stem = (w) => w.toLowerCase().replace(/(?:ing|ed|es|(?<!s)s)$/u, "").replace(/e$/u, "");
  const terms = (query) => new Set((query.match(WORD) || []).map(stem).filter((t) => t.length > 0));

  function snippetOf(text, title, query, mode) {
    let body = text.startsWith(title) ? text.slice(title.length).trim() : text;
    body = body.replace(/\s+/g, " ");
    const max = 260;
    if (body.length <= max) return body;
    let start = 0;
    if (mode === "keyword") {
      const wanted = terms(query);
      for (const m of body.matchAll(WORD)) {
        if (wanted.has(stem(m[0]))) { start = Math.max(0, m.index - 60); break; }
      }
    }
    const cut = body.slice(start, start + max);
    return `${start ? "…" : ""}${cut}${start + max < body.length ? "…" : ""}`;
  }

  // The hit's matching sentence (hit.highlight: [start, end) offsets into the chunk's text)
  // marked, with up to 100 characters of context on each side.
  function sentenceInto(node, text, span) {
    const flat = (t) => t.replace(/\s+/g, " ");
    const before = flat(text.slice(0, span[0])), after = flat(text.slice(span[1]));
    const lead = before.length > 100 ? `…${before.slice(-100)}` : before;
    const tail = after.length > 100 ? `${after.slice(0, 100)}…` : after;
    node.append(lead, el("mark", { class: "sentence", text: flat(text.slice(span[0], span[1])) }), tail);
  }

  function highlightInto(node, text, query) {
    const wanted = terms(query);
    let last = 0;
    for (const m of text.matchAll(WORD)) {
      if (!wanted.has(stem(m[0]))) continue;
      node.append(text.slice(last, m.index), el("mark", { text: m[0] }));
      last = m.index + m[0].length;
    }
    node.append(text.slice(last));
  }

  // -- wiring ----------------------------------------------------------------------------------

  function updateModeHelp() {
    $("mode-help").textContent = MODE_HELP[mode()];
    $("min-score-box").hidden = mode() !== "semantic";
  }

  document.addEventListener("DOMContentLoaded", () => {
    const keyInput = $("api-key");
    keyInput.value = sessionStorage.getItem(KEY_STORE) || "";
    keyInput.addEventListener("change", () => {
      sessionStorage.setItem(KEY_STORE, keyInput.value.trim());
      loadCollections();
    });
    $("collection").addEventListener("change", (e) => selectCollection(e.target.value));
    $("query").addEventListener("input", () => { if (mode() === "keyword") scheduleSearch(); });
    $("search-form").addEventListener("submit", (e) => { e.preventDefault(); runSearch(); });
    for (const radio of document.querySelectorAll('input[name="mode"]')) {
      radio.addEventListener("change", () => { updateModeHelp(); runSearch(); });
    }
    $("filter-fields").addEventListener("change", runSearch);
    $("min-score").addEventListener("change", runSearch);
    $("clear-filters").addEventListener("click", () => {
      for (const input of $("filter-fields").querySelectorAll("[data-field]")) input.value = "";
      runSearch();
    });
    $("add-form").addEventListener("submit", addItem);
    $("reindex").addEventListener("click", reindex);
    updateModeHelp();
    loadCollections();
  });
})();
