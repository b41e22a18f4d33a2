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
  first all-reduce): no tensor shape gives it; the budget fits it (``const_gib``, ``tp_gt1_gib``).
- ``cudagraph_estimate`` (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, default "1" in every release
  0.20.0-0.33.0, so subtracted *before* the KV cache is sized): gpu_model_runner.py
  ``profile_cudagraph_memory`` captures the two largest graphs of each mode and charges
  ``first_capture + (n - 1) x second_capture``. The first capture holds the graph pool's activations
  of the largest capture size (derived here as the forward peak at that size); the per-graph part is
  ``CUDAGRAPH_BYTES_PER_LAYER`` x layers (read from vLLM's logged estimates) times the number of graphs
  (``capture_sizes``, vllm/config/vllm.py ``_set_cudagraph_sizes``; ``full_cudagraphs`` for the modes):
  ``cudagraph_estimate_bytes``.
- Releases before 0.20.0 (public boots of 0.10-0.19) profile differently: ``release_rules``.

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
from functools import lru_cache, wraps

from ... import facts
from ...errors import KvMathError
from ...model.checkpoint import moe_layer_flags

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
            c = facts.model_entry(arch.name).get("config", {})
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
        m = facts.model_entry(arch.name)
    except Exception:  # noqa: BLE001
        return None
    name = facts.reference_config_name(m["id"])
    if not name:
        return None
    v = _reference_vision(name)
    return dict(v) if v is not None else None


@lru_cache(maxsize=64)
def _reference_vision(filename: str) -> dict | None:
    """The ``vision_config`` of a reference config file (read once), with ``_soft_tokens`` from
    ``vision_soft_tokens_per_image``; None when the file has none or cannot be read."""
    import json

    try:
        raw = json.loads(facts.reference_config_path(filename).read_text())
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
    return {"E": arch.num_experts, "top_k": arch.num_experts_per_tok,
            "I_e": arch.moe_intermediate_size or arch.intermediate_size,
            "I_s": arch.shared_expert_intermediate_size, "dense_beside": arch.dense_mlp_beside_experts}


def _memo(fn):
    """``fn(arch, ...)`` remembered per Architecture object and arguments; a list result is handed out as a
    new list each call (Terms are frozen). The budget asks for the same forward at every length. Keyed by
    the object's identity as well as its fields: the config keys read here (intermediate sizes, top-k)
    live in ``extras``, which Architecture equality ignores; the key holds the object alive."""
    @lru_cache(maxsize=2048)
    def cached(arch, _identity, *a, **k):
        r = fn(arch, *a, **k)
        return tuple(r) if isinstance(r, list) else r

    @wraps(fn)
    def wrapper(arch, *a, **k):
        r = cached(arch, id(arch), *a, **k)
        return list(r) if isinstance(r, tuple) else r

    wrapper.cache_clear = cached.cache_clear
    return wrapper


UNGATED_MLP = {
    "gpt2": "gpt2.py GPT2MLP c_fc", "gptj": "gpt_j.py GPTJMLP fc_in", "gpt_bigcode": "gpt_bigcode.py GPTBigMLP c_fc",
    "opt": "opt.py OPTDecoderLayer fc1", "bloom": "bloom.py BloomMLP dense_h_to_4h",
    "falcon": "falcon.py FalconMLP dense_h_to_4h", "gpt_neox": "gpt_neox.py GPTNeoXMLP dense_h_to_4h",
    "phi": "phi.py PhiMLP fc1", "nemotron": "nemotron.py NemotronMLP up_proj",
    "starcoder2": "starcoder2.py Starcoder2MLP c_fc", "apertus": "apertus.py ApertusMLP up_proj (xIELU)",
    "arcee": "arcee.py ArceeMLP up_proj (ReLU^2)", "mpt": "mpt.py MPTMLP up_proj",
    "persimmon": "persimmon.py PersimmonMLP dense_h_to_4h",
    "jais2": "jais2.py Jais2MLP up_proj (ReLU^2)", "gpt-sw3": "gpt2.py GPT2MLP c_fc",
}
"""Dense model_types whose vLLM MLP is not gated (model_executor/models/<file> at 0.24.0): one up projection
[T, I] and the activation's own output [T, I] (the activation ops write a new tensor), where a gated MLP holds
``gate_up_proj`` [T, 2 I] and the ``SiluAndMul`` / ``GeluAndMul`` output [T, I]. Every other dense model_type
kvmath reads has a gated MLP (``gate_up_proj``)."""


@_memo
def forward_terms(arch, tokens: int, tp: int = 1, *, enable_expert_parallel: bool = False,
                  act_bytes: int = ACT_BYTES) -> list[Term]:
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

    ``act_bytes``: bytes per element of the activation dtype, the model dtype vLLM runs (2; 4 with
    ``--dtype float32``, vllm/config/model.py ``_get_and_verify_dtype``).
    """
    T, e = int(tokens), int(act_bytes)
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
    I = arch.intermediate_size or _int(c, "intermediate_size")
    m = moe_dims(arch)
    if arch.is_moe and m["top_k"] and any(moe_layer_flags(c, arch.num_hidden_layers)):
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
    elif I and arch.model_type in UNGATED_MLP:
        out.append(Term("MLP (up, act)", T * 2 * I // tp * e, f"[{T}, {I} / {tp}] + [{T}, {I} / {tp}]",
                        "forward", f"{UNGATED_MLP[arch.model_type]} (ColumnParallelLinear) + its activation"))
    elif I:
        out.append(Term("MLP (gate_up, act)", T * 3 * I // tp * e, f"[{T}, 2 x {I} / {tp}] + [{T}, {I} / {tp}]",
                        "forward", "gate_up_proj (MergedColumnParallelLinear) + SiluAndMul / GeluAndMul"))
    if tp > 1:
        out.append(Term("all-reduce output", T * H * e, f"[{T}, {H}]", "forward",
                        "distributed/device_communicators custom all-reduce (out of place)"))
    return out


@_memo
def forward_peak_bytes(arch, tokens: int, tp: int = 1, **kw) -> int:
    """Residual stream + all-reduce output + the largest layer set (``forward_terms``)."""
    terms = forward_terms(arch, tokens, tp, **kw)
    always = sum(t.bytes for t in terms if t.name in ("residual stream", "all-reduce output"))
    layer = [t.bytes for t in terms if t.name not in ("residual stream", "all-reduce output")]
    return always + max(layer, default=0)


@_memo
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


@_memo
def sampler_terms(arch, max_num_seqs: int, tp: int = 1, *, num_sms: int = 128,
                  sort_top_k_top_p: bool = False, act_bytes: int = ACT_BYTES) -> list[Term]:
    """``_dummy_sampler_run`` (gpu_model_runner.py, 0.24.0) on S = ``max_num_seqs`` rows, per card:

    - ``rand_like`` of the last hidden states [S, H] and the logits [S, V] in the activation dtype
      (``LogitsProcessor``: lm_head on [S, V / TP], gathered to every rank's full padded vocabulary);
    - ``Sampler.forward``: ``logits.to(float32)`` [S, V] fp32 (sampler.py);
    - ``TopKTopPSampler.forward_native`` (ops/topk_topp_sampler.py), run as the second warm-up: with
      S < 8 the PyTorch path ``apply_top_k_top_p_pytorch``, whose peak is the ``logits.sort``: values fp32 +
      indices int64 and the sort's own transient, ``SORT_TRANSIENT_BYTES`` per element (the top-k / top-p
      masks, ``probs_sort`` and the scatter that follow hold less: 1 + 4 + 1 (+ 4) B); with S >= 8 the
      Triton path, in place, with a cached [min(S, SMs), V] fp32 buffer; then ``softmax`` fp32 and the
      exponential noise ``q`` fp32 (``random_sample``): 8 B per element.

    ``sort_top_k_top_p``: the PyTorch sort path at every S, as releases before the Triton kernel ran it
    (``release_rules``).

    ``act_bytes`` 4 (``--dtype float32``): the hidden states and the lm_head's logits are fp32. The "logits fp32"
    term is kept then, though sampler.py's ``logits.to(torch.float32)`` (l.90 at 0.19.0) returns the same tensor:
    P130 (Llama-3.1-8B-Instruct, H100, 0.19.0, --dtype float32) logged 2.21 GiB of peak activation against 1.89
    GiB in bf16 (P122), +0.32 GiB, which the doubled hidden states / logits give only with a fourth [S, V] fp32
    tensor (without it the fp32 peak would come out 0.24 GiB *below* bf16's); which op allocates it is not found.
    """
    S, e = int(max_num_seqs), int(act_bytes)
    H = arch.hidden_size
    V = padded_vocab(arch.vocab_size or 0, tp)
    if S <= 0 or not V:
        return []
    out = [Term("last hidden states (rand_like)", S * H * e, f"[{S}, {H}]", "sampler",
                "gpu_model_runner.py _dummy_sampler_run torch.rand_like"),
           Term("logits (model dtype)", S * V * e, f"[{S}, {V}]", "sampler",
                "layers/logits_processor.py, gathered over TP"),
           Term("logits fp32", S * V * 4, f"[{S}, {V}] fp32", "sampler", "v1/sample/sampler.py logits.to(float32)")]
    if sort_top_k_top_p or S < 8:
        top = S * V * (4 + 8 + SORT_TRANSIENT_BYTES)
        shape = f"[{S}, {V}] x (4 + 8 + {SORT_TRANSIENT_BYTES}) B"
        src = ("ops/topk_topp_sampler.py apply_top_k_top_p_pytorch: logits.sort values fp32 + indices int64 and the "
               "sort's own transient (SORT_TRANSIENT_BYTES)")
    else:
        top = min(S, num_sms) * V * 4
        shape = f"[min({S}, SMs), {V}] fp32"
        src = "ops/topk_topp_triton.py apply_top_k_top_p_triton buffer"
    out.append(Term("top-k/top-p temporaries", top, shape, "sampler", src))
    out.append(Term("softmax + exponential noise", S * V * 8, f"2 x [{S}, {V}] fp32", "sampler",
                    "ops/topk_topp_sampler.py random_sample (probs, q)"))
    return out


@_memo
def sampler_peak_bytes(arch, max_num_seqs: int, tp: int = 1, **kw) -> int:
    """Hidden + logits + fp32 logits + the larger of the top-k/top-p phase and the sampling phase."""
    t = {x.name: x.bytes for x in sampler_terms(arch, max_num_seqs, tp, **kw)}
    if not t:
        return 0
    return (t["last hidden states (rand_like)"] + t["logits (model dtype)"] + t["logits fp32"]
            + max(t["top-k/top-p temporaries"], t["softmax + exponential noise"]))


MM_LIMIT_UNSET = 999
"""vLLM's per-prompt item limit of a modality the line does not name (``MultiModalConfig.get_limit_per_prompt``,
vllm/config/multimodal.py, 0.20.0-0.33.0)."""


def profiled_modality(arch) -> str | None:
    """The modality vLLM's profile run encodes for ``arch`` (the one with the most tokens per item among those
    allowed: ``MultiModalBudget.get_modality_with_max_tokens``): "video" for Gemma 4's vision tower (2,496
    tokens against 280 for an image), "image" for the other vision towers kvmath prices, None without one."""
    v = _vision_cfg(arch)
    if not v:
        return None
    return "video" if v.get("model_type") == "gemma4_vision" else "image"


def unmodelled_tower_message(arch, v: dict) -> str:
    """The one-line refusal for a vision tower whose start-up profile kvmath does not model (vLLM's
    ``profile_run`` encodes a dummy batch through every tower it builds, gpu_model_runner.py 0.20.0-0.33.0)."""
    mt = f"vision_config.model_type {v['model_type']!r}" if v.get("model_type") else "vision_config without a model_type"
    return (f"{arch.name}'s vision tower ({mt}) is profiled by vLLM at start-up and kvmath models that profile only "
            f"for the Qwen 3.5 / 3.6 and Gemma 4 towers; price the text model with --limit-mm-per-prompt "
            "'{\"image\": 0, \"video\": 0}' or --language-model-only (vLLM then neither builds nor profiles the tower)")


def encoder_terms(arch, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                  tp: int = 1, *, chunk_budget_bytes: int | None = None, frame_loop: bool = False,
                  one_hot: bool = True, mm_limit: int = MM_LIMIT_UNSET,
                  max_pixels: int | None = None) -> list[Term]:
    """The multimodal encoder's profiling budget (images, the modality with the most tokens per item of
    these models): ``items = max(1, min(budget // tokens_per_item, S x max(1, min(limit, L // tokens_per_item))))``
    with budget = max(max_num_batched_tokens, tokens_per_item) (encoder_cache_manager.py
    ``compute_mm_encoder_budget``; encoder_budget.py ``_get_max_items``; ``mm_limit`` the profiled modality's
    ``--limit-mm-per-prompt``, 999 when the line leaves it out as vLLM's ``get_limit_per_prompt`` does, 0: no
    encoder profile at all, as ``MultiModalBudget`` drops a modality whose limit is 0). Gemma 4 (gemma4_mm.py): ``tokens_per_item`` = the vision config's
    ``default_output_length`` soft tokens, ``pooling_kernel_size^2`` patches each. Terms: the vision tower's
    largest live set (hidden and residual [P, Hv] plus its MLP [P, 2 Iv] + [P, Iv], P = items x patches;
    the vision tower is replicated on every TP rank in these models' vLLM files) and the encoder cache
    [items x tokens_per_item, H] kept through the forward. Gemma 4 (``gemma4_vision``) profiles video:
    ``_gemma4_video_encoder_terms`` (``chunk_budget_bytes``, ``frame_loop``, ``one_hot``); Qwen 3.5 / 3.6:
    ``_qwen_vl_encoder_terms`` (``max_pixels``: the profiling image's pixels from ``--mm-processor-kwargs``,
    ``budget.mm_processor_pixels``; None: the image processor's own)."""
    v = _vision_cfg(arch)
    if not v or not mm_limit:
        return []
    if v.get("model_type") in QWEN_VL_MAX_PIXELS and v.get("spatial_merge_size"):
        return _qwen_vl_encoder_terms(arch, v, max_num_batched_tokens, max_num_seqs, max_model_len, tp, mm_limit,
                                      max_pixels)
    if v.get("model_type") == "gemma4_vision" and _int(v, "position_embedding_size"):
        return _gemma4_video_encoder_terms(arch, v, max_num_batched_tokens, max_num_seqs, max_model_len,
                                           chunk_budget_bytes, frame_loop, mm_limit, one_hot)
    tok = _int(v, "default_output_length", "_soft_tokens")
    pool = _int(v, "pooling_kernel_size", default=1)
    hv, iv = _int(v, "hidden_size"), _int(v, "intermediate_size")
    if v.get("model_type") != "gemma4_vision" or not (tok and hv and iv):
        # leaving the encoder out would price the profile run without it: a silent wrong number
        raise KvMathError(unmodelled_tower_message(arch, v))
    budget = max(int(max_num_batched_tokens), tok)
    items = max(1, min(budget // tok, int(max_num_seqs) * max(1, min(int(mm_limit), int(max_model_len) // tok))))
    P = items * tok * pool * pool
    e = ACT_BYTES
    return [Term("vision tower (hidden, residual, MLP)", P * (2 * hv + 3 * iv) * e,
                 f"{items} items x {tok * pool * pool} patches: 2 x [{P}, {hv}] + [{P}, 3 x {iv}]", "encoder",
                 "gpu_model_runner.py profile_run embed_multimodal on the dummy batch"),
            Term("encoder cache outputs", items * tok * arch.hidden_size * e,
                 f"[{items} x {tok}, {arch.hidden_size}]", "encoder", "gpu_model_runner.py self.encoder_cache")]


GEMMA4_VIDEO_FRAMES, GEMMA4_VIDEO_SOFT_TOKENS = 32, 70
"""vllm/model_executor/models/gemma4_mm.py (0.20.0-0.33.0) ``_VIDEO_MAX_FRAMES`` and ``_VIDEO_MAX_SOFT_TOKENS``:
the profiling video has 32 frames of 70 soft tokens; ``get_mm_max_tokens_per_item`` counts 32 x (70 + 2 + 6)
= 2,496 tokens for it against 280 for an image, so the profile encodes video ("profiled with 1 video items of
the maximum feature size", https://github.com/noonghunna/club-3090/issues/372)."""


def _gemma4_video_encoder_terms(arch, v: dict, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                                chunk_budget_bytes: int | None, frame_loop: bool,
                                mm_limit: int = MM_LIMIT_UNSET, one_hot: bool = True) -> list[Term]:
    """Gemma 4's encoder profile (gemma4_mm.py ``_process_video_input``): ``items`` videos as for every
    encoder, 32 frames each of 70 x pooling_kernel_size^2 = 630 patches. 0.22.0-0.33.0 encode the frames in
    chunks of ``_encoder_chunk`` frames = min(frames, max(1, chunk_budget // (patches x 4 x
    position_embedding_size x 8))), chunk_budget = min(free // 2, total // 10) bytes of the card when the
    encoder runs (``chunk_budget_bytes``; None: one chunk of every frame). Its docstring names the peak: HF's
    ``Gemma4VisionPatchEmbedder._position_embeddings`` builds ``F.one_hot`` of the (x, y) positions,
    [chunk, patches, 2, position_embedding_size] int64, and casts it to bf16: 10 B per element. 0.20.0-0.21.0
    (``frame_loop``) encode one frame at a time. Beside the transient: the chunk's patches [chunk x patches,
    3 x patch^2] fp32 and the frames encoded so far [frames x patches, Hv] bf16. The tower's own live set per
    chunk (hidden and residual [P, Hv] plus its MLP [P, 3 Iv]) is smaller. Replicated on every TP rank."""
    pool = _int(v, "pooling_kernel_size", default=1)
    hv, iv, pos = _int(v, "hidden_size"), _int(v, "intermediate_size"), _int(v, "position_embedding_size")
    patch = _int(v, "patch_size", default=16)
    per_frame = GEMMA4_VIDEO_SOFT_TOKENS * pool * pool
    tok = GEMMA4_VIDEO_FRAMES * (GEMMA4_VIDEO_SOFT_TOKENS + 2 + 6)
    budget = max(int(max_num_batched_tokens), tok)
    items = max(1, min(budget // tok, int(max_num_seqs) * max(1, min(int(mm_limit), int(max_model_len) // tok))))
    frames = items * GEMMA4_VIDEO_FRAMES
    if frame_loop:
        chunk = 1
    elif chunk_budget_bytes is None:
        chunk = frames
    else:
        chunk = min(frames, max(1, int(chunk_budget_bytes) // (per_frame * 4 * pos * 8)))
    e = ACT_BYTES
    tower = chunk * per_frame * (2 * hv + 3 * iv) * e
    beside = chunk * per_frame * 3 * patch * patch * 4 + frames * per_frame * hv * e
    if one_hot:
        transient = chunk * per_frame * 2 * pos * (8 + 2)
        what = f"[{chunk}, {per_frame}, 2, {pos}] x (8 + 2) B"
        name, src = "position one-hot", "HF Gemma4VisionPatchEmbedder one-hot (transformers < 5.11)"
    else:  # transformers 5.11+: two F.embedding lookups and their sum, [chunk x patches, Hv] each
        transient = 3 * chunk * per_frame * hv * e
        what = f"max(3 x [{chunk * per_frame}, {hv}], the tower's [{chunk * per_frame}, 2 x {hv} + 3 x {iv}])"
        name, src = "tower", "HF Gemma4VisionPatchEmbedder F.embedding (transformers 5.11+, PR #46176)"
    return [Term(f"vision tower ({name}, patches, frames encoded)", max(transient, tower) + beside,
                 f"{items} video x {GEMMA4_VIDEO_FRAMES} frames x {per_frame} patches, {chunk} frames a chunk: "
                 f"{what} + patches + [{frames * per_frame}, {hv}]", "encoder",
                 f"gemma4_mm.py _process_video_input / _encoder_chunk; {src}"),
            Term("encoder cache outputs", items * tok * arch.hidden_size * e,
                 f"[{items} x {tok}, {arch.hidden_size}]", "encoder", "gpu_model_runner.py self.encoder_cache")]


SORT_TRANSIENT_BYTES = 20
"""Bytes per element of [S, V] that ``torch.sort`` holds on the GPU beyond its outputs (values fp32 4 B + indices
int64 8 B) while it sorts the logits: the copy it sorts and the radix sort's double buffers. Read from vLLM's own
profile of two boots of a release with the sort path at S = 1024 (the llm-d config explorer's table,
https://github.com/llm-d/llm-d-benchmark/blob/356b8e03d75b98163f970d2a7aae00292dcc291d/config_explorer/empirical-vllm-memory-results.md,
"Peak Activation (GiB)"): Qwen3-32B 5.64 (V 151,936) and gpt-oss-120b 7.38 (V 201,088), both the sampler phase;
with the forward's hidden states [8192, H] and the logits in bf16 (2 B) and fp32 (4 B) they leave 20.4 and 20.3 B
per element. tests/test_activation.py re-derives both."""


QWEN_VL_MAX_PIXELS = {"qwen3_5": 16777216, "qwen3_5_moe": 16777216}
"""Pixels of the largest image vLLM profiles for a Qwen 3.5 / 3.6 vision tower (the vision config's
``model_type``): the image processor's ``size.longest_edge`` (preprocessor_config.json of Qwen/Qwen3.6-27B and
Qwen/Qwen3.6-35B-A3B), which ``Qwen2VLProcessingInfo.get_image_size_with_most_features`` (qwen2_vl.py,
0.20.0-0.33.0) turns into the dummy image: 16777216 / (16^2 x 2^2) = 16,384 tokens, as vLLM logs it ("Encoder
cache will be initialized with a budget of 16384 tokens, and profiled with 1 image items of the maximum feature
size", https://github.com/noonghunna/club-3090/issues/602)."""


def qwen_vl_image_tokens(max_pixels: int, patch_size: int, spatial_merge_size: int) -> tuple[int, int, int]:
    """(tokens, width, height) of the image vLLM profiles a Qwen VL tower with: ``get_image_size_with_most_features``
    (model_executor/models/qwen2_vl.py, the same in 0.20.0 and 0.24.0; Qwen 3.5 / 3.6 inherit it through
    qwen3_vl.py). With ``u = patch x merge``, the most tokens are ``max_pixels // u^2``; vLLM takes the first
    count, going down, whose closest factor pair ``h <= w`` has ``w / h <= 200`` (a prime count above 200 has
    none) and a ``u w x u h`` image, whose tokens are ``h x w``. 0 tokens when ``max_pixels < u^2``."""
    import math

    unit = patch_size * spatial_merge_size
    for seq in range(max_pixels // (unit * unit), 0, -1):
        h = next(d for d in range(math.isqrt(seq), 0, -1) if seq % d == 0)
        if seq // h / h <= 200:
            return seq, unit * (seq // h), unit * h
    return 0, 0, 0


def _qwen_vl_encoder_terms(arch, v: dict, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                           tp: int, mm_limit: int = MM_LIMIT_UNSET, max_pixels: int | None = None) -> list[Term]:
    """The Qwen 3.5 / 3.6 vision tower on its profiling batch (vllm/model_executor/models/qwen3_vl.py
    ``Qwen3_VisionTransformer.forward``, 0.24.0; Qwen 3.5 / 3.6 use it through qwen3_5.py). Tokens per item
    ``tok`` = max pixels / (patch^2 x merge^2); items as for every encoder (``encoder_terms``); P = items x tok x
    merge^2 patches. Live at the peak of a block's MLP, per rank: the patches as the tower received them
    (``x.to(dtype)``, [P, in_channels x temporal_patch x patch^2]), the interpolated position embeddings
    [P, Hv] (``encoder_metadata``), the residual stream and ``norm2``'s output [P, Hv] each, and ``linear_fc1``'s
    output with its activation [P, Iv / TP] each (``Qwen3_VisionMLP``: ColumnParallelLinear, sharded over TP
    unless ``mm_encoder_tp_mode`` is "data"). The attention phase holds less (qkv [P, 3 Hv / TP] + rotated q, k
    [P, 2 Hv / TP] + output [P, Hv / TP] < 2 Iv / TP). The encoder cache keeps [items x tok, H] through the
    forward."""
    patch, merge = _int(v, "patch_size"), _int(v, "spatial_merge_size")
    hv, iv = _int(v, "hidden_size"), _int(v, "intermediate_size")
    if not (patch and merge and hv and iv):
        return []
    tok = qwen_vl_image_tokens(max_pixels or QWEN_VL_MAX_PIXELS[v["model_type"]], patch, merge)[0]
    if not tok:
        return []
    budget = max(int(max_num_batched_tokens), tok)
    items = max(1, min(budget // tok, int(max_num_seqs) * max(1, min(int(mm_limit), int(max_model_len) // tok))))
    P = items * tok * merge * merge
    pix = _int(v, "in_channels", default=3) * _int(v, "temporal_patch_size", default=1) * patch * patch
    e = ACT_BYTES
    out_h = _int(v, "out_hidden_size") or arch.hidden_size
    return [Term("vision tower (patches, position embeddings, residual, norm, MLP)",
                 P * (pix + 3 * hv + 2 * (iv // tp)) * e,
                 f"{items} items x {tok * merge * merge} patches: [{P}, {pix}] + 3 x [{P}, {hv}] + 2 x [{P}, {iv} / {tp}]",
                 "encoder", "qwen3_vl.py Qwen3_VisionTransformer.forward on the profiling image"),
            Term("encoder cache outputs", items * tok * out_h * e, f"[{items} x {tok}, {out_h}]", "encoder",
                 "gpu_model_runner.py self.encoder_cache")]


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


CUDAGRAPH_BYTES_PER_LAYER = 410 * 2**10
"""Memory one captured CUDA graph keeps per decoder layer (bytes): what ``profile_cudagraph_memory`` measures
for its second capture of a mode (``per_graph``, ``torch.cuda.mem_get_info`` before and after, so graph-exec
memory and pool growth), per layer. From vLLM's own logs of Qwen3.6-27B (64 layers) on RTX 3090s, whose tiny
capture sizes (16-32 tokens) leave the first capture's activations at a few MiB: "Profiling CUDA graph memory:
PIECEWISE=5 (largest=16)" and "Estimated CUDA graph memory: 0.13 GiB total" at TP 2
(https://github.com/noonghunna/club-3090/issues/104), "PIECEWISE=7 (largest=32)" and "0.17 GiB total" at TP 4
(https://github.com/noonghunna/club-3090/pull/44): 0.13 GiB / (5 x 64) = 0.42 MiB and 0.17 GiB / (7 x 64) = 0.39
MiB per graph and layer; kvmath takes 410 KiB, about their mean (26 MiB a graph at 64 layers; vllm issue #50780 reports "the real
FULL graphs cost ~24 MiB each"). The one named constant of the CUDA graph estimate."""


def cudagraph_estimate_bytes(arch, sizes: list[int], decode_max: int, tp: int = 1, *, full: bool = True,
                             enable_expert_parallel: bool = False, act_bytes: int = ACT_BYTES) -> tuple[int, dict]:
    """vLLM's CUDA graph estimate (v1/worker/gpu_model_runner.py ``profile_cudagraph_memory``, 0.24.0; the same
    0.20.0-0.33.0): the largest of the modes' first captures plus, for each mode, ``(n - 1) x per_graph``, where
    a mode's first capture is its largest size and ``per_graph`` the second one's measurement. Modes of ``FULL_AND_PIECEWISE``:
    PIECEWISE over every capture size, FULL (uniform decode) over the sizes up to ``decode_max`` =
    max_num_seqs x (1 + spec) (v1/cudagraph_dispatcher.py); ``full=False``: PIECEWISE only (what vLLM falls back
    to when the attention backend cannot run full graphs of the batch). Here ``per_graph`` =
    ``CUDAGRAPH_BYTES_PER_LAYER`` x layers and the first capture = the forward's live set at the mode's largest
    size (``forward_peak_bytes``, in ``act_bytes`` per element) + ``per_graph``. Returns (bytes, {mode: (graphs,
    largest size)})."""
    L = max(len(arch.layers), 1)
    per_graph = CUDAGRAPH_BYTES_PER_LAYER * L
    modes = {"PIECEWISE": list(sizes)}
    if full:
        modes["FULL"] = [x for x in sizes if x <= decode_max]
    firsts, rest, info = [], 0, {}
    for mode, xs in modes.items():
        if not xs:
            continue
        firsts.append(forward_peak_bytes(arch, max(xs), tp, enable_expert_parallel=enable_expert_parallel,
                                         act_bytes=act_bytes) + per_graph)
        rest += (len(xs) - 1) * per_graph
        info[mode] = (len(xs), max(xs))
    # the modes share one pool, so vLLM takes the largest first capture, not their sum: "decoder_estimate =
    # max(shared_memory_estimate.values()) + sum(per_graph_estimate.values())" (gpu_model_runner.py
    # profile_cudagraph_memory, 0.19.0 l.5952 and 0.27.1 l.6800)
    return max(firsts, default=0) + rest, info


@dataclass(frozen=True)
class ProfilePeak:
    """``torch_peak``: the derived ``torch_peak_increase`` (max over the encoder, forward and sampler
    phases); ``cudagraph_first``: the forward's live set at the largest capture size; ``cudagraph``: vLLM's
    CUDA graph estimate (``cudagraph_estimate_bytes``; 0 with ``enforce_eager``); ``cudagraph_modes``: {mode:
    (graphs, largest size)}; ``num_graphs``; ``terms``: every Term; ``phases``: bytes per phase."""

    torch_peak: int
    cudagraph_first: int
    num_graphs: int
    largest_capture: int
    terms: tuple
    phases: dict
    cudagraph: int = 0
    cudagraph_modes: tuple = ()


def profile_peak(arch, *, tp: int = 1, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                 num_speculative_tokens: int = 0, enable_expert_parallel: bool = False, enforce_eager: bool = False,
                 last_stage: bool = True, sort_top_k_top_p: bool = False, full_cudagraphs: bool = True,
                 encoder_chunk_budget: int | None = None, encoder_frame_loop: bool = False,
                  encoder_one_hot: bool = True,
                 mm_limit: int = MM_LIMIT_UNSET, max_pixels: int | None = None,
                 act_bytes: int = ACT_BYTES) -> ProfilePeak:
    """See ``_profile_peak`` (remembered per arguments). ``max_model_len`` only bounds the encoder's items
    (``encoder_terms``: ``S x max(1, L // tokens_per_item)`` against ``budget // tokens_per_item``), so a length
    beyond the encoder budget (max(T, 16384, max_pixels / 256) here: no profiled item has more tokens) prices
    the same."""
    L = min(int(max_model_len), max(int(max_num_batched_tokens), 16384, (max_pixels or 0) // 256))
    return _profile_peak(arch, tp=tp, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
                         max_model_len=L, num_speculative_tokens=num_speculative_tokens,
                         enable_expert_parallel=enable_expert_parallel, enforce_eager=enforce_eager,
                         last_stage=last_stage, sort_top_k_top_p=sort_top_k_top_p, full_cudagraphs=full_cudagraphs,
                         encoder_chunk_budget=encoder_chunk_budget, encoder_frame_loop=encoder_frame_loop,
                         encoder_one_hot=encoder_one_hot,
                         mm_limit=mm_limit, max_pixels=max_pixels, act_bytes=act_bytes)


@_memo
def _profile_peak(arch, *, tp: int = 1, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                  num_speculative_tokens: int = 0, enable_expert_parallel: bool = False, enforce_eager: bool = False,
                  last_stage: bool = True, sort_top_k_top_p: bool = False, full_cudagraphs: bool = True,
                  encoder_chunk_budget: int | None = None, encoder_frame_loop: bool = False,
                  encoder_one_hot: bool = True,
                  mm_limit: int = MM_LIMIT_UNSET, max_pixels: int | None = None,
                  act_bytes: int = ACT_BYTES) -> ProfilePeak:
    """The profile run's torch peak per card (``ProfilePeak``). The phases: encoder (vision tower), forward
    (encoder cache + residual stream + the largest layer set), sampler (the forward's hidden states [T, H]
    still held + the sampler; only on the last pipeline stage). The CUDA graph estimate
    (``cudagraph_estimate_bytes``; ``full_cudagraphs=False``: PIECEWISE graphs only); 0 with ``enforce_eager``.
    ``sort_top_k_top_p``: the sampler's PyTorch sort path (``sampler_terms``). ``encoder_chunk_budget`` /
    ``encoder_frame_loop``: Gemma 4's frame chunking; ``encoder_one_hot``: its patch embedder's one-hot; ``mm_limit``: the profiled modality's per-prompt limit
    (``encoder_terms``); ``max_pixels``: the Qwen VL profiling image's pixels (``encoder_terms``); ``act_bytes``:
    the activation dtype's bytes (``forward_terms``, ``sampler_terms``; the encoder terms stay 16-bit)."""
    T, ab = int(max_num_batched_tokens), int(act_bytes)
    enc = encoder_terms(arch, T, max_num_seqs, max_model_len, tp, chunk_budget_bytes=encoder_chunk_budget,
                        frame_loop=encoder_frame_loop, one_hot=encoder_one_hot, mm_limit=mm_limit,
                        max_pixels=max_pixels)
    enc_tower = sum(t.bytes for t in enc if t.name.startswith("vision"))
    enc_cache = sum(t.bytes for t in enc if t.name.startswith("encoder cache"))
    fwd_terms = forward_terms(arch, T, tp, enable_expert_parallel=enable_expert_parallel, act_bytes=ab)
    fwd = forward_peak_bytes(arch, T, tp, enable_expert_parallel=enable_expert_parallel, act_bytes=ab)
    smp_terms = sampler_terms(arch, max_num_seqs, tp, sort_top_k_top_p=sort_top_k_top_p, act_bytes=ab) if last_stage else []
    smp = sampler_peak_bytes(arch, max_num_seqs, tp, sort_top_k_top_p=sort_top_k_top_p, act_bytes=ab) if last_stage else 0
    H = arch.hidden_size
    phases = {"encoder": enc_tower, "forward": enc_cache + fwd, "sampler": (T * H * ab + smp) if smp else 0}
    sizes = capture_sizes(max_num_seqs, T, num_speculative_tokens)
    n = num_cudagraphs(max_num_seqs, T, num_speculative_tokens, enforce_eager)
    largest = sizes[-1] if sizes and n else 0
    first = forward_peak_bytes(arch, largest, tp, enable_expert_parallel=enable_expert_parallel, act_bytes=ab) if largest else 0
    graphs, modes = (0, {}) if not n else cudagraph_estimate_bytes(
        arch, sizes, int(max_num_seqs) * (1 + int(num_speculative_tokens)), tp, full=full_cudagraphs,
        enable_expert_parallel=enable_expert_parallel, act_bytes=ab)
    return ProfilePeak(max(phases.values()), first, sum(g for g, _ in modes.values()), largest,
                       tuple(enc + fwd_terms + smp_terms), phases, graphs, tuple(modes.items()))


def full_cudagraphs(num_speculative_tokens: int, kv_format: str, compute_capability: int | None,
                    attention_backend: str | None = None, triton_attention: bool = False) -> bool:
    """Whether ``FULL_AND_PIECEWISE`` keeps its FULL graphs (True) or vLLM drops to PIECEWISE (False). With
    speculative decoding the decode batch has 1 + spec tokens a request, which a backend whose cudagraph
    support is ``UNIFORM_SINGLE_TOKEN_DECODE`` cannot replay: FlashInfer without TRTLLM attention (TRTLLM only
    on sm_100; v1/attention/backends/flashinfer.py ``get_cudagraph_support``, 0.24.0) logs "FULL_AND_PIECEWISE
    is not supported with spec-decode for attention backend FlashInferBackend ... setting
    cudagraph_mode=PIECEWISE" (https://github.com/noonghunna/club-3090/issues/104, /pull/44: PIECEWISE=5 and
    7 graphs). vLLM chooses FlashInfer (``attention_backend`` None) on cards below sm_90 for an fp8 KV cache,
    which FlashAttention 2 cannot store; Triton attention (``triton_attention``, Gemma 4) and FlashAttention
    keep full graphs (``ALWAYS`` / ``UNIFORM_BATCH``)."""
    if not num_speculative_tokens or triton_attention:
        return True
    cc = compute_capability or 0
    flashinfer = (attention_backend == "FLASHINFER"
                  or (attention_backend is None and str(kv_format).startswith("fp8") and 0 < cc < 90))
    return not (flashinfer and cc != 100)


def release_rules(release: str | tuple | None, gemma4_position_one_hot: bool | None = None) -> dict:
    """``{"estimate_cudagraphs": bool, "sort_top_k_top_p": bool, "encoder_frame_loop": bool,
    "gemma4_position_one_hot": bool}``: the profile run's
    switches of a vLLM ``release`` ("0.10.1", "0.19" or (0, 19)), read off its record
    (:func:`kvmath.engines.vllm.releases.profile_release`: before 0.20 the profile-only records, for public boots
    of 0.7-0.19); None: the default release's. ``gemma4_position_one_hot`` given overrides the record's (the
    transformers beside vLLM, ``budget._one_hot_note``). Raises KvMathError for another form or a release before 0.7."""
    from .releases import profile_release, release as record

    rec = record(None) if release is None else profile_release(release)
    return {"estimate_cudagraphs": rec.estimate_cudagraphs, "sort_top_k_top_p": rec.sort_top_k_top_p,
            "encoder_frame_loop": rec.encoder_frame_loop,
            "gemma4_position_one_hot": rec.gemma4_position_one_hot if gemma4_position_one_hot is None
            else gemma4_position_one_hot}


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
    rows.append({"phase": "cudagraph estimate", "term": "CUDA graph estimate ("
                 + ", ".join(f"{m}={g} (largest={x})" for m, (g, x) in p.cudagraph_modes) + ")",
                 "shape": "", "MiB per card": p.cudagraph / mib,
                 "vLLM source": "gpu_model_runner.py profile_cudagraph_memory: first + (n - 1) x per graph"})
    return pd.DataFrame(rows)


__all__ = ["full_cudagraphs", "qwen_vl_image_tokens", "MM_LIMIT_UNSET", "profiled_modality", "CUDAGRAPH_BYTES_PER_LAYER", "GEMMA4_VIDEO_FRAMES", "GEMMA4_VIDEO_SOFT_TOKENS", "QWEN_VL_MAX_PIXELS", "SORT_TRANSIENT_BYTES", "cudagraph_estimate_bytes",
           "release_rules",
           "ProfilePeak", "Term", "activation_frame", "capture_sizes", "encoder_terms", "forward_peak_bytes",
           "forward_terms", "gdn_warmup_bytes", "moe_dims", "num_cudagraphs", "padded_vocab", "profile_peak",
           "sampler_peak_bytes", "sampler_terms"]
