"""kvmath: exact KV-cache and recurrent-state memory of an LLM deployment, from its config.json.

    >>> import kvmath
    >>> d = kvmath.derive("qwen3.6-27b", engine="vllm", kv_format="fp8_e5m2", tp=2, max_ctx=262144)
    >>> d.bytes_per_token          # growing KV, bytes per token per card
    16384

Byte figures are exact integers; GB = 1e9 bytes and GiB = 2**30 bytes (``kvmath.units``).
Layout: ``kvmath.model`` reads models, ``kvmath.engines.<engine>`` holds each engine's rules and
allocation, ``kvmath.derive`` sums an engine's allocation, ``kvmath.facts`` reads ``data/``.
"""

from .derive import Derivation, derive
from .engines import ENGINES, LayerGroup, StateTensor, all_formats, get_engine, valid_tp
from .engines.llamacpp.formats import llamacpp_format, llamacpp_type
from .engines.llamacpp.memory import llamacpp_memory
from .engines.transformers.formats import transformers_format
from .engines.vllm.alloc import VllmPlan, plan as vllm_plan
from .engines.vllm.formats import vllm_format
from .engines.vllm.settings import VllmSettings
from .errors import KvMathError
from .facts import known_models, resolve_model
from .formats import KVFormat
from .model import Architecture, AttentionLayer, GatedDeltaNetLayer, load_architecture, supported_model_types
from .units import GB, GiB, MiB, fmt_bytes

__all__ = [
    "Architecture", "AttentionLayer", "GatedDeltaNetLayer", "known_models", "load_architecture",
    "resolve_model", "supported_model_types", "Derivation", "LayerGroup", "StateTensor", "derive", "ENGINES",
    "get_engine", "valid_tp", "KvMathError", "KVFormat", "all_formats", "llamacpp_format", "llamacpp_type",
    "transformers_format", "vllm_format", "VllmSettings", "GB", "GiB", "MiB", "fmt_bytes", "llamacpp_memory",
    "VllmPlan", "vllm_plan",
]
