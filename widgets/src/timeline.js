// jetbench timeline widget: the front end of jetbench.notebook.Timeline (anywidget ESM).
//
// The package loads timeline_view.js in front of this file (createTimelineView); the kernel sends
// the whole drawing as one `state` trait (a JSON string) per tick or per zoom and pan, and this
// module passes the view's requests back as custom messages.

function render({ model, el: host }) {
  const box = document.createElement("div");
  box.className = "jetbench-timeline";
  host.appendChild(box);
  const view = createTimelineView(box, (content) => model.send(content));
  function update() {
    const raw = model.get("state");
    view.update((typeof raw === "string" ? JSON.parse(raw || "{}") : raw) || {});
  }
  model.on("change:state", update);
  update();
  return () => {
    model.off("change:state", update);
    view.destroy();
  };
}

export default { render };
