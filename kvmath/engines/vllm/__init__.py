"""vLLM (V1 engine): settings, formats, per-layer rules, block allocation, log lines and budget.

``VllmEngine.allocate`` is ``alloc.plan`` without a memory figure: the per-layer specs after vLLM's
hybrid block alignment and page unification, grouped as vLLM groups them. ``layer_groups`` sums what
``max_num_seqs`` requests of ``max_model_len`` tokens hold in those blocks (padding layers included),
so ``kvmath.derive``'s total for one sequence is the plan's ``needed_bytes`` to the byte.
"""

from __future__ import annotations

import argparse

from ...errors import KvMathError
from ...model.specs import FULL, LINEAR, SLIDING, Architecture
from ..base import Engine, LayerGroup, StateTensor, merge_empty
from . import rules
from .releases import covered
from .alloc import VllmPlan, plan
from .formats import VLLM_FORMATS, vllm_format
from .settings import (DEFAULT_VLLM_VERSION, VLLM_BLOCK_SIZES, VllmSettings, human_readable_int, in_flight_tokens,
                       long_max_model_len_allowed)

_COMMON = ("max_model_len", "max_num_seqs", "tensor_parallel_size", "kv_cache_dtype")


_COUNTS: dict[int, tuple] = {}


def _spec_counts(final_layers: tuple) -> tuple:
    """((spec, number of layers), ...) of a plan's final layers, kept per tuple (a cached layout's plans
    share it; the entry holds the tuple alive; at most 1,024 entries)."""
    hit = _COUNTS.get(id(final_layers))
    if hit is not None and hit[0] is final_layers:
        return hit[1]
    counts: dict[int, list] = {}
    for _, spec in final_layers:
        c = counts.get(id(spec))
        if c is None:
            counts[id(spec)] = [spec, 1]
        else:
            c[1] += 1
    result = tuple((spec, n) for spec, n in counts.values())
    if len(_COUNTS) >= 1024:
        _COUNTS.clear()
    _COUNTS[id(final_layers)] = (final_layers, result)
    return result


class VllmEngine(Engine):
    name = "vllm"
    label = "vLLM"
    version = (f"vLLM V1 block allocation (kv_cache_interface.py, kv_cache_utils.py, mamba_utils.py; "
               f"{covered(short=True)}; default {DEFAULT_VLLM_VERSION})")
    formats = tuple(VLLM_FORMATS)
    setting_names = tuple(f for f in VllmSettings.__dataclass_fields__ if f not in _COMMON)
    cli_title = "vLLM flags (vllm serve names)"
    programs = (("vllm", "serve"), ("python", "-m", "vllm.entrypoints.openai.api_server"),
                ("python3", "-m", "vllm.entrypoints.openai.api_server"))
    context_setting = "max_model_len"
    seqs_setting = "max_num_seqs"

    def front_door(self, words, argv):
        """``kvmath-fit vllm serve ...``: vLLM's own command line (kvmath.engines.vllm.cli), which also takes the
        public calculator's flags."""
        from .cli import run

        return run([*words, *argv])

    def settings(self, arch, *, max_ctx, max_num_seqs, tp, kv_format, cache_type_k=None, cache_type_v=None, **kw):
        if cache_type_k is not None or cache_type_v is not None:
            raise KvMathError("cache_type_k / cache_type_v (-ctk / -ctv) are llama.cpp flags; vLLM takes one "
                              "kv_cache_dtype (--kv-cache-dtype) for K and V")
        if max_ctx is None:
            max_ctx = arch.max_position_embeddings
            if not max_ctx:
                raise KvMathError(f"{arch.name}: config has no max_position_embeddings; pass max_ctx (--max-model-len)")
        return VllmSettings(max_model_len=max_ctx, max_num_seqs=max_num_seqs, tensor_parallel_size=tp,
                            kv_cache_dtype="auto" if kv_format is None else kv_format, **kw)

    def tp_problem(self, arch, tp):
        return rules.tp_problem(arch, tp)

    def allocate(self, arch: Architecture, settings: VllmSettings) -> VllmPlan:
        p = plan(arch, None, settings)
        if p.refusal is not None:
            raise KvMathError(f"vLLM {p.vllm_version} refuses this configuration at start-up: {p.refusal}")
        return p

    def cache_format(self, allocation: VllmPlan):
        return vllm_format(allocation.kv_format)

    def kv_split(self, p: VllmPlan) -> tuple[int, int, int]:
        """(growing, sliding, state): bytes per card that ``max_num_seqs`` requests of ``max_model_len`` hold
        in full-attention / MLA layers (drafter layers and windows charged in full included), in sliding
        windows, and in Mamba / DeltaNet state. The sums of ``layer_groups``' ``growing``, ``sliding`` and
        ``is_state`` terms, without building the groups (the budget's hot path); padding slots are in none."""
        s = p.settings
        L, seqs = p.max_model_len, s.max_num_seqs
        in_flight = in_flight_tokens(s)
        out = {"full_attention": 0, "sliding_window": 0, "mamba": 0}
        for spec, n in _spec_counts(p.final_layers):
            out[spec.kind] += n * spec.max_memory_usage_bytes(L, in_flight)
        return out["full_attention"] * seqs, out["sliding_window"] * seqs, out["mamba"] * seqs

    def layer_groups(self, arch: Architecture, p: VllmPlan) -> tuple[LayerGroup, ...]:
        s = p.settings
        L, seqs = p.max_model_len, s.max_num_seqs
        in_flight = in_flight_tokens(s)
        by_index = {layer.index: layer for layer in arch.layers}
        buckets: dict[tuple, list[int]] = {}
        for name, spec in p.final_layers:
            index = int(name.rsplit(".", 1)[1])
            buckets.setdefault((spec, name.startswith("mtp.")), []).append(index)
        for idx in buckets.values():
            idx.sort()
        out: list[LayerGroup] = []
        for (spec, drafter), idx in buckets.items():
            layer = by_index.get(idx[0])
            held = spec.max_memory_usage_bytes(L, in_flight)  # bytes one request holds in one layer
            blocks = held // spec.page_size_bytes
            pad = ""
            if spec.page_padded_bytes is not None and spec.page_padded_bytes != spec.real_page_bytes:
                pad = f" (page padded from {spec.real_page_bytes:,} B to {spec.page_size_bytes:,} B)"
            if spec.kind == "mamba":
                kind = layer.kind
                state = tuple(StateTensor(n, sh, d) for n, sh, d in zip(rules.state_names(layer), spec.state_shapes,
                                                                        spec.state_dtypes))
                desc = (f"{layer.describe()}; vLLM holds {blocks} block(s) of {spec.page_size_bytes:,} B per "
                        f"request (mamba_cache_mode {p.mamba_cache_mode}){pad}")
                out.append(LayerGroup(LINEAR, tuple(idx), desc, bytes=len(idx) * held * seqs, kind=kind,
                                      state=state, state_bytes_per_seq=held, streams=seqs))
                continue
            layer_type = FULL if spec.kind == "full_attention" else SLIDING
            desc = layer.describe() if layer is not None else "MTP drafter full-attention layer (target's spec)"
            if drafter:
                desc = "MTP drafter layer: " + desc
            if layer is not None and layer.layer_type == SLIDING and layer_type == FULL:
                desc += "; charged in full: --disable-hybrid-kv-cache-manager turns the window into full attention"
            if spec.kv_cache_dtype != p.kv_format:
                desc += f", stored as {spec.kv_cache_dtype}"
            desc += f"; {blocks:,} blocks of {spec.block_size} tokens per request{pad}"
            out.append(LayerGroup(layer_type, tuple(idx), desc, bytes=len(idx) * held * seqs,
                                  kind="mla" if layer is not None and layer.kind == "mla" else "attention",
                                  kv_heads_per_rank=spec.num_kv_heads, bytes_per_token=spec.token_bytes,
                                  cells=blocks * spec.block_size, streams=seqs, kv_format=spec.kv_cache_dtype))
        padding = sum(g.padding_layers * g.spec.max_memory_usage_bytes(L, in_flight) for g in p.groups) * seqs
        if padding:
            n_pad = sum(g.padding_layers for g in p.groups)
            out.append(LayerGroup("padding", (), f"{n_pad} padding layer slot(s): vLLM's groups have "
                                  f"{p.group_size} layers each, and every block takes {p.group_size} pages",
                                  bytes=padding, kind="padding", streams=seqs))
        # layers vLLM builds no spec for: shared-KV layers and MLP / MoE-only blocks
        planned = {int(n.rsplit(".", 1)[1]) for n, _ in p.final_layers}
        for layer in arch.layers:
            if layer.index not in planned:
                out.append(LayerGroup(layer.layer_type, (layer.index,), layer.describe(), bytes=0,
                                      kind="none" if layer.layer_type not in (FULL, SLIDING) else "attention",
                                      owns_cache=False))
        return merge_empty(out)

    # --- command line -----------------------------------------------------------------------------
    def add_cli_flags(self, g) -> list[str]:
        S = argparse.SUPPRESS
        g.add_argument("--max-num-batched-tokens", type=human_readable_int, default=S,
                       help="max_num_batched_tokens (default 2048); sizes the sliding-window term")
        g.add_argument("--block-size", type=int, default=S, help="block size in tokens (default 16)")
        g.add_argument("--kv-cache-memory-bytes", type=_bytes_arg, default=S, metavar="BYTES",
                       help="the memory left for KV per card, as the boot log reports it ('11.10GiB', '8GB' or "
                            "bytes): adds vLLM's block plan and the lines it logs (KV cache size in tokens, "
                            "maximum concurrency, or the refusal with the estimated maximum model length)")
        g.add_argument("--gpu-memory-utilization", type=float, default=S,
                       help="accepted (and checked) so launch flags paste; the per-card budget that uses it is "
                            "kvmath-fit's job")
        g.add_argument("--disable-hybrid-kv-cache-manager", action="store_true", default=S,
                       help="treat sliding-window layers as full attention (vLLM's switch)")
        g.add_argument("--num-speculative-tokens", type=int, default=S,
                       help="speculative tokens (MTP); adds the drafter's attention layer and conv-state rows")
        g.add_argument("--no-enable-prefix-caching", dest="enable_prefix_caching", action="store_false", default=S,
                       help="prefix caching off (Mamba/GDN states: mamba_cache_mode 'none')")
        g.add_argument("--enable-prefix-caching", dest="enable_prefix_caching", action="store_true", default=S)
        g.add_argument("--mamba-cache-dtype", default=S, help="conv-state dtype (auto = the model dtype)")
        g.add_argument("--mamba-ssm-cache-dtype", default=S, help="temporal-state dtype (auto = the config's)")
        g.add_argument("--vllm-version", default=S, help=f"whose rules to apply ({covered(short=True)}; default {DEFAULT_VLLM_VERSION})")
        g.add_argument("--gemma4-pth-page-padding", action="store_true", default=S,
                       help="apply the page padding of vLLM PR #40391 (not in a release; the club-3090 builds "
                            "carry it): Gemma 4 full-attention pages with a per-token-head dtype rounded to the "
                            "sliding pages' head size")
        return ["max_num_batched_tokens", "block_size", "kv_cache_memory_bytes", "gpu_memory_utilization",
                "disable_hybrid_kv_cache_manager", "num_speculative_tokens", "enable_prefix_caching",
                "mamba_cache_dtype", "mamba_ssm_cache_dtype", "vllm_version", "gemma4_pth_page_padding"]

    def env_settings(self, env) -> dict:
        """Settings a command reads from its environment, as ``vllm serve`` does: ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``
        (vllm/envs.py, a bool: ``1`` / ``true``) -> ``allow_long_max_model_len``. ``env`` is a mapping the
        command passes (``os.environ``); the library itself never reads the environment."""
        return {"allow_long_max_model_len": True} if long_max_model_len_allowed(env) else {}

    def settings_from_cli(self, args: dict) -> dict:
        out = dict(args)
        out.pop("kv_cache_memory_bytes", None)
        u = out.pop("gpu_memory_utilization", None)
        if u is not None and not (0 < u <= 1):
            raise KvMathError(f"--gpu-memory-utilization must be in (0, 1], got {u}")
        return out


def _bytes_arg(text: str) -> int:
    """``--kv-cache-memory-bytes``: vLLM's own forms (``human_readable_int``: ``12G`` = 12 GiB, ``12g`` =
    12e9, plain bytes) or a figure pasted from a boot log with its unit (``11.10GiB``, ``8 GB``, ``512MiB``)."""
    import re

    from ...units import UNITS
    from ...validate import MAX_BYTES

    m = re.fullmatch(r"\s*([0-9]{1,20}(?:\.[0-9]{1,20})?|\.[0-9]{1,20})\s*([KMG]i?B|B)\s*", text)
    if not m:
        return human_readable_int(text)
    value = float(m.group(1)) * UNITS[m.group(2)]
    if not 0 < value <= MAX_BYTES:
        raise argparse.ArgumentTypeError(f"memory size must be positive and at most 2^60 bytes, got {text[:40]!r}")
    return int(value)


ENGINE = VllmEngine()
