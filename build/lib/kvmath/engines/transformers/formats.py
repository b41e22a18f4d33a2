"""transformers cache dtypes: the cache holds torch tensors in the model dtype."""

from __future__ import annotations

from ...formats import BF16, F16, F32, KVFormat, lookup as _lookup

TRANSFORMERS_FORMATS: dict[str, KVFormat] = {
    f.name: f
    for f in (
        KVFormat("bf16", "transformers", BF16, BF16, "torch.bfloat16 cache tensors", ("bfloat16",)),
        KVFormat("fp16", "transformers", F16, F16, "torch.float16 cache tensors", ("float16",)),
        KVFormat("f32", "transformers", F32, F32, "torch.float32 cache tensors", ("float32", "fp32")),
    )
}


def transformers_format(name: str) -> KVFormat:
    """The transformers cache dtype (the model's dtype). Raises KvMathError."""
    return _lookup(TRANSFORMERS_FORMATS, name, "transformers cache dtype")


