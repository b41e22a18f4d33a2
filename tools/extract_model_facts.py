"""Write kvmath/data/models/<id>.json: the config.json fields the math reads, with their source.

The published config.json files live in the project's reference folder (shared/hf-configs), not in
this repository. This script copies only the keys kvmath reads, under their HF names, and records
the repository, revision and the SHA-256 of the source file, so any entry can be re-checked.

    python tools/extract_model_facts.py ../shared/hf-configs
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "kvmath" / "data" / "models"

KEYS = [
    "model_type", "dtype", "torch_dtype", "num_hidden_layers", "hidden_size", "intermediate_size",
    "vocab_size", "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
    "layer_types", "full_attention_interval", "sliding_window", "use_sliding_window",
    "max_window_layers",
    # Gemma 4
    "global_head_dim", "num_global_key_value_heads", "attention_k_eq_v", "num_kv_shared_layers",
    "use_bidirectional_attention",
    # Qwen 3.5 / 3.6 Gated DeltaNet
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "mamba_ssm_dtype", "mtp_num_hidden_layers",
    # mixture of experts (weights, dispatch)
    "num_experts", "num_experts_per_tok", "top_k_experts", "moe_intermediate_size",
    "shared_expert_intermediate_size", "enable_moe_block", "tie_word_embeddings",
]

MODELS = {
    # id: (file, HF repo, revision or None, note)
    "qwen3.6-27b": ("Qwen__Qwen3.6-27B.json", "Qwen/Qwen3.6-27B",
                    "6a9e13bd6fc8f0983b9b99948120bc37f49c13e9", "byte-exact copy, recorded hash"),
    "qwen3.6-35b-a3b": ("Qwen__Qwen3.6-35B-A3B.json", "Qwen/Qwen3.6-35B-A3B", None,
                        "byte-exact copy, recorded hash; revision not recorded"),
    "gemma-4-31b": ("google__gemma-4-31B-it.json", "google/gemma-4-31B-it",
                    "842da3794eaa0b77d5f08bae87a17459d91ff475", "byte-exact copy, recorded hash"),
    "gemma-4-26b-a4b": ("google__gemma-4-26B-A4B.json", "google/gemma-4-26B-A4B", None,
                        "base model config (no -it config found); no recorded hash"),
}


def main(src_dir: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for model_id, (fname, repo, rev, note) in MODELS.items():
        raw = (Path(src_dir) / fname).read_bytes()
        full = json.loads(raw)
        text = full.get("text_config", full)
        config = {k: text[k] for k in KEYS if k in text}
        if "dtype" not in config and full.get("dtype"):
            config["dtype"] = full["dtype"]
        entry = {
            "id": model_id,
            "hf_repo": repo,
            "revision": rev or "unrecorded",
            "source": f"shared/hf-configs/{fname} ({note}); sha256 {hashlib.sha256(raw).hexdigest()}",
            "wrapper_model_type": full.get("model_type"),
            "config": config,
        }
        (OUT / f"{model_id}.json").write_text(json.dumps(entry, indent=1) + "\n")
        print("wrote", OUT / f"{model_id}.json")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/hf-configs")
