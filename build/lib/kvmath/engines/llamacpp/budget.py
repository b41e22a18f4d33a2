"""llama.cpp on one card: the per-device budget, a verdict, the largest ``-c`` / smallest ``--n-cpu-moe``
that fits, the same question answered the way ``--fit`` answers it, and tokens/s under offload.

Budget per device (MiB, what llama.cpp logs): model buffer + KV buffer + RS buffer + compute buffer, against
the card's memory less the CUDA context and a headroom. Verdicts:

- ``fits``;
- ``oom at load``: the buffers llama.cpp allocates while loading (weights, cache, compute buffers: all three
  are allocated before the first token) exceed what the card has free;
- ``oom at first batch``: they fit, but not with the CUDA memory pool the first prompt batch takes
  (``ggml_cuda_pool``: the quantised copy of the activations for MMQ and the cuBLAS workspace; kvmath counts
  ``first_batch_pool_mib``, an assumption stated in the result).

``--fit`` (common/fit.cpp, llama.cpp 0c1e570, on by default in llama-server): it projects model + context +
compute per device from a dry run, keeps a target of free memory per device (``--fit-target``, default 1024
MiB), and if the target is missed (1) lowers ``-c`` when the user did not set it (linear interpolation between
the projection at ``--fit-ctx`` 4096 and at the full context, rounded down to 256), then (2) when ``-ngl`` was
not set, moves weights: for a MoE model all expert tensors to system memory, then fills dense layers back to
front and turns layers into full layers front to back (so the experts left in RAM are those of the *last*
layers, where ``--n-cpu-moe`` keeps those of the *first* ones). It refuses to change what the user set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import KvMathError

from ...units import GiB, MiB
CUDA_CONTEXT_MIB = 400
"""Assumed memory the CUDA context takes before llama.cpp allocates anything (driver and runtime; ~300-500
MiB on current drivers, more with a display attached). An assumption: pass your own."""
FIRST_BATCH_POOL_MIB = 64
"""Assumed CUDA pool growth during the first prompt batch (MMQ activation copies, cuBLAS workspace)."""
FIT_TARGET_MIB = 1024
"""``--fit-target`` default (common/common.h ``fit_params_target`` = 1024 MiB per device)."""
FIT_MIN_CTX = 4096
"""``--fit-ctx`` default (``fit_params_min_ctx``)."""



def card(name: str) -> dict:
    """A card of data/cards.json by id, alias or printed name (``5070ti``, ``rtx4060ti-16``, ``NVIDIA GeForce RTX
    3090``): ``kvmath.cards.card``. Raises KvMathError naming the candidates or the ids."""
    from ...cards import card as _card

    return _card(name)


@dataclass(frozen=True)
class DeviceBudget:
    device: str
    total_mib: float
    cuda_context_mib: float
    headroom_mib: float
    model_mib: float
    kv_mib: float
    rs_mib: float
    compute_mib: float
    first_batch_mib: float

    @property
    def load_mib(self) -> float:
        return self.model_mib + self.kv_mib + self.rs_mib + self.compute_mib

    @property
    def free_mib(self) -> float:
        return self.total_mib - self.cuda_context_mib

    @property
    def verdict(self) -> str:
        if self.load_mib > self.free_mib:
            return "oom at load"
        if self.load_mib + self.first_batch_mib > self.free_mib:
            return "oom at first batch"
        return "fits"

    @property
    def spare_mib(self) -> float:
        """What is left after the first batch and the headroom (negative: short by that much)."""
        return self.free_mib - self.load_mib - self.first_batch_mib - self.headroom_mib


@dataclass(frozen=True)
class Setup:
    """Everything one llama.cpp launch puts on the card, with the figures it came from."""

    budget: DeviceBudget
    host_model_mib: float
    host_compute_mib: float
    notes: tuple[str, ...] = field(default=())


def device_budget(*, model_bytes: int, kv_bytes: int, rs_bytes: int = 0, compute_bytes: int, total_mib: float,
                  cuda_context_mib: float = CUDA_CONTEXT_MIB, headroom_mib: float = 0.0,
                  first_batch_mib: float = FIRST_BATCH_POOL_MIB, device: str = "CUDA0") -> DeviceBudget:
    return DeviceBudget(device, float(total_mib), float(cuda_context_mib), float(headroom_mib), model_bytes / MiB,
                        kv_bytes / MiB, rs_bytes / MiB, compute_bytes / MiB, float(first_batch_mib))


@dataclass(frozen=True)
class FitAnswer:
    """What ``--fit`` would do, with the lines it prints (common/fit.cpp)."""

    projected_mib: int
    free_mib: int
    target_mib: int
    action: str
    n_ctx: int | None
    n_cpu_moe_equivalent: int | None
    lines: tuple[str, ...]


def fit_like_llamacpp(project, *, free_mib: float, n_ctx: int, n_ctx_set_by_user: bool, n_blocks: int,
                      ngl_set_by_user: bool = False, overrides_set_by_user: bool = False, is_moe: bool = True,
                      target_mib: int = FIT_TARGET_MIB, min_ctx: int = FIT_MIN_CTX) -> FitAnswer:
    """Answer the fit question as ``common_params_fit_impl`` does for one device.

    ``project(n_ctx, n_experts_on_cpu)`` returns projected device bytes (model + context + compute), where
    the experts of ``n_experts_on_cpu`` layers are in system memory (fit takes them from the back).
    """
    f = "common_params_fit_impl"
    used = int(project(n_ctx, 0) // MiB)
    free = int(free_mib)
    lines = [f"{f}: projected to use {used} MiB of device memory vs. {free} MiB of free device memory"]
    if free - used >= target_mib:
        lines.append(f"{f}: will leave {free - used} >= {target_mib} MiB of free device memory, no changes needed")
        return FitAnswer(used, free, target_mib, "no changes", n_ctx, 0, tuple(lines))
    lines.append(f"{f}: cannot meet free memory target of {target_mib} MiB, need to reduce device memory by "
                 f"{used - (free - target_mib)} MiB")
    if not n_ctx_set_by_user and n_ctx > min_ctx:
        at_min = project(min_ctx, 0)
        target_used = (free - target_mib) * MiB
        full = project(n_ctx, 0)
        if target_used > at_min:
            new = min_ctx + int((n_ctx - min_ctx) * (target_used - at_min) / (full - at_min))
            new = max(new - new % 256, min_ctx)
            lines.append(f"{f}: context size reduced from {n_ctx} to {new} -> need "
                         f"{int((n_ctx - new) * (full - at_min) / (n_ctx - min_ctx) // MiB)} MiB less memory in total")
            lines.append(f"{f}: entire model can be fit by reducing context")
            return FitAnswer(used, free, target_mib, "context reduced", new, 0, tuple(lines))
        n_ctx = min_ctx
    elif n_ctx_set_by_user:
        lines.append(f"{f}: context size set by user to {n_ctx} -> no change")
    if ngl_set_by_user:
        lines.append(f"{f}: n_gpu_layers already set by user, abort")
        return FitAnswer(used, free, target_mib, "refused (-ngl set)", None, None, tuple(lines))
    if overrides_set_by_user:
        lines.append(f"{f}: model_params::tensor_buft_overrides already set by user, abort")
        return FitAnswer(used, free, target_mib, "refused (-ot / --n-cpu-moe set)", None, None, tuple(lines))
    if not is_moe:
        return FitAnswer(used, free, target_mib, "layers moved to the CPU (dense model; not modelled)", n_ctx, None,
                         tuple(lines))
    from ...solve import first_true

    n = first_true(lambda k: project(n_ctx, k) <= (free - target_mib) * MiB, 0, n_blocks)
    if n is None:
        lines.append(f"{f}: with only dense weights in device memory there is still a total deficit")
        return FitAnswer(used, free, target_mib, "does not fit", n_ctx, None, tuple(lines))
    lines.append(f"{f}: experts of the last {n} layers in system memory (equivalent to --n-cpu-moe {n} for "
                 "equal layers)")
    return FitAnswer(used, free, target_mib, "experts moved", n_ctx, n, tuple(lines))


# --- speed --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Speed:
    tg_tokens_per_s: float
    pp_tokens_per_s: float
    gpu_bytes_per_token: int
    host_bytes_per_token: int
    bound: str


def speed(*, dense_gpu_bytes: int, expert_gpu_bytes: int, expert_host_bytes: int, active_fraction: float,
          kv_bytes_read: int, gpu_bandwidth_gbs: float, host_bandwidth_gbs: float, active_params: float,
          gpu_tflops: float, n_ubatch: int = 512, pcie_gbs: float = 25.0, eff_gpu: float = 0.7,
          eff_host: float = 0.6, eff_compute: float = 0.35) -> Speed:
    """Tokens/s from a bandwidth model.

    Generation reads, per token, the dense weights on the card, the active share of the experts on the card
    and the cache so far from VRAM at ``eff_gpu x`` the card's bandwidth, and the active share of the experts
    left in RAM from host memory at ``eff_host x`` its bandwidth (the CPU runs them). Prompt processing of a
    ``n_ubatch`` batch is compute bound on the card (``2 x active_params`` FLOP per token at ``eff_compute x``
    peak), except that the CPU-resident experts are streamed over PCIe once per micro-batch (llama.cpp copies
    them to the GPU for large batches) or run on the CPU, whichever is faster. The efficiencies are
    assumptions until calibrated (the chapter shows the runs it is compared with).
    """
    gpu = int(dense_gpu_bytes + active_fraction * expert_gpu_bytes + kv_bytes_read)
    host = int(active_fraction * expert_host_bytes)
    t_tg = gpu / (eff_gpu * gpu_bandwidth_gbs * 1e9) + host / (eff_host * host_bandwidth_gbs * 1e9)
    t_compute = n_ubatch * 2 * active_params / (eff_compute * gpu_tflops * 1e12)
    t_pcie = expert_host_bytes / (pcie_gbs * 1e9)
    t_cpu = n_ubatch * host / (eff_host * host_bandwidth_gbs * 1e9 * 8)  # batched expert GEMMs reuse each weight
    t_pp = t_compute + min(t_pcie, t_cpu) + gpu / (eff_gpu * gpu_bandwidth_gbs * 1e9)
    bound = "host RAM" if host / (eff_host * host_bandwidth_gbs) > gpu / (eff_gpu * gpu_bandwidth_gbs) else "VRAM"
    return Speed(1.0 / t_tg, n_ubatch / t_pp, gpu, host, bound)


# --- one launch on one card -----------------------------------------------------------------------------

def plan(model, config: dict, *, n_ctx: int, cache_type_k: str = "f16", cache_type_v: str | None = None,
         n_ubatch: int = 512, n_batch: int = 2048, flash_attn: str = "auto", n_gpu_layers=-1, n_cpu_moe: int = 0,
         weights=None, tensors=None, override_tensor=(), mmap: bool = True, card_id: str = "rtx5070ti",
         total_mib: float | None = None, cuda_context_mib: float = CUDA_CONTEXT_MIB, headroom_mib: float = 0.0,
         n_parallel: int = 1, fork: str | None = None, tool: str = "llama-server", n_draft: int = 0):
    """The per-device budget of one llama.cpp launch on one card (``CUDA0``).

    Weights: from a tensor table (``tensors``, :mod:`placement`, exact) or a :class:`WeightBytes` estimate
    (``weights``; every layer offloaded, ``--n-cpu-moe`` applied). Cache: :func:`memory.llamacpp_memory`
    (exact). Compute: :func:`compute.compute_buffers` from the config's shapes.

    ``tool`` decides how many output rows the reserved prompt graph has (llama.cpp 0c1e570
    ``src/llama-context.cpp``: ``n_outputs_pp = min(n_ubatch, cparams.n_outputs_max)``): ``llama-server``
    sets ``n_outputs_max`` to ``-np x (1 + draft tokens)`` (``tools/server/server-context.cpp``
    ``server_output_limits``, ``common/speculative.cpp`` ``common_speculative_get_output_limits``; ``n_draft``
    = ``--spec-draft-n-max`` with a draft), so its logits are a few rows; ``llama-fit-params``, ``llama-bench``
    and other ``common`` tools leave it 0 (= ``n_batch``): every token of the micro-batch is an output.
    """
    if tool not in ("llama-server", "llama-fit-params", "common"):
        raise KvMathError(f"tool must be llama-server, llama-fit-params or common, got {tool!r}")
    from .compute import compute_buffers, shape_from_config
    from .memory import llamacpp_memory
    from .placement import gpu_bytes, place

    fa_on = flash_attn in ("on", "auto", True)
    mem = llamacpp_memory(model, n_ctx=n_ctx, n_parallel=n_parallel, cache_type_k=cache_type_k,
                          cache_type_v=cache_type_v or cache_type_k, n_ubatch=n_ubatch, n_batch=n_batch,
                          flash_attn="on" if fa_on else "off", fork=fork)
    cfg = config.get("text_config", config)
    n_layer = int(cfg["num_hidden_layers"])
    notes = []
    if tensors is not None:
        p = place(tensors, n_layer=n_layer, n_gpu_layers=n_gpu_layers, n_cpu_moe=n_cpu_moe,
                  override_tensor=override_tensor, mmap=mmap)
        model_dev = gpu_bytes(p, 0)
        host_model = sum(v for k, v in p.buffers.items() if not k.startswith("CUDA") or k == "CUDA_Host")
        offloaded = p.offloaded
        notes.extend(p.notes)
    elif weights is not None:
        model_dev, host_model = weights.split(n_cpu_moe)
        offloaded = n_layer + 1
        notes.append(f"weights: {weights.source}")
    else:
        raise KvMathError("plan needs a tensor table (tensors=) or a weight estimate (weights=)")
    on_dev = offloaded >= n_layer + 1
    frac = min(offloaded, n_layer) / n_layer
    kv_dev = int(mem.kv_bytes * (1.0 if on_dev else frac))
    rs_dev = int(mem.recurrent_bytes * (1.0 if on_dev else frac))
    full = [c for c in mem.kv if c.kind != "SWA"]
    swa = [c for c in mem.kv if c.kind == "SWA"]
    n_kv = max((c.cells for c in full), default=0)
    n_kv_swa = max((c.cells for c in swa), default=0)
    n_outputs = min(n_batch, n_parallel * (1 + max(int(n_draft), 0))) if tool == "llama-server" else None
    cb = compute_buffers(shape_from_config(cfg), n_ubatch=min(n_ubatch, n_batch, mem.n_ctx), n_kv=n_kv,
                         n_kv_swa=n_kv_swa, flash_attn=fa_on, output_on_device=on_dev, n_outputs=n_outputs)
    if total_mib is None:
        total_mib = card(card_id)["total_gib"] * 1024
    b = device_budget(model_bytes=model_dev, kv_bytes=kv_dev, rs_bytes=rs_dev, compute_bytes=cb.device,
                      total_mib=total_mib, cuda_context_mib=cuda_context_mib, headroom_mib=headroom_mib)
    if not on_dev:
        notes.append("layers left on the CPU: their cache is counted on the host, the CUDA0 compute buffer "
                     "without the output layer")
    return Setup(b, host_model / MiB, cb.host / MiB, tuple(notes)), mem, cb
