// jetbench timeline view: a lane per worker, every tasklet call and park (jetbench.notebook.timeline).
//
// Shared by the Timeline widget (timeline.js) and the dashboard's Timeline tab (dashboard.js): the
// package puts this file in front of each of them (no imports: anywidget loads one module text).
// `createTimelineView(host, send)` draws into `host` and returns {update(state), destroy()};
// `send(content)` carries the view's requests to the kernel: {cmd: "view", t0, t1} (µs from the
// job's start) after a zoom or pan, {cmd: "fit"}, {cmd: "follow"}. The kernel answers with a new
// state holding that window's events, or per-lane aggregates ("buckets") when there are too many
// to send one by one. Between a request and its answer the view redraws what it has, rescaled.

const TL_NS = "http://www.w3.org/2000/svg";
const TL_PALETTE = ["#3b8fd9", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
  "#bcbd22", "#7f7f7f", "#1f4e79", "#b35806"];
const TL_LABEL_W = 150; // the lanes' names
const TL_LANE_H = 40;
const TL_AXIS_H = 24;
const TL_RIGHT = 10;
const TL_BAR_PAD = 7; // a call bar's margin above and below in its lane
const TL_PARK_LABEL_PX = 46; // a park at least this wide says how long it slept
const TL_FLAG = { progress: 1, slow: 2, done: 4, snapshot: 8 };

function tlEsc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function tlColor(v) {
  return v < 0 ? "#999999" : TL_PALETTE[v % TL_PALETTE.length];
}

// a duration in µs as people read it: 480 µs, 1.25 ms, 2.10 s
function tlDur(us) {
  const a = Math.abs(us);
  if (a >= 1e6) return (us / 1e6).toFixed(a >= 1e7 ? 1 : 2) + " s";
  if (a >= 1e3) return (us / 1e3).toFixed(a >= 1e4 ? 1 : 2) + " ms";
  if (a >= 10) return us.toFixed(0) + " µs";
  return us.toFixed(1) + " µs";
}

// a tick step of 1, 2 or 5 times a power of ten, about span / n
function tlStep(span, n) {
  const raw = span / n;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

function tlTick(t, step) {
  const unit = step >= 1e5 ? 1e6 : step >= 100 ? 1e3 : 1;
  const name = unit === 1e6 ? "s" : unit === 1e3 ? "ms" : "µs";
  const decimals = Math.max(0, -Math.floor(Math.log10(step / unit) + 1e-9));
  return (t / unit).toFixed(decimals) + " " + name;
}

function createTimelineView(host, send) {
  const root = document.createElement("div");
  root.className = "jetbench-timeline-view";
  root.innerHTML = `
    <div class="jt-head">
      <span class="jt-title">timeline · <b class="jt-job"></b></span>
      <span class="jt-status"></span>
      <span class="jt-window" title="the time shown, from the job's start"></span>
      <span class="jt-mode"></span>
      <span class="jt-buttons">
        <button type="button" class="jt-zoom-in" title="zoom in (or the mouse wheel over the lanes)">+</button>
        <button type="button" class="jt-zoom-out" title="zoom out">−</button>
        <button type="button" class="jt-fit" title="show the whole recording (or a double click)">Fit</button>
        <button type="button" class="jt-follow" title="follow the running job: the newest seconds">Live</button>
      </span>
    </div>
    <div class="jt-legend"></div>
    <div class="jt-note" hidden></div>
    <div class="jt-plot"><svg class="jt-svg" xmlns="${TL_NS}"></svg><div class="jt-tip" hidden></div></div>
    <div class="jt-empty" hidden></div>`;
  host.appendChild(root);
  const $ = (sel) => root.querySelector(sel);
  const svg = $(".jt-svg");
  const tip = $(".jt-tip");
  const plot = $(".jt-plot");

  const uid = "jt" + Math.random().toString(36).slice(2, 9); // ids of this view's SVG defs
  let state = null;
  let view = null; // [t0, t1] µs: what is drawn now (may run ahead of the state while a request is out)
  let pending = null; // the window last asked for, until a state with it arrives
  let timer = null;

  function width() {
    return Math.max(400, Math.floor(plot.clientWidth || host.clientWidth || 900));
  }

  function request(t0, t1) {
    view = [t0, t1];
    pending = [t0, t1];
    draw();
    clearTimeout(timer);
    timer = setTimeout(() => send({ cmd: "view", t0, t1 }), 120);
  }

  function zoom(factor, at) {
    if (!view) return;
    const [t0, t1] = view;
    const span = Math.max(1, (t1 - t0) * factor);
    const center = at ?? (t0 + t1) / 2;
    const left = center - ((center - t0) / (t1 - t0)) * span;
    request(left, left + span);
  }

  $(".jt-zoom-in").addEventListener("click", () => zoom(0.5));
  $(".jt-zoom-out").addEventListener("click", () => zoom(2));
  function ask(cmd) {
    clearTimeout(timer); // a zoom or pan not yet sent is overtaken
    pending = null;
    send({ cmd });
  }
  $(".jt-fit").addEventListener("click", () => ask("fit"));
  $(".jt-follow").addEventListener("click", () => ask("follow"));

  function timeAt(clientX) {
    const box = svg.getBoundingClientRect();
    const w = width();
    const [t0, t1] = view;
    return t0 + ((clientX - box.left - TL_LABEL_W) / (w - TL_LABEL_W - TL_RIGHT)) * (t1 - t0);
  }

  svg.addEventListener("wheel", (ev) => {
    if (!view) return;
    ev.preventDefault();
    zoom(ev.deltaY > 0 ? 1.25 : 0.8, timeAt(ev.clientX));
  }, { passive: false });
  svg.addEventListener("dblclick", () => ask("fit"));

  let drag = null;
  svg.addEventListener("pointerdown", (ev) => {
    if (!view || ev.button !== 0) return;
    drag = { x: ev.clientX, view: view.slice(), moved: false };
    svg.setPointerCapture(ev.pointerId);
  });
  svg.addEventListener("pointermove", (ev) => {
    if (drag) {
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        const [t0, t1] = drag.view;
        const shift = (dx / (width() - TL_LABEL_W - TL_RIGHT)) * (t1 - t0);
        view = [t0 - shift, t1 - shift];
        draw();
      }
      return;
    }
    hover(ev);
  });
  svg.addEventListener("pointerup", (ev) => {
    if (!drag) return;
    const moved = drag.moved;
    drag = null;
    svg.releasePointerCapture(ev.pointerId);
    if (moved) request(view[0], view[1]);
  });
  svg.addEventListener("pointerleave", () => {
    tip.hidden = true;
  });

  // -- hover: the details of the call, park, aggregate or barrier under the pointer
  function describe(el) {
    const lane = state.lanes[Number(el.dataset.lane)];
    const i = Number(el.dataset.i);
    const kind = el.dataset.kind;
    const head = `<div class="jt-tip-lane">${tlEsc(lane.worker)}</div>`;
    if (kind === "call") {
      const [s, d, v, flags, t, nin, nout, st] = lane.calls[i];
      const progress = flags & TL_FLAG.progress;
      return head +
        `<b>${tlEsc(state.tasklets[t])}</b> <span class="jt-dim">vertex ${tlEsc(state.vertices[v])}</span><br>` +
        `${tlDur(s)} → ${tlDur(s + d)} · <b>${tlDur(d)}</b>` +
        (flags & TL_FLAG.slow ? ` <span class="jt-slow-word">slow (&gt; ${tlDur(state.slow_us)})</span>` : "") + "<br>" +
        `${progress ? "made progress" : "<b>no progress</b>"}${flags & TL_FLAG.done ? " · finished" : ""} · in ${nin} · out ${nout}<br>` +
        `state after: ${tlEsc(state.states[st])}`;
    }
    if (kind === "park") {
      const [s, d, asked, woken, round, strategy, inCall] = lane.parks[i];
      if (inCall) {
        return head +
          `<b>waits for room</b> <span class="jt-dim">(${tlEsc(state.strategies[strategy])})</span> at ${tlDur(s)}<br>` +
          `inside the call: its blocking outbox found the queue downstream full<br>` +
          `asked ${tlDur(asked)} · slept <b>${tlDur(d)}</b> · wait round ${round}`;
      }
      return head +
        `<b>park</b> <span class="jt-dim">(${tlEsc(state.strategies[strategy])})</span> at ${tlDur(s)}<br>` +
        `asked ${tlDur(asked)} · slept <b>${tlDur(d)}</b>${woken ? " · <b>woken</b> early by new work" : ""}<br>` +
        (round ? `idle round ${round}` : "paced after a productive round");
    }
    if (kind === "bucket") {
      const [b, calls, progress, busy, noprog, parked, parks, slow, top] = lane.buckets[i];
      const t0 = state.window[0] + b * lane.bucket_us;
      const pct = (x) => ((100 * x) / lane.bucket_us).toFixed(0) + "%";
      return head +
        `<b>${tlDur(t0)} → ${tlDur(t0 + lane.bucket_us)}</b> <span class="jt-dim">(aggregated: zoom in for each call)</span><br>` +
        `${calls} calls, ${progress} with progress · busy ${pct(busy)} (${pct(noprog)} without progress)<br>` +
        `${parks} parks · parked ${pct(parked)}${slow ? ` · <span class="jt-slow-word">${slow} slow</span>` : ""}` +
        (top >= 0 ? `<br>busiest: ${tlEsc(state.vertices[top])}` : "");
    }
    if (kind === "barrier") {
      const [t, tasklet] = lane.marks[i];
      return head + `<b>‖ snapshot barrier</b> sent on by ${tlEsc(state.tasklets[tasklet])} at ${tlDur(t)}`;
    }
    return "";
  }

  function hover(ev) {
    const el = ev.target.closest?.("[data-kind]");
    if (!el || !state) {
      tip.hidden = true;
      return;
    }
    tip.innerHTML = describe(el);
    tip.hidden = false;
    tip.dataset.kind = el.dataset.kind;
    const box = plot.getBoundingClientRect();
    const x = ev.clientX - box.left + 14;
    const below = ev.clientY - box.top + 14;
    const th = tip.offsetHeight;
    // below the pointer if it fits in the lanes, else above it (over the legend if need be)
    const y = below + th <= box.height ? below : Math.max(-70, ev.clientY - box.top - th - 10);
    tip.style.left = Math.max(0, Math.min(x, box.width - tip.offsetWidth - 4)) + "px";
    tip.style.top = y + "px";
  }

  // -- drawing
  function draw() {
    if (!state) return;
    const lanes = state.lanes || [];
    const w = width();
    drawnWidth = w;
    const h = lanes.length * TL_LANE_H + TL_AXIS_H;
    const [t0, t1] = view;
    const span = t1 - t0 || 1;
    const plotW = w - TL_LABEL_W - TL_RIGHT;
    const x = (t) => TL_LABEL_W + ((t - t0) / span) * plotW;
    const clipX = (px) => Math.max(TL_LABEL_W - 1, Math.min(w - TL_RIGHT + 1, px));
    let out = `<defs><pattern id="${uid}-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
      `<rect width="6" height="6" fill="var(--jt-park-bg)"/><line x1="0" y1="0" x2="0" y2="6" stroke="var(--jt-park-line)" stroke-width="2"/></pattern>` +
      `<clipPath id="${uid}-clip"><rect x="${TL_LABEL_W}" y="0" width="${plotW}" height="${h}"/></clipPath></defs>`;
    // axis grid
    const step = tlStep(span, Math.max(3, Math.floor(plotW / 110)));
    let grid = "";
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const gx = x(t).toFixed(1);
      grid += `<line class="jt-grid" x1="${gx}" x2="${gx}" y1="0" y2="${h - TL_AXIS_H}"/>` +
        `<text class="jt-axis" x="${gx}" y="${h - 8}" text-anchor="middle">${tlTick(t, step)}</text>`;
    }
    out += grid;
    let calls = 0;
    let parks = 0;
    let buckets = 0;
    let marks = 0;
    let body = "";
    lanes.forEach((lane, li) => {
      const top = li * TL_LANE_H;
      const y = top + TL_BAR_PAD;
      const bh = TL_LANE_H - 2 * TL_BAR_PAD;
      body += `<rect class="jt-lane-bg${li % 2 ? " jt-odd" : ""}" x="${TL_LABEL_W}" y="${top}" width="${plotW}" height="${TL_LANE_H}"/>`;
      if (lane.mode === "buckets") {
        const bw = (lane.bucket_us / span) * plotW;
        lane.buckets.forEach((row, i) => {
          const [b, , , busy, noprog, parked, , slow, top2] = row;
          const bx = x(state.window[0] + b * lane.bucket_us);
          if (bx + bw < TL_LABEL_W || bx > w) return;
          const wpx = Math.max(bw, 0.8).toFixed(2);
          const full = lane.bucket_us;
          const attrs = `data-kind="bucket" data-lane="${li}" data-i="${i}"`;
          if (parked > 0) {
            body += `<rect class="jt-park-agg" ${attrs} x="${bx.toFixed(2)}" y="${y}" width="${wpx}" height="${bh}" fill-opacity="${(0.15 + 0.6 * Math.min(1, parked / full)).toFixed(2)}"/>`;
          }
          const hp = bh * Math.min(1, (busy - noprog) / full);
          const hn = bh * Math.min(1, noprog / full);
          const color = tlColor(top2);
          if (hp > 0) body += `<rect class="jt-bucket" ${attrs} x="${bx.toFixed(2)}" y="${(y + bh - hp).toFixed(2)}" width="${wpx}" height="${Math.max(hp, 1).toFixed(2)}" fill="${color}"/>`;
          if (hn > 0) body += `<rect class="jt-bucket jt-noprog" ${attrs} x="${bx.toFixed(2)}" y="${(y + bh - hp - hn).toFixed(2)}" width="${wpx}" height="${Math.max(hn, 1).toFixed(2)}" fill="${color}"/>`;
          if (slow) body += `<rect class="jt-slow" ${attrs} x="${bx.toFixed(2)}" y="${y - 4}" width="${Math.max(bw, 2).toFixed(2)}" height="3"/>`;
          buckets++;
        });
      } else {
        const inCall = [];
        lane.parks.forEach((p, i) => {
          if (p[6]) {
            inCall.push(i); // drawn over the call that holds it, below
            return;
          }
          const [s, d] = p;
          const px0 = clipX(x(s));
          const px1 = clipX(x(s + d));
          if (px1 <= TL_LABEL_W || px0 >= w - TL_RIGHT) return;
          const pw = Math.max(px1 - px0, 0.5);
          body += `<rect class="jt-park${p[3] ? " jt-woken" : ""}" fill="url(#${uid}-hatch)" data-kind="park" data-lane="${li}" data-i="${i}" x="${px0.toFixed(2)}" y="${y + 3}" width="${pw.toFixed(2)}" height="${bh - 6}"/>`;
          if (pw >= TL_PARK_LABEL_PX) {
            body += `<text class="jt-park-label" data-kind="park" data-lane="${li}" data-i="${i}" x="${(px0 + pw / 2).toFixed(1)}" y="${(y + bh / 2 + 4).toFixed(1)}" text-anchor="middle">${tlDur(d)}</text>`;
          }
          parks++;
        });
        lane.calls.forEach((c, i) => {
          const [s, d, v, flags] = c;
          const px0 = clipX(x(s));
          const px1 = clipX(x(s + d));
          if (px1 <= TL_LABEL_W || px0 >= w - TL_RIGHT) return;
          const cw = Math.max(px1 - px0, 1);
          const cls = `jt-call${flags & TL_FLAG.progress ? "" : " jt-noprog"}${flags & TL_FLAG.snapshot ? " jt-snap" : ""}`;
          const attrs = `data-kind="call" data-lane="${li}" data-i="${i}"`;
          body += `<rect class="${cls}" ${attrs} data-vertex="${tlEsc(state.vertices[v])}" x="${px0.toFixed(2)}" y="${y}" width="${cw.toFixed(2)}" height="${bh}" fill="${tlColor(v)}"/>`;
          if (flags & TL_FLAG.slow) {
            body += `<rect class="jt-slow" ${attrs} x="${px0.toFixed(2)}" y="${y - 5}" width="${Math.max(cw, 3).toFixed(2)}" height="4"/>`;
          }
          calls++;
        });
        for (const i of inCall) {
          const [s, d] = lane.parks[i];
          const px0 = clipX(x(s));
          const px1 = clipX(x(s + d));
          if (px1 <= TL_LABEL_W || px0 >= w - TL_RIGHT) continue;
          body += `<rect class="jt-park jt-in-call" fill="url(#${uid}-hatch)" data-kind="park" data-lane="${li}" data-i="${i}" x="${px0.toFixed(2)}" y="${y + bh / 2}" width="${Math.max(px1 - px0, 0.5).toFixed(2)}" height="${bh / 2}"/>`;
          parks++;
        }
      }
      (lane.marks || []).forEach((m, i) => {
        const mx = x(m[0]);
        if (mx < TL_LABEL_W || mx > w - TL_RIGHT) return;
        body += `<line class="jt-barrier" x1="${mx.toFixed(1)}" x2="${mx.toFixed(1)}" y1="${top + 1}" y2="${top + TL_LANE_H - 1}"/>` +
          `<text class="jt-barrier-mark" data-kind="barrier" data-lane="${li}" data-i="${i}" x="${(mx + 2).toFixed(1)}" y="${top + 11}">‖</text>`;
        marks++;
      });
    });
    out += `<g clip-path="url(#${uid}-clip)">${body}</g>`;
    // lane names
    lanes.forEach((lane, li) => {
      const top = li * TL_LANE_H;
      const name = lane.worker.replace(/^jetbench\.[^.]*\./, "");
      const dropped = lane.dropped ? ` · ${lane.dropped.toLocaleString("en-US")} dropped` : "";
      out += `<g class="jt-lane-label"><title>${tlEsc(lane.worker)}</title>` +
        `<text class="jt-lane-name" x="6" y="${top + 17}">${tlEsc(name)}</text>` +
        `<text class="jt-lane-kind" x="6" y="${top + 31}">${tlEsc(lane.kind)} · ${lane.count.toLocaleString("en-US")} events${dropped}</text></g>`;
    });
    svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    svg.setAttribute("width", String(w));
    svg.setAttribute("height", String(h));
    svg.innerHTML = out;
    root.dataset.calls = String(calls);
    root.dataset.parks = String(parks);
    root.dataset.buckets = String(buckets);
    root.dataset.marks = String(marks);
    root.dataset.view = `${t0.toFixed(1)},${t1.toFixed(1)}`;
    $(".jt-window").textContent = `${tlDur(t0)} → ${tlDur(t1)} (${tlDur(t1 - t0)})`;
  }

  function legend() {
    const keys = (state.vertices || [])
      .map((v, i) => `<span class="jt-key" data-vertex="${tlEsc(v)}"><i style="background:${tlColor(i)}"></i>${tlEsc(v)}</span>`)
      .join("");
    return keys +
      `<span class="jt-key jt-key-noprog"><i class="jt-faded"></i>no progress</span>` +
      `<span class="jt-key"><i class="jt-key-slow"></i>slow (&gt; ${tlDur(state.slow_us)})</span>` +
      `<span class="jt-key"><i class="jt-key-park"></i>park</span>` +
      `<span class="jt-key"><i class="jt-key-barrier"></i>‖ barrier sent on</span>`;
  }

  function update(next) {
    if (!next || !next.lanes) return;
    state = next;
    const same = (a, b) => a && b && Math.abs(a[0] - b[0]) < 1 && Math.abs(a[1] - b[1]) < 1;
    if (pending && same(pending, state.window)) pending = null;
    if (!pending && !drag) view = state.window.slice();
    root.dataset.live = state.live ? "true" : "false";
    root.dataset.follow = state.follow ? "true" : "false";
    root.dataset.window = state.window.join(",");
    const modes = new Set(state.lanes.map((l) => l.mode));
    root.dataset.mode = [...modes].join(",");
    $(".jt-job").textContent = state.job ?? "";
    const status = $(".jt-status");
    status.textContent = state.live ? (state.follow ? "live" : "live · paused on a window") : state.status;
    status.dataset.status = state.live ? "live" : "still";
    $(".jt-mode").textContent = modes.has("buckets")
      ? `zoomed out: ${[...state.lanes].filter((l) => l.mode === "buckets").length} lane(s) aggregated per ${tlDur(state.lanes.find((l) => l.mode === "buckets").bucket_us)}`
      : "each call and park";
    $(".jt-follow").hidden = !state.live;
    $(".jt-follow").disabled = !!state.follow;
    $(".jt-legend").innerHTML = legend();
    const note = $(".jt-note");
    note.hidden = !state.note;
    note.textContent = state.note || "";
    const empty = $(".jt-empty");
    const nothing = state.lanes.length === 0;
    empty.hidden = !nothing;
    empty.textContent = nothing ? "No worker has recorded anything yet." : "";
    draw();
  }

  let resize = null;
  let drawnWidth = 0;
  if (typeof ResizeObserver !== "undefined") {
    // redraw when the cell's width changes (a tab shown, a panel resized), not on every layout
    resize = new ResizeObserver(() => {
      if (width() !== drawnWidth) draw();
    });
    resize.observe(plot);
  }

  return {
    update,
    destroy() {
      clearTimeout(timer);
      resize?.disconnect();
      root.remove();
    },
  };
}
