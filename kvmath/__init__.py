"""kvmath: exact KV-cache and recurrent-state memory of an LLM deployment, from its config.json.

    >>> import kvmath
    >>> d = kvmath.derive("qwen3.6-27b", engine="vllm", kv_format="fp8_e5m2", tp=2, max_ctx=262144)
    >>> d.bytes_per_token          # growing KV, bytes per token per card
    16384

Byte figures are exact integers; GB = 1e9 bytes and GiB = 2**30 bytes (``kvmath.units``).
"""

from .arch import Architecture, AttentionLayer, GatedDeltaNetLayer
from .config import known_models, load_architecture, resolve_model, supported_model_types
from .derive import Derivation, LayerGroup, derive
from .engines import ENGINES, Deployment, get_engine, valid_tp
from .errors import KvMathError
from .formats import KVFormat, all_formats, llamacpp_format, transformers_format, vllm_format
from .units import GB, GiB, MiB, fmt_bytes
from .llamacpp import llamacpp_memory
from .vllm_alloc import VllmPlan, plan as vllm_plan

__all__ = [
    "Architecture", "AttentionLayer", "GatedDeltaNetLayer", "known_models", "load_architecture",
    "resolve_model", "supported_model_types", "Derivation", "LayerGroup", "derive", "ENGINES",
    "Deployment", "get_engine", "valid_tp", "KvMathError", "KVFormat", "all_formats",
    "llamacpp_format", "transformers_format", "vllm_format", "GB", "GiB", "MiB", "fmt_bytes",
    "llamacpp_memory", "VllmPlan", "vllm_plan",
]
