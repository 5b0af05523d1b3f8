// jetbench live job dashboard: the front end of jetbench.notebook.Dashboard (anywidget ESM).
//
// No dependencies: plain DOM, SVG for the plots. The kernel sends the whole view as one `state`
// trait per tick (bounded size); this module only draws it. Controls write the `min_idle_us` /
// `max_idle_us` traits (the kernel applies them to the running executor) or send {cmd: "cancel"},
// {cmd: "suspend"} / {cmd: "resume"} (a job with a processing guarantee). Such a job's queue view
// marks where the barrier of the snapshot in flight is on each edge; its tasklet rows say where
// each instance is in that snapshot.
//
// Its Timeline tab draws the job's workers call by call with createTimelineView, which the
// package puts in front of this file (widgets/src/timeline_view.js): opening the tab sends
// {cmd: "tab", tab: "timeline"}, and the kernel then keeps the `timeline` trait up to date; the
// view's zoom and pan go back as {cmd: "timeline", sub: {...}}.

const NS = "http://www.w3.org/2000/svg";
const PALETTE = ["#3b8fd9", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"];
const SLIDER_MAX = 1000; // slider positions; idle µs = 10^(5 * pos / SLIDER_MAX), position 0 = 0 µs
const IDLE_DECADES = 5; // 1 µs .. 100 ms
const BUSY_AFTER_MS = 3000; // a command not acknowledged by then: the kernel is busy, say so

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function compact(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + "k";
  if (a >= 100 || Number.isInteger(n)) return Math.round(n).toLocaleString("en-US");
  return n.toFixed(1);
}

// A name that may be cut to fit (a Beam step's, ~100 characters): the head is cut with an
// ellipsis, the tail, what tells steps apart (from the last "/", or the last characters), always
// shows; the whole name is the title of what holds it.
const TAIL_MAX = 28;
function cutName(name) {
  const text = String(name ?? "");
  if (text.length <= TAIL_MAX) return `<span class="jb-cut"><span class="jb-cut-head">${esc(text)}</span></span>`;
  const slash = text.lastIndexOf("/");
  const at = slash > 0 && text.length - slash <= TAIL_MAX ? slash : text.length - 12;
  return `<span class="jb-cut"><span class="jb-cut-head">${esc(text.slice(0, at))}</span><span class="jb-cut-tail">${esc(text.slice(at))}</span></span>`;
}

function grouped(n) {
  return n === null || n === undefined ? "–" : Math.round(n).toLocaleString("en-US");
}

function seconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return s.toFixed(1) + " s";
  const m = Math.floor(s / 60);
  return `${m} min ${(s - 60 * m).toFixed(0)} s`;
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + " MB";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + " kB";
  return `${n} B`;
}

function millis(ms) {
  if (ms === null || ms === undefined) return "–";
  return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms.toFixed(ms >= 10 ? 0 : 1) + " ms";
}

// the fault-tolerance row: last snapshot (id, age, duration, size), snapshots taken, restarts
function snapshotRow(ft) {
  const guarantee = esc(String(ft.guarantee).replace(/_/g, "-"));
  const last = ft.last_id
    ? `last snapshot <b class="jb-snap-id">#${ft.last_id}</b> ` +
      `<span class="jb-snap-age">${seconds(ft.last_age_s)} ago</span> · ` +
      `took <span class="jb-snap-duration">${millis(ft.last_duration_ms)}</span> · ` +
      `<span class="jb-snap-size">${bytes(ft.last_size_bytes)}</span>`
    : `<span class="jb-dim">no snapshot yet</span>`;
  const failed = ft.failed ? ` · <span class="jb-snap-failed">${ft.failed} failed</span>` : "";
  const restored = ft.restored_from ? ` · <span class="jb-dim">restored from #${ft.restored_from}</span>` : "";
  return (
    `<span class="jb-guarantee">${guarantee}</span> ${last} · ` +
    `<span class="jb-snap-taken">${grouped(ft.taken)}</span> taken${failed} · ` +
    `<span class="jb-restarts${ft.restarts ? " jb-restarted" : ""}">${grouped(ft.restarts)}</span> ` +
    `restart${ft.restarts === 1 ? "" : "s"}${restored}`
  );
}

// snapshot barriers (a job with a processing guarantee): where the barrier of the snapshot in
// flight is on each edge, and where each tasklet is in that snapshot
// (‖ is the barrier, as notebook 08 draws it)
const BARRIER_MARKS = { "in queue": "▸‖", held: "‖", received: "‖▸", passed: "✓‖" };

function barrierTitle(b, q) {
  const where = `queues from ${q.source} into ${q.destination}`;
  const counts = [["in queue", b.in_queue], ["held", b.held], ["passed", b.passed]]
    .filter(([, n]) => n)
    .map(([w, n]) => `${n} ${w}`)
    .join(", ");
  const text = {
    "in queue": `Barrier #${b.id} is in the queue: emitted upstream, not yet taken by ${q.destination}.`,
    held: `Barrier #${b.id} reached ${q.destination} on this input and is held: with exactly-once, this queue is not drained until the barrier has come on every input (alignment).`,
    received: `Barrier #${b.id} reached ${q.destination} on this input; with at-least-once the queue keeps draining while the other inputs catch up.`,
    passed: `${q.destination} saved its state and forwarded barrier #${b.id}.`,
  }[b.state];
  return `${text} (${where}: ${counts})`;
}

function barrierMark(q) {
  const b = q.barrier;
  if (!b) return `<span class="jb-barrier" data-barrier=""></span>`;
  return (
    `<span class="jb-barrier" data-barrier="${esc(b.state)}" data-snapshot="${b.id}" title="${esc(barrierTitle(b, q))}">` +
    `${BARRIER_MARKS[b.state] ?? "‖"} #${b.id} ${esc(b.state)}</span>`
  );
}

const SNAP_TITLES = {
  "awaiting barrier": "snapshot asked for: waiting for its barrier on the inputs",
  aligning: "the barrier came on some inputs, which are held until it comes on all (exactly-once)",
  saving: "saving its state",
  "emitting barrier": "sending the barrier downstream, after the output it still holds (a full queue delays it)",
  saved: "state saved and barrier forwarded; waiting for the others and the store",
  "phase 2": "the snapshot is stored: committing (phase 2)",
  "final save": "completed: saving its final state",
  restoring: "restoring its state from a snapshot",
};

function snapWord(r) {
  if (!r.snap) return "";
  const title = SNAP_TITLES[r.snap] ?? "where this tasklet is in the snapshot";
  return `${r.state === "snapshot" ? "" : " "}<span class="jb-snapstate" data-snap="${esc(r.snap)}" title="snapshot #${r.snap_id}: ${esc(title)}">${esc(r.snap)} #${r.snap_id}</span>`;
}

function usToPos(us) {
  if (!(us > 0)) return 0;
  const p = (Math.log10(Math.max(us, 1)) / IDLE_DECADES) * SLIDER_MAX;
  return Math.min(SLIDER_MAX, Math.max(1, Math.round(p)));
}

function posToUs(pos) {
  if (pos <= 0) return 0;
  const us = Math.pow(10, (IDLE_DECADES * pos) / SLIDER_MAX);
  // round to 2 significant digits: 25, 130, 2000 ...
  const mag = Math.pow(10, Math.floor(Math.log10(us)) - 1);
  return Math.round(us / mag) * mag;
}

function fillColor(f) {
  if (f >= 0.9) return "#d62728";
  if (f >= 0.5) return "#ff9f1c";
  return "#2ca02c";
}

function el(tag, cls, html) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (html !== undefined) e.innerHTML = html;
  return e;
}

// ----------------------------------------------------------------------------------- controls

function idleControl(label, cls) {
  const box = el("label", `jb-idle ${cls}`);
  box.innerHTML =
    `<span class="jb-idle-label">${esc(label)}</span>` +
    `<input type="range" class="jb-range ${cls}-range" min="0" max="${SLIDER_MAX}" step="1" aria-label="${esc(label)}">` +
    `<input type="number" class="jb-num ${cls}-num" min="0" step="any" aria-label="${esc(label)} µs">` +
    `<span class="jb-unit">µs</span>`;
  return box;
}

// ----------------------------------------------------------------------------------- plots

function cpuPlot(cpu, width, height) {
  const pad = { l: 34, r: 8, t: 8, b: 20 };
  const t = cpu?.t ?? [];
  const series = cpu?.series ?? [];
  let ymax = 100;
  for (const s of series) for (const v of s.values) if (v > ymax) ymax = v;
  ymax = Math.ceil(ymax / 50) * 50;
  const t0 = t.length ? t[0] : 0;
  const t1 = t.length > 1 ? t[t.length - 1] : t0 + 1;
  const x = (v) => pad.l + ((v - t0) / (t1 - t0 || 1)) * (width - pad.l - pad.r);
  const y = (v) => height - pad.b - (Math.min(v, ymax) / ymax) * (height - pad.t - pad.b);
  let svg = `<svg xmlns="${NS}" class="jb-cpu-plot" viewBox="0 0 ${width} ${height}" width="100%" preserveAspectRatio="xMidYMid meet" data-points="${t.length}">`;
  for (let g = 0; g <= ymax; g += ymax > 200 ? 100 : 50) {
    svg += `<line class="jb-grid" x1="${pad.l}" x2="${width - pad.r}" y1="${y(g)}" y2="${y(g)}"/>`;
    svg += `<text class="jb-axis" x="${pad.l - 4}" y="${y(g) + 3}" text-anchor="end">${g}%</text>`;
  }
  svg += `<text class="jb-axis" x="${pad.l}" y="${height - 5}">${t0.toFixed(1)} s</text>`;
  svg += `<text class="jb-axis" x="${width - pad.r}" y="${height - 5}" text-anchor="end">${t1.toFixed(1)} s</text>`;
  series.forEach((s, i) => {
    const color = i === 0 ? "var(--jb-process-color)" : PALETTE[(i - 1) % PALETTE.length];
    const pts = s.values.map((v, k) => `${x(t[k]).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    svg += `<polyline class="jb-line" data-series="${esc(s.name)}" points="${pts}" stroke="${color}" stroke-width="${i === 0 ? 2 : 1.2}"/>`;
    if (i === 0 || t.length <= 60) {
      const r = i === 0 ? 2.2 : 1.5;
      for (let k = 0; k < s.values.length; k++) {
        svg += `<circle class="jb-pt" data-series="${esc(s.name)}" cx="${x(t[k]).toFixed(1)}" cy="${y(s.values[k]).toFixed(1)}" r="${r}" fill="${color}"/>`;
      }
    }
  });
  svg += "</svg>";
  const legend = series
    .map((s, i) => {
      const color = i === 0 ? "var(--jb-process-color)" : PALETTE[(i - 1) % PALETTE.length];
      const last = s.values.length ? s.values[s.values.length - 1] : null;
      return `<span class="jb-key" data-series="${esc(s.name)}"><i style="background:${color}"></i>${esc(s.name)} ${last === null ? "" : last.toFixed(0) + "%"}</span>`;
    })
    .join("");
  return svg + `<div class="jb-legend">${legend}</div>`;
}

function sparkline(hist, width, height) {
  const n = hist.length;
  if (!n) return `<svg class="jb-spark" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}"></svg>`;
  const dx = n > 1 ? width / (n - 1) : 0;
  const pts = hist.map((v, i) => `${(i * dx).toFixed(1)},${(height - 1 - v * (height - 2)).toFixed(1)}`);
  const area = `0,${height} ${pts.join(" ")} ${((n - 1) * dx).toFixed(1)},${height}`;
  const color = fillColor(hist[n - 1]);
  return (
    `<svg xmlns="${NS}" class="jb-spark" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" preserveAspectRatio="none" data-n="${n}">` +
    `<polygon points="${area}" fill="${color}" fill-opacity="0.25"/>` +
    `<polyline points="${pts.join(" ")}" stroke="${color}" stroke-width="1.3" fill="none" vector-effect="non-scaling-stroke"/></svg>`
  );
}

// ----------------------------------------------------------------------------------- render

function render({ model, el: host }) {
  const root = el("div", "jetbench-dashboard");
  root.innerHTML = `
    <div class="jb-head">
      <span class="jb-title">jetbench · <b class="jb-job"></b></span>
      <span class="jb-status" data-status=""></span>
      <span class="jb-elapsed" title="elapsed"></span>
      <span class="jb-summary"></span>
      <span class="jb-sampler" title="the dashboard's own sampler thread"></span>
    </div>
    <div class="jb-ft" hidden title="fault tolerance: the job's snapshots and restarts"></div>
    <div class="jb-error" hidden></div>
    <div class="jb-kernel-busy" hidden role="status" style="border-left:3px solid #d97706;background:rgba(217,119,6,0.1);padding:4px 8px;margin-bottom:6px"></div>
    <div class="jb-controls">
      <span class="jb-slot-min"></span><span class="jb-slot-max"></span>
      <label class="jb-strategy-box" hidden>strategy <select class="jb-strategy"></select></label>
      <span class="jb-idle-applied" title="idle bounds the executor uses now"></span>
      <button type="button" class="jb-suspend" hidden title="take a terminal snapshot and stop the job's threads (job.suspend())">Suspend</button>
      <button type="button" class="jb-resume" hidden title="restart the job from its terminal snapshot (job.resume())">Resume</button>
      <button type="button" class="jb-cancel">Cancel job</button>
      <span class="jb-control-error"></span>
      <span class="jb-control-note jb-dim"></span>
    </div>
    <div class="jb-tabs" role="tablist">
      <button type="button" class="jb-tab" role="tab" data-tab="overview" aria-selected="true">Overview</button>
      <button type="button" class="jb-tab" role="tab" data-tab="timeline" aria-selected="false" title="every tasklet call and park, a lane per worker">Timeline</button>
    </div>
    <div class="jb-timeline-pane" hidden><div class="jb-timeline-error" hidden></div></div>
    <div class="jb-body">
      <div class="jb-panel jb-tasklets">
        <div class="jb-panel-title">Tasklets <span class="jb-agg"></span></div>
        <table class="jb-table"><thead><tr>
          <th class="jb-vertex-h">vertex</th><th class="jb-opt2">#</th><th class="jb-opt">worker</th><th class="jb-opt2">state</th><th class="jb-n jb-opt2">in</th><th class="jb-n">out</th>
          <th class="jb-n jb-rate-h">items/s</th><th class="jb-n jb-opt">busy %</th><th class="jb-n jb-opt" title="cooperative calls slower than the slow-call threshold">slow</th>
          <th class="jb-opt2" title="backpressure: the outbox could not flush, a downstream queue is full">bp</th><th class="jb-n" title="inbound queue fill">queue</th>
        </tr></thead><tbody class="jb-rows"></tbody></table>
        <div class="jb-panel jb-partitions-panel" hidden>
          <div class="jb-panel-title">Partitions <span class="jb-lag-total"></span></div>
          <table class="jb-table"><thead><tr>
            <th class="jb-vertex-h">source</th><th>partition</th><th class="jb-n jb-opt2" title="the next offset the source reads">offset</th>
            <th class="jb-n jb-opt2" title="the broker's high watermark: the offset of the next record written">high</th>
            <th class="jb-n" title="records written and not read yet: high watermark minus offset">lag</th>
            <th class="jb-n">records/s</th><th class="jb-opt" title="the partition's event-time watermark (UTC)">watermark</th>
          </tr></thead><tbody class="jb-partitions"></tbody></table>
        </div>
        <div class="jb-panel jb-queues-panel">
          <div class="jb-panel-title">Queue fill per edge <span>(last ${60} ticks)</span></div>
          <div class="jb-barrier-legend" hidden></div>
          <div class="jb-queues"></div>
        </div>
      </div>
      <div class="jb-side">
        <div class="jb-panel jb-cpu">
          <div class="jb-panel-title">CPU % of one core <span class="jb-cpu-now"></span></div>
          <div class="jb-cpu-box"></div>
        </div>
        <div class="jb-panel jb-workers-panel">
          <div class="jb-panel-title">Workers</div>
          <table class="jb-table"><thead><tr><th>worker</th><th class="jb-opt2">kind</th><th class="jb-n jb-opt2" title="tasklets that run (or ran) on this worker">tasklets</th>
            <th class="jb-n">CPU %</th><th class="jb-n jb-opt">iterations/s</th><th class="jb-n" title="idle rounds (parks) per second">idle/s</th></tr></thead>
            <tbody class="jb-workers"></tbody></table>
        </div>
      </div>
    </div>`;
  host.appendChild(root);
  const $ = (sel) => root.querySelector(sel);

  // -- commands carry an id the kernel acknowledges; one not acknowledged within BUSY_AFTER_MS
  // means the kernel is busy in a cell that does not let widget messages through: say so
  // (and keep saying it until the kernel answers) rather than show "Cancelling…" forever
  let nextId = 1;
  const unacked = new Map(); // id -> what the user did
  let busyTimer = null;
  function command(content, what) {
    const id = nextId++;
    unacked.set(id, what);
    model.send({ ...content, id });
    if (busyTimer === null) busyTimer = setTimeout(showBusy, BUSY_AFTER_MS);
  }
  function showBusy() {
    busyTimer = null;
    if (!unacked.size) return;
    const what = [...new Set(unacked.values())].join(", ");
    const busy = $(".jb-kernel-busy");
    busy.hidden = false;
    busy.dataset.pending = String(unacked.size);
    busy.textContent =
      `The kernel has not received ${what} yet: it is busy running a cell that does not wait through jetbench ` +
      `(job.join() and run() let these controls through). It will act when that cell ends; ` +
      `to stop the job now, interrupt the kernel (■).`;
  }
  function onCustom(msg) {
    if (!msg || msg.ack === undefined) return;
    // suspend and resume are done when acknowledged (or refused: control_error says why)
    for (const b of lifecycleButtons) {
      if (b.pending !== null && b.pending <= msg.ack) {
        b.pending = null;
        b.button.textContent = b.label;
      }
    }
    updateLifecycle();
    // messages arrive in order: an ack covers every command sent before it
    for (const id of [...unacked.keys()]) if (id <= msg.ack) unacked.delete(id);
    if (!unacked.size) {
      clearTimeout(busyTimer);
      busyTimer = null;
      const busy = $(".jb-kernel-busy");
      busy.hidden = true;
      busy.textContent = "";
      delete busy.dataset.pending;
    }
  }

  // -- idle controls: sliders (log scale) + number inputs, written to the traits on change
  const minCtl = idleControl("min idle", "jb-min-idle");
  const maxCtl = idleControl("max idle", "jb-max-idle");
  $(".jb-slot-min").replaceWith(minCtl);
  $(".jb-slot-max").replaceWith(maxCtl);
  const controls = [
    { trait: "min_idle_us", box: minCtl },
    { trait: "max_idle_us", box: maxCtl },
  ];
  for (const c of controls) {
    c.range = c.box.querySelector(".jb-range");
    c.num = c.box.querySelector(".jb-num");
    c.show = (us) => {
      if (document.activeElement !== c.num) c.num.value = String(us);
      if (!c.dragging) c.range.value = String(usToPos(us));
    };
    c.commit = (us) => {
      if (!(us >= 0)) return;
      model.set(c.trait, us);
      model.save_changes();
      command({ cmd: "ping" }, c.trait === "min_idle_us" ? "min idle" : "max idle");
    };
    c.range.addEventListener("pointerdown", () => (c.dragging = true));
    c.range.addEventListener("input", () => {
      c.num.value = String(posToUs(Number(c.range.value)));
    });
    c.range.addEventListener("change", () => {
      c.dragging = false;
      c.commit(posToUs(Number(c.range.value)));
    });
    c.num.addEventListener("change", () => c.commit(Number(c.num.value)));
    c.show(model.get(c.trait));
  }

  const strategy = $(".jb-strategy");
  strategy.addEventListener("change", () => command({ cmd: "set_strategy", strategy: strategy.value }, "strategy"));

  const cancel = $(".jb-cancel");
  cancel.addEventListener("click", () => {
    command({ cmd: "cancel" }, "Cancel");
    cancel.disabled = true;
    cancel.textContent = "Cancelling…";
  });

  // suspend / resume: shown for a job with a processing guarantee, enabled when they apply
  const lifecycleButtons = [
    { cmd: "suspend", label: "Suspend", busy: "Suspending…", key: "can_suspend", button: $(".jb-suspend"), pending: null },
    { cmd: "resume", label: "Resume", busy: "Resuming…", key: "can_resume", button: $(".jb-resume"), pending: null },
  ];
  let lastState = {};
  for (const b of lifecycleButtons) {
    b.button.addEventListener("click", () => {
      b.pending = nextId;
      command({ cmd: b.cmd }, b.label);
      b.button.disabled = true;
      b.button.textContent = b.busy;
    });
  }
  function updateLifecycle() {
    const s = lastState;
    const life = s.lifecycle || {};
    for (const b of lifecycleButtons) {
      b.button.hidden = !s.snapshots;
      b.button.disabled = b.pending !== null || !!s.final || !life[b.key];
    }
  }

  function update() {
    const raw = model.get("state");
    const s = (typeof raw === "string" ? JSON.parse(raw || "{}") : raw) || {};
    lastState = s;
    root.dataset.final = s.final ? "true" : "false";
    root.dataset.seq = String(s.seq ?? 0);
    $(".jb-job").textContent = s.job ?? "";
    const status = $(".jb-status");
    status.textContent = s.status ?? "";
    status.dataset.status = s.status ?? "";
    $(".jb-elapsed").textContent = seconds(s.elapsed_s);
    $(".jb-summary").textContent =
      `${s.tasklet_count ?? 0} tasklets · ${s.vertex_count ?? 0} vertices · sources emitted ${grouped(s.totals?.sources_out)} · sinks received ${grouped(s.totals?.sinks_in)}` +
      (s.totals?.lag === null || s.totals?.lag === undefined ? "" : ` · lag ${grouped(s.totals.lag)} records`);
    const hz = s.interval_s ? (1 / s.interval_s).toFixed(0) : "?";
    const cpuPct = s.elapsed_s ? (100 * (s.sampler_cpu_s ?? 0)) / s.elapsed_s : 0;
    $(".jb-sampler").textContent = s.final ? "final" : `sampling ${hz} Hz · ${cpuPct.toFixed(1)}% CPU`;

    // fault tolerance: only for a job with a processing guarantee
    const ft = $(".jb-ft");
    ft.hidden = !s.snapshots;
    if (s.snapshots) {
      ft.innerHTML = snapshotRow(s.snapshots);
      ft.dataset.lastId = String(s.snapshots.last_id);
      ft.dataset.taken = String(s.snapshots.taken);
      ft.dataset.restarts = String(s.snapshots.restarts);
    } else {
      ft.innerHTML = "";
    }
    updateLifecycle();

    // error (with its vertex) or cancellation
    const err = $(".jb-error");
    if (s.error) {
      err.hidden = false;
      err.dataset.kind = s.status === "cancelled" ? "cancelled" : "failed";
      const where = s.error.vertex ? ` in vertex <b class="jb-error-vertex">${esc(s.error.vertex)}</b>#${esc(s.error.instance)}` : "";
      err.innerHTML = `<b>${esc(s.error.type)}</b>${where}: <span class="jb-error-message">${esc(s.error.message)}</span>` +
        (s.error.cause ? `<div class="jb-cause">cause: ${esc(s.error.cause)}</div>` : "");
    } else {
      err.hidden = true;
    }

    // controls
    const idle = s.idle || {};
    $(".jb-idle-applied").textContent =
      idle.min_idle_us === null || idle.min_idle_us === undefined
        ? ""
        : `applied: ${compact(idle.min_idle_us)}–${compact(idle.max_idle_us)} µs (${idle.strategy})`;
    $(".jb-idle-applied").dataset.min = String(idle.min_idle_us);
    $(".jb-idle-applied").dataset.max = String(idle.max_idle_us);
    for (const c of controls) {
      c.range.disabled = c.num.disabled = !!s.final;
    }
    const choices = idle.strategies || [];
    $(".jb-strategy-box").hidden = choices.length === 0;
    if (choices.length && strategy.dataset.choices !== choices.join(",")) {
      strategy.innerHTML = choices.map((c) => `<option value="${esc(c)}">${esc(c)}</option>`).join("");
      strategy.dataset.choices = choices.join(",");
    }
    if (choices.length && document.activeElement !== strategy) strategy.value = idle.strategy;
    strategy.disabled = !!s.final;
    if (s.final) {
      cancel.disabled = true;
      cancel.textContent = "Cancel job";
    }

    // tasklets
    $(".jb-agg").textContent = s.aggregated ? `(${s.tasklet_count} tasklets, one row per vertex)` : "";
    $(".jb-rate-h").textContent = s.final ? "avg items/s" : "items/s";
    const rows = (s.rows || [])
      .map((r) => {
        const fill = r.fill === null || r.fill === undefined ? "" : `${(100 * r.fill).toFixed(0)}%`;
        const bp = r.bp ? `<span class="jb-bp" title="backpressure">${r.n > 1 ? r.bp : "●"}</span>` : "";
        return (
          `<tr class="jb-row" data-vertex="${esc(r.vertex)}" data-instance="${esc(r.instance)}" data-state="${esc(r.state)}">` +
          `<td class="jb-vertex" title="${esc(r.vertex)}">${cutName(r.vertex)}</td><td class="jb-opt2">${esc(r.instance)}</td><td class="jb-opt">${esc(r.worker)}</td>` +
          `<td class="jb-state jb-opt2" data-snap="${esc(r.snap ?? "")}">${r.snap && r.state === "snapshot" ? "" : esc(r.state)}${snapWord(r)}</td>` +
          `<td class="jb-n jb-in jb-opt2" data-value="${r.in}">${grouped(r.in)}</td>` +
          `<td class="jb-n jb-out" data-value="${r.out}">${grouped(r.out)}</td>` +
          `<td class="jb-n jb-rate" data-value="${r.rate}">${compact(r.rate)}</td>` +
          `<td class="jb-n jb-busy jb-opt"><span class="jb-busybar" style="width:${Math.min(r.busy, 100) * 0.4}px"></span>${r.busy.toFixed(0)}</td>` +
          `<td class="jb-n jb-slow jb-opt">${grouped(r.slow)}</td><td class="jb-bpcell jb-opt2" data-value="${r.bp ? 1 : 0}">${bp}</td>` +
          `<td class="jb-n jb-fill" data-value="${r.fill ?? ""}" style="color:${r.fill ? fillColor(r.fill) : "inherit"}">${fill}</td></tr>`
        );
      })
      .join("");
    $(".jb-rows").innerHTML = rows;

    // CPU plot
    $(".jb-cpu-box").innerHTML = cpuPlot(s.cpu, 360, 170) + (s.cpu_note ? `<div class="jb-cpu-note">${esc(s.cpu_note)}</div>` : "");
    $(".jb-cpu-now").textContent = s.final
      ? ""
      : `process ${compact(s.process_cpu)}%` + (s.system_cpu === null || s.system_cpu === undefined ? "" : ` · machine ${s.system_cpu.toFixed(0)}% of all cores`);

    // workers
    $(".jb-workers").innerHTML = (s.workers || [])
      .map(
        (w) =>
          `<tr class="jb-worker${w.alive ? "" : " jb-ended"}" data-worker="${esc(w.name)}" title="${w.alive ? "" : "thread ended"}"><td>${esc(w.name)}</td>` +
          `<td class="jb-opt2">${esc(w.kind)}</td><td class="jb-n jb-opt2">${w.tasklets}</td><td class="jb-n jb-wcpu">${w.cpu.toFixed(1)}</td>` +
          `<td class="jb-n jb-iter jb-opt" data-value="${w.iter_rate}">${compact(w.iter_rate)}</td><td class="jb-n">${compact(w.idle_rate)}</td></tr>`,
      )
      .join("");

    // partitions a source reads (Kafka): how far behind the input it is
    const parts = s.partitions || [];
    $(".jb-partitions-panel").hidden = parts.length === 0;
    const lagTotal = s.totals?.lag;
    $(".jb-lag-total").textContent = lagTotal === null || lagTotal === undefined ? "" : `(lag ${grouped(lagTotal)} records)`;
    $(".jb-lag-total").dataset.value = String(lagTotal ?? "");
    const opt = (n) => (n === null || n === undefined ? "" : grouped(n));
    $(".jb-partitions").innerHTML =
      parts
        .map(
          (p) =>
            `<tr class="jb-partition" data-partition="${esc(p.partition)}" data-lag="${p.lag ?? ""}" data-offset="${p.offset ?? ""}">` +
            `<td class="jb-vertex" title="${esc(p.vertex)} #${p.instance}">${cutName(p.vertex)} #${p.instance}</td><td>${esc(p.partition)}</td>` +
            `<td class="jb-n jb-opt2">${opt(p.offset)}</td><td class="jb-n jb-opt2">${opt(p.high)}</td><td class="jb-n jb-lag">${opt(p.lag)}</td>` +
            `<td class="jb-n">${p.rate === null || p.rate === undefined ? "" : compact(p.rate)}</td>` +
            `<td class="jb-opt" title="${p.watermark ?? ""}">${p.watermark === null || p.watermark === undefined ? "" : esc(new Date(p.watermark).toISOString().slice(11, 23))}</td></tr>`,
        )
        .join("") +
      (s.partitions_hidden ? `<tr><td class="jb-dim" colspan="7">… ${s.partitions_hidden} more partitions</td></tr>` : "");

    // queues: one row per DAG edge, "source → destination #ordinal", with the barrier in flight
    const queues = s.queues || [];
    const legend = $(".jb-barrier-legend");
    legend.hidden = !s.barrier_in_flight;
    legend.dataset.snapshot = String(s.barrier_in_flight ?? 0);
    legend.innerHTML = s.barrier_in_flight
      ? `<b>Barrier ‖ #${s.barrier_in_flight}</b> in flight: <i>in queue</i> emitted upstream, not yet taken; ` +
        `<i>held</i> arrived on that input, which exactly-once stops draining until the barrier is on every input; ` +
        `<i>passed</i> state saved, barrier forwarded.`
      : "";
    $(".jb-queues").innerHTML =
      queues
        .map(
          (q) =>
            `<div class="jb-queue" data-edge="${esc(q.edge)}" data-source="${esc(q.source)}" data-destination="${esc(q.destination)}" data-ordinal="${q.ordinal}" data-fill="${q.fill}" data-barrier="${esc(q.barrier?.state ?? "")}">` +
            `<span class="jb-qname" title="edge ${esc(q.edge)}: queues from ${esc(q.source)} into ${esc(q.destination)}, inbound ordinal ${q.ordinal}">` +
            `${cutName(q.source)} <span class="jb-arrow">→</span> ${cutName(q.destination)} <span class="jb-dim">#${q.ordinal}</span></span>${sparkline(q.hist, 160, 22)}` +
            barrierMark(q) +
            `<span class="jb-qbar"><span style="width:${(100 * q.fill).toFixed(1)}%;background:${fillColor(q.fill)}"></span></span>` +
            `<span class="jb-qpct">${(100 * q.fill).toFixed(0)}%</span><span class="jb-dim jb-qsize">${grouped(q.size)}/${grouped(q.capacity)}</span></div>`,
        )
        .join("") + (s.queues_hidden ? `<div class="jb-dim jb-queues-hidden" data-hidden="${s.queues_hidden}">… ${s.queues_hidden} more edges</div>` : "") +
      (queues.length ? "" : `<div class="jb-dim">no queues</div>`);
  }

  function updateIdle() {
    for (const c of controls) c.show(model.get(c.trait));
  }
  function updateControlError() {
    $(".jb-control-error").textContent = model.get("control_error") || "";
    $(".jb-control-note").textContent = model.get("control_note") || "";
  }

  // -- tabs: the overview (tables, plots) or the timeline
  const timelinePane = $(".jb-timeline-pane");
  let timelineView = null;
  function showTab(name) {
    root.dataset.tab = name;
    for (const b of root.querySelectorAll(".jb-tab")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
    $(".jb-body").hidden = name !== "overview";
    timelinePane.hidden = name !== "timeline";
    if (name === "timeline" && timelineView === null) {
      timelineView = createTimelineView(timelinePane, (sub) => model.send({ cmd: "timeline", sub }));
      updateTimeline();
    }
    model.send({ cmd: "tab", tab: name });
  }
  function updateTimeline() {
    const raw = model.get("timeline");
    const t = (typeof raw === "string" ? JSON.parse(raw || "{}") : raw) || {};
    const error = $(".jb-timeline-error");
    error.hidden = !t.error;
    error.textContent = t.error || "";
    if (timelineView !== null && t.lanes) timelineView.update(t);
  }
  for (const b of root.querySelectorAll(".jb-tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
  root.dataset.tab = "overview";

  model.on("change:state", update);
  model.on("change:timeline", updateTimeline);
  model.on("change:min_idle_us", updateIdle);
  model.on("change:max_idle_us", updateIdle);
  model.on("change:control_error", updateControlError);
  model.on("change:control_note", updateControlError);
  model.on("msg:custom", onCustom);
  update();
  updateControlError();
  return () => {
    clearTimeout(busyTimer);
    model.off("msg:custom", onCustom);
    model.off("change:state", update);
    model.off("change:timeline", updateTimeline);
    timelineView?.destroy();
    model.off("change:min_idle_us", updateIdle);
    model.off("change:max_idle_us", updateIdle);
    model.off("change:control_error", updateControlError);
    model.off("change:control_note", updateControlError);
  };
}

export default { render };
