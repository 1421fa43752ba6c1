"""Reading a source notebook's cells in tests: what the locked harness and answer cells hold."""
from pathlib import Path

import nbformat


def cell_sources(path: Path) -> dict[str, str]:
    """{grade_id: source} of the cells that carry one, in the notebook built from `path`.

    `path` is the percent-format source (`<id>.pct.py`); the cells are read from the
    committed `<id>.ipynb` beside it, which is what nbgrader releases (with the module
    code that `# chapter: include` lines name written in; `chapter build --check`
    keeps the two in step).
    """
    built = Path(path).with_name(Path(path).name.removesuffix(".pct.py") + ".ipynb")
    nb = nbformat.read(built, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if "nbgrader" in c.metadata and "grade_id" in c.metadata["nbgrader"]}


def run_cells(path: Path, grade_ids, namespace: dict | None = None) -> dict:
    """Execute the named cells, in order, in `namespace` (a fresh one by default); return it."""
    cells = cell_sources(path)
    namespace = {} if namespace is None else namespace
    for grade_id in grade_ids:
        exec(compile(cells[grade_id], grade_id, "exec"), namespace)  # noqa: S102 - our own notebook
    return namespace
