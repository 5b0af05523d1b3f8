// The builder's side panel: the selected vertex's or edge's properties, or the DAG's problems.
//
// Inputs are uncontrolled and keyed by the kernel's value: an edit is sent when the field is left
// (blur, Enter in a one-line field, or a change of a select / checkbox), and a new value from the
// kernel (undo, a Python edit) re-creates the field.

import React from "react";
import { ROUTINGS } from "./graph.js";

function ProblemList({ list }) {
  return (
    <div className="jbb-problems">
      {(list || []).map((p, i) => (
        <div key={i} className={`jbb-problem jbb-problem-${p.level}`}>{p.message}</div>
      ))}
    </div>
  );
}

function Field({ label, help, children }) {
  return (
    <div className="jbb-field">
      <label>{label}</label>
      {children}
      {help ? <div className="jbb-help">{help}</div> : null}
    </div>
  );
}

const keyOf = (name, value) => `${name}=${JSON.stringify(value ?? null)}`;

// A text, number or textarea field that commits on blur (and on Enter in a one-line field).
function TextField({ name, value, kind = "text", rows, className, placeholder, onCommit }) {
  const shown = value === null || value === undefined ? "" : String(value);
  const commit = (ev) => {
    if (ev.target.value !== shown) onCommit(ev.target.value);
  };
  const k = keyOf(name, value);
  const props = {
    "data-field": name, defaultValue: shown, className, placeholder, spellCheck: false,
    onBlur: commit,
  };
  if (kind === "textarea") return <textarea key={k} {...props} rows={rows} />;
  return <input key={k} {...props} type={kind} onKeyDown={(ev) => { if (ev.key === "Enter") ev.currentTarget.blur(); }} />;
}

function SelectField({ name, value, options, onCommit }) {
  const opts = options.includes(value) || value === undefined || value === null ? options : [...options, value];
  return (
    <select key={keyOf(name, value)} data-field={name} defaultValue={value ?? ""} onChange={(ev) => onCommit(ev.target.value)}>
      {opts.map((o) => <option key={String(o)} value={o}>{String(o)}</option>)}
    </select>
  );
}

function parseParam(param, raw, old) {
  if (param.type === "bool") return raw;
  if (old !== null && typeof old === "object") {
    // a list or dict of a kind this panel does not know: edited as JSON
    try { return JSON.parse(raw); } catch { return raw; }
  }
  const text = String(raw).trim();
  if (param.type === "int") {
    if (text === "") return param.optional ? null : text;
    return Number.isInteger(Number(text)) ? Number(text) : text;
  }
  if (param.type === "float") {
    if (text === "") return param.optional ? null : text;
    return Number.isFinite(Number(text)) ? Number(text) : text;
  }
  return raw;
}

function intOrText(raw) {
  const text = String(raw).trim();
  return text !== "" && Number.isInteger(Number(text)) ? Number(text) : text;
}

function ParamField({ v, param, send }) {
  const name = `param:${param.name}`;
  const value = (v.params || {})[param.name];
  const commit = (raw) => send({ cmd: "update_vertex", id: v.id, changes: { params: { [param.name]: parseParam(param, raw, value) } } });
  const args = param.type === "code" && param.args?.length ? ` (${param.args.join(", ")})` : "";
  let input;
  if (param.type === "choice") {
    input = <SelectField name={name} value={value} options={param.choices || []} onCommit={commit} />;
  } else if (param.type === "bool") {
    input = <input key={keyOf(name, value)} type="checkbox" data-field={name} defaultChecked={!!value} onChange={(ev) => commit(ev.target.checked)} />;
  } else if (param.type === "code" || param.type === "expr" || param.type === "steps") {
    const lines = String(value ?? "").split("\n").length;
    input = <TextField name={name} value={value} kind="textarea" rows={Math.min(8, Math.max(1, lines))}
      className={param.type === "expr" ? undefined : "jbb-code"} onCommit={commit} />;
  } else if (value !== null && typeof value === "object") {
    input = <TextField name={name} value={JSON.stringify(value)} kind="text" onCommit={commit} />;
  } else {
    const kind = param.type === "int" || param.type === "float" ? "number" : "text";
    input = <TextField name={name} value={value} kind={kind} placeholder={param.optional ? "none" : undefined} onCommit={commit} />;
  }
  return <Field label={param.name + args} help={param.help}>{input}</Field>;
}

function VertexPanel({ v, kind, problems, send }) {
  const upd = (changes) => send({ cmd: "update_vertex", id: v.id, changes });
  return (
    <>
      <div className="jbb-panel-title">{kind ? kind.label : v.kind} vertex</div>
      <Field label="name">
        <TextField name="name" value={v.name} onCommit={(x) => upd({ name: x })} />
      </Field>
      <Field label="local parallelism">
        <TextField name="parallelism" value={v.parallelism} kind="number" placeholder="default"
          onCommit={(x) => upd({ parallelism: String(x).trim() === "" ? null : intOrText(x) })} />
      </Field>
      {(kind?.params || []).map((p) => <ParamField key={p.name} v={v} param={p} send={send} />)}
      {v.kind === "custom" && v.params?.label ? <div className="jbb-help">{String(v.params.label)}</div> : null}
      <ProblemList list={problems} />
    </>
  );
}

const EDGE_NUMBERS = [["queue size", "queue_size"], ["priority", "priority"], ["source ordinal", "source_ordinal"], ["target ordinal", "target_ordinal"]];

function EdgePanel({ e, names, problems, send }) {
  const upd = (changes) => send({ cmd: "update_edge", id: e.id, changes });
  return (
    <>
      <div className="jbb-panel-title">
        edge {names[e.source]}[{e.source_ordinal}] → {names[e.target]}[{e.target_ordinal}]
      </div>
      <Field label="routing">
        <SelectField name="routing" value={e.routing} options={ROUTINGS} onCommit={(x) => upd({ routing: x })} />
      </Field>
      {e.routing === "partitioned" ? (
        <Field label="key (x)" help="partition key: an expression in x, or a function body">
          <TextField name="key" value={e.key} kind="textarea" rows={2} className="jbb-code" onCommit={(x) => upd({ key: x })} />
        </Field>
      ) : null}
      {EDGE_NUMBERS.map(([label, f]) => (
        <Field key={f} label={label}>
          <TextField name={f} value={e[f]} kind="number" onCommit={(x) => upd({ [f]: intOrText(x) })} />
        </Field>
      ))}
      <ProblemList list={problems} />
    </>
  );
}

function DagPanel({ doc, probs }) {
  const names = {};
  for (const v of doc.vertices) names[v.id] = v.name;
  const all = [...(probs.dag || [])];
  for (const [id, list] of Object.entries(probs.vertices || {})) {
    for (const p of list) all.push({ ...p, message: `${names[id]}: ${p.message}` });
  }
  for (const [id, list] of Object.entries(probs.edges || {})) {
    const e = doc.edges.find((x) => x.id === id);
    for (const p of list) all.push({ ...p, message: `${names[e?.source]} → ${names[e?.target]}: ${p.message}` });
  }
  return (
    <>
      <div className="jbb-panel-title">DAG</div>
      <div className="jbb-help">
        Drag a kind from the palette onto the canvas; drag from an output port (right) to an input port (left)
        to connect. Click a vertex or edge to edit it. Del deletes, Ctrl+Z / Ctrl+Shift+Z undo and redo.
      </div>
      <ProblemList list={all} />
    </>
  );
}

export function SidePanel({ doc, kinds, probs, selected, send }) {
  let body = null, selectedId = "";
  if (selected?.type === "vertex") {
    const v = doc.vertices.find((x) => x.id === selected.id);
    if (v) {
      selectedId = v.id;
      body = <VertexPanel key={v.id} v={v} kind={kinds[v.kind]} problems={(probs.vertices || {})[v.id]} send={send} />;
    }
  } else if (selected?.type === "edge") {
    const e = doc.edges.find((x) => x.id === selected.id);
    if (e) {
      selectedId = e.id;
      const names = {};
      for (const v of doc.vertices) names[v.id] = v.name;
      body = <EdgePanel key={e.id} e={e} names={names} problems={(probs.edges || {})[e.id]} send={send} />;
    }
  }
  return (
    <div className="jbb-panel nowheel" data-selected={selectedId}>
      {body || <DagPanel doc={doc} probs={probs} />}
    </div>
  );
}
