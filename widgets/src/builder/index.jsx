// jetbench visual DAG builder: the front end of jetbench.notebook.DagBuilder (anywidget ESM),
// drawn with React Flow (@xyflow/react) and laid out with elkjs; esbuild bundles it with its
// dependencies into jetbench/_static/builder.js (scripts/build_widgets.sh).
//
// The kernel owns the document: the `doc` trait (vertices, edges), its validation (`problems`),
// `palette_kinds`, `can_undo` / `can_redo`, `message` / `message_seq`, `run_state` and `height`.
// This module draws them and sends commands back: {cmd: "add_vertex" | "connect" |
// "update_vertex" | "update_edge" | "move" | "delete" | "undo" | "redo" | "layout" | "run" |
// "export_code" | "close_export"}; the exported code comes back in the `code_export` trait.
// Node drags, selection and the viewport (pan, zoom) are local; a drag is sent as one `move`
// when the node is dropped, and an auto-layout computed here by ELK as one `move` of every
// vertex, so the kernel keeps every position (and one undo step per gesture).
//
// The page's data-* attributes are for the browser tests: data-name / data-kind on nodes,
// data-ordinal on ports, data-source / data-target / data-routing on edge labels, and on the
// root data-vertices, data-edges, data-render-ms (first render until every node is measured),
// data-update-ms (a new document from the kernel until it is on the page), data-doc-seq and
// data-layout-ms (the last ELK layout's own time).

import React, { createContext, memo, useCallback, useContext, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import {
  Background, BaseEdge, Controls, EdgeLabelRenderer, Handle, MiniMap, Position, ReactFlow, ReactFlowProvider,
  applyEdgeChanges, applyNodeChanges, getBezierPath, useNodesInitialized, useReactFlow, useUpdateNodeInternals,
} from "@xyflow/react";
import {
  EMPTY_DOC, EMPTY_PROBLEMS, NODE_W, PORT_GAP, PORT_Y0, catColor, countProblems, kindsById, levelOf, nodeHeight, ordinalOf,
  toEdges, toNodes, wouldCycle,
} from "./graph.js";
import { elkLayout } from "./layout.js";
import { SidePanel } from "./panel.jsx";

let instances = 0; // one React Flow id per view: SVG marker ids must not clash between builders
const FIT_MIN_ZOOM = 0.1; // React Flow's own minZoom below
const FIT_MAX_ZOOM = 1.1;
const FIT_PAD = 20; // pixels around the fitted DAG
const PANEL_AUTO_WIDTH = 1400; // a builder at least this wide opens with its side panel (narrower: the canvas gets the room)
const CLICK_SLOP = 5; // pixels a palette press may move and still be a click

// The free spot for a new node nearest (x, y): rings of candidates around it, the first that
// overlaps no node of the document.
function freeSpot(doc, x, y) {
  const clear = (cx, cy) => !doc.vertices.some((v) => Math.abs(v.x - cx) < NODE_W + 12 && Math.abs(v.y - cy) < 76);
  for (let ring = 0; ring < 12; ring++) {
    const n = Math.max(1, ring * 8);
    for (let i = 0; i < n; i++) {
      const a = (2 * Math.PI * i) / n;
      const cx = Math.round(x + Math.cos(a) * ring * 60), cy = Math.round(y + Math.sin(a) * ring * 45);
      if (clear(cx, cy)) return [cx, cy];
    }
  }
  return [Math.round(x), Math.round(y)];
}

function useTrait(model, name) {
  const subscribe = useCallback((cb) => {
    model.on(`change:${name}`, cb);
    return () => model.off(`change:${name}`, cb);
  }, [model, name]);
  return useSyncExternalStore(subscribe, () => model.get(name));
}

const Ctx = createContext(null);

function Badge({ list }) {
  if (!list || !list.length) return null;
  const level = levelOf(list);
  return (
    <span className={`jbb-badge jbb-badge-${level}`} data-count={list.length} title={list.map((p) => p.message).join("\n")}>
      {list.length > 1 ? list.length : "!"}
    </span>
  );
}

function summaryOf(v, kind) {
  // the first code / expression / text parameter, as a one-line hint on the node
  for (const p of kind?.params || []) {
    const value = (v.params || {})[p.name];
    if (["code", "expr", "str", "text"].includes(p.type) && typeof value === "string" && value.trim()) {
      const line = value.trim().split("\n")[0];
      return line.length > 24 ? line.slice(0, 23) + "…" : line;
    }
  }
  return "";
}

const range = (n) => Array.from({ length: n }, (_, i) => i);

const VertexNode = memo(function VertexNode({ id, data, selected }) {
  const { v, kind, ports, problems } = data;
  const updateNodeInternals = useUpdateNodeInternals();
  const first = useRef(true);
  useEffect(() => {
    if (first.current) { first.current = false; return; }
    updateNodeInternals(id); // a port came or went: React Flow re-reads the handles
  }, [id, ports.ins, ports.outs, updateNodeInternals]);
  const height = nodeHeight(ports);
  const hint = summaryOf(v, kind);
  const level = levelOf(problems);
  const cls = "jbb-node" + (selected ? " jbb-selected" : "") + (problems.length ? ` jbb-has-problem jbb-level-${level}` : "") +
    (problems.some((p) => p.run) ? " jbb-run-failed" : "");
  return (
    <div className={cls} data-id={id} data-name={v.name} data-kind={v.kind}
      style={{ width: NODE_W, height, "--jbb-cat": catColor(kind ? kind.category : "custom") }}>
      <div className="jbb-node-name" title={v.name}>{v.name}</div>
      <div className="jbb-node-kind" title={`${kind ? kind.label : v.kind}, local parallelism ${v.parallelism ?? "default"}`}>
        {kind ? kind.label : v.kind}{v.parallelism !== null && v.parallelism !== undefined ? ` · ×${v.parallelism}` : ""}
      </div>
      {hint ? <div className="jbb-node-hint" title={hint}>{hint}</div> : null}
      {range(ports.ins).map((i) => (
        <React.Fragment key={`in-${i}`}>
          <Handle type="target" position={Position.Left} id={`in-${i}`} className="jbb-port jbb-in" data-ordinal={i}
            title={`input ${i}`} style={{ top: PORT_Y0 + PORT_GAP * i }} />
          <span className="jbb-port-label jbb-port-label-in" style={{ top: PORT_Y0 + PORT_GAP * i }}>{i}</span>
        </React.Fragment>
      ))}
      {range(ports.outs).map((i) => (
        <React.Fragment key={`out-${i}`}>
          <Handle type="source" position={Position.Right} id={`out-${i}`} className="jbb-port jbb-out" data-ordinal={i}
            title={`output ${i}`} style={{ top: PORT_Y0 + PORT_GAP * i }} />
          <span className="jbb-port-label jbb-port-label-out" style={{ top: PORT_Y0 + PORT_GAP * i }}>{i}</span>
        </React.Fragment>
      ))}
      <Badge list={problems} />
    </div>
  );
});

function RoutedEdge({ id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, markerEnd, data, selected }) {
  const ctx = useContext(Ctx);
  const [path, lx, ly] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  const e = data.e;
  const routing = e.routing || "unicast";
  const text = routing === "unicast" ? "" : routing;
  const empty = !text && !data.problems.length;
  return (
    <>
      <BaseEdge id={id} path={path} markerEnd={markerEnd} interactionWidth={16} />
      <EdgeLabelRenderer>
        <div className={"jbb-edge-label nodrag nopan" + (selected ? " jbb-selected" : "") + (empty ? " jbb-empty" : "")}
          data-edge={id} data-source={data.sourceName} data-target={data.targetName} data-routing={routing}
          style={{ transform: `translate(${lx}px, ${ly}px) translate(-50%, -100%) translateY(-3px)` }}
          onClick={() => ctx.selectEdge(id)}>
          {text ? <span className="jbb-edge-routing">{text}</span> : null}
          <Badge list={data.problems} />
        </div>
      </EdgeLabelRenderer>
    </>
  );
}

const nodeTypes = { vertex: VertexNode };
const edgeTypes = { routed: RoutedEdge };

function RunBar({ state }) {
  const s = state || {};
  if (!s.status) return <div className="jbb-runbar" data-status="" />;
  return (
    <div className="jbb-runbar" data-status={s.status}>
      <span className="jbb-run-status" data-status={s.status}>{s.status}</span> job <b>{s.job}</b>
      {s.error ? <> <span className="jbb-run-error">{s.error}</span></> : null}
      {s.result !== null && s.result !== undefined ? (
        <> · result{s.count !== undefined ? ` (${s.count} items)` : ""}: <code className="jbb-result">{s.result}</code></>
      ) : null}
    </div>
  );
}

// The palette: one category open at a time, so that every category's header (the sinks' too)
// and the open one's kinds fit the canvas' height. Drag a kind onto the canvas, or click it to
// add it at the centre of the view.
function Palette({ kinds, onDown }) {
  const groups = {};
  for (const k of kinds) (groups[k.category] ||= []).push(k);
  const [open, setOpen] = useState(null);
  const shown = open ?? Object.keys(groups)[0];
  return (
    <div className="jbb-palette" data-open={shown || ""}>
      {Object.entries(groups).map(([cat, list]) => (
        <React.Fragment key={cat}>
          <div className={"jbb-pal-cat" + (cat === shown ? " jbb-open" : "")} data-category={cat} role="button"
            title={cat === shown ? "" : `show the ${cat} kinds`} onClick={() => setOpen(cat)}>
            <span className="jbb-pal-arrow">{cat === shown ? "▾" : "▸"}</span>{cat}<span className="jbb-pal-count">{list.length}</span>
          </div>
          {cat !== shown ? null : list.map((k) => (
            <div key={k.id} className="jbb-pal-item" data-kind={k.id} title={`${k.description || k.label}\n(drag onto the canvas, or click to add it in the middle)`}
              style={{ borderLeftColor: catColor(cat) }} onPointerDown={(ev) => onDown(ev, k)}>
              {k.label}
            </div>
          ))}
        </React.Fragment>
      ))}
    </div>
  );
}

// Copy text to the clipboard: the async Clipboard API where the page may use it (JupyterLab on
// localhost or https), else a selected hidden textarea and the copy command. True if copied.
async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch (err) {
    console.warn("jetbench builder: the Clipboard API refused, copying by selection", err);
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch { ok = false; }
  area.remove();
  return ok;
}

// Export code: what DagBuilder.to_code() gives for the canvas as it is (the kernel refreshes it
// after every edit while this is open), with a button to copy it into a cell.
function ExportPanel({ exported, send }) {
  const [copied, setCopied] = useState("");
  const code = exported.code || "";
  useEffect(() => { setCopied(""); }, [code]);
  const copy = async () => setCopied((await copyText(code)) ? "copied: paste it into a cell" : "could not copy: select the code and copy it");
  const custom = exported.custom || [];
  return (
    <div className="jbb-export" data-error={exported.error ? "true" : "false"}>
      <div className="jbb-export-head">
        <b>Python code that rebuilds this DAG</b>
        <span className="jbb-dim"> (<code>builder.to_code()</code>; the code reads the notebook's names{custom.length ? <>, and <code>custom_suppliers = builder.custom_suppliers</code> for {custom.join(", ")}</> : null})</span>
        <span className="jbb-export-actions">
          <button className="jbb-copy" title="Copy the code to the clipboard" disabled={!code} onClick={copy}>Copy</button>
          <button className="jbb-export-close" title="Close" onClick={() => send({ cmd: "close_export" })}>✕</button>
          <span className="jbb-copied" role="status">{copied}</span>
        </span>
      </div>
      {exported.note ? <div className="jbb-export-note">{exported.note}</div> : null}
      {exported.error ? <div className="jbb-export-error">{exported.error}</div> : <pre className="jbb-code">{code}</pre>}
    </div>
  );
}

// JupyterLab's theme: <body data-jp-theme-light="false"> in a dark one (React Flow has a dark mode).
function useJupyterDark() {
  const read = () => document.body?.dataset?.jpThemeLight === "false";
  const [dark, setDark] = useState(read);
  useEffect(() => {
    const observer = new MutationObserver(() => setDark(read()));
    observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] });
    return () => observer.disconnect();
  }, []);
  return dark;
}

function Builder({ model, t0, stats }) {
  const rawDoc = useTrait(model, "doc");
  const rawProblems = useTrait(model, "problems");
  const paletteKinds = useTrait(model, "palette_kinds");
  const canUndo = useTrait(model, "can_undo");
  const canRedo = useTrait(model, "can_redo");
  const messageSeq = useTrait(model, "message_seq");
  const runState = useTrait(model, "run_state");
  const height = useTrait(model, "height") || 460;
  const doc = rawDoc && Array.isArray(rawDoc.vertices) ? rawDoc : EMPTY_DOC;
  const checked = rawProblems && rawProblems.vertices ? rawProblems : EMPTY_PROBLEMS;
  // the last run failed in a vertex (the JobError names it): its error joins that vertex's problems
  const failedIn = runState && runState.status === "failed" ? runState.vertex : null;
  const probs = useMemo(() => {
    if (!failedIn) return checked;
    const run = { target: "vertex", id: failedIn, level: "error", run: true, message: `the run failed here: ${runState.error || "error"}` };
    return { ...checked, vertices: { ...checked.vertices, [failedIn]: [...(checked.vertices[failedIn] || []), run] } };
  }, [checked, failedIn, runState]);
  const kinds = useMemo(() => kindsById(paletteKinds), [paletteKinds]);
  const rf = useReactFlow();
  const dark = useJupyterDark();
  const rootRef = useRef(null);
  const flowRef = useRef(null);
  const docRef = useRef(doc);
  docRef.current = doc;
  const [nodes, setNodes] = useState(() => toNodes(doc, kinds, probs, []));
  const [edges, setEdges] = useState(() => toEdges(doc, probs, []));
  const [flash, setFlash] = useState("");
  const [laying, setLaying] = useState(false);
  // the side panel: open when a vertex or edge is selected, or by its button; a narrow builder
  // starts with it closed so that the canvas gets the room
  const [panelOpen, setPanelOpen] = useState(null);
  const exported = useTrait(model, "code_export") || {};
  const autoView = useRef(true); // the view is the fit (not panned or zoomed by the user): refit on resize
  const applied = useRef({ doc, kinds, probs });
  const fitAfterUpdate = useRef(false);
  const send = useCallback((msg) => model.send(msg), [model]);
  const names = useMemo(() => Object.fromEntries(doc.vertices.map((v) => [v.id, v.name])), [doc]);

  // kernel -> canvas: a new document, its problems or the palette rebuild the nodes and edges
  useEffect(() => {
    const a = applied.current;
    if (a.doc === doc && a.kinds === kinds && a.probs === probs) return;
    applied.current = { doc, kinds, probs };
    setNodes((prev) => toNodes(doc, kinds, probs, prev));
    setEdges((prev) => toEdges(doc, probs, prev));
  }, [doc, kinds, probs]);

  useEffect(() => { if (messageSeq) setFlash(model.get("message") || ""); }, [messageSeq, model]);

  // figures for the tests and the benchmark note
  const initialized = useNodesInitialized();
  useEffect(() => {
    const root = rootRef.current;
    if (!root) return;
    root.dataset.vertices = String(doc.vertices.length);
    root.dataset.edges = String(doc.edges.length);
    if ((initialized || !doc.vertices.length) && !root.dataset.renderMs && nodes.length === doc.vertices.length) {
      requestAnimationFrame(() => { root.dataset.renderMs = (performance.now() - t0).toFixed(1); });
    }
  }, [initialized, nodes, doc, t0]);
  useEffect(() => {
    const root = rootRef.current;
    if (!root || stats.docAt === null) return;
    const at = stats.docAt;
    stats.docAt = null;
    requestAnimationFrame(() => {
      root.dataset.updateMs = (performance.now() - at).toFixed(1);
      root.dataset.docSeq = String(++stats.seq);
    });
  }, [nodes, edges, stats]);

  // ------------------------------------------------------------------ canvas events

  const onNodesChange = useCallback((changes) => {
    const local = changes.filter((c) => c.type !== "remove" && c.type !== "add" && c.type !== "replace");
    if (local.length) setNodes((nds) => applyNodeChanges(local, nds));
  }, []);
  const onEdgesChange = useCallback((changes) => {
    const local = changes.filter((c) => c.type === "select");
    if (local.length) setEdges((eds) => applyEdgeChanges(local, eds));
  }, []);

  const onNodeDragStop = useCallback((_ev, _node, dragged) => {
    const byId = Object.fromEntries(docRef.current.vertices.map((v) => [v.id, v]));
    const positions = {};
    for (const n of dragged || []) {
      const v = byId[n.id];
      const x = Math.round(n.position.x), y = Math.round(n.position.y);
      if (v && (Math.round(v.x) !== x || Math.round(v.y) !== y)) positions[n.id] = [x, y];
    }
    if (Object.keys(positions).length) send({ cmd: "move", positions });
  }, [send]);

  const isValidConnection = useCallback((c) => !wouldCycle(docRef.current, c.source, c.target), []);

  const onConnect = useCallback((c) => {
    setFlash("");
    send({ cmd: "connect", source: c.source, target: c.target,
      source_ordinal: ordinalOf(c.sourceHandle), target_ordinal: ordinalOf(c.targetHandle) });
  }, [send]);

  // A drop that made no connection: refused (a cycle), or onto a node's body (its next free port).
  const onConnectEnd = useCallback((event, state) => {
    if (state.isValid || !state.fromNode) return;
    const from = state.fromNode.id;
    let other = state.toNode?.id;
    let onBody = false;
    if (!other) {
      const pt = event.changedTouches ? event.changedTouches[0] : event;
      const hit = pt && document.elementFromPoint(pt.clientX, pt.clientY);
      const el = hit?.closest?.(".react-flow__node");
      if (el && flowRef.current?.contains(el)) { other = el.dataset.id; onBody = true; }
    }
    if (!other) return;
    const fromInput = state.fromHandle?.type === "target";
    const ordinal = ordinalOf(state.fromHandle?.id);
    const source = fromInput ? other : from, target = fromInput ? from : other;
    const d = docRef.current;
    const nameOf = (id) => d.vertices.find((v) => v.id === id)?.name ?? id;
    if (wouldCycle(d, source, target)) {
      setFlash(`refused: ${nameOf(source)} → ${nameOf(target)} would create a cycle`);
    } else if (onBody) {
      setFlash("");
      send(fromInput ? { cmd: "connect", source, target, target_ordinal: ordinal } : { cmd: "connect", source, target, source_ordinal: ordinal });
    }
  }, [send]);

  const selectEdge = useCallback((id) => {
    setNodes((nds) => nds.map((n) => (n.selected ? { ...n, selected: false } : n)));
    setEdges((eds) => eds.map((e) => (e.selected !== (e.id === id) ? { ...e, selected: e.id === id } : e)));
  }, []);
  const ctx = useMemo(() => ({ selectEdge }), [selectEdge]);

  const selectedIds = useMemo(
    () => [...nodes.filter((n) => n.selected).map((n) => n.id), ...edges.filter((e) => e.selected).map((e) => e.id)],
    [nodes, edges],
  );
  const selected = useMemo(() => {
    const n = nodes.find((x) => x.selected);
    if (n) return { type: "vertex", id: n.id };
    const e = edges.find((x) => x.selected);
    return e ? { type: "edge", id: e.id } : null;
  }, [nodes, edges]);

  const deleteSelected = useCallback(() => {
    if (selectedIds.length) send({ cmd: "delete", ids: selectedIds });
  }, [selectedIds, send]);

  // Zoom to fit the whole DAG in the canvas as it is now (however narrow: the user zooms in to
  // read a big one), centred.
  const fit = useCallback(() => {
    const el = flowRef.current;
    const ns = rf.getNodes();
    if (!el || !ns.length || !el.clientWidth) return;
    const w = el.clientWidth, h = el.clientHeight;
    const b = rf.getNodesBounds(ns);
    const pad = FIT_PAD;
    const best = Math.min((w - 2 * pad) / Math.max(b.width, 1), (h - 2 * pad) / Math.max(b.height, 1), FIT_MAX_ZOOM);
    const zoom = Math.max(best, FIT_MIN_ZOOM);
    const x = (w - b.width * zoom) / 2 - b.x * zoom;
    const y = (h - b.height * zoom) / 2 - b.y * zoom;
    rf.setViewport({ x, y, zoom });
    autoView.current = true;
    if (rootRef.current) rootRef.current.dataset.fitZoom = zoom.toFixed(3);
  }, [rf]);

  // the first fit once every node is measured; again after a layout arrives from the kernel. A
  // builder that opens empty keeps React Flow's own view (1:1 at the origin): its first vertices
  // stay where they are dropped, and no fit moves them under the user's hand
  const fittedOnce = useRef(doc.vertices.length === 0);
  useEffect(() => {
    if (initialized && !fittedOnce.current && nodes.length) {
      fittedOnce.current = true;
      fit();
    } else if (initialized && fitAfterUpdate.current) {
      fitAfterUpdate.current = false;
      requestAnimationFrame(fit);
    }
  }, [initialized, nodes, fit]);

  // the canvas changed size (the side panel opened or closed, JupyterLab's side bars, the window):
  // refit unless the user has panned or zoomed since the last fit
  useEffect(() => {
    const el = flowRef.current;
    if (!el || typeof ResizeObserver === "undefined") return undefined;
    let last = [el.clientWidth, el.clientHeight], frame = 0;
    const observer = new ResizeObserver(() => {
      const now = [el.clientWidth, el.clientHeight];
      if (now[0] === last[0] && now[1] === last[1]) return;
      last = now;
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => { if (autoView.current && fittedOnce.current) fit(); });
    });
    observer.observe(el);
    return () => { observer.disconnect(); cancelAnimationFrame(frame); };
  }, [fit]);
  const onMoveStart = useCallback((event) => { if (event) autoView.current = false; }, []);

  // the side panel: closed at first in a builder narrower than PANEL_AUTO_WIDTH; selecting opens it
  useEffect(() => {
    if (panelOpen === null && rootRef.current) setPanelOpen(rootRef.current.clientWidth >= PANEL_AUTO_WIDTH);
  }, [panelOpen]);
  const selectedKey = selected ? `${selected.type}:${selected.id}` : "";
  useEffect(() => { if (selectedKey) setPanelOpen(true); }, [selectedKey]);

  const autoLayout = useCallback(async () => {
    const ns = rf.getNodes(), es = rf.getEdges();
    if (!ns.length) return;
    setLaying(true);
    try {
      const t = performance.now();
      const positions = await elkLayout(ns, es);
      if (rootRef.current) rootRef.current.dataset.layoutMs = (performance.now() - t).toFixed(1);
      const byId = Object.fromEntries(docRef.current.vertices.map((v) => [v.id, v]));
      const moved = Object.entries(positions).some(([id, [x, y]]) => !byId[id] || byId[id].x !== x || byId[id].y !== y);
      if (moved) {
        fitAfterUpdate.current = true;
        send({ cmd: "move", positions });
      } else {
        fit();
      }
    } catch (err) {
      console.warn("jetbench builder: ELK layout failed, using the kernel's layout", err);
      fitAfterUpdate.current = true;
      send({ cmd: "layout" });
    } finally {
      setLaying(false);
    }
  }, [rf, send, fit]);

  // ------------------------------------------------------------------ palette: drag a kind onto the canvas

  const onPaletteDown = useCallback((ev, k) => {
    if (ev.button !== 0) return;
    ev.preventDefault();
    const x0 = ev.clientX, y0 = ev.clientY;
    let dragging = false;
    const ghost = document.createElement("div");
    ghost.className = "jbb-ghost";
    ghost.textContent = k.label;
    const move = (e) => {
      if (!dragging && Math.hypot(e.clientX - x0, e.clientY - y0) < CLICK_SLOP) return;
      if (!dragging) { dragging = true; document.body.appendChild(ghost); }
      ghost.style.left = `${e.clientX + 6}px`;
      ghost.style.top = `${e.clientY + 6}px`;
    };
    const up = (e) => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      window.removeEventListener("pointercancel", up);
      ghost.remove();
      const r = flowRef.current?.getBoundingClientRect();
      if (e.type === "pointerup" && r && !dragging) {
        // a click: in the middle of what the canvas shows, on the nearest free spot
        const c = rf.screenToFlowPosition({ x: r.left + r.width / 2, y: r.top + r.height / 2 });
        const [x, y] = freeSpot(docRef.current, c.x - NODE_W / 2, c.y - 32);
        send({ cmd: "add_vertex", kind: k.id, x, y });
      } else if (e.type === "pointerup" && r && e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom) {
        const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
        send({ cmd: "add_vertex", kind: k.id, x: Math.round(p.x - NODE_W / 2), y: Math.round(p.y - 20) });
      }
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    window.addEventListener("pointercancel", up);
  }, [rf, send]);

  // ------------------------------------------------------------------ keyboard (JupyterLab must not see these keys)

  const onKeyDown = (ev) => {
    if (/^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName)) {
      ev.stopPropagation(); // typing in the side panel: no notebook shortcuts
      return;
    }
    const ctrl = ev.ctrlKey || ev.metaKey;
    const key = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    let handled = true;
    if ((key === "Delete" || key === "Backspace") && !ctrl) deleteSelected();
    else if (ctrl && key === "z" && !ev.shiftKey) send({ cmd: "undo" });
    else if (ctrl && (key === "y" || (key === "z" && ev.shiftKey))) send({ cmd: "redo" });
    else handled = false;
    if (handled) {
      ev.preventDefault();
      ev.stopPropagation();
    }
  };
  const onPointerDownCapture = (ev) => {
    if (!/^(INPUT|TEXTAREA|SELECT|BUTTON|OPTION)$/.test(ev.target.tagName)) rootRef.current?.focus({ preventScroll: true });
  };

  const nErr = countProblems(checked, "error"), nWarn = countProblems(checked, "warning");
  const summary = `${doc.vertices.length} vertices · ${doc.edges.length} edges · ` +
    (nErr || nWarn ? `${nErr} error${nErr === 1 ? "" : "s"}${nWarn ? `, ${nWarn} warning${nWarn === 1 ? "" : "s"}` : ""}` : "valid");
  const flowId = useMemo(() => `jbb-flow-${++instances}`, []);

  return (
    <Ctx.Provider value={ctx}>
      <div className={"jetbench-builder" + (dark ? " jbb-dark" : "")} ref={rootRef} tabIndex={0} onKeyDown={onKeyDown} onPointerDownCapture={onPointerDownCapture}>
        <div className="jbb-toolbar">
          <button className="jbb-undo" title="Undo (Ctrl+Z)" disabled={!canUndo} onClick={() => send({ cmd: "undo" })}>↶ Undo</button>
          <button className="jbb-redo" title="Redo (Ctrl+Shift+Z)" disabled={!canRedo} onClick={() => send({ cmd: "redo" })}>↷ Redo</button>
          <button className="jbb-delete" title="Delete the selection (Del)" disabled={!selectedIds.length} onClick={deleteSelected}>✕ Delete</button>
          <button className="jbb-layout" title="Lay the DAG out left to right (ELK layered)" disabled={laying || !doc.vertices.length} onClick={autoLayout}>⇶ Layout</button>
          <button className="jbb-fit" title="Zoom to fit" onClick={fit}>⤢ Fit</button>
          <button className={"jbb-panel-toggle" + (panelOpen ? " jbb-on" : "")} aria-pressed={!!panelOpen}
            title={panelOpen ? "Hide the side panel" : "Show the side panel (properties, problems, help)"}
            onClick={() => setPanelOpen(!panelOpen)}>◨ Panel</button>
          <button className={"jbb-export-code" + (exported.open ? " jbb-on" : "")} aria-pressed={!!exported.open}
            title="The Python code that rebuilds this DAG (DagBuilder.to_code()), to copy into a cell"
            disabled={!doc.vertices.length} onClick={() => send({ cmd: exported.open ? "close_export" : "export_code" })}>⟨/⟩ Export code</button>
          <button className="jbb-run" title="Run the DAG on an ExecutionService" disabled={nErr > 0 || !doc.vertices.length} onClick={() => send({ cmd: "run" })}>▶ Run</button>
          <span className="jbb-summary" data-errors={String(nErr)}>{summary}</span>
          <span className="jbb-message" role="status" data-shown={flash ? "true" : "false"}>{flash}</span>
        </div>
        <div className="jbb-main" style={{ height }}>
          <Palette kinds={paletteKinds || []} onDown={onPaletteDown} />
          <div className="jbb-canvas" ref={flowRef}>
            <ReactFlow
              id={flowId}
              colorMode={dark ? "dark" : "light"}
              nodes={nodes}
              edges={edges}
              nodeTypes={nodeTypes}
              edgeTypes={edgeTypes}
              onNodesChange={onNodesChange}
              onEdgesChange={onEdgesChange}
              onNodeDragStop={onNodeDragStop}
              onConnect={onConnect}
              onConnectEnd={onConnectEnd}
              isValidConnection={isValidConnection}
              deleteKeyCode={null}
              disableKeyboardA11y
              nodesFocusable={false}
              edgesFocusable={false}
              minZoom={0.1}
              maxZoom={2.5}
              onMoveStart={onMoveStart}
              connectionRadius={24}
            >
              <Background gap={16} size={1} />
              <Controls showInteractive={false} position="bottom-left" />
              {doc.vertices.length >= 12 ? <MiniMap position="top-right" pannable zoomable nodeStrokeWidth={3}
                nodeColor={(n) => catColor(n.data?.kind?.category)} style={{ width: 150, height: 100 }} /> : null}
            </ReactFlow>
          </div>
          {panelOpen ? <SidePanel doc={doc} kinds={kinds} probs={probs} selected={selected} send={send} /> : null}
        </div>
        {exported.open ? <ExportPanel exported={exported} send={send} /> : null}
        <RunBar state={runState} />
      </div>
    </Ctx.Provider>
  );
}

function render({ model, el }) {
  const t0 = performance.now();
  const stats = { docAt: null, seq: 0 };
  const onDoc = () => { stats.docAt ??= performance.now(); };
  model.on("change:doc", onDoc);
  model.on("change:problems", onDoc);
  const container = document.createElement("div");
  el.appendChild(container);
  const root = createRoot(container);
  root.render(
    <ReactFlowProvider>
      <Builder model={model} t0={t0} stats={stats} />
    </ReactFlowProvider>,
  );
  return () => {
    model.off("change:doc", onDoc);
    model.off("change:problems", onDoc);
    root.unmount();
    container.remove();
  };
}

export default { render };
