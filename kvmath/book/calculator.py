"""The calculator in the page: kvmath itself, run in the reader's browser by Pyodide, offline.

:func:`panel` (a model chapter's calculator) and :func:`paste_panel` (the "Paste your launch line"
page) return a raw-HTML display object: a form, and one script (:data:`CALC_JS`, the same on every
page, run once) that defines ``window.kvmathQuery(argv[, env])``.

``kvmathQuery`` takes the argv of a command line exactly as typed (its first element ``kvmath`` or
``kvmath-fit``) and returns a Promise of ``{stdout, stderr, exit_code}``: what the native command prints
and its exit status (``kvmath.pagecalc.run`` does the work on both sides). On its first call it loads
Pyodide from the book's own ``_static/pyodide/`` (vendored from npm by ``tools/book_assets.py``) and
installs ``_static/pyodide/kvmath.whl`` (built by ``make book``) with ``pyodide.unpackArchive``;
nothing is fetched before that, and nothing from another host. The panels call ``kvmathQuery`` for
every answer they show, so what a reader sees is what the function returns.

The page finds ``_static/`` from Sphinx's ``<html data-content_root>`` (a panel's
``data-kvmath-static`` attribute overrides it).
"""

from __future__ import annotations

import html
import json

from .. import facts

PYODIDE_VERSION = "0.25.1"  # tools/book_assets.py NPM["pyodide"]
# The KV formats each engine's command takes, for the panel's choices (the command still validates).
_ENGINE_FORMATS = {
    "vllm": None,  # filled from kvmath.engines.vllm.formats.VLLM_FORMATS
    "llama.cpp": None,  # LLAMACPP_CACHE_TYPES + TURBO_TYPES
    "transformers": None,  # TRANSFORMERS_FORMATS
}
DEFAULT_CARD = "rtx3090"


def _formats() -> dict[str, list[str]]:
    from ..engines.llamacpp.formats import LLAMACPP_CACHE_TYPES, TURBO_TYPES
    from ..engines.transformers.formats import TRANSFORMERS_FORMATS
    from ..engines.vllm.formats import VLLM_FORMATS

    return {"vllm": list(VLLM_FORMATS), "llama.cpp": [*LLAMACPP_CACHE_TYPES, *TURBO_TYPES],
            "transformers": list(TRANSFORMERS_FORMATS)}


CALC_CSS = """
.kvmath-calc { border: 1px solid #c8ccd0; border-radius: 6px; padding: 0.75rem; margin: 1rem 0; max-width: 100%; }
.kvmath-calc form { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: flex-end; }
.kvmath-calc label { display: flex; flex-direction: column; font-size: 0.9rem; min-width: 8rem; max-width: 100%; }
.kvmath-calc label.kvmath-wide { flex: 1 1 100%; }
.kvmath-calc input, .kvmath-calc select, .kvmath-calc textarea { max-width: 100%; box-sizing: border-box; font: inherit; }
.kvmath-calc textarea { width: 100%; font-family: monospace; }
.kvmath-calc .kvmath-calc-progress { margin-top: 0.5rem; font-size: 0.9rem; }
.kvmath-calc .kvmath-calc-answer { margin-top: 0.5rem; }
.kvmath-calc .kvmath-calc-answer pre { white-space: pre-wrap; overflow-wrap: anywhere; max-width: 100%; font-size: 0.8rem; }
.kvmath-calc .kvmath-verdict { font-weight: bold; }
.kvmath-calc p { overflow-wrap: anywhere; }
.kvmath-calc dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 0.75rem; margin: 0.25rem 0; }
.kvmath-calc dd { margin: 0; overflow-wrap: anywhere; }
"""

# One script for every panel on a page (it runs once, whatever the number of panels).
CALC_JS = r"""
(function () {
  if (window.kvmathCalc) { window.kvmathCalc.wire(); return; }
  var PYODIDE = "%(pyodide)s";
  function staticBase() {
    var el = document.querySelector("[data-kvmath-static]");
    if (el) return el.getAttribute("data-kvmath-static");
    var root = document.documentElement.getAttribute("data-content_root");
    if (root !== null) return root + "_static/";
    var s = document.querySelector("script[src*='_static/']");
    if (s) return s.getAttribute("src").replace(/_static\/.*$/, "_static/");
    return "_static/";
  }
  var listeners = [];
  function progress(step, total, text) { listeners.forEach(function (f) { f(step, total, text); }); }
  function tick() { return new Promise(function (r) { setTimeout(r, 0); }); }
  function loadScript(src) {
    return new Promise(function (ok, fail) {
      var s = document.createElement("script");
      s.src = src; s.onload = ok;
      s.onerror = function () { fail(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }
  var booting = null, ready = null;
  function boot() {
    if (booting) return booting;
    var base = staticBase() + "pyodide/", t0 = performance.now();
    booting = (async function () {
      progress(1, 4, "Loading Python (Pyodide " + PYODIDE + ", about 12.6 MB, first use only)");
      await tick();
      if (typeof loadPyodide !== "function") await loadScript(base + "pyodide.js");
      progress(2, 4, "Starting Python");
      await tick();
      var py = await loadPyodide({indexURL: base, stdout: function () {}, stderr: function () {}});
      progress(3, 4, "Installing kvmath");
      var resp = await fetch(base + "kvmath.whl");
      if (!resp.ok) throw new Error("could not load " + base + "kvmath.whl (" + resp.status + ")");
      var wheel = new Uint8Array(await resp.arrayBuffer());
      var site = py.runPython("import site; site.getsitepackages()[0]");
      py.unpackArchive(wheel, "wheel", {extractDir: site});
      py.runPython("import importlib; importlib.invalidate_caches()");
      var run = py.runPython("import kvmath.pagecalc as _kvmath_pagecalc; _kvmath_pagecalc.run_json");
      ready = {py: py, run: run, ms: performance.now() - t0};
      window.kvmathCalc.readyMs = ready.ms;
      progress(4, 4, "Ready");
      return ready;
    })();
    booting.catch(function () { booting = null; });
    return booting;
  }
  var queue = Promise.resolve();
  function kvmathQuery(argv, env) {
    var job = queue.then(async function () {
      var r = await boot();
      await tick();
      return JSON.parse(r.run(JSON.stringify(argv), JSON.stringify(env || {})));
    });
    queue = job.catch(function () {});
    return job;
  }
  window.kvmathQuery = kvmathQuery;

  // ---- the panels -----------------------------------------------------------------------
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]; }); }
  function gib(b) { return (b / 1073741824).toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2}) + " GiB"; }
  function num(n) { return Number(n).toLocaleString("en-US"); }
  function dl(rows) { return "<dl>" + rows.filter(function (r) { return r[1] !== null && r[1] !== undefined && r[1] !== ""; }).map(function (r) { return "<dt>" + esc(r[0]) + "</dt><dd>" + r[1] + "</dd>"; }).join("") + "</dl>"; }
  function pre(lines, cls) { return lines && lines.length ? "<pre class='" + cls + "'>" + esc(lines.join("\n")) + "</pre>" : ""; }
  function raw(argv, r) {
    return "<details class='kvmath-raw' data-argv='" + esc(JSON.stringify(argv)) + "' data-exit-code='" + r.exit_code + "'><summary>The command and its output (exit " + r.exit_code + ")</summary><pre class='kvmath-argv'>" +
      esc(argv.map(function (a) { return /^[\w.,:=\/+-]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'"; }).join(" ")) +
      "</pre><pre class='kvmath-stdout'>" + esc(r.stdout) + "</pre>" + (r.stderr ? "<pre class='kvmath-stderr'>" + esc(r.stderr) + "</pre>" : "") + "</details>";
  }
  function parse(r) { try { return JSON.parse(r.stdout); } catch (e) { return null; } }
  function failure(r) { return "<p class='kvmath-verdict kvmath-error'>" + esc((r.stderr || r.stdout || "no output").trim().split("\n").slice(-1)[0]) + "</p>"; }
  var OUTCOME = {boots: "Boots", fits: "Fits", refused: "Refused at start-up", oom: "Out of memory"};
  function mib(m) { return Number(m).toLocaleString("en-US", {maximumFractionDigits: 2}) + " MiB"; }
  function verdictHtml(d) {
    var o = d.outcome !== undefined ? d.outcome : d.verdict, msg = d.refusal || d.message;
    return "<p class='kvmath-verdict' data-outcome='" + esc(o) + "'>" + esc(OUTCOME[o] || d.outcome_text || o) +
      (d.engine ? " (" + esc(d.engine) + (d.release ? " " + esc(d.release) : "") + ")" : "") +
      (d.marginal ? ": marginal, within the calibration error" : "") + "</p>" +
      (msg ? "<p class='kvmath-refusal'>" + esc(msg) + "</p>" : "");
  }
  function fitAnswer(d, solved) {
    // three records: vLLM's (kvmath-fit --model / vllm serve), llama.cpp's (llama-server), and the
    // engine protocol's Verdict.to_json() (devices, log_lines, answers)
    var rows = [], dev = d.devices && d.devices[0], ans = d.answers || {};
    if (d.pool_tokens !== undefined && d.pool_tokens !== null) {
      rows.push(["KV pool", d.available_kv_bytes !== undefined && d.available_kv_bytes < 0 ?
        num(d.pool_tokens) + " tokens: the budget is " + gib(-d.available_kv_bytes) + " short per card before any KV" :
        d.pool_tokens === 0 && d.outcome && d.outcome !== "boots" ?
        "not allocated: the engine stops first" + (d.available_kv_bytes !== undefined ? " (" + gib(d.available_kv_bytes) + " per card would be left for KV)" : "") :
        num(d.pool_tokens) + " tokens" + (d.available_kv_bytes !== undefined ? ", " + gib(d.available_kv_bytes) + " for KV per card" : "")]);
    }
    if (d.kv_mib !== undefined) rows.push(["Cache", mib(d.kv_mib) + " KV" + (d.rs_mib ? " + " + mib(d.rs_mib) + " recurrent state" : "")]);
    if (d.max_concurrency) rows.push(["Concurrency", d.max_concurrency.toFixed(2) + "x at " + num(d.max_model_len) + " tokens per request"]);
    if (d.total_bytes && d.weights_bytes !== undefined)
      rows.push(["Budget", gib(d.total_bytes) + " per card x " + d.mem_util + "; weights " + gib(d.weights_bytes) + ", other non-KV " + gib(d.non_kv_bytes - d.weights_bytes)]);
    if (d.load_mib !== undefined)
      rows.push(["Device", mib(d.load_mib) + " loaded of " + mib(d.total_mib) + (d.spare_mib >= 0 ? ", spare " + mib(d.spare_mib) : ", short by " + mib(-d.spare_mib))]);
    if (dev) rows.push(["Device", esc(dev.name || "") + ": " + gib(dev.used_bytes) + " of " + gib(dev.limit_bytes) +
      (dev.spare_bytes >= 0 ? ", spare " + gib(dev.spare_bytes) : ", short by " + gib(-dev.spare_bytes))]);
    var largest = solved ? solved.largest_max_model_len : d.largest_max_model_len !== undefined ? d.largest_max_model_len :
      d.largest_ctx !== undefined ? d.largest_ctx : ans.largest_context;
    var headroom = solved ? solved.largest_max_model_len_with_headroom : d.largest_max_model_len_with_headroom;
    if (largest !== undefined) {
      var lv = largest && typeof largest === "object" ? (largest.value !== undefined ? largest.value : JSON.stringify(largest)) : largest;
      rows.push(["Largest context", lv ? (typeof lv === "number" ? num(lv) + " tokens" : esc(lv)) +
        (headroom ? " (" + num(headroom) + " with headroom for the calibration error)" : "") : "none fits"]);
    }
    var log = d.vllm_log || d.log_lines || (d.fit && d.fit.lines) || [];
    return verdictHtml(d) + dl(rows) + (log.length ? "<p>The engine's log lines:</p>" + pre(log, "kvmath-log") : "") +
      (d.notes && d.notes.length ? "<p>Notes:</p>" + pre(d.notes, "kvmath-notes") : "");
  }
  function cacheAnswer(d, engine) {
    var t = d.totals || {}, lc = d.llamacpp || {};
    var rows = [
      ["Cache per card", t.total_bytes !== undefined ? gib(t.total_bytes) + " (" + num(t.total_bytes) + " B)" : null],
      ["Growing KV", t.bytes_per_token !== undefined ? num(t.bytes_per_token) + " B per token, " + gib(t.growing_bytes) : null],
      ["Fixed", t.fixed_bytes !== undefined ? gib(t.fixed_bytes) + " (sliding window and recurrent state)" : null],
      ["Engine", esc(d.engine_version || engine)],
    ];
    return "<p class='kvmath-verdict' data-outcome='cache'>Cache only: this command sizes " + esc(engine) + "'s cache; it gives no boot verdict</p>" +
      dl(rows) + (lc.log_lines && lc.log_lines.length ? "<p>The engine's log lines:</p>" + pre(lc.log_lines, "kvmath-log") : "") +
      (d.notes && d.notes.length ? pre(d.notes.map(function (n) { return "note: " + n; }), "kvmath-notes") : "");
  }
  function modelQueries(f, model) {
    var e = f.engine.value, ctx = f.ctx.value.trim(), seqs = f.seqs.value.trim(), fmt = f.kv_format.value, tp = f.tp.value, card = f.card.value;
    if (e === "vllm") {
      var w = f.closest(".kvmath-calc").getAttribute("data-weights");
      var a = ["kvmath-fit", "--model", model, "--card", card, "--tp", tp, "--kv-format", fmt, "--max-ctx", ctx, "--max-num-seqs", seqs].concat(w ? ["--weights-variant", w] : []).concat(["--json"]);
      return [a, a.slice(0, -1).concat(["--solve-max-ctx", "--json"])];
    }
    if (e === "llama.cpp" && f.closest(".kvmath-calc").getAttribute("data-llamacpp") === "cache")
      return [["kvmath", "--config", model, "--engine", "llama.cpp", "--card", card, "-c", ctx, "-np", seqs, "-ctk", fmt, "-ctv", fmt, "--json"]];
    if (e === "llama.cpp")
      return [["kvmath-fit", "llama-server", "-m", model, "-c", ctx, "-np", seqs, "-ctk", fmt, "-ctv", fmt, "--card", card, "--json"]];
    // kvmath's transformers rules have no tensor parallelism (it refuses --tp other than 1)
    return [["kvmath", "--config", model, "--engine", e, "--kv-format", fmt, "--max-ctx", ctx, "--max-num-seqs", seqs, "--json"]];
  }
  function splitLine(text) {
    // a shell-like split: quotes, backslash-newline continuations and backslash escapes; no expansion
    var out = [], cur = null, q = null, i, c;
    text = text.replace(/\\\r?\n/g, " ");
    for (i = 0; i < text.length; i++) {
      c = text[i];
      if (q) {
        if (c === q) { q = null; continue; }
        if (c === "\\" && q === '"' && i + 1 < text.length && "\"\\$`".indexOf(text[i + 1]) >= 0) { cur += text[++i]; continue; }
        cur += c; continue;
      }
      if (c === "'" || c === '"') { q = c; cur = cur || ""; continue; }
      if (c === "\\" && i + 1 < text.length) { cur = (cur || "") + text[++i]; continue; }
      if (/\s/.test(c)) { if (cur !== null) { out.push(cur); cur = null; } continue; }
      cur = (cur || "") + c;
    }
    if (q) throw new Error("unclosed " + q + " quote in the launch line");
    if (cur !== null) out.push(cur);
    return out;
  }
  function pasteQuery(text) {
    var words = splitLine(text), env = {};
    while (words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0])) { var kv = words.shift(), k = kv.indexOf("="); env[kv.slice(0, k)] = kv.slice(k + 1); }
    if (words.length && (words[0] === "kvmath" || words[0] === "kvmath-fit")) return {argv: words, env: env};
    words = ["kvmath-fit"].concat(words);
    if (words.indexOf("--json") < 0) words.push("--json");
    return {argv: words, env: env};
  }
  function setBusy(panel, busy) {
    panel.querySelectorAll("button, input, select, textarea").forEach(function (el) { el.disabled = busy; });
    if (!busy && panel.kvmathRefresh) panel.kvmathRefresh();
  }
  function attachProgress(panel) {
    var box = panel.querySelector(".kvmath-calc-progress"), bar = box.querySelector("progress"), label = box.querySelector("span");
    listeners.push(function (step, total, text) {
      bar.max = total; bar.value = step; label.textContent = text; box.hidden = step >= total;
    });
    return box;
  }
  async function answer(panel, jobs) {
    var out = panel.querySelector(".kvmath-calc-answer");
    var box = panel.querySelector(".kvmath-calc-progress");
    if (!ready) box.hidden = false;
    setBusy(panel, true);
    out.setAttribute("data-state", "running");
    try {
      var results = [];
      for (var i = 0; i < jobs.length; i++) results.push(await kvmathQuery(jobs[i].argv, jobs[i].env));
      var r0 = results[0], d = parse(r0), html;
      if (r0.exit_code === 2 || (!d && !r0.stdout.trim())) html = failure(r0);
      else if (!d) html = "<p class='kvmath-verdict' data-outcome='text'>kvmath's answer (exit " + r0.exit_code + "):</p>" + pre([r0.stdout.replace(/\n$/, "")], "kvmath-text");
      else if (d.outcome !== undefined || d.verdict !== undefined) { var r1 = results[1], s = r1 ? parse(r1) : null; html = fitAnswer(d, s && r1.exit_code !== 2 ? s : null); }
      else html = cacheAnswer(d, d.engine || "");
      out.innerHTML = html + results.map(function (r, i) { return raw(jobs[i].argv, r); }).join("");
      out.setAttribute("data-state", "done");
      out.setAttribute("data-exit-code", String(r0.exit_code));
    } catch (e) {
      out.innerHTML = "<p class='kvmath-verdict kvmath-error'>" + esc(e && e.message || e) + "</p>";
      out.setAttribute("data-state", "error");
    } finally {
      box.hidden = true;
      setBusy(panel, false);
    }
  }
  function fillFormats(f, formats) {
    var want = f.kv_format.getAttribute("data-default-" + f.engine.value.replace(".", "")) || "";
    var list = formats[f.engine.value] || [];
    f.kv_format.innerHTML = list.map(function (x) { return "<option" + (x === want ? " selected" : "") + ">" + esc(x) + "</option>"; }).join("");
    f.tp.disabled = f.engine.value !== "vllm";  // llama-server has no TP; kvmath's transformers neither
  }
  // what a panel's submit runs, as it stands: [{argv, env}] (tests read a built page's defaults through it)
  function panelJobs(panel) {
    var f = panel.querySelector("form");
    if (panel.getAttribute("data-kvmath-calc") === "model")
      return modelQueries(f, panel.getAttribute("data-model")).map(function (a) { return {argv: a}; });
    return [pasteQuery(f.line.value)];
  }
  function wire() {
    document.querySelectorAll(".kvmath-calc:not([data-wired])").forEach(function (panel) {
      panel.setAttribute("data-wired", "1");
      attachProgress(panel);
      var f = panel.querySelector("form"), mode = panel.getAttribute("data-kvmath-calc");
      if (mode === "model") {
        var formats = JSON.parse(panel.getAttribute("data-formats"));
        f.engine.addEventListener("change", function () { fillFormats(f, formats); });
        fillFormats(f, formats);
        panel.kvmathRefresh = function () { f.tp.disabled = f.engine.value !== "vllm"; };
      }
      f.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var jobs;
        try {
          jobs = panelJobs(panel);
        } catch (e) {
          panel.querySelector(".kvmath-calc-answer").innerHTML = "<p class='kvmath-verdict kvmath-error'>" + esc(e.message) + "</p>";
          return;
        }
        answer(panel, jobs);
      });
    });
  }
  window.kvmathCalc = {boot: boot, wire: wire, splitLine: splitLine, pasteQuery: pasteQuery, panelJobs: panelJobs, readyMs: null};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire); else wire();
})();
"""


class RawHTML:
    """A display object whose only representation is HTML (myst-nb writes it into the page as is)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def _script() -> str:
    return ("<style>" + CALC_CSS + "</style>\n<script>" + CALC_JS % {"pyodide": PYODIDE_VERSION} + "</script>")


def _progress() -> str:
    return ("<div class='kvmath-calc-progress' role='status' hidden><progress max='4' value='0'></progress> "
            "<span></span></div><div class='kvmath-calc-answer' aria-live='polite'></div>")


def _vllm_default_format(model_id: str) -> str:
    """fp8_e5m2 (kvmath-fit's default) where vLLM takes it for the model, else bf16 (MLA backends have no
    fp8_e5m2 cache)."""
    import kvmath
    from ..errors import KvMathError

    try:
        kvmath.derive(model_id, engine="vllm", kv_format="fp8_e5m2", max_ctx=1024)
        return "fp8_e5m2"
    except KvMathError:
        return "bf16"


def panel(model_id: str, card: str = DEFAULT_CARD, ctx: int | None = None, seqs: int = 1,
          kv_format: str | None = None, tp: int = 1) -> RawHTML:
    """A model chapter's calculator: a form (card, engine, context, sequences, KV format, tensor
    parallelism) whose answer is computed in the page by ``kvmath-fit --model <model_id> ... --json`` (with
    ``--weights-variant`` of the checkpoint the chapter prices, where kvmath records published sizes)
    (vLLM: the verdict, the pool, vLLM's log lines, and the largest context from ``--solve-max-ctx``),
    ``kvmath-fit llama-server -m <model_id> ... --json`` (llama.cpp: the verdict, the device's load, the
    largest ``-c``, ``--fit``'s lines) or ``kvmath --config <model_id> --engine transformers ... --json``
    (the cache only: kvmath gives transformers no boot verdict), through ``window.kvmathQuery``.

    The panel's defaults are chosen at build time so that its first answer is one: vLLM's KV format is
    fp8_e5m2 where vLLM takes it for the model, else bf16; llama.cpp goes through ``kvmath-fit
    llama-server`` where that front door can price the model's weights from its config (a probe run
    here), else to ``kvmath --engine llama.cpp`` (the cache only, and the engine menu says so).

    ``model_id`` must be a known model (``kvmath.facts.known_models``); ``card`` a known card
    (``kvmath.facts.cards``); ``ctx`` the initial context in tokens (default: the model's
    ``max_position_embeddings``, capped at 262,144). Raises KvMathError for an unknown model or card.
    Returns a :class:`RawHTML` (the notebook cell's output).
    """
    from ..errors import KvMathError, choices

    models = facts.known_models()
    if model_id not in models:
        raise KvMathError(f"unknown model {model_id!r} for the calculator panel; valid: {choices(sorted(models))}")
    cards = facts.cards()
    if card not in cards:
        raise KvMathError(f"unknown card {card!r}; valid: {choices(sorted(cards))}")
    if ctx is None:
        from ..model.load import load_architecture

        ctx = min(int(load_architecture(model_id).max_position_embeddings or 32768), 262144)
    formats = _formats()
    if kv_format not in formats["vllm"]:
        kv_format = _vllm_default_format(model_id)
    # llama.cpp: the front door's verdict where kvmath-fit llama-server can price the weights from the
    # config, else kvmath's cache of llama.cpp (the panel says which)
    from ..pagecalc import run

    probe = run(["kvmath-fit", "llama-server", "-m", model_id, "-c", "4096", "--card", card, "--json"])
    llama_route = "fit" if probe["exit_code"] in (0, 1) else "cache"
    defaults = {"vllm": kv_format,
                "llamacpp": "q8_0", "transformers": "bf16"}
    card_opts = "".join(
        f"<option value='{html.escape(c)}'{' selected' if c == card else ''}>{html.escape(c)} "
        f"({cards[c]['total_gib']:.2f} GiB)</option>" for c in sorted(cards))
    tp_opts = "".join(f"<option{' selected' if t == tp else ''}>{t}</option>" for t in (1, 2, 4, 8))
    # the checkpoint the chapter prices (its published default where kvmath records sizes), named on the line so
    # that the panel answers for the chapter's weights, not vllm serve's default of the HF repository's own
    dep = facts.deployments().get(model_id)
    weights = f" data-weights='{html.escape(dep['default_weights'], quote=True)}'" if dep else ""
    attrs = (f"data-kvmath-calc='model' data-model='{html.escape(model_id, quote=True)}'{weights} data-llamacpp='{llama_route}' "
             f"data-formats='{html.escape(json.dumps(formats), quote=True)}'")
    form = (
        "<form class='kvmath-calc-form'>"
        f"<label>Card<select name='card'>{card_opts}</select></label>"
        "<label>Engine<select name='engine'><option value='vllm' selected>vLLM (kvmath-fit)</option>"
        f"<option value='llama.cpp'>llama.cpp ({'kvmath-fit llama-server' if llama_route == 'fit' else 'kvmath, the cache only'})</option>"
        "<option value='transformers'>transformers (kvmath)</option>"
        "</select></label>"
        f"<label>Context (tokens)<input name='ctx' inputmode='numeric' value='{ctx}' size='9'></label>"
        f"<label>Sequences<input name='seqs' inputmode='numeric' value='{seqs}' size='4'></label>"
        "<label>KV format<select name='kv_format' "
        + " ".join(f"data-default-{k}='{v}'" for k, v in defaults.items()) + "></select></label>"
        f"<label>Tensor parallel<select name='tp'>{tp_opts}</select></label>"
        "<button type='submit'>Ask kvmath</button></form>"
    )
    head = (f"<p class='kvmath-calc-intro'>Ask kvmath about <code>{html.escape(model_id)}</code> in this page: "
            "the first answer loads Python and kvmath into your browser (about 13 MB from this site, once); "
            "nothing leaves it.</p>")
    return RawHTML(f"<div class='kvmath-calc' {attrs}>{head}{form}{_progress()}</div>\n{_script()}")


def paste_panel(example: str = "vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 4 --max-model-len 65536 "
                                "--card rtx3090") -> RawHTML:
    """The "Paste your launch line" form: the pasted line (a ``vllm serve``, ``llama-server`` or SGLang
    line; leading ``VAR=value`` words become the environment; a line starting ``kvmath`` or
    ``kvmath-fit`` runs as is) goes to ``kvmath-fit <line> --json`` in the page through
    ``window.kvmathQuery``, and the panel shows what the command answers (the verdict, the pool or the
    device's load, the largest context, the engine's log lines and the notes, from whichever record the
    engine prints; a line kvmath-fit does not take is its one-line refusal). The page cannot ask the machine for
    its GPU, so a line without ``--card`` (or ``--device-memory``) is refused naming them. Returns a
    :class:`RawHTML`."""
    form = (
        "<form class='kvmath-calc-form'>"
        f"<label class='kvmath-wide'>Launch line<textarea name='line' rows='3' spellcheck='false'>"
        f"{html.escape(example)}</textarea></label>"
        "<button type='submit'>Ask kvmath-fit</button></form>"
    )
    return RawHTML(f"<div class='kvmath-calc' data-kvmath-calc='paste'>{form}{_progress()}</div>\n{_script()}")
