"""Many GPUs: pipeline, data and expert parallelism in the vLLM budget.

- Pipeline parallelism (``pipeline_parallel_size`` P): vLLM gives each stage a contiguous run of decoder
  layers (vllm/distributed/utils.py ``get_pp_indices``, 0.20.0-0.33.0): ``L // P`` each, the remainder
  ``L % P`` added one by one to the stages before the last, from the second-to-last backwards
  (``partitions[-i] += 1`` for i in 2 .. remainder + 1), unless ``VLLM_PP_LAYER_PARTITION`` ("a,b,c")
  names the counts (they must be P numbers summing to L). The first stage also holds the input
  embedding, the last the final norm, ``lm_head`` (its own copy of a tied embedding) and the sampler.
  Every stage (x TP ranks) is a worker with its own budget: it profiles its own layers, so its
  available KV memory is its own (``budget`` on the stage's layers with ``last_stage``).
- The pool: the engine core takes every worker's available memory and, in
  vllm/v1/core/kv_cache_utils.py ``get_kv_cache_configs``, sets every worker's ``num_blocks`` to the
  minimum over workers ("Change the num_blocks of each rank to the smallest among all ranks"); the
  pool is that many blocks of the whole model's tokens.
- Data parallelism (``data_parallel_size`` D): D independent engines, each with its own scheduler and
  pool (D pools of the same size when the ranks are alike); the deployment holds D times the tokens.
- Expert parallelism (``enable_expert_parallel``): experts are placed whole over the EP group of
  TP x D ranks instead of sliced over TP (vllm/model_executor/layers/fused_moe/layer.py
  ``determine_expert_map``); attention stays sharded over TP and replicated over D. Weights per rank:
  ``kvmath.engines.vllm.weights`` when the checkpoint's tensors are known; for a published checkpoint
  size, the expert share of the parameters (from the config's shapes) is split over TP x D and the
  rest over TP, an estimate said in the notes.
- MLA layers (DeepSeek, Kimi): the latent KV is not split over TP; every rank holds the whole cache
  (``kvmath.engines.vllm.alloc`` prices MLA pages per rank that way).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import KvMathError
from ...model.load import load_architecture
from ...validate import MAX_TP, check_positive

GIB = 2**30


def pp_partitions(num_hidden_layers: int, pp_size: int, layer_partition: str | None = None) -> list[int]:
    """Layers per pipeline stage as vllm/distributed/utils.py ``get_pp_indices`` splits them
    (``layer_partition``: the ``VLLM_PP_LAYER_PARTITION`` string). Raises KvMathError as vLLM raises
    ValueError."""
    L, P = int(num_hidden_layers), int(pp_size)
    if P < 1:
        raise KvMathError(f"pipeline_parallel_size must be >= 1, got {pp_size}")
    if layer_partition is not None:
        try:
            parts = [int(x) for x in str(layer_partition).split(",")]
        except ValueError:
            raise KvMathError(f"Invalid partition string: {layer_partition}") from None
        if len(parts) != P:
            raise KvMathError(f"len(partitions)={len(parts)} does not match pp_size={P}.")
        if min(parts) < 1:
            raise KvMathError(f"layer partition {layer_partition[:60]}: every pipeline stage needs at least one "
                              "decoder layer (a stage without layers is not priced)")
        if sum(parts) != L:
            raise KvMathError(f"sum(partitions)={sum(parts)} does not match num_hidden_layers={L}.")
        return parts
    if P > L:
        raise KvMathError(f"pipeline_parallel_size {P} is more than the model's {L} decoder layers")
    parts = [L // P] * P
    for i in range(2, L % P + 2):
        parts[-i] += 1
    return parts


def pp_indices(num_hidden_layers: int, pp_rank: int, pp_size: int, layer_partition: str | None = None
               ) -> tuple[int, int]:
    """(start_layer, end_layer) of stage ``pp_rank``, as ``get_pp_indices`` returns them."""
    parts = pp_partitions(num_hidden_layers, pp_size, layer_partition)
    start = sum(parts[:pp_rank])
    return start, start + parts[pp_rank]


def _embedding_bytes(arch, tp: int) -> int:
    """One vocabulary matrix per rank: padded vocab / TP x hidden x 2 B (embeddings stay 16-bit in these
    checkpoints)."""
    from .activation import padded_vocab

    return padded_vocab(arch.vocab_size or 0, tp) // tp * (arch.hidden_size or 0) * 2


def _tied(arch) -> bool:
    return arch.tie_word_embeddings


def expert_share(arch) -> float:
    """The experts' share of the decoder's parameters, from the config's shapes: routed experts
    ``3 x H x I_e x E`` per MoE layer against attention ``(Hq + 2 Hkv) d H + Hq d H`` (or the GDN
    projections) plus any dense / shared MLP ``3 x H x I`` per layer. An estimate (norms, routers and
    quantisation scales are left out)."""
    from .activation import moe_dims

    if not arch.is_moe:
        return 0.0
    H = arch.hidden_size
    m = moe_dims(arch)
    experts = attn = 0
    hq = arch.num_attention_heads
    for layer in arch.layers:
        experts += 3 * H * m["I_e"] * m["E"]
        if hasattr(layer, "head_dim"):
            attn += (hq + 2 * layer.num_kv_heads) * layer.head_dim * H + hq * layer.head_dim * H
        elif hasattr(layer, "num_v_heads"):
            attn += (2 * layer.num_k_heads * layer.k_head_dim + 3 * layer.num_v_heads * layer.v_head_dim) * H
        attn += 3 * H * (m["I_s"] + (arch.intermediate_size if m["dense_beside"] else 0))
    return experts / (experts + attn) if experts + attn else 0.0


@dataclass(frozen=True)
class ParallelBudget:
    """A deployment over TP x PP x DP cards. ``stages``: one ``Budget`` per pipeline stage (one TP rank of
    it); ``layers``: layers per stage; ``num_blocks``: the pool every worker gets (the minimum over the
    stages); ``pool_tokens``: tokens of one engine's pool; ``dp``: independent engines;
    ``total_pool_tokens`` = dp x pool_tokens; ``outcome``: boots only if every stage boots (else the first
    stage's failure); ``limiting_stage``: the stage with the fewest blocks."""

    tp: int
    pp: int
    dp: int
    enable_expert_parallel: bool
    layers: tuple
    stages: tuple
    num_blocks: int
    pool_tokens: int
    total_pool_tokens: int
    outcome: str
    limiting_stage: int
    notes: tuple

    @property
    def cards(self) -> int:
        return self.tp * self.pp * self.dp

    def frame(self):
        """One row per stage (pandas imported here)."""
        import pandas as pd

        return pd.DataFrame([{
            "stage": i, "layers": n, "weights GiB": b.weights / GIB, "activation GiB": b.profile_peak / GIB,
            "CUDA graphs GiB": b.cudagraph / GIB, "available KV GiB": b.available_kv / GIB,
            "blocks": b.plan.num_blocks if b.plan else 0, "outcome": b.outcome}
            for i, (n, b) in enumerate(zip(self.layers, self.stages))])


def parallel_budget(model, *, tp: int = 1, pp: int = 1, dp: int = 1, enable_expert_parallel: bool = False,
                    layer_partition: str | None = None, **kw) -> ParallelBudget:
    """Each pipeline stage's own budget (``kvmath.engines.vllm.budget.budget`` on the stage's layers, with
    its weights: the decoder share of the per-rank weights in proportion to its layers, the embedding on
    the first stage, lm_head on the last), the pool as vLLM unifies it, and D data-parallel copies.
    Other keyword arguments go to ``budget``. Raises KvMathError."""
    from .budget import budget

    tp = check_positive(tp, "tp", maximum=MAX_TP)
    pp = check_positive(pp, "pipeline_parallel_size", maximum=MAX_TP)
    dp = check_positive(dp, "data_parallel_size", maximum=MAX_TP)
    arch = load_architecture(model)
    notes = []
    from .budget import _own_checkpoint

    # the checkpoint's own tensors split exactly over TP x DP ranks (weights_per_rank); a published size by the
    # experts' share of the config's shapes
    exact = kw.get("weights_gb_total") is None and _own_checkpoint(arch, kw.get("weights_variant"))
    if exact and enable_expert_parallel and dp > 1:
        kw = dict(kw, data_parallel_size=dp)
    whole = budget(model, tp=tp, enable_expert_parallel=enable_expert_parallel, **kw)
    W = whole.weights
    if enable_expert_parallel and arch.is_moe and dp > 1 and not exact:
        share = expert_share(arch)
        W = round(W * (1 - share) + W * share / dp)
        notes.append(f"expert parallelism over TP x DP = {tp * dp} ranks: the experts' share of the weights "
                     f"({100 * share:.0f} %, from the config's shapes) split {dp} ways more (an estimate)")
    if pp == 1:
        b = whole if W == whole.weights else budget(model, tp=tp, enable_expert_parallel=enable_expert_parallel,
                                                     weights_bytes=W, **kw)
        blocks = b.plan.num_blocks if b.plan and b.boots else 0
        return ParallelBudget(tp, 1, dp, enable_expert_parallel, (arch.num_hidden_layers,), (b,), blocks,
                              b.pool_tokens, dp * b.pool_tokens, b.outcome, 0, tuple(notes))
    parts = pp_partitions(arch.num_hidden_layers, pp, layer_partition)
    E = _embedding_bytes(arch, tp)
    E_out = E  # lm_head, or the last stage's own copy of a tied embedding
    body = W - E - (0 if _tied(arch) else E_out)
    if body <= 0:
        body, E, E_out = W, 0, 0
    stages, start = [], 0
    for i, n in enumerate(parts):
        sub = replace(arch, layers=tuple(arch.layers[start:start + n]))
        start += n
        w = round(body * n / arch.num_hidden_layers) + (E if i == 0 else 0) + (E_out if i == pp - 1 else 0)
        stages.append(budget(sub, tp=tp, enable_expert_parallel=enable_expert_parallel, weights_bytes=w,
                             last_stage=(i == pp - 1), pipeline_parallel_size=pp, **kw))
    blocks = [s.plan.num_blocks if s.plan and s.available_kv > 0 else 0 for s in stages]
    lim = min(range(pp), key=lambda i: blocks[i])
    nb = blocks[lim]
    bad = [s for s in stages if not s.boots]
    outcome = bad[0].outcome if bad else "boots"
    # tokens: the limiting stage's pool, scaled from its own blocks to the unified block count
    ls = stages[lim]
    tokens = ls.pool_tokens * nb // ls.plan.num_blocks if ls.plan and ls.plan.num_blocks and not bad else 0
    notes.append(f"pipeline stages of {', '.join(map(str, parts))} layers (vLLM get_pp_indices); every worker gets "
                 f"the smallest stage's {nb:,} blocks (kv_cache_utils.get_kv_cache_configs)")
    return ParallelBudget(tp, pp, dp, enable_expert_parallel, tuple(parts), tuple(stages), nb, tokens, dp * tokens,
                          outcome, lim, tuple(notes))


__all__ = ["ParallelBudget", "expert_share", "parallel_budget", "pp_indices", "pp_partitions"]
