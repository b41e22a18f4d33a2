"""Execute the book's model chapters in parallel, before ``jb build`` renders them.

myst-nb executes one notebook after another inside Sphinx; with a chapter per model that is most of the
build. ``python -m kvmath.book.model_chapter --book`` therefore writes every model chapter and runs them
here, ``jobs`` at a time, each worker keeping one kernel for all its chapters (the imports are paid once per
worker; the namespace is reset before each chapter, so no chapter sees another's variables). The executed
``.ipynb`` files are what the book shows: ``_config.yml`` excludes ``notebooks/generated/*.ipynb`` from
myst-nb's own execution. Since ``--book`` runs before every build (``make book``, ``make bench``, the tests),
the outputs always come from the current kvmath.

Chapters run with ``KVMATH_BOOK_BUILD=1`` (the offline chart renderer), from their own folder.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..errors import KvMathError

TIMEOUT_S = 300  # per cell, as _config.yml's execute.timeout

# Run first in every chapter of a reused kernel: a clean namespace and the chapter's folder as cwd.
_RESET = "get_ipython().run_line_magic('reset', '-f'); import os as _os; _os.chdir({cwd!r}); del _os"

_worker_km = None


def _kernel():
    """This worker's kernel (started once)."""
    global _worker_km
    from jupyter_client.manager import KernelManager

    if _worker_km is None or not _worker_km.is_alive():
        _worker_km = KernelManager(kernel_name="python3")
        _worker_km.start_kernel(env=dict(os.environ, KVMATH_BOOK_BUILD="1"))
    return _worker_km


def _run(path: str, reuse: bool) -> tuple[str, float]:
    """Execute one notebook in place; returns (path, seconds). Raises KvMathError naming the chapter."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    t0 = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    cwd = str(Path(path).parent)
    km = _kernel() if reuse else None
    client = NotebookClient(nb, km=km, kernel_name="python3", timeout=TIMEOUT_S, allow_errors=False,
                            resources={"metadata": {"path": cwd}}, store_widget_state=True)
    if km is None:
        os.environ["KVMATH_BOOK_BUILD"] = "1"  # inherited by the kernel nbclient starts
    try:
        with client.setup_kernel():
            if reuse:  # a cell of its own, run at the end of the list and removed (execute_cell stores it there)
                nb.cells.append(nbformat.v4.new_code_cell(_RESET.format(cwd=cwd)))
                client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
                nb.cells.pop()
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            client.set_widgets_metadata()
    except CellExecutionError as e:
        raise KvMathError(f"{path}: a cell failed:\n{e}") from None
    nbformat.write(nb, path)
    return path, time.perf_counter() - t0


def execute_all(paths, jobs: int | None = None, reuse_kernels: bool = True, log=print) -> dict[str, float]:
    """Execute every notebook of ``paths`` in place, ``jobs`` at a time (default: the CPU count, at most 4).

    Returns ``{path: seconds}``. Raises KvMathError on the first chapter that fails.
    """
    paths = [str(p) for p in paths]
    jobs = max(1, min(jobs or os.cpu_count() or 1, 4, len(paths) or 1))
    seconds = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for path, s in pool.map(_run, paths, [reuse_kernels] * len(paths)):
            seconds[path] = s
            log(f"{path}: Executed notebook in {s:.2f} seconds")
    return seconds
