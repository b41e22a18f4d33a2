"""Which pool SGLang builds for a model, and its geometry on one rank (``kvmath.model`` Architecture in, a
:class:`~kvmath.engines.sglang.pools.Geometry` out). One rule per layer kind, dispatched by the engine's
``rules`` (``Engine.rule``): attention layers -> MHA rows, MLA -> the latent row, Gated DeltaNet / Mamba-2
-> the MambaPool state, MLP-only blocks -> nothing; sliding-window layers get their own pool only when the
architecture is in the release's ``is_hybrid_swa_model`` list and the backend keeps the pool.
"""

from __future__ import annotations

from ...errors import KvMathError, choices
from ...model.specs import SLIDING, Architecture
from .pools import TORCH_DTYPES, Geometry, StateGeometry, cell_size
from .releases import SglangRelease


def hf_config(arch: Architecture) -> dict:
    """The model's whole config.json (a known model's reference file, or the parsed file kept on the
    Architecture); {} when neither is available."""
    cfg = (arch.extras or {}).get("hf_config")
    if isinstance(cfg, dict):
        return cfg
    from ... import facts

    try:
        return facts.reference_config(arch.name, copy_=False) or {}
    except Exception:  # an Architecture built by hand: no file behind it
        return {}


def architectures(arch: Architecture) -> tuple[str, ...]:
    """The config's ``architectures`` (the class SGLang's model registry looks up)."""
    got = hf_config(arch).get("architectures") or ()
    return tuple(str(a) for a in got) if isinstance(got, (list, tuple)) else ()


def check_served(arch: Architecture, rel: SglangRelease) -> str:
    """The architecture class SGLang ``rel`` serves for ``arch``; KvMathError naming the release and the
    classes it serves when it has none (srt/models/*.py EntryClass of the wheel)."""
    names = architectures(arch)
    if not names:
        raise KvMathError(f"{arch.name}: its config.json names no architectures, so which SGLang model class would "
                          "load it cannot be told; give the model's config.json")
    for n in names:
        if n in rel.archs:
            if n.startswith("Gemma4"):
                break
            return n
    if any(n.startswith("Gemma4") for n in names):
        raise KvMathError(f"{arch.name} ({names[0]}): SGLang serves Gemma 4 only from 0.5.23, with a hybrid SWA "
                          "pool, shared-KV layers and per-backend restrictions that kvmath has not modelled")
    if any(n == "KimiLinearForCausalLM" for n in names):
        raise KvMathError(f"{arch.name} (KimiLinearForCausalLM): SGLang's Kimi Linear pools (MLA over a KDA state "
                          "pool) are not modelled in kvmath")
    raise KvMathError(f"SGLang {rel.name} has no model class for {arch.name} ({', '.join(names)}); the classes of "
                      f"kvmath's models it serves: {choices(rel.archs)}")


def kv_dtype(arch: Architecture, rel: SglangRelease, flag: str, notes: list[str]) -> str:
    """The pool's element type for ``--kv-cache-dtype`` (model_runner.py ``init_memory_pool`` / 0.5.x
    ``configure_kv_cache_dtype``): ``auto`` = the model dtype, or fp8_e4m3 when the checkpoint's
    ``quantization_config.kv_cache_quant_algo`` is FP8 (0.5.4 on)."""
    if flag not in rel.kv_dtypes:
        if flag == "fp4_e2m1":
            raise KvMathError("--kv-cache-dtype fp4_e2m1 (SGLang 0.5.6 on) stores scale buffers kvmath has not "
                              "modelled; use auto, bf16, fp8_e4m3 or fp8_e5m2")
        raise KvMathError(f"--kv-cache-dtype {flag[:40]!r} is not an SGLang {rel.name} choice; valid: "
                          f"{choices(rel.kv_dtypes)}")
    if flag in ("bf16", "bfloat16"):
        return "bfloat16"
    if flag in ("fp8_e4m3", "fp8_e5m2"):
        return flag
    q = hf_config(arch).get("quantization_config") or {}
    if rel.fp8_checkpoint_kv and isinstance(q, dict) and str(q.get("kv_cache_quant_algo", "")).upper() == "FP8":
        notes.append("--kv-cache-dtype auto: the checkpoint's quantization_config says kv_cache_quant_algo FP8, "
                     "so SGLang stores fp8_e4m3 (0.5.4 on)")
        return "fp8_e4m3"
    dt = arch.dtype if arch.dtype in TORCH_DTYPES else None
    if dt == "float32":  # model_config.py _get_and_verify_dtype: float32 checkpoints run in half precision
        dt = "bfloat16" if arch.model_type.startswith("gemma") else "float16"
        notes.append(f"a float32 checkpoint runs in {dt} (SGLang's dtype auto), and so does the pool")
    if dt is None:
        raise KvMathError(f"{arch.name}: model dtype {arch.dtype!r} is not one kvmath prices for SGLang's pool "
                          "(bfloat16 or float16); give --kv-cache-dtype")
    return dt


def _kv_heads(total: int, attn_tp: int) -> int:
    """``ModelConfig.get_num_kv_heads``: ``max(1, total // attn_tp)`` (replicated when TP exceeds the heads)."""
    return max(1, total // attn_tp)


def build(arch: Architecture, rel: SglangRelease, *, attn_tp: int, kv_flag: str, backend: str | None,
          disable_hybrid_swa_memory: bool, compute_capability: int | None, ssm_dtype_flag: str | None,
          engine) -> Geometry:
    """The geometry SGLang ``rel`` builds for ``arch`` at attention TP ``attn_tp``. Raises KvMathError for a
    model the release does not serve, a layer kind it has no rule for, or heads that do not split."""
    notes: list[str] = []
    cls = check_served(arch, rel)
    dt = kv_dtype(arch, rel, kv_flag, notes)
    elt = TORCH_DTYPES[dt][1]
    kinds: dict[str, list] = {"attention": [], "sliding": [], "mla": [], "state": [], "none": []}
    for layer in arch.layers:
        kinds[engine.rule(layer, arch)(layer)].append(layer)
    if kinds["mla"]:
        if kinds["state"] or kinds["attention"] or kinds["sliding"]:
            raise KvMathError(f"{arch.name}: MLA mixed with other layer kinds is not an SGLang pool kvmath models")
        m = kinds["mla"][0]
        g = Geometry("mla", dt, elt, tuple(x.index for x in kinds["mla"]), mla_dim=m.kv_lora_rank + m.qk_rope_head_dim,
                     notes=tuple(notes + ["MLA latent pool: one row per token on every rank (not split by TP)"]))
        return _with_cell(g, rel)
    att = kinds["attention"] + kinds["sliding"]
    if not att:
        raise KvMathError(f"{arch.name}: no attention layers, so SGLang has no KV pool to size")
    first = att[0]
    heads = {x.num_kv_heads for x in att}
    dims = {(x.head_dim, x.v_head_dim) for x in att}
    state = None
    if kinds["state"]:
        state = _state(arch, rel, cls, kinds["state"], attn_tp, ssm_dtype_flag, notes)
        if len(heads) > 1 or len(dims) > 1:
            raise KvMathError(f"{arch.name}: full-attention layers of different widths in a hybrid model")
        g = Geometry("hybrid_linear", dt, elt, tuple(x.index for x in att), _kv_heads(first.num_kv_heads, attn_tp),
                     first.head_dim, first.v_head_dim, state=state, notes=tuple(notes))
        return _with_cell(g, rel)
    swa_pool = bool(kinds["sliding"]) and cls in rel.swa_archs and rel.swa_pool and not disable_hybrid_swa_memory
    if swa_pool and cls == "GptOssForCausalLM" and (backend == "trtllm_mha" or (
            backend is None and compute_capability is not None and compute_capability >= 100)):
        swa_pool = False
        notes.append("gpt-oss on Blackwell takes the trtllm_mha backend, which sets disable_hybrid_swa_memory "
                     "(server_args.py): every layer gets a full-length pool")
    if kinds["sliding"] and not swa_pool:
        notes.append(f"{len(kinds['sliding'])} sliding-window layers get a full-length pool: "
                     + ("--disable-hybrid-swa-memory" if disable_hybrid_swa_memory else
                        f"{cls} is not in SGLang {rel.name}'s hybrid SWA model list"
                        if cls not in rel.swa_archs else "the backend turns the SWA pool off"))
    if swa_pool:
        full, swa = kinds["attention"], kinds["sliding"]
        f0, s0 = full[0], swa[0]
        g = Geometry("swa", dt, elt, tuple(x.index for x in full), _kv_heads(f0.num_kv_heads, attn_tp), f0.head_dim,
                     f0.v_head_dim, tuple(x.index for x in swa), _kv_heads(s0.num_kv_heads, attn_tp), s0.head_dim,
                     s0.v_head_dim, notes=tuple(notes))
        return _with_cell(g, rel)
    if len(heads) > 1 or len(dims) > 1:
        raise KvMathError(f"{arch.name}: layers of different KV widths ({sorted(dims)}) in one SGLang MHA pool")
    g = Geometry("mha", dt, elt, tuple(x.index for x in sorted(att, key=lambda x: x.index)),
                 _kv_heads(first.num_kv_heads, attn_tp), first.head_dim, first.v_head_dim, notes=tuple(notes))
    return _with_cell(g, rel)


def _with_cell(g: Geometry, rel: SglangRelease) -> Geometry:
    from dataclasses import replace

    return replace(g, cell=cell_size(g, rel))


def _state(arch, rel, cls, layers, tp, ssm_flag, notes) -> StateGeometry:
    """``Mamba2StateShape.create`` (configs/mamba_utils.py) for the linear layers, per rank."""
    if cls not in rel.gdn_archs + rel.mamba2_archs:
        raise KvMathError(f"SGLang {rel.name} has no state pool for {cls}")
    x = layers[0]
    shape = _STATE_SHAPE.get(x.kind)
    if shape is None:
        raise KvMathError(f"SGLang has no state rule for {type(x).__name__} layers")
    intermediate, n_groups, heads, head_dim, state_size, k = shape(x)
    kind = x.kind
    if n_groups % tp:
        n_groups += tp - n_groups  # extra_groups_for_head_shards
    conv_dim = intermediate + 2 * n_groups * state_size
    if conv_dim % tp or heads % tp:
        raise KvMathError(f"{arch.name}: SGLang's state shapes divide conv_dim {conv_dim} and {heads} heads by the "
                          f"attention TP {tp} (mamba_utils.py divide), which does not divide them")
    if ssm_flag is not None:
        ssm = ssm_flag
    elif rel.ssm_dtype_from_config:
        raw = hf_config(arch)
        tc = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
        ssm = str(tc.get("mamba_ssm_dtype") or raw.get("mamba_ssm_dtype") or "float32")
        if ssm not in ("float32", "bfloat16", "float16"):
            ssm = "float32"
    else:
        ssm = "float32"
    notes.append(f"state pool: conv bfloat16, temporal {ssm} (" + ("--mamba-ssm-dtype" if ssm_flag else
                 "the config's mamba_ssm_dtype, else float32" if rel.ssm_dtype_from_config else
                 "--mamba-ssm-dtype default float32") + ")")
    return StateGeometry(tuple(y.index for y in layers), ((conv_dim // tp, k - 1),), (heads // tp, head_dim, state_size),
                         "bfloat16", ssm, kind)


# (intermediate, n_groups, heads, head_dim, state_size, conv kernel) of a state layer, per kind, as
# Mamba2StateShape.create takes them from the config classes' mamba2_cache_params (srt/configs/)
_STATE_SHAPE = {
    "gdn": lambda x: (x.v_head_dim * x.num_v_heads, x.num_k_heads, x.num_v_heads, x.v_head_dim, x.k_head_dim,
                      x.conv_kernel),
    "mamba2": lambda x: (x.num_heads * x.head_dim, x.n_groups, x.num_heads, x.head_dim, x.state_size, x.conv_kernel),
}


# the per-kind rules the engine dispatches to (Engine.rules names these methods on the engine)
def attention_kind(layer) -> str:
    if not layer.owns_cache:
        raise KvMathError(f"layer {layer.index} reads another layer's KV (KV sharing): not an SGLang pool kvmath models")
    return "sliding" if layer.layer_type == SLIDING else "attention"


__all__ = ["build", "hf_config", "architectures", "check_served"]
