"""`DagBuilder`: the visual DAG builder widget (anywidget) over a `BuilderModel`.

The kernel owns the document: the front end sends commands (``{"cmd": "add_vertex", ...}``,
``connect``, ``update_vertex``, ``update_edge``, ``move``, ``delete``, ``undo``, ``redo``,
``layout``, ``run``, ``export_code``, ``close_export``); the model applies them, validates, and the widget sends the whole document
and its problems back as two traits in one message. Python edits (``builder.add_vertex(...)``)
take the same path, so both sides always show the same DAG.

Code to canvas: ``builder.dag = dag`` and ``builder.pipeline = p`` replace the document;
editing the DAG or Pipeline the builder was opened with, in code, shows after `DagBuilder.refresh`
(in a notebook also automatically after each cell that changed it). Canvas to code:
``builder.dag`` is a new `DAG` of the document as it is now.
"""

from __future__ import annotations

import contextlib
import json
import os
import weakref
from typing import Any

import anywidget
import traitlets

from ...core.dag import DAG
from ...processors.builder_kind import BuilderError
from .._assets import asset_text
from .builder_model import BuilderModel
from .palette import Palette

RESULT_PREVIEW = 20  # items of a list result shown in the builder


def _notebook_namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the widget stack brings IPython
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


class DagBuilder(anywidget.AnyWidget):
    """Build a DAG on a canvas: palette, drag, connect, edit, validate, run, and export as code
    (the Export code button shows `to_code`'s code, with a Copy button).

    ``DagBuilder()`` starts empty; ``DagBuilder(dag)`` opens a `DAG` (or a `Pipeline`'s DAG),
    laid out automatically. ``builder.dag`` is the real `jetbench.DAG` (raises `BuilderError`
    listing the problems while the canvas has errors). Code fields see ``namespace`` (default:
    the notebook's names); `Processor` subclasses found there join the palette.

    The DAG or Pipeline it was opened with stays its `source`: edit that in code and call
    `refresh` (with ``auto_refresh``, the default, an IPython kernel does it after every cell) to
    see the edits on the canvas, merged with the edits made there:

    >>> import jetbench
    >>> from jetbench import Pipeline, sinks, sources
    >>> p = Pipeline()
    >>> numbers = p.read_from(sources.items([1, 2, 3]))
    >>> _ = numbers.map(lambda x: x * 10, name="times-ten").write_to(sinks.collect())
    >>> b = DagBuilder(p, namespace={})
    >>> [v["name"] for v in b.doc["vertices"]]
    ['items', 'times-ten', 'collect']
    >>> _ = numbers.filter(lambda x: x > 1, name="big").write_to(sinks.noop())
    >>> b.refresh()
    True
    >>> [v["name"] for v in b.doc["vertices"]]
    ['items', 'times-ten', 'collect', 'big', 'noop']
    >>> b.pipeline is p, sorted(jetbench.run(b.dag))
    (True, [10, 20, 30])
    """

    _esm = asset_text("builder.js")
    _css = asset_text("builder.css")

    palette_kinds: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    doc = traitlets.Dict().tag(sync=True)
    problems = traitlets.Dict().tag(sync=True)
    can_undo = traitlets.Bool(False).tag(sync=True)
    can_redo = traitlets.Bool(False).tag(sync=True)
    #: the last refusal or error of a command ("" if none); ``message_seq`` changes with each one
    message = traitlets.Unicode("").tag(sync=True)
    message_seq = traitlets.Int(0).tag(sync=True)
    #: the last run: ``{"status", "job", "result", "error"}``
    run_state = traitlets.Dict().tag(sync=True)
    height = traitlets.Int(460).tag(sync=True)
    #: the Export code view: ``{}`` closed; open, ``{"open": True, "code", "error", "note", "custom"}``,
    #: what `to_code` gives for the document as it is (kept up to date while open)
    code_export = traitlets.Dict().tag(sync=True)

    def __init__(self, dag: Any = None, *, namespace: dict[str, Any] | None = None, palette: Palette | None = None,
                 service: Any = None, auto_refresh: bool = True, **kwargs: Any):
        ns = _notebook_namespace() if namespace is None else namespace
        palette = palette or Palette()
        palette.register_namespace(ns)
        self.model = BuilderModel(palette, ns)
        #: the ExecutionService the Run button submits to (a new one per run when None)
        self.service = service
        self.job: Any = None
        self.dashboard: Any = None
        self._box: Any = None
        self._below: Any = None
        self._snapshot: Any = None
        super().__init__(**kwargs)
        self.palette_kinds = palette.to_json()
        if dag is not None:
            self.model.load_dag(dag)
            self.model.forget_history()  # opening is not an edit
        self.model.on_change = self._sync
        self._sync()
        self.on_msg(self._on_msg)
        self._hook: Any = None
        self._watch_cells(auto_refresh)

    # ------------------------------------------------------------------------ Python API

    @property
    def dag(self) -> Any:
        """The document as a real `jetbench.DAG` (code compiled now)."""
        return self.model.to_dag()

    @dag.setter
    def dag(self, dag: Any) -> None:
        """Show ``dag`` (a `DAG` or `Pipeline`) instead, and follow it from now on (one undo step)."""
        self.model.load_dag(dag)

    @property
    def source(self) -> Any:
        """The DAG or Pipeline the builder was opened with (or last given), None if none."""
        return self.model.source

    @property
    def pipeline(self) -> Any:
        """The `Pipeline` the builder follows, or None (opened empty, or with a DAG)."""
        source = self.model.source
        return source if source is not None and not isinstance(source, DAG) and hasattr(source, "to_dag") else None

    @pipeline.setter
    def pipeline(self, pipeline: Any) -> None:
        """Plan ``pipeline`` and show it: the same pipeline, edited, is merged like `refresh`; another
        one replaces the document (vertices with the same names keep their place)."""
        if pipeline is not None and pipeline is self.model.source:
            self.model.refresh()
        else:
            self.model.load_dag(pipeline)

    def refresh(self, force: bool = False) -> bool:
        """Show what changed in code in `source` since it was opened or last refreshed, merged with
        the edits made on the canvas (see `BuilderModel.refresh`); True if anything changed."""
        return self.model.refresh(force)

    def _watch_cells(self, auto_refresh: bool) -> None:
        """In an IPython kernel, after every cell (cheap when nothing changed): refresh from the
        source (``auto_refresh``), validate again (the cell may have defined a name the code
        uses) and bring the static snapshot up to date."""
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - the widget stack brings IPython
            return
        shell = get_ipython()
        if shell is None:
            return
        ref = weakref.ref(self)

        def after_cell(*_: Any) -> None:
            builder = ref()
            if builder is None:
                return
            try:
                if auto_refresh and builder.model.source is not None:
                    builder.model.refresh()
                builder.problems = builder.model.problems_json()
                if builder._snapshot is not None:
                    builder._snapshot.update()
            except Exception as exc:  # a broken edit in code must not break every later cell
                builder._say(f"refresh: {type(exc).__name__}: {exc}")

        shell.events.register("post_run_cell", after_cell)
        self._hook = (shell, after_cell)

    def close(self) -> None:
        if self._hook is not None:
            shell, hook = self._hook
            self._hook = None
            with contextlib.suppress(ValueError):  # already gone
                shell.events.unregister("post_run_cell", hook)
        super().close()

    def add_vertex(self, kind: str, name: str | None = None, params: dict[str, Any] | None = None,
                   parallelism: int | None = None, x: float | None = None, y: float | None = None) -> str:
        """Add a vertex of a palette kind (see `BuilderModel.add_vertex`); returns its id."""
        return self.model.add_vertex(kind, name, params, parallelism, x, y)

    def connect(self, source: str, target: str, **edge: Any) -> str:
        """Connect two vertices (ids or names); see `BuilderModel.connect`."""
        return self.model.connect(source, target, **edge)

    def update_vertex(self, ref: str, **changes: Any) -> None:
        self.model.update_vertex(ref, **changes)

    def update_edge(self, eid: str, **changes: Any) -> None:
        self.model.update_edge(eid, **changes)

    def remove(self, *refs: str) -> None:
        self.model.remove(*refs)

    def undo(self) -> bool:
        return self.model.undo()

    def redo(self) -> bool:
        return self.model.redo()

    def layout(self) -> None:
        self.model.layout()

    def register(self, cls: type, label: str | None = None) -> None:
        """Offer a `Processor` subclass in the palette."""
        self.model.palette.register(cls, label)
        self.palette_kinds = self.model.palette.to_json()

    def set_supplier(self, ref: str, supplier: Any) -> None:
        self.model.set_supplier(ref, supplier)

    def validate(self) -> list[Any]:
        """The problems (`Problem`) the canvas shows; [] when the DAG can run."""
        return self.model.problems()

    def to_code(self, dag_name: str = "dag") -> str:
        """Python code that rebuilds this DAG (with `custom_suppliers` in its namespace when the
        DAG has vertices the builder keeps as objects). The builder's Export code button shows
        the same code, with a button that copies it."""
        return self.model.to_code(dag_name)

    def export_code(self, show: bool = True) -> None:
        """Open (``show``) or close the Export code view under the canvas: `to_code`'s code,
        refreshed after every edit while it is open."""
        if not show:
            self.code_export = {}
            return
        try:
            code, error = self.model.to_code(), ""
        except BuilderError as exc:
            code, error = "", f"cannot export: {exc}"
        errors = [p for p in self.model.problems() if p.level == "error"]
        note = (f"the canvas has {len(errors)} error{'s' if len(errors) > 1 else ''} (the first: {errors[0].message}): "
                "this code runs once they are fixed") if errors else ""
        self.code_export = {"open": True, "code": code, "error": error, "note": note,
                            "custom": sorted(self.model.custom_suppliers)}

    @property
    def custom_suppliers(self) -> dict[str, Any]:
        """``{vertex name: supplier}`` of the vertices kept as objects (what `to_code` needs)."""
        return self.model.custom_suppliers

    def save(self, path: str | os.PathLike) -> None:
        """Save as compact JSON (code stays text)."""
        self.model.save(path)

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs: Any) -> DagBuilder:
        """A builder on a saved document; nothing in it is executed."""
        builder = cls(**kwargs)
        builder.model.load(path)
        builder.model.forget_history()
        builder._sync()
        return builder

    def run(self, name: str | None = None) -> Any:
        """Submit the DAG to the ExecutionService, attach the live dashboard below; returns the Job."""
        from ...core.execution import ExecutionService
        from ..dashboard import Dashboard

        dag = self.model.to_dag()
        service = self.service if self.service is not None else ExecutionService()
        job = service.submit(dag, name=name or "builder")
        self.job = job
        self.run_state = {"status": "running", "job": job.name, "result": None, "error": None}
        self.dashboard = Dashboard(job, interval_s=0.2)
        if self._below is not None:
            self._below.children = (self.dashboard,)
        job.add_done_listener(self._job_done)
        if job.is_done:
            self._job_done(job)
        return job

    def forget_history(self) -> None:
        """Drop the undo and redo steps (after building a starting document in code)."""
        self.model.forget_history()
        self._sync()

    # ------------------------------------------------------------------------ sync

    def _sync(self) -> None:
        m = self.model
        with self.hold_sync():
            if self.run_state.get("vertex"):  # an edit since the failed run: its badge goes
                self.run_state = {k: v for k, v in self.run_state.items() if k != "vertex"}
            # a copy: the model edits its lists in place, and an equal dict would not be sent
            self.doc = json.loads(json.dumps({
                "vertices": m.vertices, "edges": m.edges,
                "custom": sorted(k for k in m.suppliers if any(v["id"] == k for v in m.vertices)),
            }))
            self.problems = m.problems_json()
            self.can_undo = m.can_undo
            self.can_redo = m.can_redo
            if self.code_export:
                self.export_code()

    def _say(self, text: str) -> None:
        self.message = text
        self.message_seq += 1

    def _job_done(self, job: Any) -> None:
        state = {"status": job.status.value, "job": job.name, "result": None, "error": None}
        if job.failure is not None:
            state["error"] = f"{type(job.failure).__name__}: {job.failure}"
            failed_in = getattr(job.failure, "vertex", None)  # a JobError names the failing vertex
            vid = next((v["id"] for v in self.model.vertices if v["name"] == failed_in), None)
            if vid is not None:
                state["vertex"] = vid
        else:
            result = job.result
            if isinstance(result, list):
                shown = result[:RESULT_PREVIEW]
                state["result"] = repr(shown)[:-1] + (", ...]" if len(result) > RESULT_PREVIEW else "]")
                state["count"] = len(result)
            elif result is not None:
                state["result"] = repr(result)[:500]
        self.run_state = state

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        try:
            self._command(content)
        except (BuilderError, ValueError, TypeError, KeyError) as exc:
            self._say(str(exc))
            self._sync()  # the front end may have moved things optimistically: show the truth
        except Exception as exc:  # keep the kernel quiet; show it on the canvas
            self._say(f"{type(exc).__name__}: {exc}")
            self._sync()

    def _command(self, c: dict[str, Any]) -> None:
        m, cmd = self.model, c.get("cmd")
        if cmd == "add_vertex":
            m.add_vertex(c["kind"], x=c.get("x"), y=c.get("y"))
        elif cmd == "connect":
            m.connect(c["source"], c["target"], c.get("source_ordinal"), c.get("target_ordinal"))
        elif cmd == "update_vertex":
            m.update_vertex(c["id"], **c.get("changes", {}))
        elif cmd == "update_edge":
            m.update_edge(c["id"], **c.get("changes", {}))
        elif cmd == "move":
            m.move({vid: (p[0], p[1]) for vid, p in c.get("positions", {}).items()})
        elif cmd == "delete":
            refs = list(c.get("ids", []))
            if refs:
                m.remove(*refs)
        elif cmd == "undo":
            m.undo()
        elif cmd == "redo":
            m.redo()
        elif cmd == "layout":
            m.layout()
        elif cmd == "run":
            self.run()
        elif cmd in ("export_code", "close_export"):
            self.export_code(cmd == "export_code")
        else:
            raise BuilderError(f"unknown command {cmd!r}")
        self._say("")

    # ------------------------------------------------------------------------ display

    @property
    def view(self) -> Any:
        """What a cell shows: the builder with a box below it where Run puts the job's dashboard
        (an ``ipywidgets.VBox``, made on first use)."""
        if self._box is None:
            import ipywidgets

            self._below = ipywidgets.VBox(() if self.dashboard is None else (self.dashboard,))
            self._below.add_class("jetbench-builder-below")
            self._box = ipywidgets.VBox((self, self._below))
        return self._box

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        """``display(builder)`` (or a cell ending in ``builder``): the builder, and right after
        it a static snapshot, its Graphviz drawing, that the live builder hides and a notebook
        opened again without a kernel shows instead of "model not found" (refreshed after
        every cell, so a saved notebook holds the DAG as it was)."""
        from ..widget_fallback import display_with_snapshot

        self._snapshot = display_with_snapshot(
            self.view, self.snapshot_svg, "builder",
            "The DAG builder as last drawn (a static picture: run the cell to edit it).")

    def snapshot_svg(self) -> str | None:
        """The document drawn by Graphviz (SVG), as the builder shows it; None without ``dot``."""
        from ...core.render import dot_string, dot_to_svg

        m = self.model
        names = {v["id"]: v["name"] for v in m.vertices}
        lines = ["digraph builder {", "  rankdir=LR;",
                 '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize=11];']
        for v in m.vertices:
            kind = m.palette.kind(v["kind"])
            label = f"{v['name']}\n{kind.label if kind is not None else v['kind']}"
            if v.get("parallelism") is not None:
                label += f" ×{v['parallelism']}"
            lines.append(f"  {dot_string(v['id'])} [label={dot_string(label)}];")
        for e in m.edges:
            if e["source"] in names and e["target"] in names:
                routing = e.get("routing") or "unicast"
                style = ', style="dashed"' if routing in ("partitioned", "all-to-one") else ""
                text = "" if routing == "unicast" else routing
                lines.append(f"  {dot_string(e['source'])} -> {dot_string(e['target'])} "
                             f"[label={dot_string(text)}, fontname=\"Helvetica\", fontsize=9{style}];")
        lines.append("}")
        svg = dot_to_svg("\n".join(lines))
        return None if svg is None else svg[svg.find("<svg"):]  # inline in HTML: no XML prolog

    def __repr__(self) -> str:
        return f"DagBuilder(vertices={[v['name'] for v in self.model.vertices]}, edges={len(self.model.edges)})"
