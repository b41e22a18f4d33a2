"""kvmath: exact KV-cache and recurrent-state memory of an LLM deployment, from its config.json.

    >>> import kvmath
    >>> d = kvmath.derive("qwen3.6-27b", engine="vllm", kv_format="fp8_e5m2", tp=2, max_ctx=262144)
    >>> d.bytes_per_token          # growing KV, bytes per token per card
    16384

Byte figures are exact integers; GB = 1e9 bytes and GiB = 2**30 bytes (``kvmath.units``).
Layout: ``kvmath.model`` reads models, ``kvmath.engines.<engine>`` holds each engine's rules and
allocation, ``kvmath.derive`` sums an engine's allocation, ``kvmath.facts`` reads ``data/``.
"""

# Each public name is imported on first use (PEP 562): `import kvmath` and the commands load only what an
# answer needs. name -> (module, attribute).
_PUBLIC = {
    "Derivation": (".derive", "Derivation"), "derive": (".derive", "derive"),
    "ENGINES": (".engines", "ENGINES"), "LayerGroup": (".engines", "LayerGroup"),
    "StateTensor": (".engines", "StateTensor"), "all_formats": (".engines", "all_formats"),
    "get_engine": (".engines", "get_engine"), "valid_tp": (".engines", "valid_tp"),
    "llamacpp_format": (".engines.llamacpp.formats", "llamacpp_format"),
    "llamacpp_type": (".engines.llamacpp.formats", "llamacpp_type"),
    "llamacpp_memory": (".engines.llamacpp.memory", "llamacpp_memory"),
    "transformers_format": (".engines.transformers.formats", "transformers_format"),
    "VllmPlan": (".engines.vllm.alloc", "VllmPlan"), "vllm_plan": (".engines.vllm.alloc", "plan"),
    "vllm_format": (".engines.vllm.formats", "vllm_format"), "VllmSettings": (".engines.vllm.settings", "VllmSettings"),
    "KvMathError": (".errors", "KvMathError"), "known_models": (".facts", "known_models"),
    "resolve_model": (".facts", "resolve_model"), "KVFormat": (".formats", "KVFormat"),
    "Architecture": (".model", "Architecture"), "load_architecture": (".model", "load_architecture"),
    "supported_model_types": (".model", "supported_model_types"),
    "GB": (".units", "GB"), "GiB": (".units", "GiB"), "MiB": (".units", "MiB"), "fmt_bytes": (".units", "fmt_bytes"),
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    from importlib import import_module

    if name not in _PUBLIC:
        # the layer spec classes (kvmath.AttentionLayer, ...) are kvmath.model's own exports
        model = import_module(".model", __name__) if not name.startswith("_") else None
        if model is None or name not in model.__all__:
            raise AttributeError(f"module 'kvmath' has no attribute {name!r}")
        value = getattr(model, name)
        globals()[name] = value
        return value
    module, attr = _PUBLIC[name]
    value = getattr(import_module(module, __name__), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


class _Package(__import__("types").ModuleType):
    """kvmath itself. The submodule ``kvmath.derive`` shares its name with the function ``kvmath.derive``;
    after importing a submodule the import system sets it as the package's attribute, which would hide the
    function from every later ``kvmath.derive(...)`` in the process (the book's calculator runs both CLIs in
    one interpreter). A public name set to its own submodule keeps the public object instead."""

    def __setattr__(self, name, value):
        types = __import__("types")
        if isinstance(value, types.ModuleType) and name in _PUBLIC and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, _PUBLIC[name][1])
        super().__setattr__(name, value)


__import__("sys").modules[__name__].__class__ = _Package
