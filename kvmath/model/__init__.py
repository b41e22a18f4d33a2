"""Models as kvmath reads them: per-layer cache specs (``specs``), the HF config rules (``hf``), GGUF
headers (``gguf``) and the one entry point (``load.load_architecture``). Nothing outside this package
reads a config.json or a GGUF file."""

from .load import load_architecture
from .specs import (
    FULL, LINEAR, MLP, MOE, SLIDING, Architecture, AttentionLayer, GatedDeltaNetLayer, KDALayer, MLALayer,
    Mamba2Layer, NoCacheLayer,
)
from .hf import supported_model_types

__all__ = [
    "load_architecture", "supported_model_types", "Architecture", "AttentionLayer", "GatedDeltaNetLayer",
    "KDALayer", "MLALayer", "Mamba2Layer", "NoCacheLayer", "FULL", "LINEAR", "MLP", "MOE", "SLIDING",
]
