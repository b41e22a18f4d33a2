"""Write a model chapter from the template notebook (``notebooks/model_chapter.md``) with papermill.

    python -m kvmath.chapter --model qwen3.6-27b --title "Qwen 3.6 27B" --out notebooks/generated/qwen3.6-27b.ipynb
    python -m kvmath.chapter --book            # every chapter listed in book/models.json

The template is executed with the given parameters; the written notebook keeps its outputs (the book
renders them without executing again) and its first heading becomes the title. The injected
parameters cell is hidden in the page.
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


def make_chapter(model: str, out: str | Path, *, title: str = "", template: Path = TEMPLATE, **params) -> Path:
    """Execute the chapter template for ``model`` (id or config.json path) and write it to ``out``.

    Returns the path written. Raises KvMathError if the model cannot be loaded (checked before the
    notebook runs, so the message is the loader's, not a cell traceback).
    """
    import jupytext
    import papermill as pm

    from .config import load_architecture

    arch = load_architecture(model)  # fail early with kvmath's message
    nb = jupytext.read(template)
    params = {"model": str(model), "title": title or arch.name, **params}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    nb = pm.execute_notebook(
        nb, None, parameters=params, kernel_name="python3", cwd=str(template.parent), progress_bar=False,
        log_output=False,
    )
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            lines = cell.source.split("\n")
            cell.source = f"# {params['title']}"  # the template's own paragraph is about the template
            break
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
    args = p.parse_args(argv)
    try:
        if args.book:
            for ch in book_chapters():
                path = make_chapter(ch["model"], ROOT / ch["file"], title=ch["title"], **ch.get("parameters", {}))
                print("wrote", path.relative_to(ROOT))
        elif args.model:
            out = args.out or ROOT / "notebooks" / "generated" / f"{Path(args.model).stem}.ipynb"
            print("wrote", make_chapter(args.model, out, title=args.title))
        else:
            p.error("give --model or --book")
    except KvMathError as e:
        print(f"kvmath.chapter: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
