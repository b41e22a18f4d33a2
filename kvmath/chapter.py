"""Write a model chapter from the template notebook (``notebooks/model_chapter.md``) with papermill.

    python -m kvmath.chapter --model qwen3.6-27b --title "Qwen 3.6 27B" --out notebooks/generated/qwen3.6-27b.ipynb
    python -m kvmath.chapter --book            # every chapter listed in book/models.json
    python -m kvmath.chapter --model path/to/config.json --execute   # also run it, to check it

papermill injects the parameters after the template's ``parameters`` cell; the first heading becomes
the title and the injected cell is hidden in the page. By default the chapter is written unexecuted:
the book build executes it like every other page, so its numbers are always from the current kvmath.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import KvMathError

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "notebooks" / "model_chapter.md"
BOOK_MODELS = ROOT / "book" / "models.json"


def make_chapter(model: str, out: str | Path, *, title: str = "", template: Path = TEMPLATE,
                 execute: bool = False, **params) -> Path:
    """Write the chapter template for ``model`` (id or config.json path) to ``out`` (.ipynb).

    ``execute=True`` also runs it (outputs kept). Returns the path written. Raises KvMathError if the
    model cannot be loaded (checked first, so the message is the loader's, not a cell traceback).
    """
    import jupytext
    import papermill as pm

    from .config import load_architecture

    arch = load_architecture(model)  # fail early with kvmath's message
    nb = jupytext.read(template)
    params = {"model": str(model), "title": title or arch.name, **params}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if Path(str(model)).suffix == ".json":
        params["model"] = str(Path(model).resolve())  # the chapter runs from its own folder
    nb = pm.execute_notebook(
        nb, None, parameters=params, kernel_name="python3", cwd=str(template.parent), progress_bar=False,
        log_output=False, prepare_only=not execute,
    )
    titled = False
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if not titled and cell.cell_type == "markdown" and cell.source.startswith("# "):
            cell.source = f"# {params['title']}"  # the template's own paragraph is about the template
            titled = True
    nb.metadata.pop("papermill", None)
    import nbformat

    nbformat.write(nb, out)
    return out


def book_chapters() -> list[dict]:
    """The model chapters the book builds (``book/models.json``): id, title, output file."""
    return json.loads(BOOK_MODELS.read_text())["chapters"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kvmath.chapter", description=__doc__.split("\n")[0])
    p.add_argument("--model", help="known model id or config.json path")
    p.add_argument("--title", default="")
    p.add_argument("--out", help="output .ipynb (default notebooks/generated/<id>.ipynb)")
    p.add_argument("--book", action="store_true", help="write every chapter listed in book/models.json")
    p.add_argument("--execute", action="store_true", help="run the chapter too (to check it outside the book)")
    args = p.parse_args(argv)
    try:
        if args.book:
            for ch in book_chapters():
                path = make_chapter(ch["model"], ROOT / ch["file"], title=ch["title"], **ch.get("parameters", {}))
                print("wrote", path.relative_to(ROOT))
        elif args.model:
            out = args.out or ROOT / "notebooks" / "generated" / f"{Path(args.model).stem}.ipynb"
            print("wrote", make_chapter(args.model, out, title=args.title, execute=args.execute))
        else:
            p.error("give --model or --book")
    except KvMathError as e:
        print(f"kvmath.chapter: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
