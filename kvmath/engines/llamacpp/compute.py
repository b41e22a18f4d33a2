"""Compute buffers: what ``sched_reserve`` logs as ``<device> compute buffer size`` (``CPU`` on a CPU build,
``CUDA0`` / ``CUDA_Host`` on a CUDA one), from the graph llama.cpp reserves.

llama.cpp 0c1e570 ``src/llama-context.cpp`` reserves the prompt-processing graph with ``n_tokens = T =
n_ubatch`` (``n_ubatch`` capped at ``n_batch``) and ``n_outputs = T`` (the log's ``graph_reserve: ... n_tokens
= 512, n_seqs = 1, n_outputs = 512``), then the one-token graph, and sizes each backend's compute buffer to
the larger peak. ``ggml-alloc`` frees a tensor after its last consumer, so the buffer is the largest set of
tensors alive at one point of the graph, not their sum. With ``E = n_embd``, ``V = n_vocab``, ``H`` query
heads of ``d_k`` / ``d_v``, ``H_kv`` KV heads, ``n_kv`` the cells of each cache (all of them at reserve time),
the phases whose peak can be the largest are (activations f32, 4 bytes):

1. **output**: the logits ``V x T`` and ``c_out`` hidden-state vectors ``E x T`` (the residual, the normed
   state, the ``out_ids`` rows): ``4 T V + c_out 4 T E``.
2. **attention without flash attention**: ``kq = K^T Q``, ``n_kv x T x H`` f32 (soft-maxed in place), every
   cache's mask (``n_kv x T``, f32), and the attention activations: ``c_e`` vectors ``E x T`` plus Q, K, V and
   the attention output (``H d_k``, ``H_kv d_k``, ``H_kv d_v``, ``H d_v`` per token).
3. **attention with flash attention**: no ``n_kv x T x H`` matrix: the masks (f16) and the same activations;
   before PR #23764 the mask was reserved in f32 and cast, so at the first attention layer the f32 copy
   (``4 n_kv T``) and the f16 casts are both alive (``fa_mask="f32_cast"``).
4. **feed-forward** (dense: gate, up and their GLU product, ``3 x 4 n_ff T``; MoE: the selected experts' gate,
   up and product ``3 x 4 n_used n_ff_exp T`` and the router logits ``4 n_expert T``), plus one ``E x T``.

The counts ``c_out`` and ``c_e`` are the number of ``E x T`` tensors alive at those points. They are not
derived from a graph walk here: they were read off real llama.cpp output, per backend, and are integers:

- ``cpu`` (``tests/fixtures/llamacpp/compute_fixtures.json``: 98 dry runs of 0c1e570's CPU build on GGUFs
  with the real tensor shapes of 7 models): ``c_out = 3``, ``c_e = 3``;
- ``cuda`` (the public CUDA logs in ``data/measurements/llamacpp-boots.csv``, 2024-2025 builds, every layer
  offloaded: the embeddings' ``get_rows`` runs on the host, so one vector fewer lives on the device):
  ``c_out = 1`` and the attention term ``4`` vectors ``E x T`` without the Q/K/V/output split.

The masks are graph inputs, so they stay allocated until the last attention layer has read them: they are
counted beside the feed-forward phases too (it decides Nemotron 3 Nano's buffer at 256K, where the MoE
phase of an early layer plus the 256 MiB mask is the peak).

What is not modelled, so the per-case errors (chapter, tests) show it: ggml-alloc's placement. Read off a
build of 0c1e570's ggml-alloc.c with its ``AT_PRINTF`` trace turned on (``tests/fixtures/llamacpp/README.md``):
the logits are larger than any freed block, so ggml-alloc puts them at the end of the buffer, above the
highest tensor still alive, which is the last layer's residual stream (``ffn_out-<last>``, ``E x T`` f32).
Where that residual sits depends on what was alive when it was allocated: Gemma 4 31B at ``-c 4096`` has 31.5
MiB alive below the logits (kvmath's three vectors) but its residual at 69.0 MiB, so the buffer is 79.5 +
512 = 591.5 MiB instead of 543.5; Qwen 3.6 27B at ``-c 262144`` has its residual just above the 256 MiB mask
(276.0 + 485.0 = 761.0 MiB). The buffer then lies between the live set (``device``) and the logits placed
above the peak of all earlier phases (``device_upper``); every dry run does. Also not modelled: the
gated-delta-net / Mamba-2 chunk tensors of the recurrent layers; gpt-oss's attention sinks.

**Chunks (Vulkan).** Since PR #15815 (2025-09, in b7444, not in b6057) ``ggml-alloc`` splits a compute buffer
into chunks no larger than the buffer type's ``get_max_size`` (ggml-vulkan: 1 GiB, :mod:`.backends`); a tensor
larger than that gets a chunk of its own size (``ggml_dyn_tallocr_new_chunk``: ``MAX(min_size,
max_chunk_size)``), and the buffer is the sum of the chunks (``ggml_vbuffer_size``). When a layer's tensor is
larger than the cap (the ``kq`` matrix without flash attention, 4 GiB for Qwen3-30B-A3B at 65,536 cells), its
chunk is freed after the layer's attention, and PR #16788's rule ("prefer chunks that allow memory reuse":
the last block of the chunk whose already-reserved space fits the tensor, ``reuse_factor >= 0``) places the
feed-forward tensors that do not fit the first chunk's footprint at offset 0 of that freed chunk. The layer's
output stays alive there into the next layer, so the next ``kq`` no longer fits it and takes a new chunk of
its size: two chunks of the tensor plus the first chunk. kvmath prices that as the tensor's phase plus one
more copy of the tensor (phase ``... two chunks``): L08 (b7444, Vulkan0, failed allocation 8753520640 bytes
= 8348.01 MiB) against 2 x 4096 + 144 = 8336.00 MiB.

The host compute buffer (``CUDA_Host``) with every layer offloaded holds the graph inputs llama.cpp fills
on the CPU: the embeddings ``get_rows`` output ``E x T`` f32, the masks (one per cache, SWA too), the
positions and the output ids: ``4 E T + mask + 8 T``. With layers left on the CPU it also holds their
activations, which this module does not model (the figure is then a lower bound).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...units import MiB

LIVE = {
    # backend: (c_out, c_e, attention activations split into Q / K / V / output)
    "cpu": (3, 3, True),
    "cuda": (1, 4, False),
    "hip": (1, 4, False),     # ggml-cuda built for HIP: L04 (b9106, ROCm1 204.00 MiB) is exact with CUDA's counts
    "metal": (1, 4, False),   # L05 (b4406) and L19 (b4550): MTL0 299.75 / 102.25 MiB, exact with CUDA's counts
    "vulkan": (1, 4, False),  # L07 (b6057, Vulkan0 4536.75 MiB): -0.2 % with CUDA's counts
}
"""Live ``E x T`` vectors at the output (``c_out``) and in attention (``c_e``), per backend (see above): a GPU
backend with every layer offloaded leaves the embeddings' ``get_rows`` and the graph inputs in its host buffer,
the CPU backend holds them in its one buffer. The counts of the GPU backends are CUDA's; the public logs of
HIP, Metal and Vulkan named beside them (``data/measurements/llamacpp-public-boots.csv``) match them."""
FFN_VECTORS = 3
"""``E x T`` f32 vectors below the first layer's gate / up / product (the peak of a dense feed-forward phase), read
off 0c1e570's ggml-alloc (its high-water trace, ``tests/fixtures/llamacpp/ffn_phase_runs.json``): the two
embedding tensors PR #18550 puts in every graph (``build_inp_embd``: the token ``get_rows`` and the ``inp_embd``
embeddings input, both alive for the whole graph; ``ggml_build_forward_select`` picks one) and block 0's freed
``attn_norm``, a hole the gate does not fit. Builds before #18550 hold one embedding tensor: 2
(``builds.LlamaCppBuild.embd_select``). On a GPU backend the ``get_rows`` runs on the host and its copy is the
device's split input, so the count is the same. When block 0 is an attention block its query (``Qcur``,
``n_head x head_dim``) is a further hole below the gate (:func:`compute_buffers`). Measured on dense models; a
dense MLP beside routed experts (Gemma 4 26B-A4B) keeps the count of one vector it had before."""
LIVE_FFN = 3
"""``n_ff x T`` f32 tensors alive at a gated feed-forward: gate, up and ``ggml_swiglu_split``'s product (GLU ops,
PR #14158; ``ggml_op_can_inplace`` in ggml-alloc.c has no GLU, so the product is a new tensor). Builds before the
GLU ops ran ``silu`` and ``mul`` in place: 2 (``builds.LlamaCppBuild.ffn_live``). With 3 the one expert-phase
outlier of the 0c1e570 dry runs (Nemotron 3 Nano at ``-c 262144``, -9 % with 2) comes within 2 %."""


@dataclass(frozen=True)
class GraphShape:
    """The graph dimensions the compute buffer depends on (from an Architecture, a config or a GGUF header)."""

    n_embd: int
    n_vocab: int
    n_head: int
    head_dim: int
    n_ff: int = 0               # dense feed-forward width (0 if none)
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    n_head_kv: int = 0          # 0: as many as query heads
    head_dim_v: int = 0         # 0: head_dim
    first_block_recurrent: bool = False  # block 0 is a recurrent (linear attention / Mamba) block

    @property
    def attn_floats(self) -> int:
        """Q, K, V and attention output floats per token (H d_k + H_kv d_k + H_kv d_v + H d_v)."""
        dv = self.head_dim_v or self.head_dim
        hkv = self.n_head_kv or self.n_head
        return self.n_head * self.head_dim + hkv * self.head_dim + hkv * dv + self.n_head * dv


@dataclass(frozen=True)
class ComputeBuffers:
    device: int                 # bytes, the device that holds the output layer (CUDA0 on one card; CPU on a CPU build)
    host: int                   # bytes, CUDA_Host
    phases: dict                # phase -> bytes on the device
    dominant: str
    device_upper: int = 0       # bytes: the logits placed above the peak of the earlier phases (see module doc)

    def log_lines(self, device_name: str = "CUDA0", prefix: str = "sched_reserve",
                  host_name: str = "CUDA_Host") -> list[str]:
        """The two ``sched_reserve`` lines; ``host_name`` is the backend's host buffer type (``Vulkan_Host``,
        ``ROCm_Host``; Metal's host compute buffer is printed as ``CPU``, as in L05's b4406 log)."""
        return [f"{prefix}: {device_name:>10} compute buffer size = {self.device / MiB:8.2f} MiB",
                f"{prefix}: {host_name:>10} compute buffer size = {self.host / MiB:8.2f} MiB"]


def shape_from_config(config: dict, *, n_vocab: int | None = None) -> GraphShape:
    """A GraphShape from a Hugging Face config (``text_config`` read when present)."""
    cfg = config.get("text_config", config)
    e = cfg.get("hidden_size") or 0
    heads = cfg.get("num_attention_heads") or 0
    hd = cfg.get("global_head_dim") or cfg.get("head_dim") or (e // heads if heads else 0)
    kvh = cfg.get("num_key_value_heads") or heads
    types = cfg.get("layer_types") if isinstance(cfg.get("layer_types"), list) else []
    types = types or (cfg.get("layers_block_type") if isinstance(cfg.get("layers_block_type"), list) else [])
    first_recurrent = bool(types) and str(types[0]) in ("linear_attention", "mamba", "mamba2", "recurrent")
    pattern = cfg.get("hybrid_override_pattern")  # Nemotron-H: "M" a Mamba block, "*" attention, "-" / "E" MLP
    first_recurrent = first_recurrent or (isinstance(pattern, str) and pattern[:1] == "M")
    return GraphShape(
        n_embd=int(e), n_vocab=int(n_vocab or cfg.get("vocab_size") or 0), n_head=int(heads), head_dim=int(hd),
        n_ff=int(cfg.get("intermediate_size") or 0),
        n_expert=int(cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts") or 0),
        n_expert_used=int(cfg.get("num_experts_per_tok") or cfg.get("top_k_experts") or 0),
        n_ff_exp=int(cfg.get("moe_intermediate_size") or cfg.get("expert_intermediate_size") or 0),
        n_head_kv=int(kvh if not isinstance(kvh, list) else max(kvh)), first_block_recurrent=first_recurrent)


def shape_from_gguf(metadata: dict) -> GraphShape:
    """A GraphShape from GGUF metadata (``<arch>.embedding_length`` ...; per-layer arrays: their maximum)."""
    arch = metadata["general.architecture"]

    def k(name, default=0):
        v = metadata.get(f"{arch}.{name}", default)
        return max(v) if isinstance(v, list) else v

    n_vocab = metadata.get(f"{arch}.vocab_size") or len(metadata.get("tokenizer.ggml.tokens", ()))
    e, h = int(k("embedding_length")), int(k("attention.head_count"))
    dk = int(k("attention.key_length") or (e // h if h else 0))
    n_exp = int(k("expert_count"))
    kv0 = metadata.get(f"{arch}.attention.head_count_kv")
    # block 0 recurrent: qwen35 / qwen3next (il + 1) % full_attention_interval != 0; Nemotron-H a 0 KV-head entry
    first_recurrent = int(metadata.get(f"{arch}.full_attention_interval") or 1) > 1 or \
        (isinstance(kv0, list) and bool(kv0) and kv0[0] == 0)
    return GraphShape(n_embd=e, n_vocab=int(n_vocab), n_head=h, head_dim=dk,
                      n_ff=0 if n_exp and not metadata.get(f"{arch}.feed_forward_length") else int(k("feed_forward_length")),
                      n_expert=n_exp, n_expert_used=int(k("expert_used_count")),
                      n_ff_exp=int(k("expert_feed_forward_length")), n_head_kv=int(k("attention.head_count_kv") or h),
                      head_dim_v=int(k("attention.value_length") or dk), first_block_recurrent=first_recurrent)


def compute_buffers(shape: GraphShape, *, n_ubatch: int, n_kv: int, flash_attn: bool, n_kv_swa: int = 0,
                    n_outputs: int | None = None, output_on_device: bool = True,
                    all_layers_on_device: bool = True, backend: str = "cuda", fa_mask: str = "f16",
                    ffn_live: int = LIVE_FFN, max_chunk: int | None = None,
                    ffn_vectors: int = FFN_VECTORS) -> ComputeBuffers:
    """The device and host compute buffers for one reserve (see the module docstring), bytes.

    ``n_kv`` is the cell count of the full-attention cache (``n_ctx_seq`` padded; all cells at reserve
    time), ``n_kv_swa`` that of the sliding-window cache (0 if none). ``backend``: a GPU backend of
    :data:`LIVE` (``cuda``, ``hip``, ``metal``, ``vulkan``: the device with every layer offloaded) or ``"cpu"``
    (a CPU build, where the one device holds the whole graph). ``max_chunk``: bytes, the largest chunk
    ggml-alloc gives one allocation (:func:`.backends.max_chunk`; None: one buffer of any size); a layer's
    tensor above it is counted twice (the module docstring's "Chunks"). ``ffn_vectors``: the ``E x T`` vectors
    below a dense feed-forward (:data:`FFN_VECTORS`; 2 before PR #18550).
    ``fa_mask`` and ``ffn_live`` are the build's (:mod:`.builds`): ``"f32_cast"`` (before PR #23764) adds the
    phase where the f32 mask copy and its f16 cast are both on the device; ``ffn_live`` is the number of
    ``n_ff x T`` tensors alive at a gated feed-forward. Raises KvMathError for an unknown backend or mask rule.
    """
    if backend not in LIVE or fa_mask not in ("f16", "f32_cast") or ffn_live not in (2, 3):
        from ...errors import KvMathError

        raise KvMathError(f"compute_buffers: backend must be one of {sorted(LIVE)}, fa_mask f16 or f32_cast, "
                          f"ffn_live 2 or 3; got {backend!r}, {fa_mask!r}, {ffn_live!r}")
    c_out, c_e, split = LIVE[backend]
    T = int(n_ubatch)
    E, V, H = shape.n_embd, shape.n_vocab, shape.n_head
    n_out = T if n_outputs is None else min(T, int(n_outputs))
    mask_b = 2 if flash_attn else 4
    mask = n_kv * T * mask_b + n_kv_swa * T * mask_b
    act = 4 * T * (c_e * E + (shape.attn_floats if split else 0))
    phases: dict[str, int] = {}
    if output_on_device:
        phases["output (logits)"] = 4 * n_out * V + c_out * 4 * T * E
    if flash_attn:
        phases["attention (flash)"] = mask + act
        if fa_mask == "f32_cast":  # the f32 input copy lives until its cast, beside the f16 masks
            phases["attention (f32 mask and its f16 cast)"] = 4 * max(n_kv, n_kv_swa) * T + mask + act
    else:
        phases["attention (kq matrix)"] = 4 * H * max(n_kv, n_kv_swa) * T + mask + act
    # the masks are graph inputs, alive until the last attention layer: beside every earlier feed-forward
    if shape.n_expert and shape.n_ff_exp:
        phases["experts"] = ffn_live * 4 * shape.n_expert_used * shape.n_ff_exp * T + 4 * shape.n_expert * T \
            + 4 * E * T + mask
    if shape.n_ff:  # dense: gate, up, product above FFN_VECTORS E x T vectors and block 0's query hole (measured
        # on dense models only; a dense MLP beside experts, as Gemma 4's, keeps one vector)
        dense = not shape.n_expert
        q_hole = 4 * T * H * shape.head_dim if dense and not shape.first_block_recurrent else 0
        phases["feed-forward"] = ffn_live * 4 * shape.n_ff * T + (ffn_vectors if dense else 1) * 4 * E * T \
            + q_hole + mask
    if max_chunk is not None:  # a layer's tensor above the chunk cap: a second chunk of its size (module doc)
        per_layer = {"attention (kq matrix)": 4 * H * max(n_kv, n_kv_swa) * T,
                     "experts": 4 * shape.n_expert_used * shape.n_ff_exp * T, "feed-forward": 4 * shape.n_ff * T}
        for name, big in per_layer.items():
            if name in phases and big > max_chunk:
                phases[f"{name}, two chunks"] = phases[name] + big
    dominant = max(phases, key=phases.get)
    host = 4 * E * T + mask + 8 * T
    earlier = max((v for k, v in phases.items() if k != "output (logits)"), default=0)
    upper = max(phases[dominant], phases.get("output (logits)", 0) + earlier)
    return ComputeBuffers(phases[dominant], host, phases, dominant, upper)
