"""Write data/models/<id>.json: the config.json fields the math reads, with their source.

The published config.json files are in the repository's data/configs/ (copied byte for byte; repo,
revision and SHA-256 in data/configs/SOURCES.md). This script copies only the keys kvmath reads,
under their HF names, and records the repository, revision and the SHA-256 of the source file, so any
entry can be re-checked.

    python tools/extract_model_facts.py                   # data/configs -> data/models
    python tools/extract_model_facts.py SRC_DIR --out DIR  # other folders
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "data" / "configs"
OUT = ROOT / "data" / "models"


MODELS = {
    # id: (file, HF repo, revision or None, note, title)
    "qwen3.6-27b": ("Qwen__Qwen3.6-27B.json", "Qwen/Qwen3.6-27B",
                    "6a9e13bd6fc8f0983b9b99948120bc37f49c13e9", "byte-exact copy, recorded hash", "Qwen 3.6 27B"),
    "qwen3.6-35b-a3b": ("Qwen__Qwen3.6-35B-A3B.json", "Qwen/Qwen3.6-35B-A3B", None,
                        "byte-exact copy, recorded hash; revision not recorded", "Qwen 3.6 35B-A3B"),
    "gemma-4-31b": ("google__gemma-4-31B-it.json", "google/gemma-4-31B-it",
                    "842da3794eaa0b77d5f08bae87a17459d91ff475", "byte-exact copy, recorded hash", "Gemma 4 31B"),
    "gemma-4-26b-a4b": ("google__gemma-4-26B-A4B.json", "google/gemma-4-26B-A4B", None,
                        "base model config (no -it config found); no recorded hash", "Gemma 4 26B-A4B"),
    "llama-3.1-8b": ("meta-llama__Llama-3.1-8B-Instruct.json", "meta-llama/Llama-3.1-8B-Instruct",
                     "0e9e39f249a16976918f6564b8830bc894c89659", "byte-exact copy after de-indent, recorded hash",
                     "Llama 3.1 8B"),
    "gpt-oss-20b": ("openai__gpt-oss-20b.json", "openai/gpt-oss-20b",
                    "6cee5e81ee83917806bbde320786a8fb61efebee", "byte-exact copy, recorded hash", "gpt-oss-20b"),
}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src_dir", nargs="?", type=Path, default=SRC, help=f"config.json folder (default {SRC})")
    ap.add_argument("--out", type=Path, default=OUT, help=f"where to write <id>.json (default {OUT})")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from kvmath.book.model_chapter import write_model_facts

    for model_id, (fname, repo, rev, note, title) in MODELS.items():
        path = write_model_facts(args.src_dir / fname, model_id, title=title, hf_repo=repo,
                                 revision=rev or "unrecorded",
                                 note=f"data/configs/{fname} ({note})", out_dir=args.out)
        print("wrote", path)


if __name__ == "__main__":
    main()
