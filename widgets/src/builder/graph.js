// Pure helpers of the DAG builder front end: the kernel's document -> React Flow nodes and edges,
// port counts, the cycle check used at drop time, problem counts. No React, no DOM.

export const NODE_W = 150; // node width (the kernel's own layout uses the same: jetbench/notebook/builder/layout.py)
export const PORT_Y0 = 45; // first port's centre below the node's top
export const PORT_GAP = 18; // between ports
export const ROUTINGS = ["unicast", "partitioned", "broadcast", "isolated", "all-to-one"];
export const CAT_COLORS = {
  source: "#2563eb", transform: "#059669", aggregate: "#d97706", window: "#7c3aed", join: "#0891b2", sink: "#dc2626",
  custom: "#6b7280",
};
export const EMPTY_DOC = { vertices: [], edges: [] };
export const EMPTY_PROBLEMS = { vertices: {}, edges: {}, dag: [] };

// The most severe level in a problem list: "error", then "warning", then "info".
export function levelOf(problems) {
  if (problems.some((p) => p.level === "error")) return "error";
  return problems.some((p) => p.level === "warning") ? "warning" : "info";
}

export function catColor(category) {
  return CAT_COLORS[category] || CAT_COLORS.custom;
}

export function kindsById(paletteKinds) {
  const out = {};
  for (const k of paletteKinds || []) out[k.id] = k;
  return out;
}

// How many input / output ports each vertex shows: the ordinals its edges use, plus one free port
// to connect to when its kind takes inputs (outputs). A kind may say `inputs: true|false` or give
// a fixed count; an unknown kind (e.g. "custom") offers a free port on both sides.
export function portCounts(doc, kinds) {
  const maxIn = {}, maxOut = {};
  for (const e of doc.edges || []) {
    maxIn[e.target] = Math.max(maxIn[e.target] ?? -1, e.target_ordinal ?? 0);
    maxOut[e.source] = Math.max(maxOut[e.source] ?? -1, e.source_ordinal ?? 0);
  }
  const count = (flag, max) => {
    const used = max + 1;
    if (typeof flag === "number") return Math.max(flag, used);
    if (flag === undefined || flag === null) return used + 1;
    return flag ? used + 1 : used;
  };
  const out = {};
  for (const v of doc.vertices || []) {
    const k = kinds[v.kind];
    out[v.id] = {
      ins: count(k ? k.inputs : undefined, maxIn[v.id] ?? -1),
      outs: count(k ? k.outputs : undefined, maxOut[v.id] ?? -1),
    };
  }
  return out;
}

export function nodeHeight(ports) {
  return Math.max(64, PORT_Y0 + PORT_GAP * (Math.max(ports.ins, ports.outs) - 1) + 22);
}

// Would an edge source -> target close a cycle (including a self-loop)?
export function wouldCycle(doc, source, target) {
  if (source === target) return true;
  const out = {};
  for (const e of doc.edges || []) (out[e.source] ||= []).push(e.target);
  const seen = new Set();
  const stack = [target];
  while (stack.length) {
    const v = stack.pop();
    if (v === source) return true;
    if (!seen.has(v)) {
      seen.add(v);
      for (const w of out[v] || []) stack.push(w);
    }
  }
  return false;
}

export function ordinalOf(handleId) {
  const m = /-(\d+)$/.exec(handleId || "");
  return m ? Number(m[1]) : undefined;
}

export function countProblems(probs, level) {
  let n = (probs.dag || []).filter((p) => p.level === level).length;
  for (const group of [probs.vertices || {}, probs.edges || {}]) {
    for (const list of Object.values(group)) n += list.filter((p) => p.level === level).length;
  }
  return n;
}

// React Flow nodes for the document. `prev` (the nodes React Flow has now) keeps what React Flow
// measured and what the user selected; positions always come from the kernel.
export function toNodes(doc, kinds, probs, prev) {
  const before = new Map((prev || []).map((n) => [n.id, n]));
  const ports = portCounts(doc, kinds);
  return (doc.vertices || []).map((v) => {
    const old = before.get(v.id);
    const k = kinds[v.kind];
    const data = { v, kind: k || null, ports: ports[v.id], problems: (probs.vertices || {})[v.id] || [] };
    return {
      ...(old || {}),
      id: v.id,
      type: "vertex",
      position: { x: Number(v.x) || 0, y: Number(v.y) || 0 },
      data,
      selected: old ? !!old.selected : false,
      dragging: false,
    };
  });
}

export function toEdges(doc, probs, prev) {
  const before = new Map((prev || []).map((e) => [e.id, e]));
  const names = {};
  for (const v of doc.vertices || []) names[v.id] = v.name;
  return (doc.edges || []).filter((e) => e.source in names && e.target in names).map((e) => {
    const problems = (probs.edges || {})[e.id] || [];
    const level = levelOf(problems);
    const color = !problems.length ? "#64748b" : level === "error" ? "#dc2626" : "#f59e0b";
    const old = before.get(e.id);
    return {
      id: e.id,
      type: "routed",
      source: e.source,
      target: e.target,
      sourceHandle: `out-${e.source_ordinal ?? 0}`,
      targetHandle: `in-${e.target_ordinal ?? 0}`,
      data: { e, problems, sourceName: names[e.source], targetName: names[e.target] },
      selected: old ? !!old.selected : false,
      markerEnd: { type: "arrowclosed", width: 16, height: 16, color },
      className: `jbb-edge jbb-routing-${e.routing || "unicast"}` + (problems.length ? ` jbb-has-problem jbb-level-${level}` : ""),
    };
  });
}
