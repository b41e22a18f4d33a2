"""The SGLang section of a model chapter: what the same KV memory holds in SGLang's token pool, in vLLM's
blocks and in llama.cpp's cells.

``sglang_table(model)`` returns one row per memory figure (GiB per card): SGLang's ``max_total_num_tokens``
(the pool the release builds from that memory, :meth:`kvmath.engines.sglang.SglangEngine.pools_for`), vLLM's
blocks and "GPU KV cache size" tokens for the same bytes (``kvmath.engines.vllm.alloc.plan``), and llama.cpp's
cells at f16 (the memory over llama.cpp's growing bytes per cell, one sequence; a model whose llama.cpp cache
also holds sliding windows or recurrent state gets None, since its cells are not a division). Every figure is
computed by the engines at build time; nothing here restates an engine's rule.
"""

from __future__ import annotations

from ..units import GiB


def sglang_table(model: str, *, memories_gib=(4, 8, 16, 32), tp: int = 1, context: int = 32768,
                 sglang_version: str | None = None) -> list[dict]:
    """Rows ``{"kv_memory_gib", "sglang_tokens", "sglang_state_slots", "vllm_blocks", "vllm_block_size",
    "vllm_tokens", "llamacpp_cells"}`` for ``model`` (a kvmath id) at TP ``tp`` and ``context`` tokens.

    Raises KvMathError for a model or setting an engine refuses (the message names the engine)."""
    from ..engines import get_engine
    from ..errors import KvMathError
    from ..model.load import load_architecture

    arch = load_architecture(model)
    sgl = get_engine("sglang")
    s = sgl.settings(arch, max_ctx=context, max_num_seqs=1, tp=tp, kv_format=None, sglang_version=sglang_version)
    vllm = get_engine("vllm")
    vs = vllm.settings(arch, max_ctx=context, max_num_seqs=1, tp=tp, kv_format=None)
    from ..engines.vllm.alloc import plan

    try:
        from ..derive import derive

        d = derive(arch, engine="llama.cpp", kv_format="f16", max_ctx=context, max_num_seqs=1)
        per_cell = d.bytes_per_token if not (d.sliding_bytes or d.state_bytes) else None
    except KvMathError:
        per_cell = None
    rows = []
    for gib in memories_gib:
        b = int(gib * GiB)
        p = sgl.pools_for(arch, s, b / GiB)
        vp = plan(arch, b, vs)
        rows.append({"kv_memory_gib": gib, "sglang_tokens": p.max_total_num_tokens,
                     "sglang_state_slots": p.mamba_size or None, "vllm_blocks": vp.num_blocks,
                     "vllm_block_size": vp.block_size, "vllm_tokens": vp.gpu_kv_cache_tokens,
                     "llamacpp_cells": (b // per_cell) if per_cell else None})
    return rows
