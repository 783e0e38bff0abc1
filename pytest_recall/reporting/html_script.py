"""The page's one script: it draws the tables that grow with the run from data in the page.

A table of 100,000 cases drawn as markup is a page the browser chokes on
(each row and its folded evidence are a dozen elements). So the page carries
the rows as compact JSON (``reporting.html_cases``) and this script draws
100 at a time, worst first, with filters by outcome and category and a
search by case id. A case's evidence (prompts, output tails, memory listing)
stays unparsed text until its row is unfolded. The epochs table (a row per
case) is drawn the same way, a page at a time with a search, and the helped
and harmed lists (``reporting.html_tables``) show a few names each and fold
the rest until opened.

The script only ever places text with ``textContent`` and ``append``, never
``innerHTML``, so agent output cannot become markup. The page's
Content-Security-Policy allows this script by its sha256 and nothing else:
any script that escaping might ever let through is refused by the browser.
"""

from __future__ import annotations

import base64
import hashlib

# Row fields, by position: see html_cases.case_row.
SCRIPT = r"""
"use strict";
(() => {
  const TONES = ["bad", "bad", "warn", "good", "muted", "muted"];
  const LABELS = ["ERROR", "FAIL", "PARTIAL", "PASS", "NO GOLD", "RATE LIMITED"];
  const PAGE_ROWS = 100;
  // Names shown of a helped or harmed list before the rest is folded.
  const LISTED = 20;
  // The longest word of an answer kept on one line.
  const WHOLE_WORD = 24;
  const RANK = 0, LABEL = 1, SCORE = 2, ID = 3, SUITE = 4, CATEGORY = 5, CONTROL = 13, STEPS = 14;
  const source = document.getElementById("recall-rows");
  performance.mark("recall-script-start");
  const rows = source ? JSON.parse(source.textContent) : [];
  performance.mark("recall-rows-parsed");
  let lines = null;
  const count = (n) => n.toLocaleString("en-US");
  const el = (name, props, ...children) => {
    const node = document.createElement(name);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    node.append(...children);
    return node;
  };
  // One line of the evidence block per row, in the same order; split only when first unfolded.
  const evidence = (index) => {
    if (lines === null) {
      // Parsed after this script ran: the page's bulk does not hold up its first rows.
      const text = document.getElementById("recall-evidence").textContent;
      const starts = [0];
      for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) starts.push(at + 1);
      lines = { text, starts };
    }
    const start = lines.starts[index];
    const end = index + 1 < lines.starts.length ? lines.starts[index + 1] - 1 : lines.text.length;
    return JSON.parse(lines.text.slice(start, end));
  };
  const block = (text) => (text ? el("pre", { text }) : el("p", { class: "hint", text: "(empty)" }));
  const fill = (details, [where, steps]) => {
    details.append(el("p", { class: "hint mono", text: where }));
    for (const [summary, prompt, stdout, stderr, memory] of steps) {
      const step = el("details", { class: "step" }, el("summary", { text: summary }));
      step.append(el("h4", { text: "prompt" }), block(prompt), el("h4", { text: "stdout (tail)" }), block(stdout));
      step.append(el("h4", { text: "stderr (tail)" }), block(stderr));
      if (memory) {
        const [heading, files] = memory;
        step.append(el("h4", { text: heading }));
        const cells = (file) => el("tr", {}, el("td", { text: file[0] }), el("td", { text: file[1] }),
          el("td", {}, el("span", { class: "mono", text: file[2] })));
        step.append(files.length ? el("table", { class: "memory" }, ...files.map(cells)) : block(""));
      }
      details.append(step);
    }
  };
  // A name such as largest_debit_voucher may break after an underscore, between its words, never inside one.
  const words = (text) =>
    text.split("_").flatMap((part, at, all) => (at < all.length - 1 ? [part + "_", el("wbr")] : [part]));
  // An answer wraps between its words, and a word stays whole (a voucher id such as AR-2026-0042 must not
  // break at its hyphens), unless it is too long for any column.
  const answer = (text) => el("span", { class: "mono" }, ...text.split(/(\s+)/).map((part) =>
    (part.trim() && part.length <= WHOLE_WORD ? el("span", { class: "word", text: part }) : part)));
  const caseRows = (index) => {
    const row = rows[index];
    const cells = [
      el("span", { class: "pill " + TONES[row[RANK]], text: row[LABEL] }),
      [el("b", { text: row[ID] }), el("br"), el("span", { class: "hint suite", text: row[SUITE] })],
      words(row[CATEGORY]), row[6], answer(row[7]), answer(row[8]), row[9], row[10], row[11], row[12],
    ];
    const tr = el("tr", {}, ...cells.map((cell) => el("td", {}, ...[cell].flat())));
    const details = el("details", {}, el("summary", { text: "evidence: " + row[STEPS] + " step(s)" }));
    details.addEventListener("toggle", () => {
      if (details.open && !details.dataset.filled) {
        details.dataset.filled = "1";
        fill(details, evidence(index));
      }
    });
    return [tr, el("tr", { class: "evidence" }, el("td", { colspan: "10" }, details))];
  };
  // A table drawn PAGE_ROWS rows at a time; the returned function shows a (filtered) list of row indices.
  const pageTable = (section, total, drawRow, [one, many]) => {
    const body = section.querySelector("tbody");
    const shownText = section.querySelector(".shown");
    const pager = section.querySelector(".pager");
    let shown = [];
    let page = 0;
    const pages = () => Math.max(1, Math.ceil(shown.length / PAGE_ROWS));
    const draw = () => {
      const start = page * PAGE_ROWS;
      const slice = shown.slice(start, start + PAGE_ROWS);
      body.replaceChildren(...slice.flatMap(drawRow));
      const filtered = shown.length === total ? "" : " (filtered from " + count(total) + ")";
      shownText.textContent = shown.length
        ? count(start + 1) + "–" + count(start + slice.length) + " of " + count(shown.length) + " " + many + filtered
        : "no " + one + " matches" + filtered;
      pager.querySelector(".page").textContent = "page " + count(page + 1) + " of " + count(pages());
      section.dataset.rendered = String(slice.length);
    };
    const moves = { first: () => 0, prev: () => page - 1, next: () => page + 1, last: () => pages() - 1 };
    for (const [name, move] of Object.entries(moves)) {
      pager.querySelector("button." + name).addEventListener("click", () => {
        page = Math.min(Math.max(move(), 0), pages() - 1);
        draw();
      });
    }
    section.dataset.total = String(total);
    section.querySelector(".controls").hidden = false;
    return (list) => {
      shown = list;
      page = 0;
      draw();
    };
  };
  const matches = (query, ...texts) => query === "" || texts.some((text) => text.toLowerCase().includes(query));
  for (const section of document.querySelectorAll("section.case-table")) {
    const control = section.dataset.control === "1";
    const all = [];
    for (let i = 0; i < rows.length; i++) if ((rows[i][CONTROL] === 1) === control) all.push(i);
    // Worst first; a stable sort keeps the report's order (suite, case, epoch) among equals.
    all.sort((a, b) => rows[a][RANK] - rows[b][RANK] || (rows[a][SCORE] ?? 0) - (rows[b][SCORE] ?? 0));
    const [outcome, category, search] = ["select.outcome", "select.category", "input.search"].map(
      (selector) => section.querySelector(selector));
    const ranks = new Map(), categories = new Set();
    for (const i of all) {
      ranks.set(rows[i][RANK], (ranks.get(rows[i][RANK]) || 0) + 1);
      categories.add(rows[i][CATEGORY]);
    }
    for (const [rank, n] of [...ranks].sort((a, b) => a[0] - b[0])) {
      outcome.append(el("option", { value: String(rank), text: LABELS[rank] + " (" + count(n) + ")" }));
    }
    // A case without a category gets a value of its own: "" already means every category.
    const NONE = "\u0000";
    for (const name of [...categories].sort()) {
      category.append(el("option", { value: name === "" ? NONE : name, text: name || "–" }));
    }
    const show = pageTable(section, all.length, caseRows, ["run", "runs"]);
    const apply = () => {
      const rank = outcome.value, name = category.value, query = search.value.trim().toLowerCase();
      show(rank === "" && name === "" && query === "" ? all : all.filter((i) => {
        const row = rows[i];
        const wanted = name === NONE ? "" : name;
        return (rank === "" || row[RANK] === Number(rank)) && (name === "" || row[CATEGORY] === wanted) &&
          matches(query, row[ID], row[SUITE]);
      }));
    };
    for (const input of [outcome, category]) input.addEventListener("change", apply);
    search.addEventListener("input", apply);
    apply();
  }
  const dataOf = (section) => JSON.parse(section.querySelector("script.rows").textContent);
  // Each case across epochs, by position: see html_tables.epoch_row.
  for (const section of document.querySelectorAll("section.epoch-table")) {
    const cases = dataOf(section);
    const epochRow = (index) => {
      const [id, suite, category, ...rest] = cases[index];
      const scores = rest.pop().map(([text, tone]) => el("span", { class: "pill " + tone, text }));
      const name = [el("b", { text: id }), el("br"), el("span", { class: "hint suite", text: suite })];
      const cells = [name, category, ...rest, scores.flatMap((pill, i) => [...(i ? [" "] : []), pill])];
      return [el("tr", {}, ...cells.map((cell) => el("td", {}, ...[cell].flat())))];
    };
    const all = cases.map((_, i) => i);
    const show = pageTable(section, all.length, epochRow, ["case", "cases"]);
    const search = section.querySelector("input.search");
    search.addEventListener("input", () => {
      const query = search.value.trim().toLowerCase();
      show(query === "" ? all : all.filter((i) => matches(query, cases[i][0], cases[i][1])));
    });
    show(all);
  }
  // Helped and harmed, by category: a few names each, the rest folded until opened.
  const names = (list) => {
    if (!list.length) return ["–"];
    const codes = (part) => part.flatMap((name, i) => [...(i ? [", "] : []), el("code", { text: name })]);
    const cell = [count(list.length) + ": ", ...codes(list.slice(0, LISTED))];
    if (list.length > LISTED) {
      const folded = "and " + count(list.length - LISTED) + " more";
      const more = el("details", { class: "more" }, el("summary", { text: folded }));
      more.addEventListener("toggle", () => {
        if (more.open && !more.dataset.filled) {
          more.dataset.filled = "1";
          more.append(...codes(list.slice(LISTED)));
        }
      });
      cell.push(more);
    }
    return cell;
  };
  for (const section of document.querySelectorAll("section.help-harm")) {
    const body = section.querySelector("tbody");
    for (const [category, helped, harmed, p] of dataOf(section)) {
      const cells = [[category], names(helped), names(harmed), [p]];
      body.append(el("tr", {}, ...cells.map((cell) => el("td", {}, ...cell))));
    }
    section.dataset.rendered = String(body.children.length);
  }
  performance.mark("recall-first-rows");
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
