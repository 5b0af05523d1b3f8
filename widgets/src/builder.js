// jetbench visual DAG builder: the front end of jetbench.notebook.DagBuilder (anywidget ESM).
//
// No dependencies: DOM + SVG. The kernel owns the document (`doc` trait: vertices, edges) and
// its validation (`problems` trait); this module draws them and sends commands back
// ({cmd: "add_vertex" | "connect" | "update_vertex" | "update_edge" | "move" | "delete" |
// "undo" | "redo" | "layout" | "run"}). Node drags and the view (pan, zoom) are local until the
// pointer is released.

const NS = "http://www.w3.org/2000/svg";
const W = 170; // node width (the kernel's layout uses the same)
const PORT_GAP = 16;
const PORT_Y0 = 32; // first port below the title
const CAT_COLORS = {
  source: "#2563eb", transform: "#059669", aggregate: "#d97706", window: "#7c3aed", sink: "#dc2626", custom: "#6b7280",
};
const ROUTINGS = ["unicast", "partitioned", "broadcast", "isolated", "all-to-one"];

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function svg(tag, attrs = {}, parent = null) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function div(cls, html) {
  const e = document.createElement("div");
  if (cls) e.className = cls;
  if (html !== undefined) e.innerHTML = html;
  return e;
}

function render({ model, el: host }) {
  const root = div("jetbench-builder");
  root.tabIndex = 0;
  host.appendChild(root);
  root.innerHTML = `
    <div class="jbb-toolbar">
      <button class="jbb-undo" title="Undo (Ctrl+Z)">↶ Undo</button>
      <button class="jbb-redo" title="Redo (Ctrl+Y)">↷ Redo</button>
      <button class="jbb-delete" title="Delete the selection (Del)">✕ Delete</button>
      <button class="jbb-layout" title="Lay the DAG out left to right">⇶ Layout</button>
      <button class="jbb-fit" title="Zoom to fit">⤢ Fit</button>
      <button class="jbb-run" title="Run the DAG on an ExecutionService">▶ Run</button>
      <span class="jbb-summary"></span>
      <span class="jbb-message" role="status"></span>
    </div>
    <div class="jbb-main">
      <div class="jbb-palette"></div>
      <div class="jbb-canvas-wrap"><svg class="jbb-canvas" xmlns="${NS}"></svg></div>
      <div class="jbb-panel"></div>
    </div>
    <div class="jbb-runbar"></div>`;
  const $ = (s) => root.querySelector(s);
  const canvas = $(".jbb-canvas");
  const defs = svg("defs", {}, canvas);
  defs.innerHTML = `<marker id="jbb-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker>`;
  const gEdges = svg("g", { class: "jbb-edges" }, canvas);
  const gNodes = svg("g", { class: "jbb-nodes" }, canvas);
  const temp = svg("path", { class: "jbb-temp", d: "" }, canvas);

  let selection = null; // {type: "vertex"|"edge", id}
  let view = { x: 0, y: 0, w: 800, h: 400 };
  let fitted = false;
  let local = {}; // vertex id -> {x, y} while dragging

  const doc = () => model.get("doc") || { vertices: [], edges: [] };
  const kinds = () => Object.fromEntries((model.get("palette_kinds") || []).map((k) => [k.id, k]));
  const problems = () => model.get("problems") || { vertices: {}, edges: {}, dag: [] };
  const send = (msg) => model.send(msg);

  function flash(text) {
    const m = $(".jbb-message");
    m.textContent = text || "";
    m.dataset.shown = text ? "true" : "false";
  }

  // ------------------------------------------------------------------------------- geometry

  function ports(v, d) {
    const k = kinds()[v.kind];
    const inEdges = d.edges.filter((e) => e.target === v.id);
    const outEdges = d.edges.filter((e) => e.source === v.id);
    const maxIn = Math.max(-1, ...inEdges.map((e) => e.target_ordinal));
    const maxOut = Math.max(-1, ...outEdges.map((e) => e.source_ordinal));
    const custom = v.kind === "custom";
    const ins = k ? (k.inputs ? maxIn + 2 : 0) : custom ? maxIn + 2 : maxIn + 1;
    const outs = k ? (k.outputs ? maxOut + 2 : 0) : custom ? maxOut + 2 : maxOut + 1;
    return { ins, outs };
  }

  function height(p) {
    return Math.max(60, PORT_Y0 + 8 + PORT_GAP * Math.max(p.ins, p.outs));
  }

  function pos(v) {
    return local[v.id] || { x: v.x, y: v.y };
  }

  function portXY(v, side, ordinal) {
    const p = pos(v);
    return { x: p.x + (side === "in" ? 0 : W), y: p.y + PORT_Y0 + PORT_GAP * ordinal };
  }

  function edgePath(a, b) {
    const dx = Math.max(40, Math.abs(b.x - a.x) / 2);
    return `M${a.x},${a.y} C${a.x + dx},${a.y} ${b.x - dx},${b.y} ${b.x},${b.y}`;
  }

  function toCanvas(clientX, clientY) {
    const r = canvas.getBoundingClientRect();
    return { x: view.x + ((clientX - r.left) / r.width) * view.w, y: view.y + ((clientY - r.top) / r.height) * view.h };
  }

  function setView(v) {
    view = v;
    canvas.setAttribute("viewBox", `${v.x} ${v.y} ${v.w} ${v.h}`);
  }

  function fit() {
    const d = doc();
    const r = canvas.getBoundingClientRect();
    const aspect = r.width > 0 && r.height > 0 ? r.width / r.height : 2;
    if (!d.vertices.length) {
      setView({ x: 0, y: 0, w: 400 * aspect, h: 400 });
      return;
    }
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const v of d.vertices) {
      const p = pos(v);
      x0 = Math.min(x0, p.x); y0 = Math.min(y0, p.y);
      x1 = Math.max(x1, p.x + W); y1 = Math.max(y1, p.y + height(ports(v, d)));
    }
    const pad = 30;
    let w = x1 - x0 + 2 * pad, h = y1 - y0 + 2 * pad;
    w = Math.max(w, 360); h = Math.max(h, 200);
    if (w / h > aspect) h = w / aspect; else w = h * aspect;
    setView({ x: (x0 + x1) / 2 - w / 2, y: (y0 + y1) / 2 - h / 2, w, h });
  }

  // ------------------------------------------------------------------------------- drawing

  function badge(parent, list, x, y) {
    if (!list || !list.length) return;
    const level = list.some((p) => p.level === "error") ? "error" : "warning";
    const g = svg("g", { class: `jbb-badge jbb-badge-${level}`, transform: `translate(${x},${y})`, "data-count": list.length }, parent);
    svg("circle", { r: 9 }, g);
    const t = svg("text", { "text-anchor": "middle", dy: "4" }, g);
    t.textContent = list.length > 1 ? String(list.length) : "!";
    svg("title", {}, g).textContent = list.map((p) => p.message).join("\n");
  }

  function draw() {
    const t0 = performance.now();
    const d = doc();
    const ks = kinds();
    const probs = problems();
    const byId = Object.fromEntries(d.vertices.map((v) => [v.id, v]));
    if (selection && !(selection.type === "vertex" ? byId[selection.id] : d.edges.some((e) => e.id === selection.id))) {
      selection = null;
    }
    gEdges.replaceChildren();
    gNodes.replaceChildren();
    for (const e of d.edges) {
      const s = byId[e.source], t = byId[e.target];
      if (!s || !t) continue;
      const a = portXY(s, "out", e.source_ordinal), b = portXY(t, "in", e.target_ordinal);
      const list = (probs.edges || {})[e.id];
      const g = svg("g", {
        class: "jbb-edge" + (selection?.id === e.id ? " jbb-selected" : "") + (list?.length ? " jbb-has-problem" : ""),
        "data-id": e.id, "data-source": s.name, "data-target": t.name, "data-routing": e.routing,
      }, gEdges);
      const path = edgePath(a, b);
      svg("path", { class: "jbb-edge-hit", d: path }, g);
      svg("path", { class: "jbb-edge-line", d: path, "marker-end": "url(#jbb-arrow)" }, g);
      const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2;
      const label = e.routing === "unicast" ? "" : e.routing;
      if (label) {
        const t2 = svg("text", { class: "jbb-edge-label", x: mx, y: my - 6, "text-anchor": "middle" }, g);
        t2.textContent = label;
      }
      badge(g, list, mx, my + 8);
      g.addEventListener("pointerdown", (ev) => {
        ev.stopPropagation();
        select({ type: "edge", id: e.id });
      });
    }
    for (const v of d.vertices) {
      const k = ks[v.kind];
      const p = pos(v);
      const pc = ports(v, d);
      const h = height(pc);
      const list = (probs.vertices || {})[v.id];
      const cat = k ? k.category : "custom";
      const g = svg("g", {
        class: "jbb-node" + (selection?.id === v.id ? " jbb-selected" : "") + (list?.length ? " jbb-has-problem" : ""),
        transform: `translate(${p.x},${p.y})`, "data-id": v.id, "data-name": v.name, "data-kind": v.kind,
      }, gNodes);
      svg("rect", { class: "jbb-node-body", width: W, height: h, rx: 7 }, g);
      svg("rect", { class: "jbb-node-stripe", width: 6, height: h, rx: 3, fill: CAT_COLORS[cat] || "#6b7280" }, g);
      const title = svg("text", { class: "jbb-node-name", x: 14, y: 18 }, g);
      title.textContent = v.name.length > 20 ? v.name.slice(0, 19) + "…" : v.name;
      const sub = svg("text", { class: "jbb-node-kind", x: 14, y: h - 9 }, g);
      sub.textContent = `${k ? k.label : v.kind} · ×${v.parallelism ?? "default"}`;
      for (let i = 0; i < pc.ins; i++) {
        const c = svg("circle", { class: "jbb-port jbb-in", cx: 0, cy: PORT_Y0 + PORT_GAP * i, r: 6, "data-ordinal": i, "data-vertex": v.id }, g);
        svg("title", {}, c).textContent = `input ${i}`;
        const t = svg("text", { class: "jbb-port-label", x: 10, y: PORT_Y0 + 4 + PORT_GAP * i }, g);
        t.textContent = String(i);
      }
      for (let i = 0; i < pc.outs; i++) {
        const c = svg("circle", { class: "jbb-port jbb-out", cx: W, cy: PORT_Y0 + PORT_GAP * i, r: 6, "data-ordinal": i, "data-vertex": v.id }, g);
        svg("title", {}, c).textContent = `output ${i}`;
        const t = svg("text", { class: "jbb-port-label", x: W - 10, y: PORT_Y0 + 4 + PORT_GAP * i, "text-anchor": "end" }, g);
        t.textContent = String(i);
      }
      badge(g, list, W - 4, 2);
      g.addEventListener("pointerdown", (ev) => onNodeDown(ev, v));
    }
    const nErr = countProblems(probs, "error"), nWarn = countProblems(probs, "warning");
    const summary = $(".jbb-summary");
    summary.textContent = `${d.vertices.length} vertices · ${d.edges.length} edges · ` +
      (nErr || nWarn ? `${nErr} error${nErr === 1 ? "" : "s"}${nWarn ? `, ${nWarn} warning${nWarn === 1 ? "" : "s"}` : ""}` : "valid");
    summary.dataset.errors = String(nErr);
    $(".jbb-run").disabled = nErr > 0 || !d.vertices.length;
    $(".jbb-undo").disabled = !model.get("can_undo");
    $(".jbb-redo").disabled = !model.get("can_redo");
    $(".jbb-delete").disabled = !selection;
    root.dataset.vertices = String(d.vertices.length);
    root.dataset.edges = String(d.edges.length);
    root.dataset.drawMs = (performance.now() - t0).toFixed(1); // the last redraw's cost (tests read it)
  }

  function countProblems(probs, level) {
    let n = (probs.dag || []).filter((p) => p.level === level).length;
    for (const group of [probs.vertices || {}, probs.edges || {}]) {
      for (const list of Object.values(group)) n += list.filter((p) => p.level === level).length;
    }
    return n;
  }

  // ------------------------------------------------------------------------------- palette

  function drawPalette() {
    const pal = $(".jbb-palette");
    pal.replaceChildren();
    const groups = {};
    for (const k of model.get("palette_kinds") || []) (groups[k.category] ||= []).push(k);
    for (const [cat, list] of Object.entries(groups)) {
      pal.appendChild(div("jbb-pal-cat", esc(cat)));
      for (const k of list) {
        const item = div("jbb-pal-item", esc(k.label));
        item.dataset.kind = k.id;
        item.title = k.description || k.label;
        item.style.borderLeftColor = CAT_COLORS[cat] || "#6b7280";
        item.addEventListener("pointerdown", (ev) => onPaletteDown(ev, k));
        pal.appendChild(item);
      }
    }
  }

  function onPaletteDown(ev, k) {
    ev.preventDefault();
    const ghost = div("jbb-ghost", esc(k.label));
    document.body.appendChild(ghost);
    const move = (e) => {
      ghost.style.left = `${e.clientX + 6}px`;
      ghost.style.top = `${e.clientY + 6}px`;
    };
    move(ev);
    const up = (e) => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      ghost.remove();
      const r = canvas.getBoundingClientRect();
      if (e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom) {
        const p = toCanvas(e.clientX, e.clientY);
        send({ cmd: "add_vertex", kind: k.id, x: Math.round(p.x - W / 2), y: Math.round(p.y - 20) });
      }
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  }

  // ------------------------------------------------------------------------------- canvas input

  function wouldCycle(source, target) {
    if (source === target) return true;
    const out = {};
    for (const e of doc().edges) (out[e.source] ||= []).push(e.target);
    const seen = new Set();
    const stack = [target];
    while (stack.length) {
      const v = stack.pop();
      if (v === source) return true;
      if (!seen.has(v)) { seen.add(v); stack.push(...(out[v] || [])); }
    }
    return false;
  }

  function onNodeDown(ev, v) {
    ev.stopPropagation();
    root.focus({ preventScroll: true });
    const target = ev.target;
    if (target.classList?.contains("jbb-out")) return startConnect(ev, v, Number(target.dataset.ordinal));
    select({ type: "vertex", id: v.id });
    const start = toCanvas(ev.clientX, ev.clientY);
    const p0 = { x: v.x, y: v.y };
    let moved = false;
    canvas.setPointerCapture(ev.pointerId);
    const move = (e) => {
      const p = toCanvas(e.clientX, e.clientY);
      const dx = p.x - start.x, dy = p.y - start.y;
      if (!moved && Math.hypot(dx, dy) < 3) return;
      moved = true;
      local[v.id] = { x: Math.round(p0.x + dx), y: Math.round(p0.y + dy) };
      draw();
    };
    const up = () => {
      canvas.removeEventListener("pointermove", move);
      canvas.removeEventListener("pointerup", up);
      if (moved) send({ cmd: "move", positions: { [v.id]: [local[v.id].x, local[v.id].y] } });
      else draw();
    };
    canvas.addEventListener("pointermove", move);
    canvas.addEventListener("pointerup", up);
  }

  function startConnect(ev, v, ordinal) {
    const a = portXY(v, "out", ordinal);
    canvas.setPointerCapture(ev.pointerId);
    const move = (e) => temp.setAttribute("d", edgePath(a, toCanvas(e.clientX, e.clientY)));
    const up = (e) => {
      canvas.removeEventListener("pointermove", move);
      canvas.removeEventListener("pointerup", up);
      temp.setAttribute("d", "");
      const hit = root.getRootNode().elementFromPoint
        ? root.getRootNode().elementFromPoint(e.clientX, e.clientY)
        : document.elementFromPoint(e.clientX, e.clientY);
      const node = hit?.closest?.(".jbb-node");
      if (!node) return;
      const targetId = node.dataset.id;
      if (targetId === v.id || wouldCycle(v.id, targetId)) {
        flash(`refused: ${v.name} → ${node.dataset.name} would create a cycle`);
        return;
      }
      const msg = { cmd: "connect", source: v.id, target: targetId, source_ordinal: ordinal };
      if (hit.classList.contains("jbb-in")) msg.target_ordinal = Number(hit.dataset.ordinal);
      send(msg);
    };
    canvas.addEventListener("pointermove", move);
    canvas.addEventListener("pointerup", up);
  }

  canvas.addEventListener("pointerdown", (ev) => {
    root.focus({ preventScroll: true });
    select(null);
    const start = { x: ev.clientX, y: ev.clientY };
    const v0 = { ...view };
    const r = canvas.getBoundingClientRect();
    canvas.setPointerCapture(ev.pointerId);
    const move = (e) => setView({ ...v0, x: v0.x - ((e.clientX - start.x) / r.width) * v0.w, y: v0.y - ((e.clientY - start.y) / r.height) * v0.h });
    const up = () => {
      canvas.removeEventListener("pointermove", move);
      canvas.removeEventListener("pointerup", up);
    };
    canvas.addEventListener("pointermove", move);
    canvas.addEventListener("pointerup", up);
  });

  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const p = toCanvas(ev.clientX, ev.clientY);
    const f = Math.exp(Math.sign(ev.deltaY) * 0.12);
    setView({ x: p.x - (p.x - view.x) * f, y: p.y - (p.y - view.y) * f, w: view.w * f, h: view.h * f });
  }, { passive: false });

  root.addEventListener("keydown", (ev) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName);
    if (typing) { ev.stopPropagation(); return; }
    const ctrl = ev.ctrlKey || ev.metaKey;
    let handled = true;
    if ((ev.key === "Delete" || ev.key === "Backspace") && selection) deleteSelection();
    else if (ctrl && ev.key.toLowerCase() === "z" && !ev.shiftKey) send({ cmd: "undo" });
    else if (ctrl && (ev.key.toLowerCase() === "y" || (ev.key.toLowerCase() === "z" && ev.shiftKey))) send({ cmd: "redo" });
    else handled = false;
    if (handled) { ev.preventDefault(); ev.stopPropagation(); }
  });

  function deleteSelection() {
    if (!selection) return;
    send({ cmd: "delete", ids: [selection.id] });
    selection = null;
  }

  $(".jbb-undo").addEventListener("click", () => send({ cmd: "undo" }));
  $(".jbb-redo").addEventListener("click", () => send({ cmd: "redo" }));
  $(".jbb-delete").addEventListener("click", deleteSelection);
  $(".jbb-layout").addEventListener("click", () => { fitted = false; send({ cmd: "layout" }); });
  $(".jbb-fit").addEventListener("click", fit);
  $(".jbb-run").addEventListener("click", () => send({ cmd: "run" }));

  // ------------------------------------------------------------------------------- side panel

  function select(sel) {
    selection = sel;
    draw();
    drawPanel();
  }

  function field(label, input, help) {
    const row = div("jbb-field");
    const l = document.createElement("label");
    l.textContent = label;
    row.appendChild(l);
    row.appendChild(input);
    if (help) row.appendChild(div("jbb-help", esc(help)));
    return row;
  }

  function input(type, value, name) {
    const i = document.createElement(type === "textarea" ? "textarea" : "input");
    if (type !== "textarea") i.type = type;
    if (type === "checkbox") i.checked = !!value;
    else i.value = value ?? "";
    i.dataset.field = name;
    if (type === "textarea") { i.rows = Math.min(8, Math.max(1, String(value ?? "").split("\n").length)); i.spellcheck = false; }
    return i;
  }

  function selectInput(options, value, name) {
    const s = document.createElement("select");
    s.dataset.field = name;
    for (const o of options) {
      const opt = document.createElement("option");
      opt.value = o; opt.textContent = o; opt.selected = o === value;
      s.appendChild(opt);
    }
    return s;
  }

  function problemList(list) {
    const box = div("jbb-problems");
    for (const p of list || []) {
      const item = div(`jbb-problem jbb-problem-${p.level}`, esc(p.message));
      box.appendChild(item);
    }
    return box;
  }

  function onCommit(inputEl, commit) {
    inputEl.addEventListener("change", () => commit(inputEl));
    if (inputEl.tagName === "INPUT" && inputEl.type !== "checkbox") {
      inputEl.addEventListener("keydown", (e) => { if (e.key === "Enter") inputEl.blur(); });
    }
  }

  function parse(param, el) {
    if (param.type === "bool") return el.checked;
    const raw = el.value.trim();
    if (param.type === "int") return raw === "" ? (param.optional ? null : raw) : Number.isInteger(Number(raw)) ? Number(raw) : raw;
    if (param.type === "float") return raw === "" ? raw : Number.isFinite(Number(raw)) ? Number(raw) : raw;
    return el.value;
  }

  function drawPanel() {
    const panel = $(".jbb-panel");
    const focused = panel.contains(document.activeElement) ? document.activeElement.dataset.field : null;
    panel.replaceChildren();
    const d = doc();
    const probs = problems();
    if (!selection) {
      panel.appendChild(div("jbb-panel-title", "DAG"));
      panel.appendChild(div("jbb-help", "Drag a kind from the palette onto the canvas; drag from an output port (right) to an input port (left) to connect. Click a vertex or edge to edit it."));
      const all = [...(probs.dag || [])];
      const names = Object.fromEntries(d.vertices.map((v) => [v.id, v.name]));
      for (const [id, list] of Object.entries(probs.vertices || {})) for (const p of list) all.push({ ...p, message: `${names[id]}: ${p.message}` });
      for (const [id, list] of Object.entries(probs.edges || {})) {
        const e = d.edges.find((x) => x.id === id);
        for (const p of list) all.push({ ...p, message: `${names[e?.source]} → ${names[e?.target]}: ${p.message}` });
      }
      panel.appendChild(problemList(all));
      return;
    }
    if (selection.type === "vertex") {
      const v = d.vertices.find((x) => x.id === selection.id);
      const k = kinds()[v.kind];
      panel.appendChild(div("jbb-panel-title", `${esc(k ? k.label : v.kind)} vertex`));
      panel.dataset.selected = v.id;
      const name = input("text", v.name, "name");
      onCommit(name, (el) => send({ cmd: "update_vertex", id: v.id, changes: { name: el.value } }));
      panel.appendChild(field("name", name));
      const lp = input("number", v.parallelism ?? "", "parallelism");
      lp.placeholder = "default";
      onCommit(lp, (el) => send({ cmd: "update_vertex", id: v.id, changes: { parallelism: el.value.trim() === "" ? null : Number(el.value) } }));
      panel.appendChild(field("local parallelism", lp));
      for (const param of k ? k.params : []) {
        const value = v.params[param.name];
        let el;
        if (param.type === "choice") el = selectInput(param.choices, value, `param:${param.name}`);
        else if (param.type === "bool") el = input("checkbox", value, `param:${param.name}`);
        else if (param.type === "code" || param.type === "expr") el = input("textarea", value, `param:${param.name}`);
        else el = input(param.type === "int" || param.type === "float" ? "number" : "text", value, `param:${param.name}`);
        if (param.type === "code") el.classList.add("jbb-code");
        onCommit(el, (x) => send({ cmd: "update_vertex", id: v.id, changes: { params: { [param.name]: parse(param, x) } } }));
        const args = param.type === "code" ? ` (${param.args.join(", ")})` : "";
        panel.appendChild(field(param.name + args, el, param.help));
      }
      if (v.kind === "custom") panel.appendChild(div("jbb-help", esc(v.params.label || "")));
      panel.appendChild(problemList((probs.vertices || {})[v.id]));
    } else {
      const e = d.edges.find((x) => x.id === selection.id);
      const names = Object.fromEntries(d.vertices.map((v) => [v.id, v.name]));
      panel.appendChild(div("jbb-panel-title", `edge ${esc(names[e.source])}[${e.source_ordinal}] → ${esc(names[e.target])}[${e.target_ordinal}]`));
      panel.dataset.selected = e.id;
      const upd = (changes) => send({ cmd: "update_edge", id: e.id, changes });
      const routing = selectInput(ROUTINGS, e.routing, "routing");
      onCommit(routing, (el) => upd({ routing: el.value }));
      panel.appendChild(field("routing", routing));
      if (e.routing === "partitioned") {
        const key = input("textarea", e.key, "key");
        key.classList.add("jbb-code");
        onCommit(key, (el) => upd({ key: el.value }));
        panel.appendChild(field("key (x)", key, "partition key: an expression in x, or a function body"));
      }
      for (const [label, f] of [["queue size", "queue_size"], ["priority", "priority"], ["source ordinal", "source_ordinal"], ["target ordinal", "target_ordinal"]]) {
        const el = input("number", e[f], f);
        onCommit(el, (x) => upd({ [f]: Number(x.value) }));
        panel.appendChild(field(label, el));
      }
      panel.appendChild(problemList((probs.edges || {})[e.id]));
    }
    if (focused) panel.querySelector(`[data-field="${CSS.escape(focused)}"]`)?.focus();
  }

  // ------------------------------------------------------------------------------- run state

  function drawRun() {
    const s = model.get("run_state") || {};
    const bar = $(".jbb-runbar");
    if (!s.status) { bar.replaceChildren(); bar.dataset.status = ""; return; }
    bar.dataset.status = s.status;
    let html = `<span class="jbb-run-status" data-status="${esc(s.status)}">${esc(s.status)}</span> job <b>${esc(s.job)}</b>`;
    if (s.error) html += ` <span class="jbb-run-error">${esc(s.error)}</span>`;
    if (s.result !== null && s.result !== undefined) {
      html += ` · result${s.count !== undefined ? ` (${s.count} items)` : ""}: <code class="jbb-result">${esc(s.result)}</code>`;
    }
    bar.innerHTML = html;
  }

  // ------------------------------------------------------------------------------- wiring

  function onDoc() {
    local = {};
    draw();
    drawPanel();
    if (!fitted) { fit(); fitted = true; }
  }

  canvas.style.height = `${model.get("height") || 460}px`;
  drawPalette();
  setView(view);
  onDoc();
  drawRun();
  requestAnimationFrame(() => { fit(); });
  model.on("change:doc", onDoc);
  model.on("change:problems", () => { draw(); drawPanel(); });
  model.on("change:can_undo", draw);
  model.on("change:can_redo", draw);
  model.on("change:palette_kinds", drawPalette);
  model.on("change:message_seq", () => flash(model.get("message")));
  model.on("change:run_state", drawRun);
  model.on("change:height", () => { canvas.style.height = `${model.get("height") || 460}px`; fit(); });
}

export default { render };
