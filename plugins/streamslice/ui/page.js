// The Streamslice page's script: hover values on the charts, selecting intervals on the
// coverage strip, copy-on-click positions, and the actions. Actions call Airflow's own REST
// API with the signed-in user's session cookie, so Airflow's permissions decide; each one
// asks Airflow for a dry run first, asks for confirmation, then shows Airflow's answer.
(() => {
  "use strict";
  const D = JSON.parse(document.getElementById("page-data").textContent);
  const cols = D.cols;
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const esc = (s) => String(s == null ? "" : s).replace(/[&<>"']/g,
    (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  const num = (v) => v == null ? "-" : Number(v).toLocaleString("en-US");
  // Times as the server writes them (axis.when / axis.span), in the pipeline's time zone.
  const clock = new Intl.DateTimeFormat("en-US", {timeZone: D.tz, hourCycle: "h23",
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    second: "2-digit"});
  const when = (ms, seconds) => {
    const p = {};
    clock.formatToParts(new Date(ms)).forEach((x) => { p[x.type] = x.value; });
    const s = seconds || ms % 60000 !== 0 ? `:${p.second}` : "";
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}${s}`;
  };
  const span = (c) => {
    if (D.mode !== "interval") return when(c.t, true);
    const a = when(c.t), b = when(c.e);
    return `${a} → ${b.slice(0, 10) === a.slice(0, 10) ? b.slice(11) : b}`;
  };
  // As splits.lag_text renders lag: "1,234 records", "2.5 s behind", "3 min 20 s behind".
  const amount = (v) => {
    if (v == null) return "-";
    if (D.lag_unit !== "ms") return `${num(Math.round(v))} record${v === 1 ? "" : "s"}`;
    const s = v / 1000;
    if (s < 60) return `${s % 1 ? s.toFixed(1) : s.toFixed(0)} s behind`;
    const m = Math.floor(s / 60), rest = Math.floor(s) % 60;
    if (m < 60) return rest ? `${m} min ${rest} s behind` : `${m} min behind`;
    const h = Math.floor(m / 60);
    return m % 60 ? `${h} h ${m % 60} min behind` : `${h} h behind`;
  };

  // -- hover: one column, read straight down through the strip, bars and lag lines --------
  const tip = $("#tip");
  const charts = $$("svg.cols");
  const NS = "http://www.w3.org/2000/svg";
  const bands = charts.map((svg) => {
    const r = document.createElementNS(NS, "rect");
    r.setAttribute("class", "hl");
    r.setAttribute("y", "0");
    r.setAttribute("height", svg.viewBox.baseVal.height);
    r.setAttribute("width", "0");
    svg.insertBefore(r, svg.firstChild);
    return r;
  });
  function columnAt(svg, ev) {
    const box = svg.getBoundingClientRect();
    const x = (ev.clientX - box.left) * svg.viewBox.baseVal.width / box.width;
    const i = Math.floor((x - Number(svg.dataset.gutter)) / Number(svg.dataset.pitch));
    return i >= 0 && i < cols.length ? i : -1;
  }
  function facts(c) {
    let html = `<span class="badge s-${esc(c.s)}">${esc(c.s)}</span>`;
    if (c.n != null) html += ` · ${num(c.n)} records`;
    if (c.late) html += ` · ${num(c.late)} late`;
    return html;
  }
  function describe(i) {
    const c = cols[i];
    let html = `<b>${esc(span(c))}</b>${facts(c)}`;
    if (c.why) html += `<div>${esc(c.why)}</div>`;
    if (c.lag) {
      const rows = D.lag_keys.map((k, n) => [k, c.lag[n]]).filter((r) => r[1] != null)
        .sort((a, b) => b[1] - a[1]);
      const cells = rows.map((r) => [esc(r[0]), amount(r[1])]);
      if (c.hi != null) {
        cells.push([`${D.others_count} other ${esc(D.splits_name)}`,
          `${amount(c.lo)} – ${amount(c.hi)}`]);
      }
      if (c.tot != null) {
        cells.push([`all ${esc(D.splits_name)} (${D.lag_unit === "ms" ? "worst" : "sum"})`,
          amount(c.tot)]);
      }
      if (cells.length) {
        html += "<table>" + cells.map((r) => `<tr><td>${r[0]}</td><td>${r[1]}</td></tr>`)
          .join("") + "</table>";
      }
    }
    return html;
  }
  function hover(i, ev) {
    charts.forEach((svg, n) => {
      const p = Number(svg.dataset.pitch);
      bands[n].setAttribute("x", i < 0 ? 0 : Number(svg.dataset.gutter) + i * p);
      bands[n].setAttribute("width", i < 0 ? 0 : p);
    });
    if (i < 0) { tip.hidden = true; return; }
    tip.innerHTML = describe(i);
    tip.hidden = false;
    const left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const top = ev.clientY + 16 + tip.offsetHeight > window.innerHeight
      ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 16;
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }
  charts.forEach((svg) => {
    svg.addEventListener("mousemove", (ev) => hover(columnAt(svg, ev), ev));
    svg.addEventListener("mouseleave", (ev) => hover(-1, ev));
  });

  // -- selection on the strip --------------------------------------------------------------
  const panel = $("#selection");
  let anchor = null, sel = null;  // sel = [first, last] column indexes
  function pick(g, ev) {
    const i = Number(g.dataset.i);
    if (ev.shiftKey && anchor !== null) sel = [Math.min(anchor, i), Math.max(anchor, i)];
    else { anchor = i; sel = [i, i]; }
    render();
  }
  $$("#coverage .cell").forEach((g) => {
    g.addEventListener("click", (ev) => pick(g, ev));
    // By keyboard: Tab to a cell, Enter or Space picks it (with Shift: a range), arrows move.
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(g, ev); }
      const step = { ArrowRight: 1, ArrowLeft: -1 }[ev.key];
      const next = step && $$("#coverage .cell")[Number(g.dataset.i) + step];
      if (next) { ev.preventDefault(); next.focus(); }
    });
  });
  function selected() { return sel ? cols.slice(sel[0], sel[1] + 1) : []; }
  function button(label, enabled, why, onclick, cls) {
    const b = document.createElement("button");
    b.textContent = label;
    b.className = cls || "";
    b.disabled = !enabled;
    if (why) b.title = why;
    if (enabled) b.addEventListener("click", onclick);
    return b;
  }
  function render() {
    $$("#coverage .cell").forEach((g) => g.classList.toggle("sel",
      sel !== null && Number(g.dataset.i) >= sel[0] && Number(g.dataset.i) <= sel[1]));
    const detail = $(".detail", panel), buttons = $(".buttons", panel);
    buttons.replaceChildren();
    if (!sel) { detail.innerHTML = ""; return; }
    const chosen = selected();
    if (chosen.length === 1) {
      const c = chosen[0];
      detail.innerHTML = `<b>${esc(span(c))}</b> ${facts(c)} · ` + (c.run ?
        `<a target="_top" href="${esc(runUrl(c.run))}">open the run in Airflow</a>` :
        "never run") + (c.why ? `<div class="why">${esc(c.why)}</div>` : "");
    } else {
      const count = {};
      chosen.forEach((c) => { count[c.s] = (count[c.s] || 0) + 1; });
      detail.innerHTML = `<b>${esc(when(chosen[0].t))} → ` +
        `${esc(when(chosen[chosen.length - 1].e || chosen[chosen.length - 1].t))}` +
        `</b>: ${chosen.length} ${D.mode === "interval" ? "intervals" : "batches"} (` +
        Object.entries(count).map(([s, n]) => `${n} ${esc(s)}`).join(", ") + ")";
    }
    const noRights = "Your Airflow role may read this DAG but not run it";
    if (D.mode === "interval") {
      const gaps = chosen.filter((c) => c.s === "missing" || c.s === "failed");
      const why = !D.can_run ? noRights : gaps.length ? "" :
        "Nothing to backfill: every selected interval has data (re-run one instead)";
      buttons.append(button(`Backfill ${gaps.length || ""} missing/failed`.replace("  ", " "),
        D.can_run && gaps.length > 0, why, () => backfill(chosen, gaps)));
    }
    const one = chosen.length === 1 ? chosen[0] : null;
    if (one && one.run) {
      const finished = one.s !== "running";
      const allowed = D.mode === "interval" || one.s === "failed";
      const why = !D.can_clear ? noRights : !finished ? "It is still queued or running" :
        !allowed ? "A published batch is not re-read: replay by resetting the checkpoint " +
          "(streamslice offsets reset)" : "";
      buttons.append(button(D.mode === "interval" ? "Re-run this interval" : "Re-run this batch",
        D.can_clear && finished && allowed, why, () => rerun(one)));
    }
    buttons.append(button("Clear selection", true, "", () => { sel = null; anchor = null;
      render(); }, "quiet"));
  }
  function runUrl(runId) {
    return `${D.airflow}/dags/${encodeURIComponent(D.dag_id)}/runs/${encodeURIComponent(runId)}`;
  }

  // -- talking to Airflow ------------------------------------------------------------------
  async function call(method, url, body) {
    let response, text;
    try {
      response = await fetch(url, {method, credentials: "same-origin",
        headers: {"Content-Type": "application/json", "Accept": "application/json"},
        body: body === undefined ? undefined : JSON.stringify(body)});
      text = await response.text();
    } catch (err) {
      return {ok: false, status: 0, data: null, message: `could not reach Airflow: ${err}`};
    }
    let data = null;
    try { data = JSON.parse(text); } catch (err) { data = null; }
    let message = "";
    if (!response.ok) {
      const detail = data && data.detail;
      message = typeof detail === "string" ? detail : Array.isArray(detail)
        ? detail.map((d) => d.msg || JSON.stringify(d)).join("; ") : (text || "").slice(0, 300);
      if (response.status === 403) message = `${message} (your Airflow role may not do this)`;
      if (response.status === 401) message = `${message} (sign in to Airflow again)`;
    }
    return {ok: response.ok, status: response.status, data, message};
  }
  const dialog = $("#confirm");
  // Shows what is about to happen; resolves true when the user confirms (the dialog stays
  // open for Airflow's answer).
  function confirmStep(title, what, label) {
    $(".title", dialog).textContent = title;
    $(".what", dialog).innerHTML = what;
    const answer = $(".answer", dialog), ok = $("button.confirm", dialog);
    answer.className = "answer";
    answer.innerHTML = "";
    ok.textContent = label || "Confirm";
    ok.hidden = false;
    ok.disabled = false;
    $(".cancel", dialog).textContent = "Cancel";
    if (!dialog.open) dialog.showModal();
    return new Promise((resolve) => {
      const done = (yes) => () => {
        ok.removeEventListener("click", onOk);
        dialog.removeEventListener("close", onClose);
        if (yes) {
          ok.disabled = true;
          answer.textContent = "Asking Airflow…";
        }
        resolve(yes);
      };
      const onOk = done(true), onClose = done(false);
      ok.addEventListener("click", onOk);
      dialog.addEventListener("close", onClose);
    });
  }
  function answerStep(result, good) {
    const answer = $(".answer", dialog);
    answer.className = "answer " + (result.ok ? "good" : "bad");
    answer.innerHTML = result.ok ? good :
      `Airflow answered ${result.status || "nothing"}: ${esc(result.message)}`;
    $("button.confirm", dialog).hidden = true;
    $(".cancel", dialog).textContent = "Close";
    if (!dialog.open) dialog.showModal();
    dialog.addEventListener("close", () => { if (result.ok) location.reload(); }, {once: true});
  }
  function failedEarly(result, title) {
    $(".title", dialog).textContent = title;
    $(".what", dialog).innerHTML = "";
    answerStep(result, "");
  }

  // Airflow dates an interval pipeline's scheduled and backfill runs at their interval's
  // start; a run triggered for a blocked interval is dated one millisecond into it, a date
  // none of those can need, with exactly the interval as its data interval.
  const iso = (ms) => new Date(ms).toISOString();
  function trigger(c, holder) {
    return call("POST", `${D.api}/dags/${encodeURIComponent(D.dag_id)}/dagRuns`, {
      logical_date: iso(c.t + 1), data_interval_start: iso(c.t), data_interval_end: iso(c.e),
      note: `Triggered from the Streamslice page for ${span(c)}: Airflow's backfill could ` +
        `not make it, its logical date ${iso(c.t)} being held` +
        (holder ? ` by run ${holder.run} (${span(holder)}).` : ".")});
  }

  async function backfill(chosen, gaps) {
    const body = {dag_id: D.dag_id, from_date: iso(gaps[0].t),
      to_date: iso(gaps[gaps.length - 1].t), reprocess_behavior: "failed", run_backwards: false};
    const title = `Backfill ${D.dag_id}`;
    const dry = await call("POST", `${D.api}/backfills/dry_run`, body);
    if (!dry.ok) return failedEarly(dry, title);
    const planned = new Set((dry.data.backfills || []).map((b) => Date.parse(b.logical_date)));
    // Which run holds the logical date Airflow's backfill needs (linked): a run of another
    // interval there (a manual run, dated by its end) blocks it even where Airflow plans
    // something for that date, which would be the holder's interval, not this one.
    const holderOf = (c) => D.cols.find((x) => x !== c && x.run &&
      (x.ld != null ? x.ld : x.t) === c.t);
    const filled = gaps.filter((c) => planned.has(c.t) && !holderOf(c));
    const left = gaps.filter((c) => !filled.includes(c));
    let what = !filled.length ? "" :
      `<p>Airflow will run <b>${filled.length}</b> interval(s), replacing failed ` +
      "runs and filling missing ones; intervals that already have data are left alone:</p><ul>" +
      filled.map((c) => `<li>${esc(span(c))} (${esc(c.s)})</li>`).join("") + "</ul>";
    const holders = left.map(holderOf);
    left.forEach((c, i) => {
      const holder = holders[i];
      const held = holder ? ` by run <a target="_top" href="${esc(runUrl(holder.run))}">` +
        `<code>${esc(holder.run)}</code></a> (the interval ${esc(span(holder))})` : "";
      what += `<p class="bad">Airflow's backfill will not run ${esc(span(c))}: another run ` +
        `already holds its logical date, <b>${esc(iso(c.t))}</b>${held}.</p>` +
        `<p class="fix">${filled.length ? "Confirm also triggers" : "Trigger"} a run of ` +
        `exactly ${esc(span(c))} with the logical date <b>${esc(iso(c.t + 1))}</b>, one ` +
        "millisecond into the interval: Airflow dates this pipeline's scheduled and backfill " +
        "runs at their interval's start, so none of them can need it.</p>";
    });
    if (D.paused) what += "<p class=bad>The DAG is paused: the runs wait until you unpause it.</p>";
    const label = filled.length ? "Confirm" :
      `Trigger ${left.length === 1 ? "the run" : `${left.length} runs`}`;
    if (!(await confirmStep(title, what, label))) return;
    const said = [];
    let failed = null;
    if (filled.length) {
      const made = await call("POST", `${D.api}/backfills`, body);
      // Named as the intervals it fills, not by Airflow's logical dates.
      const range = span({t: filled[0].t, e: filled[filled.length - 1].e});
      if (made.ok) {
        said.push(`Airflow created backfill <b>#${esc(made.data.id)}</b> for ${esc(range)}: ` +
          `its runs are queued. <a target="_top" href="${esc(D.airflow)}/dags/` +
          `${encodeURIComponent(D.dag_id)}/backfills">Follow it in Airflow</a>.`);
      } else failed = made;
    }
    for (const [i, c] of left.entries()) {
      if (failed) break;
      const run = await trigger(c, holders[i]);
      if (run.ok) {
        said.push(`Airflow queued run <a target="_top" href="${esc(runUrl(run.data.dag_run_id))}` +
          `"><code>${esc(run.data.dag_run_id)}</code></a> for ${esc(span(c))}.`);
      } else failed = run;
    }
    const good = said.join(" ");
    answerStep(failed || {ok: true}, good);
    if (failed && said.length) $(".answer", dialog).innerHTML += ` (before that: ${good})`;
  }

  async function rerun(c) {
    const url = `${D.api}/dags/${encodeURIComponent(D.dag_id)}/dagRuns/` +
      `${encodeURIComponent(c.run)}/clear`;
    const title = `Re-run ${span(c)}`;
    const dry = await call("POST", url, {dry_run: true, only_failed: false});
    if (!dry.ok) return failedEarly(dry, title);
    const tasks = (dry.data.task_instances || []).map((t) => t.task_id);
    const what = `<p>Airflow will clear run <code>${esc(c.run)}</code> and run its ` +
      `${tasks.length} task(s) again: ${tasks.map(esc).join(", ")}. ` +
      (D.mode === "interval" ? "The interval's output partition is replaced, not appended to." :
        "The batch re-reads the plan it saved, so nothing is read twice.") + "</p>" +
      (D.paused ? "<p class=bad>The DAG is paused: the run waits until you unpause it.</p>" : "");
    if (!(await confirmStep(title, what))) return;
    const done = await call("POST", url, {dry_run: false, only_failed: false});
    answerStep(done, done.ok ? `Airflow cleared run <code>${esc(c.run)}</code>: it is ` +
      `<b>${esc(done.data.state)}</b> now. <a target="_top" href="${esc(runUrl(c.run))}">` +
      "Follow it in Airflow</a>." : "");
  }

  // Buttons rendered by the server for source-specific actions (e.g. deregister a consumer):
  // data-url is a POST on this plugin, data-what what it does.
  // They may arrive after the page (the source's sections), hence one listener for all.
  document.addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-action]");
    if (!b || b.disabled) return;
    if (!(await confirmStep(b.dataset.title || b.textContent, `<p>${esc(b.dataset.what)}</p>`))) {
      return;
    }
    const done = await call("POST", b.dataset.action, {target: b.dataset.target});
    answerStep(done, done.ok ? esc((done.data && done.data.message) || "Done.") : "");
  });

  // -- the source's own sections (e.g. EFO consumers), asked of it after the page shows ------
  const sections = $("#sections");
  if (sections) {
    fetch(sections.dataset.url, {credentials: "same-origin"}).then(async (r) => {
      const html = r.ok ? await r.text() :
        `<p class="error">The source's section did not load (${r.status}): reload the page.</p>`;
      if (html) sections.innerHTML = html; else sections.remove();
    }).catch((err) => { sections.innerHTML = `<p class="error">${esc(err)}</p>`; });
  }

  // -- positions: copy the whole one on click; show all rows ---------------------------------
  $$("code.pos").forEach((el) => el.addEventListener("click", async () => {
    const text = el.dataset.full;
    try { await navigator.clipboard.writeText(text); } catch (err) {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    el.classList.add("copied");
    setTimeout(() => el.classList.remove("copied"), 900);
  }));
  $$("button.show-all").forEach((b) => b.addEventListener("click", () => {
    document.getElementById(b.dataset.target).classList.remove("collapsed");
    b.remove();
  }));
})();
