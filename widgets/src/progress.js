// jetbench progress line: status · job · elapsed · sources emitted · sinks received · [since a restart] · items/s out of the sources · [lag] · [dashboard]
// The kernel sets `state` (a JSON string) a few times a second while run()/join() waits, and a
// last time, with final=true, when the job ends. The button asks the kernel to open the full
// dashboard below; every command carries an id the kernel acknowledges, so a kernel too busy to
// hear it is reported instead of silently ignored.

const BUSY_AFTER_MS = 3000;

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function grouped(n) {
  return Number(n ?? 0).toLocaleString("en-US", { maximumFractionDigits: 0 });
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "jetbench-progress";
  root.innerHTML =
    `<span class="jbp-status"></span><span class="jbp-job"></span>` +
    `<span class="jbp-elapsed jbp-num"></span>` +
    `<span class="jbp-dim">sources emitted</span><span class="jbp-sources jbp-num"></span>` +
    `<span class="jbp-dim">sinks received</span><span class="jbp-sinks jbp-num"></span>` +
    `<span class="jbp-restart jbp-dim"></span>` +
    `<span class="jbp-rate jbp-num"></span>` +
    `<span class="jbp-lag jbp-num" hidden title="records the partitioned sources (Kafka) have yet to read: the high watermarks minus the offsets read"></span>` +
    `<span class="jbp-error"></span>` +
    `<button type="button" class="jbp-open" title="the job's full dashboard: tasklets, queues, CPU, idle controls, cancel">dashboard ▸</button>` +
    `<span class="jbp-busy"></span>`;
  el.appendChild(root);
  const $ = (sel) => root.querySelector(sel);

  let nextId = 1;
  let pending = null;
  const button = $(".jbp-open");
  button.addEventListener("click", () => {
    const open = !model.get("dashboard_open");
    const id = nextId++;
    model.send({ cmd: "dashboard", open, id });
    clearTimeout(pending?.timer);
    pending = {
      id,
      timer: setTimeout(() => {
        $(".jbp-busy").textContent =
          "the kernel is busy and has not received this yet: it will act when the running cell ends";
      }, BUSY_AFTER_MS),
    };
  });
  function onCustom(msg) {
    if (pending && msg && msg.ack === pending.id) {
      clearTimeout(pending.timer);
      pending = null;
      $(".jbp-busy").textContent = "";
    }
  }

  function update() {
    const raw = model.get("state");
    const s = (typeof raw === "string" ? JSON.parse(raw || "{}") : raw) || {};
    root.dataset.status = s.status ?? "";
    root.dataset.final = s.final ? "true" : "false";
    root.title = s.text ?? "";
    $(".jbp-status").textContent = s.status === "running" ? "running" : s.status ?? "";
    $(".jbp-job").textContent = s.job ?? "";
    $(".jbp-elapsed").textContent = `${Number(s.elapsed_s ?? 0).toFixed(1)} s`;
    const sources = $(".jbp-sources");
    sources.textContent = grouped(s.sources_out);
    sources.dataset.value = String(s.sources_out ?? 0);
    sources.title = (s.sources || []).join(", ");
    const sinks = $(".jbp-sinks");
    sinks.textContent = grouped(s.sinks_in);
    sinks.dataset.value = String(s.sinks_in ?? 0);
    sinks.title = (s.sinks || []).join(", ");
    $(".jbp-restart").textContent = s.restart ?? "";
    $(".jbp-restart").hidden = !s.restart;
    $(".jbp-rate").textContent = s.rate_text ?? `${grouped(s.rate)} items/s${s.final ? " on average" : ""}`;
    const lag = $(".jbp-lag");
    lag.hidden = s.lag === null || s.lag === undefined;
    lag.textContent = lag.hidden ? "" : `lag ${grouped(s.lag)} records`;
    lag.dataset.value = String(s.lag ?? "");
    const err = $(".jbp-error");
    err.textContent = s.error && s.status === "failed" ? (s.error_vertex ? `in ${s.error_vertex}: ` : "") + s.error : "";
    err.hidden = !(s.error && s.status === "failed");
  }
  function updateButton() {
    button.textContent = model.get("dashboard_open") ? "dashboard ▾" : "dashboard ▸";
  }

  model.on("change:state", update);
  model.on("change:dashboard_open", updateButton);
  model.on("msg:custom", onCustom);
  update();
  updateButton();
  return () => {
    clearTimeout(pending?.timer);
    model.off("change:state", update);
    model.off("change:dashboard_open", updateButton);
    model.off("msg:custom", onCustom);
  };
}

export default { render };
