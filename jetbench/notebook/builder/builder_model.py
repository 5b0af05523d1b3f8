"""The DAG builder's model, without any widget: `BuilderModel` is the document (vertices and
edges as plain data, edits with undo/redo; see `document`) with what is done with it, each in a
module of its own: `validation` (problems and notes), `dag_building` (to a `jetbench.DAG`),
`dag_import` (from a DAG or Pipeline built in code, and following it as it is edited there),
`code_export` (Python code) and `json_form` (save and load).

Function code stays text in the document: it is compiled to check it, and turned into functions
only by `BuilderModel.to_dag`. Loading JSON never runs code. A DAG built in code opens with its
functions as text where `function_readback.function_code` can show them; other suppliers stay
objects ("custom" vertices, with the reason as an info note).

>>> m = BuilderModel()
>>> src = m.add_vertex("items", name="numbers", params={"items": "range(5)"})
>>> dbl = m.add_vertex("map", name="double", params={"fn": "x * 2"})
>>> out = m.add_vertex("collect", name="out")
>>> _ = m.connect(src, dbl), m.connect(dbl, out)
>>> m.problems()
[]
>>> from jetbench import ExecutionService
>>> ExecutionService().run(m.to_dag())
[0, 2, 4, 6, 8]
"""

from __future__ import annotations

import os
from typing import Any

from ...core.dag import DAG
from ...processors.builder_kind import BuilderError
from . import code_export, dag_import, json_form, validation
from .dag_building import build_dag
from .document import Document
from .palette import Palette
from .validation import Problem


class BuilderModel(Document):
    """A builder document (see `Document`) that can be checked (`problems`, `notes`), built
    (`to_dag`), loaded from code and kept in step with it (`load_dag`, `refresh`), exported as
    code (`to_code`) and saved as JSON (`save`, `load`)."""

    def __init__(self, palette: Palette | None = None, namespace: dict[str, Any] | None = None):
        super().__init__(palette, namespace)
        self._following: dag_import.Following | None = None

    @property
    def source(self) -> Any:
        """The DAG or Pipeline the document was loaded from (`load_dag`), which `refresh` reads;
        None if it follows no code."""
        return None if self._following is None else self._following.source

    # ------------------------------------------------------------------------ validation

    def problems(self) -> list[Problem]:
        """Everything wrong with the document, each on the vertex or edge at fault; [] if it can run."""
        return validation.problems(self)

    def notes(self) -> list[Problem]:
        """Things to know that are not problems (level "info"): why a vertex imported from code is
        opaque (kept as an object, not editable as code)."""
        return validation.notes(self)

    def problems_json(self) -> dict[str, Any]:
        """Problems and notes grouped for the front end, each with its level ("error", "warning",
        "info"): ``{"vertices": {id: [...]}, "edges": {...}, "dag": [...]}``."""
        return validation.problems_json(self)

    # ------------------------------------------------------------------------ to a DAG

    def to_dag(self) -> DAG:
        """A real `jetbench.DAG`: code is compiled into functions (and ``expr`` parameters evaluated)
        now. Raises `BuilderError` listing the problems if the document has errors."""
        errors = [p for p in self.problems() if p.level == "error"]
        if errors:
            raise BuilderError("the DAG has problems:\n"
                               + "\n".join(f"  - {validation.where(self, p)}: {p.message}" for p in errors))
        return build_dag(self)

    # ------------------------------------------------------------------------ from code: DAG / Pipeline

    def load_dag(self, dag: Any) -> None:
        """Replace the document by ``dag`` (a `DAG`, or a `Pipeline` planned now), as one undo step.

        Suppliers the palette knows become editable vertices with their code as text; any other
        supplier becomes a "custom" vertex holding the object itself, with the reason in its
        ``reason`` parameter. Vertices named like ones already in the document keep their id and
        position; the others are laid out. ``dag`` is remembered as `source` for `refresh`.
        """
        imported = dag_import.read_dag(dag, self.namespace, self.palette)
        self._record()
        dag_import.replace(self, imported)
        self._following = dag_import.Following(dag, imported, dag_import.fingerprint(dag))
        self._changed()

    def refresh(self, force: bool = False) -> bool:
        """Bring in what changed in code in the `source` DAG or Pipeline since it was loaded (or
        last refreshed); True if anything did. One undo step.

        A three-way merge by vertex name (edges by their ends and ordinals): what the code
        added, changed or removed is applied to the document, and edits made in the builder to
        anything else stay. Where both changed the same vertex or edge, the code's version
        wins. A Pipeline is planned again. Unchanged sources are noticed cheaply (identity of
        suppliers and functions). ``force=True`` re-reads the source anyway and counts all of it
        as changed in code (its version wins; vertices only on the canvas stay), e.g. to bring
        back a refresh that was undone.

        >>> from jetbench import DAG, Edge
        >>> from jetbench.processors import collect_sink, items_source, map_processor
        >>> dag = DAG()
        >>> src = dag.new_vertex("src", items_source(range(3)))
        >>> out = dag.new_vertex("out", collect_sink())
        >>> _ = dag.edge(Edge.between(src, out))
        >>> m = BuilderModel()
        >>> m.load_dag(dag)
        >>> m.update_vertex("out", parallelism=1)        # an edit in the builder
        >>> sq = dag.new_vertex("square", map_processor(lambda x: x * x))   # edits in code
        >>> _ = dag.edge(Edge.between(src, sq))
        >>> m.refresh()
        True
        >>> [(v["name"], v["kind"], v["params"], v["parallelism"]) for v in m.vertices]
        [('src', 'items', {'items': 'range(3)'}, None), ('out', 'collect', {}, 1), ('square', 'map', {'fn': 'x * x'}, None)]
        >>> m.refresh()
        False
        """
        following = self._following
        if following is None:
            return False
        source = following.source
        fingerprint = dag_import.fingerprint(source)
        if not force and fingerprint is not None and fingerprint == following.fingerprint:
            return False
        theirs = dag_import.read_dag(source, self.namespace, self.palette)
        base = following.base if not force else dag_import.Imported()
        if not force and dag_import.same_import(base, theirs):
            following.fingerprint = fingerprint
            following.base = theirs  # fresh objects (a re-planned pipeline): use them from now on
            dag_import.adopt_objects(self, theirs)
            return False
        self._record()
        dag_import.merge(self, base, theirs)
        self._following = dag_import.Following(source, theirs, fingerprint)
        self._changed()
        return True

    # ------------------------------------------------------------------------ to Python code

    def to_code(self, dag_name: str = "dag") -> str:
        """Python source that rebuilds this DAG (``exec`` it to get an equal DAG in ``dag_name``).

        Custom vertices read their supplier from a dict ``custom_suppliers`` (by vertex name) that
        the code expects to find (`BuilderModel.custom_suppliers` gives it)."""
        return code_export.to_code(self, dag_name)

    @property
    def custom_suppliers(self) -> dict[str, Any]:
        """``{vertex name: supplier}`` of the custom vertices (what `to_code`'s output expects)."""
        return code_export.custom_suppliers(self)

    # ------------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        return json_form.to_json(self)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the document as compact JSON (code as text; custom suppliers keep their label only)."""
        json_form.write(self, path)

    def load_json(self, data: dict[str, Any]) -> None:
        """Replace the document by saved data. Nothing is executed: code stays text."""
        vertices, edges = json_form.from_json(data)
        for v in vertices:  # saved under a parameter's former name: its name now
            kind = self.palette.kind(v["kind"])
            if kind is not None:
                v["params"] = kind.upgrade(v["params"])
        self._record()
        self.vertices, self.edges, self.suppliers = vertices, edges, {}
        self._following = None  # follows no code any more
        self._changed()

    def load(self, path: str | os.PathLike[str]) -> None:
        self.load_json(json_form.read(path))
