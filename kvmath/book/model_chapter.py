"""Model chapters: written from one template notebook (``notebooks/model_chapter.md``) with papermill.

Onboarding a model is two steps (the book's "Adding a model" page walks through them):

    python -m kvmath.book.model_chapter --add-model path/to/config.json --id llama-3.1-8b --title "Llama 3.1 8B" \
        --hf-repo meta-llama/Llama-3.1-8B-Instruct --revision 0e9e39f2...
    # then add `- file: notebooks/generated/llama-3.1-8b` to _toc.yml

``--add-model`` writes ``<user data folder>/models/<id>.json`` (``kvmath.facts.user_data_dir()``:
``$KVMATH_USER_DATA_DIR``, else ``platformdirs.user_data_dir("kvmath")``, on Linux ``~/.local/share/kvmath``),
the config fields kvmath reads under their HF names with the source file's SHA-256 and revision, and a
byte-exact copy of the config.json beside it (``configs/<id>.json``); kvmath reads that folder after its own
data, so this works from an installed wheel too. Every ``notebooks/generated/<id>`` entry of ``_toc.yml`` is
a model chapter; ``--book`` (run by ``make book`` and the tests) writes them all. Other commands:

    python -m kvmath.book.model_chapter --model qwen3.6-27b --out /tmp/q.ipynb --execute   # one chapter, run it
    python -m kvmath.book.model_chapter --model path/to/config.json                        # any config, no facts needed

papermill injects the parameters after the template's ``parameters`` cell; the first heading becomes
the title and the injected cell is hidden in the page. Chapters are written unexecuted: the book
build executes them like every other page, so their numbers always come from the current kvmath.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

from ..errors import KvMathError
from ..facts import model_title as title_of  # noqa: F401  (the name the chapters' code uses)

GENERATED = "notebooks/generated/"


def book_root(root: str | Path | None = None) -> Path:
    """The book's folder: ``root``, else the working directory (``make book`` and ``make chapters`` run in
    the checkout). The package never looks for it beside its own files, so an installed wheel writes chapters
    into the book it is run in. Raises KvMathError when the folder holds no ``_toc.yml`` or no chapter
    template ``notebooks/model_chapter.md``."""
    folder = Path(root).resolve() if root is not None else Path.cwd()
    for need in ("_toc.yml", "notebooks/model_chapter.md"):
        if not (folder / need).is_file():
            raise KvMathError(f"{folder} is not a KV_MATH book folder (no {need}): run from the book's checkout "
                              "or give --root BOOK_FOLDER")
    return folder

# The config.json keys kvmath reads (HF names). --add-model copies these and nothing else.
KEYS = [
    "model_type", "dtype", "torch_dtype", "num_hidden_layers", "hidden_size", "intermediate_size",
    "vocab_size", "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
    "layer_types", "full_attention_interval", "sliding_window", "use_sliding_window", "max_window_layers",
    # Gemma 4
    "global_head_dim", "num_global_key_value_heads", "attention_k_eq_v", "num_kv_shared_layers",
    "use_bidirectional_attention", "hidden_size_per_layer_input",
    # Gated DeltaNet, Mamba-2, Kimi Delta Attention, MLA
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "mamba_ssm_dtype", "mtp_num_hidden_layers", "hybrid_override_pattern",
    "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "expand",
    "mamba_ssm_cache_dtype", "attention_head_dim", "linear_attn_config", "kv_lora_rank", "q_lora_rank",
    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
    # mixture of experts (weights, dispatch)
    "num_experts", "num_local_experts", "num_experts_per_tok", "top_k_experts", "moe_intermediate_size",
    "shared_expert_intermediate_size", "enable_moe_block", "tie_word_embeddings", "n_routed_experts",
    # multi-token prediction heads, and the length vLLM derives (rope scaling)
    "num_nextn_predict_layers", "rope_scaling", "rope_parameters",
    # the other length keys vLLM derives max_model_len from (kvmath.model.hf.VLLM_MAX_LEN_KEYS)
    "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_target_positions", "max_sequence_length",
    "max_seq_length", "seq_len",
]


def _every_key_read() -> list[str]:
    """:data:`KEYS` and every field the config rules check or the MLP reader tries (``kvmath.validate``'s
    tables, ``kvmath.model.hf``'s expert / top-k / shared-expert spellings): a hand list alone falls behind
    the readers (Kimi's ``num_experts_per_token``, DeepSeek's ``n_shared_experts``)."""
    from ..model import hf
    from ..validate import CONFIG_RULES

    extra = [*CONFIG_RULES, *hf._EXPERT_KEYS, *hf._TOPK_KEYS, *hf._SHARED_COUNT_KEYS]
    return list(dict.fromkeys(KEYS + extra))


_SNAPSHOT = "snapshots"  # huggingface_hub's cache: <repo folder>/snapshots/<commit>/config.json


def revision_from_path(config_path: str | Path) -> str | None:
    """The commit of a config.json inside huggingface_hub's cache (``.../snapshots/<40 hex>/config.json``),
    else None."""
    import re

    parts = Path(config_path).resolve().parts
    for i, part in enumerate(parts[:-1]):
        if part == _SNAPSHOT and re.fullmatch(r"[0-9a-f]{40}", parts[i + 1]):
            return parts[i + 1]
    return None


MAX_ID = 96
"""Longest model id ``--add-model`` takes (it names two files; a file name holds at most 255 bytes)."""


WINDOWS_RESERVED = frozenset(["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"] + [f"{d}{i}" for d in ("COM", "LPT")
                                                                                for i in range(10)])
"""File names Windows gives to devices, whatever their case and extension (Microsoft Learn, "Naming Files, Paths,
and Namespaces": CON, PRN, AUX, NUL, COM0-COM9, LPT0-LPT9; "NUL.txt" is the device too): an id is the stem of the
files onboarding writes, so one of these cannot be checked out or built on Windows."""

MAX_TITLE = 200
"""Longest ``--title`` written into a model entry (characters)."""


def check_onboarding(model_id, hf_repo: str = "", revision: str | None = None, title: str = "") -> None:
    """The names ``--add-model`` writes: ``model_id`` ASCII letters, digits, ``-``, ``.``, ``_`` (1 to
    :data:`MAX_ID`, not starting with a dot); ``hf_repo`` empty, ``org/name`` or ``name`` as the Hub names
    repositories (huggingface_hub ``validate_repo_id``: letters, digits, ``-_.``, at most 96 a part); ``revision`` None
    (read from the path), ``unrecorded``, or a 40-hex Hub commit; ``title`` at most :data:`MAX_TITLE` characters
    with no control character (it is printed as one line of every answer). Raises KvMathError."""
    import re
    import unicodedata

    if not isinstance(title, str) or len(title) > MAX_TITLE or any(unicodedata.category(c)[0] == "C" for c in title):
        raise KvMathError(f"--title {str(title)[:60]!r} must be at most {MAX_TITLE} printable characters (no line "
                          "break, tab or other control character)")

    if not isinstance(model_id, str) or not re.fullmatch(rf"[A-Za-z0-9_\-][A-Za-z0-9._\-]{{0,{MAX_ID - 1}}}",
                                                         model_id):
        raise KvMathError(f"--id {str(model_id)[:60]!r} must be 1-{MAX_ID} ASCII letters, digits, '-', '.' or '_' "
                          "(not starting with '.')")
    if model_id.split(".")[0].upper() in WINDOWS_RESERVED:
        raise KvMathError(f"--id {model_id!r} is a name Windows reserves for a device ({model_id.split('.')[0].upper()}; "
                          "its files, notebooks/generated/<id>.md and the page, could not be made there): choose another")
    if model_id.startswith("-") or model_id.endswith("."):
        raise KvMathError(f"--id {model_id!r} must not start with '-' (a command line would read it as a flag) or end "
                          "with '.' (Windows drops a trailing dot from a file name)")
    if hf_repo and not re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._\-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._\-]{0,95}", hf_repo):
        raise KvMathError(f"--hf-repo {hf_repo[:60]!r} must be a Hub repository, org/name or name (ASCII letters, "
                          "digits, '-', '_', '.'; e.g. meta-llama/Llama-3.1-8B-Instruct)")
    if revision is not None and revision != "unrecorded" and not re.fullmatch(r"[0-9a-f]{40}", revision):
        raise KvMathError(f"--revision {revision[:60]!r} must be the 40-hex Hub commit the config is from, or "
                          "'unrecorded'")


def write_model_facts(config_path: str | Path, model_id: str, *, title: str = "", hf_repo: str = "",
                      revision: str | None = None, note: str = "", out_dir: Path | None = None) -> Path:
    """Write ``<model_id>.json`` (the model's facts) from a config.json and return its path.

    ``out_dir`` None: the user data folder (``kvmath.facts.user_data_dir()``, ``models/``), which
    ``kvmath.facts`` reads after the packaged data, so a model can be added to an installed wheel; the
    config.json itself is copied byte for byte beside it (``configs/<model_id>.json``) and the entry's
    ``source`` names that copy, so everything the budget reads from the whole file (the vision tower of a
    multimodal wrapper, ``quantization_config``, the MLP sizes of the weights estimate) is kept. A packaged
    model's id is refused there. ``out_dir`` given (``tools/extract_model_facts.py`` writes the packaged
    ``data/models``): the entry only, its ``source`` from ``note``.

    The entry keeps the keys in ``KEYS`` (from ``text_config`` for multimodal wrappers), the source file's
    SHA-256, and ``revision``: the Hub commit the file is from. It is required: given, or read from a
    huggingface_hub cache path (``snapshots/<commit>/``); pass ``"unrecorded"`` to say it is not known.
    The config must load (``kvmath.load_architecture``). Raises KvMathError before anything is written.
    """
    from .. import facts
    from ..model.load import load_architecture

    from ..model.load import MAX_CONFIG_BYTES
    from ..validate import parse_json, read_bounded

    config_path = Path(config_path)
    check_onboarding(model_id, hf_repo, revision, title)
    try:
        is_folder = config_path.is_dir()
    except OSError as e:  # ENAMETOOLONG and the like: is_dir raises rather than answers
        raise KvMathError(f"{str(config_path)[:120]}: cannot read it ({e.strerror})") from None
    if is_folder:  # a model folder: its config.json, a link followed only as the folder readers follow one
        from ..model.checkpoint import check_link

        check_link(config_path, config_path / "config.json")
        config_path = config_path / "config.json"
    if config_path.suffix == ".gguf":
        raise KvMathError(f"{config_path.name}: --add-model takes a config.json (or a folder holding one), not a GGUF "
                          "(kvmath reads a .gguf file directly: give its path as the model)")
    revision = revision or revision_from_path(config_path)
    if not revision:
        raise KvMathError(f"{config_path.name}: give --revision, the Hub commit this config.json is from "
                          "(or --revision unrecorded to say it is not known)")
    user = out_dir is None
    if user and model_id in facts.packaged_models():
        raise KvMathError(f"{model_id!r} is a model kvmath ships; choose another --id")
    load_architecture(config_path)
    raw = read_bounded(config_path, MAX_CONFIG_BYTES, "config.json")  # the same file, bounded as load read it
    full = parse_json(raw, str(config_path), MAX_CONFIG_BYTES)
    text = full.get("text_config", full)
    config = {k: text[k] for k in _every_key_read() if k in text}
    if "dtype" not in config and (full.get("dtype") or full.get("torch_dtype")):
        config["dtype"] = full.get("dtype") or full.get("torch_dtype")
    sha = hashlib.sha256(raw).hexdigest()
    source = (f"user/configs/{model_id}.json (byte-exact copy of {config_path.name}"
              f"{'; ' + note if note else ''}); sha256 {sha}" if user
              else f"{note or _shown_path(config_path)}; sha256 {sha}")
    entry = {"id": model_id, "title": title or model_id, "hf_repo": hf_repo or model_id, "revision": revision,
             "source": source, "wrapper_model_type": full.get("model_type"), "config": config}
    # the kept keys alone must give the same architecture (a field kvmath reads but KEYS lacks would differ);
    # the vision tower is read from the whole file (the copy the entry's source names), never from KEYS
    whole, kept = load_architecture(config_path), load_architecture(config)
    differ = [f.name for f in dataclasses.fields(whole)
              if f.compare and f.name not in ("name", "source", "vision") and getattr(whole, f.name) != getattr(kept, f.name)]
    if differ:
        raise KvMathError(f"{config_path.name}: the kept config keys give a different {', '.join(differ)}; "
                          "add the config field kvmath reads for it to KEYS in kvmath/book/model_chapter.py")
    try:
        if user:
            configs = facts.user_data_dir() / "configs"
            configs.mkdir(parents=True, exist_ok=True)
            (configs / f"{model_id}.json").write_bytes(raw)
            out_dir = facts.user_data_dir() / "models"
        out_dir.mkdir(parents=True, exist_ok=True)
        out = Path(out_dir) / f"{model_id}.json"
        out.write_text(json.dumps(entry, indent=1) + "\n")
    except OSError as e:  # a file, a device, /proc, a read-only or full disk, a name too long
        # $KVMATH_USER_DATA_DIR naming a file (or a device such as /dev/full) was an internal error
        raise KvMathError(f"cannot write the model to {str(e.filename)[:200]}: {e.strerror} (the user data folder is "
                          "$KVMATH_USER_DATA_DIR, else platformdirs.user_data_dir('kvmath'); it must be a folder)") from None
    facts.forget_models()
    return out


def _shown_path(path: Path) -> str:
    """A config's path as the facts cite it: relative to the repository when inside it (data/configs/...)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return path.name


def make_chapter(model: str, out: str | Path, *, title: str = "", template: Path | None = None,
                 execute: bool = False, book_docs: set[str] | None = None, **params) -> Path:
    """Write the chapter template for ``model`` (id or config.json path) to ``out`` (.ipynb).

    ``execute=True`` also runs it (outputs kept). ``book_docs``: the documents of the book the chapter is
    written into (``_toc.yml``'s files); the template's references to a document it lacks (the formula
    chapter's equations, the Errata page) are written as plain words, so a book of a few chapters builds
    without warnings. None: every document is there. ``template``: None reads ``notebooks/model_chapter.md``
    of :func:`book_root`. Returns the path written. Raises KvMathError if the
    model cannot be loaded (checked first, so the message is the loader's, not a cell traceback).
    """
    import jupytext
    import nbformat
    import papermill as pm

    from ..model.load import load_architecture

    arch = load_architecture(model)  # fail early with kvmath's message
    template = Path(template) if template is not None else book_root() / "notebooks" / "model_chapter.md"
    nb = jupytext.read(template)
    params = {"model": str(model), "title": title or title_of(str(model)) or arch.name, **params}
    if Path(str(model)).suffix == ".json":
        params["model"] = str(Path(model).resolve())  # the chapter runs from its own folder
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    from .execute import TIMEOUT_S

    nb = pm.execute_notebook(
        nb, None, parameters=params, kernel_name="python3", cwd=str(template.parent), progress_bar=False,
        log_output=False, prepare_only=not execute, execution_timeout=TIMEOUT_S,
    )
    titled = False
    slug = label_slug(params["model"])
    from .prose import conditions, keep_cell

    present = conditions(params["model"], arch)  # the template's if-<kind> cells: kept where the model has it
    nb.cells = [c for c in nb.cells if keep_cell(c.metadata.get("tags"), present)]
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        _label_cell(cell, slug)
        if book_docs is not None and cell.cell_type == "markdown":
            cell.source = _drop_missing_refs(cell.source, book_docs)
        if not titled and cell.cell_type == "markdown" and cell.source.startswith("# "):
            cell.source = f"# {params['title']}"  # the template's own paragraph is about the template
            titled = True
    nb.metadata.pop("papermill", None)
    nbformat.write(nb, out)
    return out


#: Placeholder the template writes in its cross-reference labels (``eq-MODELID-bytes-per-token``,
#: ``fig-MODELID-memory``): Sphinx labels are global to the book, and 22 chapters come from one
#: template, so :func:`make_chapter` replaces it with the model's :func:`label_slug`.
LABEL_PLACEHOLDER = "MODELID"


def label_slug(model: str) -> str:
    """The model's part of a chapter's labels: its id (or config file's folder / stem), lower case,
    every character other than a-z, 0-9 and '-' replaced by '-' (``qwen3.6-27b`` -> ``qwen3-6-27b``)."""
    import re

    p = Path(str(model))
    stem = p.parent.name if p.name == "config.json" else (p.stem if p.suffix == ".json" else str(model))
    return re.sub(r"[^a-z0-9-]", "-", stem.lower())


#: label prefix -> the document that defines it, for the template's references to other chapters
_FOREIGN_LABELS = {"eq-formula-": ("notebooks/formula", "the formula chapter's equation")}


def _drop_missing_refs(text: str, docs: set[str]) -> str:
    """``{eq}`` roles to a label of a document not in ``docs`` and ``{doc}`` roles to a missing document,
    written as their words."""
    import re

    def eq(m):
        label = m.group(1)
        for prefix, (doc, words) in _FOREIGN_LABELS.items():
            if label.startswith(prefix) and doc not in docs:
                return words
        return m.group(0)

    def doc(m):
        text, target = m.group(1), m.group(2).lstrip("/")
        return m.group(0) if target in docs else text.strip()

    text = re.sub(r"\{eq\}`([^`]+)`", eq, text)
    return re.sub(r"\{doc\}`([^`<]*)<([^`>]+)>`", doc, text)


def book_docs(toc: Path | None = None) -> set[str]:
    """Every document ``_toc.yml`` lists (root and files, without suffix); None: :func:`book_root`'s."""
    import re

    toc = Path(toc) if toc is not None else book_root() / "_toc.yml"
    return {m.group(1) for m in re.finditer(r"(?:file|root):\s*([^\s#]+)", toc.read_text())}


def _label_cell(cell, slug: str) -> None:
    """Replace :data:`LABEL_PLACEHOLDER` in a cell's Markdown and in its ``mystnb.figure`` metadata."""
    if cell.cell_type == "markdown" and LABEL_PLACEHOLDER in cell.source:
        cell.source = cell.source.replace(LABEL_PLACEHOLDER, slug)
    figure = cell.metadata.get("mystnb", {}).get("figure")
    if isinstance(figure, dict):
        for key in ("name", "caption"):
            if isinstance(figure.get(key), str):
                figure[key] = figure[key].replace(LABEL_PLACEHOLDER, slug)


def book_chapters(toc: Path | None = None) -> list[dict]:
    """The model chapters of the book: every ``notebooks/generated/<id>`` file in ``_toc.yml`` (None: the
    one of :func:`book_root`).

    Returns ``[{"model": id, "title": ..., "file": "notebooks/generated/<id>.ipynb"}]`` in TOC order.
    Raises KvMathError for an entry whose id kvmath has no facts for (run ``--add-model`` first).
    """
    import re

    from ..facts import known_models

    toc = Path(toc) if toc is not None else book_root() / "_toc.yml"
    known = known_models()
    out = []
    for m in re.finditer(r"file:\s*(" + re.escape(GENERATED) + r"[^\s#]+)", toc.read_text()):
        file = m.group(1).removesuffix(".ipynb")
        model_id = file[len(GENERATED):]
        if model_id not in known:
            raise KvMathError(
                f"_toc.yml lists {file} but kvmath has no model {model_id!r}; add it with "
                f"python -m kvmath.book.model_chapter --add-model CONFIG --id {model_id} --revision COMMIT (known: {', '.join(known)})"
            )
        out.append({"model": model_id, "title": title_of(model_id), "file": file + ".ipynb"})
    return out


class _Parser(argparse.ArgumentParser):
    """The command's parser: a failed write of --help is an error, not exit 0, and a usage error is one line
    (exit 2), as in every other command (kvmath.clitools)."""

    def _print_message(self, message, file=None):
        from ..clitools import print_message

        print_message(message, file)

    def error(self, message):
        from ..validate import one_line

        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def main(argv=None) -> int:
    p = _Parser(prog="python -m kvmath.book.model_chapter", description=__doc__.split("\n")[0])
    p.add_argument("--model", help="known model id or config.json path: write its chapter")
    p.add_argument("--title", default="")
    p.add_argument("--out", help="output .ipynb (default notebooks/generated/<id>.ipynb)")
    p.add_argument("--book", action="store_true", help="write every model chapter listed in _toc.yml")
    p.add_argument("--execute", action="store_true", help="run the chapter too (to check it outside the book)")
    p.add_argument("--no-execute", action="store_true",
                   help="with --book: write the chapters only (the book then shows them without outputs)")
    p.add_argument("--jobs", type=int, default=None, help="with --book: chapters executed at once (default: CPUs)")
    p.add_argument("--root", default=None, help="the book's folder (default: the working directory)")
    p.add_argument("--add-model", metavar="CONFIG",
                   help="add a model from its config.json: writes <user data folder>/models/<id>.json and a copy of "
                        "the file as configs/<id>.json (the folder: $KVMATH_USER_DATA_DIR, else "
                        "platformdirs.user_data_dir('kvmath'), on Linux ~/.local/share/kvmath)")
    p.add_argument("--id", help="the new model's id (with --add-model)")
    p.add_argument("--hf-repo", default="", help="its Hugging Face repo (with --add-model)")
    p.add_argument("--revision", default=None,
                   help="with --add-model, required: the Hub commit the config is from (read from a huggingface_hub "
                        "cache path .../snapshots/<commit>/config.json; 'unrecorded' if not known)")
    args = p.parse_args(argv)
    try:
        if args.add_model:
            if not args.id:
                raise KvMathError("--add-model needs --id, the new model's id")
            out = write_model_facts(args.add_model, args.id, title=args.title, hf_repo=args.hf_repo,
                                    revision=args.revision)
            print(f"wrote {out} and {out.parent.parent / 'configs' / out.name}; kvmath now knows {args.id!r}; "
                  f"add `- file: notebooks/generated/{args.id}` to _toc.yml for its chapter")
        elif args.book:
            root = book_root(args.root)
            written = []
            for ch in book_chapters(root / "_toc.yml"):
                path = make_chapter(ch["model"], root / ch["file"], title=ch["title"],
                                    template=root / "notebooks" / "model_chapter.md",
                                    book_docs=book_docs(root / "_toc.yml"))
                written.append(path)
                print("wrote", path.relative_to(root), flush=True)
            if not args.no_execute:
                # executed here, in parallel; _config.yml keeps myst-nb from running them again
                from .execute import execute_all

                t0 = time.perf_counter()
                execute_all(written, jobs=args.jobs, log=lambda line: print(line, flush=True))
                print(f"executed {len(written)} model chapters in {time.perf_counter() - t0:.1f} s", flush=True)
        elif args.model:
            stem = Path(args.model).parent.name if Path(args.model).name == "config.json" else Path(args.model).stem
            out = args.out or book_root(args.root) / "notebooks" / "generated" / f"{stem}.ipynb"
            template = book_root(args.root) / "notebooks" / "model_chapter.md"
            print("wrote", make_chapter(args.model, out, title=args.title, execute=args.execute, template=template))
        else:
            p.error("give --model, --book or --add-model")
    except KvMathError as e:
        print(f"kvmath.book.model_chapter: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from ..clitools import guarded

    sys.exit(guarded("python -m kvmath.book.model_chapter", main))
