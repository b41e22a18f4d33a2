"""Compute buffers: what ``sched_reserve`` / ``llama_context`` log as ``CUDA0 compute buffer size`` and
``CUDA_Host compute buffer size``, derived from the graph llama.cpp reserves.

llama.cpp 0c1e570 ``src/llama-context.cpp`` reserves the prompt-processing graph with ``n_tokens =
n_ubatch`` and ``n_outputs = min(n_ubatch, n_outputs_max)`` (``n_outputs_max`` defaults to ``n_batch``),
then the one-token graph, and sizes each backend's compute buffer to the larger peak. ``ggml-alloc``
frees a tensor as soon as its last consumer has run, so the buffer is the largest set of tensors alive at
one point of the graph, not their sum. With ``T = n_ubatch``, ``E = n_embd``, ``V = n_vocab``, ``H`` query
heads, ``n_kv`` the cells of the largest cache (``build_attn_inp_kq_mask``: ``n_kv x T``, f16 with flash
attention, f32 without), the phases whose peak can be the largest are (all activations f32):

1. output: the logits ``V x T`` and the normed hidden state ``E x T`` (``build_inp_out_ids`` keeps every
   token at reserve time): ``4 T (V + E)``. Only on the device that holds the output layer.
2. attention without flash attention: ``kq = K^T Q`` is ``n_kv x T x H`` f32, soft-maxed in place, with the
   mask copied to the device and a few ``E x T`` activations alive: ``4 H n_kv T + mask + a 4 E T``.
3. attention with flash attention: the output ``H d x T`` and Q / K / V views, plus the mask:
   ``mask + b 4 E T`` (no ``n_kv x T x H`` matrix).
4. feed-forward: dense ``c 4 n_ff T``; MoE: the selected experts' gate / up activations
   ``n_used n_ff_exp T`` and the router logits ``n_expert T``: ``c 4 n_used n_ff_exp T + 4 n_expert T``.

``a``, ``b``, ``c`` are counts of live activations, read off the graph (``a = 4``: residual, normed input,
Q and the attention output; ``b = 4``; ``c = 2``: gate and up before the product). They are checked, not
fitted, against the public logs in ``data/measurements/llamacpp-boots.csv``; the errors are in the chapter.

The host compute buffer (``CUDA_Host``) with every layer offloaded holds the graph inputs llama.cpp fills
on the CPU: the embeddings ``get_rows`` output ``E x T`` f32, the masks (one per cache, SWA too), the
positions and the output ids: ``4 E T + mask + 8 T``. With layers left on the CPU it also holds their
activations, which this module does not model (the figure is then a lower bound).
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 2**20
LIVE_ATTN = 4   # a
LIVE_FA = 4     # b
LIVE_FFN = 2    # c


@dataclass(frozen=True)
class GraphShape:
    """The graph dimensions the compute buffer depends on (from an Architecture or a GGUF header)."""

    n_embd: int
    n_vocab: int
    n_head: int
    head_dim: int
    n_ff: int = 0               # dense feed-forward width (0 if none)
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0


@dataclass(frozen=True)
class ComputeBuffers:
    device: int                 # bytes, the GPU that holds the output layer (CUDA0 on one card)
    host: int                   # bytes, CUDA_Host
    phases: dict                # phase -> bytes on the device
    dominant: str

    def log_lines(self, device_name: str = "CUDA0", prefix: str = "sched_reserve") -> list[str]:
        return [f"{prefix}: {device_name:>10} compute buffer size = {self.device / MiB:8.2f} MiB",
                f"{prefix}: {'CUDA_Host':>10} compute buffer size = {self.host / MiB:8.2f} MiB"]


def shape_from_config(config: dict, *, n_vocab: int | None = None) -> GraphShape:
    """A GraphShape from a Hugging Face config (``text_config`` read when present)."""
    cfg = config.get("text_config", config)
    e = cfg.get("hidden_size") or 0
    heads = cfg.get("num_attention_heads") or 0
    hd = cfg.get("head_dim") or (e // heads if heads else 0)
    return GraphShape(
        n_embd=int(e), n_vocab=int(n_vocab or cfg.get("vocab_size") or 0), n_head=int(heads), head_dim=int(hd),
        n_ff=int(cfg.get("intermediate_size") or 0),
        n_expert=int(cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts") or 0),
        n_expert_used=int(cfg.get("num_experts_per_tok") or cfg.get("top_k_experts") or 0),
        n_ff_exp=int(cfg.get("moe_intermediate_size") or cfg.get("expert_intermediate_size") or 0))


def compute_buffers(shape: GraphShape, *, n_ubatch: int, n_kv: int, flash_attn: bool, n_kv_swa: int = 0,
                    n_outputs: int | None = None, output_on_device: bool = True,
                    all_layers_on_device: bool = True) -> ComputeBuffers:
    """The CUDA0 and CUDA_Host compute buffers for one reserve (see the module docstring).

    ``n_kv`` is the cell count of the full-attention cache (``n_ctx_seq`` padded; all cells at reserve
    time), ``n_kv_swa`` that of the sliding-window cache (0 if none).
    """
    T = int(n_ubatch)
    E, V, H = shape.n_embd, shape.n_vocab, shape.n_head
    n_out = T if n_outputs is None else min(T, int(n_outputs))
    mask_b = 2 if flash_attn else 4
    mask = n_kv * T * mask_b + n_kv_swa * T * mask_b
    phases: dict[str, int] = {}
    if output_on_device:
        phases["output (logits)"] = 4 * n_out * V + 4 * T * E
    if flash_attn:
        phases["attention (flash)"] = mask + LIVE_FA * 4 * E * T
    else:
        phases["attention (kq matrix)"] = 4 * H * max(n_kv, n_kv_swa) * T + mask + LIVE_ATTN * 4 * E * T
    if shape.n_expert and shape.n_ff_exp:
        phases["experts"] = LIVE_FFN * 4 * shape.n_expert_used * shape.n_ff_exp * T + 4 * shape.n_expert * T \
            + 4 * E * T
    if shape.n_ff:
        phases["feed-forward"] = LIVE_FFN * 4 * shape.n_ff * T + 4 * E * T
    dominant = max(phases, key=phases.get)
    host = 4 * E * T + mask + 8 * T
    return ComputeBuffers(phases[dominant], host, phases, dominant)
