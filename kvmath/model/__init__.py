"""Models as kvmath reads them: per-layer cache specs (``specs``), the HF config rules (``hf``), GGUF
headers (``gguf``) and the one entry point (``load.load_architecture``). Nothing outside this package
reads a config.json or a GGUF file."""

from .load import load_architecture
from . import specs
from .specs import *  # noqa: F403  (the spec classes, Architecture and the layer type names)
from .hf import supported_model_types
from . import hf_families  # noqa: F401  (registers the remaining families in hf's table; kvmath.model.hf
                           # is always imported through this package, so every reader sees them)
from . import hf_hybrids  # noqa: F401  (hybrid / state-space families, registered the same way)
from . import hf_batch_b1  # noqa: F401  (issue 20 session-34 batch B1 families and wrappers, the same way)

__all__ = ["load_architecture", "supported_model_types", *specs.__all__]
