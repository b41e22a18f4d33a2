"""The activation peak vLLM's profile run measures, term by term, from the tensors it allocates.

What vLLM measures (vllm/v1/worker/gpu_worker.py ``determine_available_memory``, 0.20.0-0.33.0, and
vllm/utils/mem_utils.py ``memory_profiling``): the worker takes a memory snapshot in ``init_device``
*after* NCCL is initialised, so the CUDA context, NCCL's communicators and the custom all-reduce
buffers are outside ``requested = ceil(total x gpu_memory_utilization)``. Then

    available_kv = requested - (weights + torch_peak_increase + non_torch_increase) - cudagraph_estimate

- ``torch_peak_increase``: PyTorch's ``allocated_bytes.all.peak`` during ``profile_run`` above what was
  allocated before it (the weights and the runner's persistent input buffers are already there);
  allocated, not reserved, so fragmentation does not count. This module derives it (``profile_peak``).
- ``non_torch_increase``: memory outside PyTorch's allocator allocated after the snapshot (kernel
  modules loaded by the first forward, cuBLAS / cuDNN handles, NCCL's lazily created buffers on the
  first all-reduce): no tensor shape gives it; the budget fits it (``const_gib``, ``per_inv_tp_gib``).
- ``cudagraph_estimate`` (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, default "1" in every release
  0.20.0-0.33.0, so subtracted *before* the KV cache is sized): gpu_model_runner.py
  ``profile_cudagraph_memory`` captures the two largest graphs of each mode and charges
  ``first_capture + (n - 1) x second_capture``. The first capture holds the graph pool's activations
  of the largest capture size (derived here as the forward peak at that size); the per-graph part is
  fitted (``per_graph_mib``) times the number of graphs (``capture_sizes``, vllm/config/vllm.py
  ``_set_cudagraph_sizes``).

The profile run (vllm/v1/worker/gpu_model_runner.py ``profile_run``, 0.24.0; the same structure in
0.20.0-0.33.0):

1. multimodal models: the encoder runs on ``max_mm_items_per_batch`` dummy items of the largest
   modality (vllm/multimodal/encoder_budget.py ``_get_max_items``: ``encoder_budget //
   max_tokens_per_item``, encoder budget = ``max_num_batched_tokens`` by default,
   vllm/v1/core/encoder_cache_manager.py ``compute_mm_encoder_budget``) and its outputs are kept in
   the encoder cache through the forward (``encoder_terms``);
2. ``_dummy_run(max_num_tokens, is_profile=True)``: one forward of ``T = max_num_batched_tokens``
   tokens with ``attn_metadata`` None, so the attention kernels return without computing and the
   GDN layers skip the chunked kernels (qwen_gdn_linear_attn.py ``_forward_core`` returns early; its
   ``_warmup_prefill_kernels`` runs them once on T = 64 tokens). What is allocated is the
   projections, the MLP / fused-MoE intermediates and the residual stream (``forward_terms``);
3. ``_dummy_sampler_run``: logits for ``max_num_seqs`` rows and the sampler twice (FlashInfer, then
   ``forward_native`` warmed with a generator): fp32 logits and the top-k/top-p temporaries
   (vllm/v1/sample/sampler.py, ops/topk_topp_sampler.py; ``sampler_terms``).

Every term is an exact integer of bytes per card, from the Architecture (hidden size, vocabulary,
experts, layers) and the settings; the config facts not on the Architecture (intermediate sizes,
top-k, heads) come from the parsed config kept on it, or the known model's kept config
(``kvmath.facts``). Dtype: the model's activation dtype (bf16 / fp16: 2 B) whatever the weights'
quantisation (the int4 / fp8 GEMMs of these checkpoints write 16-bit outputs).
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import facts

ACT_BYTES = 2  # bf16 / fp16 activations
FLA_CHUNK = 64  # fla/ops chunk_size; _warmup_prefill_kernels T = FLA_CHUNK_SIZE
MAX_CAPTURE = 512  # _set_cudagraph_sizes: min(max_num_seqs * (1 + spec) * 2, 512)


@dataclass(frozen=True)
class Term:
    """One tensor (or a set live together) of the profile run: ``bytes`` per card, the ``shape`` in words,
    the ``phase`` it belongs to (encoder, forward, sampler, cudagraph) and the vLLM ``source``."""

    name: str
    bytes: int
    shape: str
    phase: str
    source: str


def _cfg(arch) -> dict:
    """The config keys beyond the Architecture: the parsed config kept on it (``extras['hf_config']``),
    else the known model's kept config; a multimodal wrapper's ``text_config`` merged over it."""
    c = arch.extras.get("hf_config")
    if not isinstance(c, dict):
        try:
            c = facts.resolve_model(arch.name).get("config", {})
        except Exception:  # noqa: BLE001 - an unknown name: no extra keys
            c = {}
    t = c.get("text_config")
    return dict(c, **t) if isinstance(t, dict) else dict(c)


def _vision_cfg(arch) -> dict | None:
    """The vision tower's config: from the parsed config, or the known model's reference config file."""
    c = arch.extras.get("hf_config")
    if isinstance(c, dict):
        return c.get("vision_config") if isinstance(c.get("vision_config"), dict) else None
    try:
        m = facts.resolve_model(arch.name)
    except Exception:  # noqa: BLE001
        return None
    src = str(m.get("source", ""))
    if not src.startswith("data/configs/"):
        return None
    import json

    try:
        raw = json.loads(facts.reference_config_path(src.split()[0].split("/")[-1]).read_text())
    except (OSError, ValueError):
        return None
    v = raw.get("vision_config")
    return dict(v, _soft_tokens=raw.get("vision_soft_tokens_per_image")) if isinstance(v, dict) else None


def _int(c: dict, *keys, default: int = 0) -> int:
    for k in keys:
        v = c.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return default


def moe_dims(arch) -> dict:
    """Routed experts ``E``, experts per token ``top_k``, expert intermediate ``I_e``, shared-expert
    intermediate ``I_s`` (0 when none), and whether a dense MLP runs beside the experts (Gemma 4)."""
    c = _cfg(arch)
    return {"E": arch.num_experts, "top_k": _int(c, "num_experts_per_tok", "top_k_experts", "moe_top_k"),
            "I_e": _int(c, "moe_intermediate_size", "intermediate_size"),
            "I_s": _int(c, "shared_expert_intermediate_size") or (
                _int(c, "n_shared_experts") * _int(c, "moe_intermediate_size")),
            "dense_beside": bool(c.get("enable_moe_block")) and _int(c, "intermediate_size") > 0}


def forward_terms(arch, tokens: int, tp: int = 1, *, enable_expert_parallel: bool = False) -> list[Term]:
    """The largest live set of each layer kind in the dummy forward of ``tokens`` tokens, per card.

    Live through every layer: ``hidden_states`` and ``residual`` [T, H] (the fused add-RMSNorm keeps both;
    vllm/model_executor/layers/layernorm.py). Each layer adds its own transient set; the forward's peak
    is the residual stream plus the largest set (``profile_peak``):

    - attention (full / sliding; model files qwen3_5.py, gemma4.py, llama.py): ``qkv_proj`` output
      [T, (Hq + 2 Hkv) d / TP] (Gemma 4's k_eq_v layers: Hq + Hkv), the normed / rotated q and k
      [T, (Hq + Hkv) d / TP], the attention output [T, Hq d_v / TP] (the backend fills it with zeros in a
      profile run), then ``o_proj`` [T, H];
    - GDN (qwen_gdn_linear_attn.py ``forward_cuda``): ``in_proj_qkvz`` [T, (2 Hk dk + 2 Hv dv) / TP],
      ``in_proj_ba`` [T, 2 Hv / TP], ``core_attn_out`` and the gated norm's output [T, Hv dv / TP] each;
      the chunked kernels are skipped (``_forward_core`` returns early without metadata);
    - dense MLP (layers/activation.py ``SiluAndMul`` / ``GeluAndMul``): ``gate_up_proj`` [T, 2 I / TP] and
      the activation [T, I / TP];
    - fused MoE (layers/fused_moe/fused_moe.py ``fused_experts_impl``, 0.24.0, no chunking): router
      logits [T, E], top-k weights (fp32) and ids (int32) [T, k], ``cache13`` [T k max(N, H)] with
      N = 2 I_e / TP (experts whole under expert parallelism), ``cache2`` [T k, N / 2] and the output
      [T, H]; a shared expert's gate_up + activation [T, 3 I_s / TP] beside it; Gemma 4's dense MLP
      output [T, H] kept while the experts run;
    - all-reduce (TP > 1): the custom all-reduce writes out of place, one more [T, H].
    """
    T, e = int(tokens), ACT_BYTES
    if T <= 0:
        return []
    c = _cfg(arch)
    H = arch.hidden_size or _int(c, "hidden_size")
    out: list[Term] = [Term("residual stream", 2 * T * H * e, f"2 x [{T}, {H}]", "forward",
                            "layernorm.py fused add-RMSNorm keeps hidden_states and residual")]
    attn = [layer for layer in arch.attention_layers()]
    if attn:
        hq = arch.num_attention_heads or _int(c, "num_attention_heads")

        def attn_bytes(layer):
            d, dv, hkv = layer.head_dim, layer.v_head_dim, layer.num_kv_heads
            qh, kh = max(hq // tp, 1), max(hkv // tp, 1)
            qkv = T * (qh * d + kh * d * (1 if layer.k_eq_v else 2)) * e
            return qkv + T * (qh + kh) * d * e + T * qh * dv * e, d, hkv

        b, d, hkv = max(attn_bytes(layer) for layer in attn)
        out.append(Term("attention (qkv, q/k normed, output)", b,
                        f"[{T}, ({hq} + 2x{hkv}) x {d} / {tp}] + [{T}, ({hq} + {hkv}) x {d} / {tp}] + [{T}, {hq} x {d} / {tp}]",
                        "forward", "qkv_proj, rotary / q-k norm, attention output (gpu_model_runner _dummy_run, "
                                   "attn_metadata None)"))
    gdn = arch.linear_layers()
    if gdn:
        g = gdn[0]
        hk, hv = g.num_k_heads // tp, g.num_v_heads // tp
        qkvz = T * (2 * hk * g.k_head_dim + 2 * hv * g.v_head_dim) * e
        b = qkvz + T * 2 * hv * e + 2 * T * hv * g.v_head_dim * e
        out.append(Term("GDN projections (qkvz, ba, core out, norm out)", b,
                        f"[{T}, (2x{g.num_k_heads}x{g.k_head_dim} + 2x{g.num_v_heads}x{g.v_head_dim}) / {tp}] + ...",
                        "forward", "mamba/gdn/qwen_gdn_linear_attn.py forward_cuda (chunked kernels skipped)"))
    I = _int(c, "intermediate_size")
    m = moe_dims(arch)
    if arch.is_moe and m["top_k"]:
        k, E = m["top_k"], m["E"]
        N = 2 * m["I_e"] // (1 if enable_expert_parallel else tp)
        b = T * E * e + T * k * 8 + T * k * max(N, H) * e + T * k * (N // 2) * e + T * H * e
        if m["I_s"]:
            b += T * 3 * m["I_s"] // tp * e + T * H * e
        if m["dense_beside"]:
            b += T * H * e
        out.append(Term("fused MoE (router, cache13, cache2, output)", b,
                        f"[{T}, {E}] + [{T}x{k}, max({N}, {H})] + [{T}x{k}, {N // 2}] + [{T}, {H}]", "forward",
                        "layers/fused_moe/fused_moe.py fused_experts_impl intermediate caches"))
        if m["dense_beside"]:
            out.append(Term("dense MLP (gate_up, act)", T * 3 * I // tp * e, f"[{T}, 3 x {I} / {tp}]", "forward",
                            "gemma4.py dense MLP beside the experts"))
    elif I:
        out.append(Term("MLP (gate_up, act)", T * 3 * I // tp * e, f"[{T}, 2 x {I} / {tp}] + [{T}, {I} / {tp}]",
                        "forward", "gate_up_proj (MergedColumnParallelLinear) + SiluAndMul / GeluAndMul"))
    if tp > 1:
        out.append(Term("all-reduce output", T * H * e, f"[{T}, {H}]", "forward",
                        "distributed/device_communicators custom all-reduce (out of place)"))
    return out


def forward_peak_bytes(arch, tokens: int, tp: int = 1, **kw) -> int:
    """Residual stream + all-reduce output + the largest layer set (``forward_terms``)."""
    terms = forward_terms(arch, tokens, tp, **kw)
    always = sum(t.bytes for t in terms if t.name in ("residual stream", "all-reduce output"))
    layer = [t.bytes for t in terms if t.name not in ("residual stream", "all-reduce output")]
    return always + max(layer, default=0)


def gdn_warmup_bytes(arch, tp: int = 1) -> int:
    """The FLA chunked buffers the profile run does allocate: ``_warmup_prefill_kernels`` on one chunk of
    T = 64 tokens (qwen_gdn_linear_attn.py, 0.20.0-0.33.0): ``h`` [1, 1, Hv, dk, dv] and ``v_new``
    [1, 64, Hv, dv] in bf16 (chunk_delta_h.py). Hv = value heads per rank."""
    gdn = arch.linear_layers()
    if not gdn:
        return 0
    g = gdn[0]
    hv = g.num_v_heads // tp
    return hv * g.k_head_dim * g.v_head_dim * 2 + FLA_CHUNK * hv * g.v_head_dim * 2


def padded_vocab(vocab: int, tp: int = 1) -> int:
    """``VocabParallelEmbedding`` pads the vocabulary to a multiple of 64 per rank
    (layers/vocab_parallel_embedding.py ``pad_vocab_size``, DEFAULT_VOCAB_PADDING_SIZE 64)."""
    per = -(-vocab // tp)
    return -(-per // 64) * 64 * tp


def sampler_terms(arch, max_num_seqs: int, tp: int = 1, *, num_sms: int = 128) -> list[Term]:
    """``_dummy_sampler_run`` (gpu_model_runner.py, 0.24.0) on S = ``max_num_seqs`` rows, per card:

    - ``rand_like`` of the last hidden states [S, H] and the logits [S, V] in the activation dtype
      (``LogitsProcessor``: lm_head on [S, V / TP], gathered to every rank's full padded vocabulary);
    - ``Sampler.forward``: ``logits.to(float32)`` [S, V] fp32 (sampler.py);
    - ``TopKTopPSampler.forward_native`` (ops/topk_topp_sampler.py), run as the second warm-up: with
      S < 8 the PyTorch path ``apply_top_k_top_p_pytorch``: ``sort`` values fp32 + indices int64, the
      top-k mask (bool), ``probs_sort`` fp32 (cumsum in place) and the top-p mask (bool): 18 B per
      element; with S >= 8 the Triton path, in place, with a cached [min(S, SMs), V] fp32 buffer; then
      ``softmax`` fp32 and the exponential noise ``q`` fp32 (``random_sample``): 8 B per element.
    """
    S = int(max_num_seqs)
    H = arch.hidden_size
    V = padded_vocab(arch.vocab_size or 0, tp)
    if S <= 0 or not V:
        return []
    out = [Term("last hidden states (rand_like)", S * H * ACT_BYTES, f"[{S}, {H}]", "sampler",
                "gpu_model_runner.py _dummy_sampler_run torch.rand_like"),
           Term("logits (model dtype)", S * V * ACT_BYTES, f"[{S}, {V}]", "sampler",
                "layers/logits_processor.py, gathered over TP"),
           Term("logits fp32", S * V * 4, f"[{S}, {V}] fp32", "sampler", "v1/sample/sampler.py logits.to(float32)")]
    if S < 8:
        top = S * V * (4 + 8 + 1 + 4 + 1)
        shape = f"[{S}, {V}] x (4 + 8 + 1 + 4 + 1) B"
        src = "ops/topk_topp_sampler.py apply_top_k_top_p_pytorch (sort, masks, probs_sort)"
    else:
        top = min(S, num_sms) * V * 4
        shape = f"[min({S}, SMs), {V}] fp32"
        src = "ops/topk_topp_triton.py apply_top_k_top_p_triton buffer"
    out.append(Term("top-k/top-p temporaries", top, shape, "sampler", src))
    out.append(Term("softmax + exponential noise", S * V * 8, f"2 x [{S}, {V}] fp32", "sampler",
                    "ops/topk_topp_sampler.py random_sample (probs, q)"))
    return out


def sampler_peak_bytes(arch, max_num_seqs: int, tp: int = 1, **kw) -> int:
    """Hidden + logits + fp32 logits + the larger of the top-k/top-p phase and the sampling phase."""
    t = {x.name: x.bytes for x in sampler_terms(arch, max_num_seqs, tp, **kw)}
    if not t:
        return 0
    return (t["last hidden states (rand_like)"] + t["logits (model dtype)"] + t["logits fp32"]
            + max(t["top-k/top-p temporaries"], t["softmax + exponential noise"]))


def encoder_terms(arch, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                  tp: int = 1) -> list[Term]:
    """The multimodal encoder's profiling budget (images, the modality with the most tokens per item of
    these models): ``items = max(1, min(budget // tokens_per_item, S x max(1, min(limit, L // tokens_per_item))))``
    with budget = max(max_num_batched_tokens, tokens_per_item) (encoder_cache_manager.py
    ``compute_mm_encoder_budget``; encoder_budget.py ``_get_max_items``; the per-prompt limit taken as
    unbounded). Gemma 4 (gemma4_mm.py): ``tokens_per_item`` = the vision config's
    ``default_output_length`` soft tokens, ``pooling_kernel_size^2`` patches each. Terms: the vision tower's
    largest live set (hidden and residual [P, Hv] plus its MLP [P, 2 Iv] + [P, Iv], P = items x patches;
    the vision tower is replicated on every TP rank in these models' vLLM files) and the encoder cache
    [items x tokens_per_item, H] kept through the forward."""
    v = _vision_cfg(arch)
    if not v:
        return []
    tok = _int(v, "default_output_length", "_soft_tokens")
    pool = _int(v, "pooling_kernel_size", default=1)
    hv, iv = _int(v, "hidden_size"), _int(v, "intermediate_size")
    if not (tok and hv and iv):
        return []
    budget = max(int(max_num_batched_tokens), tok)
    items = max(1, min(budget // tok, int(max_num_seqs) * max(1, int(max_model_len) // tok)))
    P = items * tok * pool * pool
    e = ACT_BYTES
    return [Term("vision tower (hidden, residual, MLP)", P * (2 * hv + 3 * iv) * e,
                 f"{items} items x {tok * pool * pool} patches: 2 x [{P}, {hv}] + [{P}, 3 x {iv}]", "encoder",
                 "gpu_model_runner.py profile_run embed_multimodal on the dummy batch"),
            Term("encoder cache outputs", items * tok * arch.hidden_size * e,
                 f"[{items} x {tok}, {arch.hidden_size}]", "encoder", "gpu_model_runner.py self.encoder_cache")]


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, num_speculative_tokens: int = 0) -> list[int]:
    """vLLM's default CUDA graph capture sizes (vllm/config/vllm.py ``_set_cudagraph_sizes``, identical
    0.20.0-0.33.0): max = min(max_num_seqs x (1 + spec) x 2, 512, max_num_batched_tokens); sizes
    [1, 2, 4] + range(8, min(max + 1, 256), 8) + range(256, max + 1, 16), plus max_num_batched_tokens
    when it is below max."""
    mx = min(int(max_num_seqs) * (1 + int(num_speculative_tokens)) * 2, MAX_CAPTURE)
    T = int(max_num_batched_tokens)
    mx = min(T, mx)
    sizes = [i for i in (1, 2, 4) if i <= mx]
    if mx >= 8:
        sizes += list(range(8, min(mx + 1, 256), 8))
    if mx >= 256:
        sizes += list(range(256, mx + 1, 16))
    if T <= mx and T not in sizes:
        sizes.append(T)
    return sorted(set(sizes))


def num_cudagraphs(max_num_seqs: int, max_num_batched_tokens: int, num_speculative_tokens: int = 0,
                   enforce_eager: bool = False) -> int:
    """Graphs the default ``FULL_AND_PIECEWISE`` mode captures: one PIECEWISE graph per capture size and
    one FULL (uniform decode) graph per size up to max_num_seqs x (1 + spec)
    (v1/cudagraph_dispatcher.py). 0 with ``enforce_eager``."""
    if enforce_eager:
        return 0
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, num_speculative_tokens)
    decode_max = int(max_num_seqs) * (1 + int(num_speculative_tokens))
    return len(sizes) + sum(1 for s in sizes if s <= decode_max)


@dataclass(frozen=True)
class ProfilePeak:
    """``torch_peak``: the derived ``torch_peak_increase`` (max over the encoder, forward and sampler
    phases); ``cudagraph_first``: the first capture's pool (forward peak at the largest capture size);
    ``num_graphs``; ``terms``: every Term; ``phases``: bytes per phase."""

    torch_peak: int
    cudagraph_first: int
    num_graphs: int
    largest_capture: int
    terms: tuple
    phases: dict


def profile_peak(arch, *, tp: int = 1, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                 num_speculative_tokens: int = 0, enable_expert_parallel: bool = False, enforce_eager: bool = False,
                 last_stage: bool = True) -> ProfilePeak:
    """The profile run's torch peak per card (``ProfilePeak``). The phases: encoder (vision tower), forward
    (encoder cache + residual stream + the largest layer set), sampler (the forward's hidden states [T, H]
    still held + the sampler; only on the last pipeline stage). The first CUDA graph capture: the forward
    peak at the largest capture size (0 with ``enforce_eager``)."""
    T = int(max_num_batched_tokens)
    enc = encoder_terms(arch, T, max_num_seqs, max_model_len, tp)
    enc_tower = sum(t.bytes for t in enc if t.name.startswith("vision"))
    enc_cache = sum(t.bytes for t in enc if t.name.startswith("encoder cache"))
    fwd_terms = forward_terms(arch, T, tp, enable_expert_parallel=enable_expert_parallel)
    fwd = forward_peak_bytes(arch, T, tp, enable_expert_parallel=enable_expert_parallel)
    smp_terms = sampler_terms(arch, max_num_seqs, tp) if last_stage else []
    smp = sampler_peak_bytes(arch, max_num_seqs, tp) if last_stage else 0
    H = arch.hidden_size
    phases = {"encoder": enc_tower, "forward": enc_cache + fwd, "sampler": (T * H * ACT_BYTES + smp) if smp else 0}
    sizes = capture_sizes(max_num_seqs, T, num_speculative_tokens)
    n = num_cudagraphs(max_num_seqs, T, num_speculative_tokens, enforce_eager)
    largest = sizes[-1] if sizes and n else 0
    first = forward_peak_bytes(arch, largest, tp, enable_expert_parallel=enable_expert_parallel) if largest else 0
    return ProfilePeak(max(phases.values()), first, n, largest, tuple(enc + fwd_terms + smp_terms), phases)


def activation_frame(arch, *, max_num_batched_tokens: int = 8192, max_num_seqs: int = 256, tp: int = 1,
                     max_model_len: int | None = None, num_speculative_tokens: int = 0,
                     enable_expert_parallel: bool = False):
    """The profile run's terms as a pandas table (pandas imported here), for a chapter's "Activation peak"
    section: one row per Term (phase, term, shape, MiB per card, vLLM source), then the phase totals, the
    torch peak, and the first CUDA graph capture. ``arch``: an Architecture or a model id."""
    import pandas as pd

    from ...model.load import load_architecture

    a = load_architecture(arch) if isinstance(arch, str) else arch
    L = max_model_len or a.max_position_embeddings or max_num_batched_tokens
    p = profile_peak(a, tp=tp, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
                     max_model_len=L, num_speculative_tokens=num_speculative_tokens,
                     enable_expert_parallel=enable_expert_parallel)
    mib = 2**20
    rows = [{"phase": t.phase, "term": t.name, "shape": t.shape, "MiB per card": t.bytes / mib, "vLLM source": t.source}
            for t in p.terms]
    rows += [{"phase": ph, "term": f"{ph} phase peak", "shape": "", "MiB per card": b / mib, "vLLM source": ""}
             for ph, b in p.phases.items()]
    rows.append({"phase": "total", "term": "torch peak increase (max over phases)", "shape": "",
                 "MiB per card": p.torch_peak / mib, "vLLM source": "gpu_worker.py determine_available_memory"})
    rows.append({"phase": "cudagraph", "term": f"first capture ({p.largest_capture} tokens; {p.num_graphs} graphs)",
                 "shape": "", "MiB per card": p.cudagraph_first / mib,
                 "vLLM source": "gpu_model_runner.py profile_cudagraph_memory"})
    return pd.DataFrame(rows)


__all__ = ["ProfilePeak", "Term", "activation_frame", "capture_sizes", "encoder_terms", "forward_peak_bytes",
           "forward_terms", "gdn_warmup_bytes", "moe_dims", "num_cudagraphs", "padded_vocab", "profile_peak",
           "sampler_peak_bytes", "sampler_terms"]
