"""llama.cpp: cache types, builds, the memory module it creates (KV / iSWA / recurrent), log lines.

``LlamaCppEngine.allocate`` is :func:`memory.llamacpp_memory`, the cache objects llama.cpp creates for
the flags; ``layer_groups`` sums their tensors, so ``kvmath.derive``'s total is what the
``llama_kv_cache: size = ...`` and ``llama_memory_recurrent: size = ...`` lines add up to.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import asdict, dataclass

from ...errors import KvMathError
from ...model.specs import FULL, LINEAR, SLIDING, Architecture
from ...units import ceil_div
from ...validate import MAX_TOKENS, _short, check_bool, check_count, check_name, check_positive, stof_float, stoi_int
from ..base import Engine, LayerGroup, StateTensor, merge_empty
from .formats import LLAMACPP_CACHE_TYPES, TURBO_TYPES, llamacpp_format
from .builds import SPEC_ROLLBACK, TABLE
from .memory import BUILD_ALIASES, BUILDS, DEFAULT_BUILD, LlamaCppMemory, llamacpp_memory

FLASH_ATTN = ("auto", "on", "off")
SPEC_TYPES_WITH_ROLLBACK = SPEC_ROLLBACK
"""``--spec-type`` values whose draft replays rejected tokens, so the target keeps ``--spec-draft-n-max``
recurrent-state snapshots per sequence (upstream common/common.h ``need_n_rs_seq()``: ``draft.n_max`` for
the model-based draft types, 0 for ``draft-simple`` and the n-gram types; llama-context sets
``cparams.n_rs_seq`` from it)."""
RS_ROLLBACK_MODEL_TYPES = ("qwen3_5_text", "qwen3_5_moe_text")
"""Models whose recurrent cache supports rollback snapshots (upstream llama-arch.cpp
``llm_arch_supports_rs_rollback``: QWEN35 and QWEN35MOE); others get 0 snapshots."""


JSON_FIELDS = {  # the keys of Verdict.engine_detail (verdict.Detail.to_dict)
    "build": "the llama.cpp build (tag) whose rules priced the launch",
    "tool": "llama-server | llama-cli | llama-fit-params (decides the reserved output rows)",
    "n_ctx": "the context llama.cpp ends up with (padded to 256, whole streams), tokens",
    "n_ctx_seq": "cells of a full-attention layer per stream",
    "weights": "where the weight bytes came from (GGUF tensor table, a llama-quantize mix, or bits per weight)",
    "fit": "what --fit does: action, n_ctx, n_cpu_moe_equivalent, projected_mib, free_mib, target_mib, lines",
    "compute_dominant": "the graph phase that sizes the device compute buffer",
    "moe": "the model has routed experts (--n-cpu-moe has something to move; else smallest_offload is null)",
    "compute_upper_bytes": "the compute buffer with the logits placed above every earlier phase (ggml-alloc), bytes",
    "n_ctx_train": "the model's training context per sequence (0 if unknown); a -c past it is allocated with a "
                   "warning and llama-server caps each slot at it",
    "backend": "the ggml backend priced: cuda, hip, vulkan or metal, from -dev, else the card, else cuda (said in "
               "the notes; kvmath.engines.llamacpp.backends)",
}


@dataclass(frozen=True)
class LlamaCppSettings:
    """llama.cpp's flags that shape its memory module, under llama-server's names and defaults.

    ``n_ctx`` (``-c``, total over all sequences; 0 = the training context), ``n_parallel`` (``-np``),
    ``cache_type_k`` / ``cache_type_v`` (``-ctk`` / ``-ctv``, default f16), ``n_batch`` (``-b``, 2048),
    ``n_ubatch`` (``-ub``, 512), ``swa_full`` (``--swa-full``), ``flash_attn`` (``-fa``: auto / on / off),
    ``kv_unified`` (``--kv-unified``), ``n_rs_seq`` (recurrent snapshots per sequence kept for
    speculative rollback), ``build`` (``memory.BUILDS``: ``0c1e570`` or ``ec98e2002``; aliases
    ``current`` / ``pre-v-less``), ``fork`` (TheTom/llama-cpp-turboquant version, for ``turbo*``
    types; None picks the newest when a turbo type is asked for).
    """

    n_ctx: int
    n_parallel: int = 1
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    n_batch: int = 2048
    n_ubatch: int = 512
    swa_full: bool = False
    flash_attn: str = "auto"
    kv_unified: bool = False
    n_rs_seq: int = 0
    build: str = DEFAULT_BUILD
    fork: str | None = None
    turbo_auto_asymmetric: bool = True
    turbo_boundary_v: bool = True

    def __post_init__(self):
        object.__setattr__(self, "n_ctx", check_count(self.n_ctx, "n_ctx (-c)", 0, MAX_TOKENS))
        for name in ("n_parallel", "n_batch", "n_ubatch"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name, maximum=MAX_TOKENS))
        object.__setattr__(self, "n_rs_seq", check_count(self.n_rs_seq, "n_rs_seq", 0, 1024))
        for name in ("swa_full", "kv_unified", "turbo_auto_asymmetric", "turbo_boundary_v"):
            check_bool(getattr(self, name), name)
        fa = self.flash_attn
        fa = {True: "on", False: "off", "enabled": "on", "disabled": "off"}.get(fa, fa) \
            if isinstance(fa, (str, bool)) else fa
        if fa not in FLASH_ATTN:
            raise KvMathError(f"flash_attn (-fa) must be one of {', '.join(FLASH_ATTN)}, got {_short(self.flash_attn)}")
        object.__setattr__(self, "flash_attn", fa)
        build = BUILD_ALIASES.get(self.build, self.build) if isinstance(self.build, str) else None
        if build not in BUILDS:
            raise KvMathError(f"unknown llama.cpp build {_short(self.build)}; known: "
                              f"{', '.join(list(BUILDS) + list(BUILD_ALIASES))}")
        object.__setattr__(self, "build", build)
        for name in ("cache_type_k", "cache_type_v"):
            check_name(getattr(self, name), name, maximum=64)
        check_name(self.fork, "fork", maximum=64, optional=True)
        if self.fork is None and any(isinstance(t, str) and t.lower() in TURBO_TYPES
                                     for t in (self.cache_type_k, self.cache_type_v)):
            object.__setattr__(self, "fork", "turboquant")

    @property
    def max_num_seqs(self) -> int:
        return self.n_parallel

    @property
    def max_ctx(self) -> int:
        """Context per sequence as asked for (``n_ctx / n_parallel``, before llama.cpp's padding)."""
        return ceil_div(self.n_ctx, self.n_parallel)

    @property
    def tp(self) -> int:
        return 1


class LlamaCppEngine(Engine):
    name = "llama.cpp"
    label = "llama.cpp"
    version = ("llama.cpp 0c1e570 (llama-kv-cache.cpp, llama-kv-cache-iswa.cpp, llama-memory-recurrent.cpp, "
               "llama-memory-hybrid.cpp; built and run for tests/fixtures/llamacpp), older build ec98e2002 on request")
    formats = LLAMACPP_CACHE_TYPES + tuple(TURBO_TYPES)
    setting_names = tuple(f for f in LlamaCppSettings.__dataclass_fields__
                          if f not in ("n_parallel", "cache_type_k", "cache_type_v"))
    cli_title = "llama.cpp flags (llama-server names)"
    programs = (("llama-server",), ("llama-cli",), ("llama-fit-params",))
    context_setting = "n_ctx"
    seqs_setting = "n_parallel"
    offload_setting = "n_cpu_moe"

    json_fields = JSON_FIELDS

    def parse_launch(self, argv, env=None):
        """A ``llama-server`` line (program word removed) as a Launch (:func:`launch.parse_launch`)."""
        from .launch import parse_launch

        return parse_launch(argv, env)

    def launch_flags(self):
        """llama.cpp flags by what kvmath does with them (kvmath.engines.llamacpp.launch tables)."""
        from .launch import _FLAGS, IGNORED_BARE, IGNORED_VALUE, REFUSED

        return {"priced (short and long names)": list(_FLAGS),
                "ignored (they do not change device memory)": sorted(IGNORED_VALUE | IGNORED_BARE),
                "refused (kvmath has no rule for them)": list(REFUSED)}

    def launch_for(self, words, argv, env=None):
        """``llama-server`` / ``llama-cli`` / ``llama-fit-params`` lines: the program decides the defaults of
        ``-np`` and the output rows the compute buffer is reserved for."""
        from .launch import parse_launch

        return parse_launch(argv, env, tool=words[0] if words else "llama-server")

    def verdict(self, launch):
        """Per-device buffers, the outcome and llama.cpp's lines (:func:`verdict.verdict`)."""
        from .verdict import verdict

        return verdict(launch)

    def for_solving(self, launch):
        """The solvers answer for the line as written: ``--fit`` off (it would move experts or lower ``-c``
        by itself, and ``--n-cpu-moe N`` turns it off, so booting would not be monotone)."""
        return launch.with_settings(fit=False)

    @staticmethod
    def offload_frees_devices(verdict) -> bool:
        """Whether every GPU of ``verdict`` has room (the host aside): monotone in ``--n-cpu-moe``, unlike the
        verdict, which also checks the host (``--host-memory``) that more offloaded experts fill."""
        return all(d.spare_bytes >= 0 for d in verdict.devices if d.name != "Host")

    def range_of(self, launch, setting):
        from .verdict import range_of

        return range_of(launch, setting)

    def render(self, verdict, answers):
        from .verdict import render

        return render(verdict, answers)

    def settings(self, arch, *, max_ctx, max_num_seqs, tp, kv_format, cache_type_k=None, cache_type_v=None, **kw):
        self.check_tp(arch, tp)
        if kv_format is not None and (cache_type_k is not None or cache_type_v is not None):
            raise KvMathError("give either kv_format or cache_type_k / cache_type_v (-ctk / -ctv), not both")
        k = cache_type_k or kv_format or "f16"
        v = cache_type_v or kv_format or ("f16" if cache_type_k else k)
        if "n_ctx" in kw:
            if max_ctx is not None:
                raise KvMathError("give either n_ctx (-c, total over all sequences) or max_ctx (per sequence), "
                                  "not both")
        else:
            per_seq = max_ctx if max_ctx is not None else (arch.max_position_embeddings or 0)
            if not per_seq:
                raise KvMathError(f"{arch.name}: config has no max_position_embeddings; pass max_ctx or n_ctx")
            kw["n_ctx"] = check_positive(per_seq, "max_ctx", maximum=MAX_TOKENS) * \
                check_positive(max_num_seqs, "max_num_seqs", maximum=MAX_TOKENS)
        if kw.get("n_rs_seq") and arch.model_type not in RS_ROLLBACK_MODEL_TYPES:
            kw["n_rs_seq"] = 0  # llm_arch_supports_rs_rollback: llama.cpp clamps the request to 0 here
        return LlamaCppSettings(n_parallel=max_num_seqs, cache_type_k=k, cache_type_v=v, **kw)

    def allocate(self, arch: Architecture, s: LlamaCppSettings) -> LlamaCppMemory:
        return llamacpp_memory(arch, **asdict(s))

    def cache_format(self, mem: LlamaCppMemory):
        return llamacpp_format(mem.type_k, mem.type_v)

    def layer_groups(self, arch: Architecture, mem: LlamaCppMemory) -> tuple[LayerGroup, ...]:
        # a Falcon-H1 hybrid layer is in the K/V cache as its attention part and in the recurrent memory as its
        # Mamba-2 part: one group each over the same index
        by_index = {layer.index: getattr(layer, "attention", layer) for layer in arch.layers}
        state_of = {layer.index: getattr(layer, "mamba", layer) for layer in arch.layers}
        out: list[LayerGroup] = []
        placed: set[int] = set()
        for c in mem.kv:
            buckets: dict[tuple, list] = {}
            for t in c.layers:
                buckets.setdefault((t.k_type, t.k_width, t.v_type, t.v_width), []).append(t)
            for (k_type, k_width, v_type, v_width), ts in buckets.items():
                first = by_index[ts[0].index]
                nbytes = sum(t.k_bytes + t.v_bytes for t in ts)
                slots = c.cells * c.n_stream
                desc = first.describe()
                if c.kind != "SWA" and first.layer_type == SLIDING:
                    desc += f", window {first.sliding_window} not applied by llama.cpp ({arch.model_type})"
                stored = f"K {k_type} x {k_width}" + (f", V {v_type} x {v_width}" if v_type else ", no V")
                desc += f"; {stored} per cell ({c.kind} cache)"
                out.append(LayerGroup(SLIDING if c.kind == "SWA" else FULL, tuple(t.index for t in ts), desc,
                                      bytes=nbytes, kind=first.kind,
                                      kv_heads_per_rank=1 if first.kind == "mla" else first.num_kv_heads,
                                      bytes_per_token=nbytes // (len(ts) * slots) if slots else 0,
                                      cells=c.cells, streams=c.n_stream,
                                      kv_format=k_type if k_type == v_type or v_type is None else f"{k_type}/{v_type}"))
                placed.update(t.index for t in ts)
        r = mem.recurrent
        if r is not None:
            first = state_of[r.layers[0]]
            kind = first.kind
            rows = 1 + r.n_rs_seq
            out.append(LayerGroup(
                LINEAR, r.layers, first.describe() + (f"; {r.n_rs_seq} rollback snapshot(s) per sequence"
                                                       if r.n_rs_seq else ""),
                bytes=r.bytes, kind=kind, state=(StateTensor("r", (r.r_width,), "float32"),
                                                 StateTensor("s", (r.s_width,), "float32")),
                state_bytes_per_seq=4 * (r.r_width + r.s_width) * rows, streams=r.cells))
            placed.update(r.layers)
        for layer in arch.layers:
            if layer.index not in placed:
                out.append(LayerGroup(layer.layer_type, (layer.index,), layer.describe(), bytes=0,
                                      kind="attention" if layer.layer_type in (FULL, SLIDING) else "none",
                                      owns_cache=False))
        return merge_empty(out)

    # --- command line -----------------------------------------------------------------------------
    def cli_block(self, d, extra: dict):
        """``kvmath --engine llama.cpp``: the start-up lines of the memory module the derivation sums."""
        mem = d.allocation
        lines = ["", f"llama.cpp ({mem.build}) start-up lines for these flags (n_ctx {mem.n_ctx:,}):"]
        lines += [f"  {line}" for line in mem.log_lines(buffers="CUDA0")]
        lines += [f"  note: {n}" for n in mem.notes]
        return lines, {"llamacpp": {"build": mem.build, "n_ctx": mem.n_ctx, "n_ctx_seq": mem.n_ctx_seq,
                                    "kv_bytes": mem.kv_bytes, "recurrent_bytes": mem.recurrent_bytes,
                                    "total_bytes": mem.total_bytes,
                                    "log_lines": mem.log_lines(buffers="CUDA0")}}

    def add_cli_flags(self, g) -> list[str]:
        S = argparse.SUPPRESS
        g.add_argument("-c", "--ctx-size", dest="n_ctx", type=stoi_int, default=S,
                       help="total context over all sequences (-c); per sequence = ctx_size / parallel")
        g.add_argument("-np", "--parallel", dest="n_parallel", type=stoi_int, default=S, help="sequences (slots)")
        g.add_argument("-ctk", "--cache-type-k", dest="cache_type_k", default=S, help="K cache type")
        g.add_argument("-ctv", "--cache-type-v", dest="cache_type_v", default=S, help="V cache type")
        g.add_argument("-b", "--batch-size", dest="n_batch", type=stoi_int, default=S, help="logical batch (2048)")
        g.add_argument("-ub", "--ubatch-size", dest="n_ubatch", type=stoi_int, default=S, help="physical batch (512)")
        g.add_argument("--swa-full", action="store_true", default=S, help="full-size SWA cache")
        g.add_argument("-fa", "--flash-attn", dest="flash_attn", choices=FLASH_ATTN, default=S)
        g.add_argument("--kv-unified", action="store_true", default=S, help="one cache stream for all sequences")
        g.add_argument("--spec-type", dest="spec_type", default=S,
                       help="speculative decoding type (draft-mtp, draft-eagle3, draft-dflash, draft-dspark keep "
                            "recurrent rollback snapshots; draft-simple and ngram-* keep none)")
        g.add_argument("--spec-draft-n-max", dest="spec_draft_n_max", type=stoi_int, default=S,
                       help="most draft tokens per step: with a draft-model --spec-type, the recurrent state keeps "
                            "that many rollback snapshots per sequence (Qwen 3.5 / 3.6 hybrids)")
        g.add_argument("--llamacpp-build", dest="build", default=S,
                       help=f"which llama.cpp rules: a build tag ({', '.join(r.name for r in TABLE.releases)}; a "
                            f"build between two takes the older one's) or {', '.join(list(BUILDS) + list(BUILD_ALIASES))}")
        where = "the cache is sized for all layers; kvmath-fit llama-server ... prints the per-device budget"
        g.add_argument("-ngl", "--n-gpu-layers", dest="n_gpu_layers", default=S,
                       help=f"layers on the GPU (a number, all or auto); {where}")
        g.add_argument("--n-cpu-moe", "-ncmoe", dest="n_cpu_moe", type=stoi_int, default=S,
                       help=f"experts of the first N layers in system RAM; {where}")
        g.add_argument("-ot", "--override-tensor", dest="override_tensor", action="append", default=S,
                       help=f"PATTERN=BUFFER tensor placement; {where}")
        g.add_argument("-ts", "--tensor-split", dest="tensor_split", default=S,
                       help=f"proportions per GPU (e.g. 3,1); {where}")
        g.add_argument("-sm", "--split-mode", dest="split_mode", choices=("none", "layer", "row"), default=S,
                       help=f"how weights are split over GPUs; {where}")
        g.add_argument("--card", dest="card", default=S, help=f"card id or alias (data/cards.json); {where}")
        g.add_argument("--fit-target", dest="fit_target", default=S,
                       help=f"--fit's free-memory target per device in MiB (1024); {where}")
        g.add_argument("--quant-mix", dest="quant_mix", default=S,
                       help=f"llama-quantize mix of the weights when no .gguf is given (Q4_K_M, Q5_K_M, Q6_K, Q8_0, "
                            f"IQ4_XS, ...); {where}")
        return ["n_ctx", "n_parallel", "cache_type_k", "cache_type_v", "n_batch", "n_ubatch", "swa_full",
                "flash_attn", "kv_unified", "spec_type", "spec_draft_n_max", "build", "n_gpu_layers", "n_cpu_moe",
                "override_tensor", "tensor_split", "split_mode", "card", "fit_target", "quant_mix"]

    def settings_from_cli(self, args: dict) -> dict:
        out = dict(args)
        # placement flags do not change the cache: checked here so a bad value is refused, then set aside
        # (the budget command, kvmath.engines.llamacpp.fit, uses them)
        from .launch import _int, check_overrides
        from .placement import _ngl

        if "n_gpu_layers" in out:
            _ngl(out.pop("n_gpu_layers"), 0)
        if out.get("n_cpu_moe", 0) is not None and out.pop("n_cpu_moe", 0) < 0:
            raise KvMathError("--n-cpu-moe must be >= 0")
        check_overrides(out.pop("override_tensor", None))
        ts = out.pop("tensor_split", None)
        if ts is not None:
            from .launch import split_tensor_split

            pieces = split_tensor_split(ts)  # llama.cpp's split and its 15-piece bound
            try:
                parts = [stof_float(x, "--tensor-split") for x in pieces]
            except KvMathError:
                raise KvMathError(f"--tensor-split takes proportions of ASCII digits like 3,1, got {_short(ts)}") from None
            import math

            if not all(math.isfinite(x) and 0 <= x <= 1e12 for x in parts):
                raise KvMathError(f"--tensor-split takes finite non-negative proportions like 3,1 (all 0: llama.cpp's "
                                  f"own split); got {_short(ts)}")
        out.pop("split_mode", None)
        if "card" in out:
            from .budget import card

            card(out.pop("card"))
        if out.get("fit_target") is not None:
            _int(out.pop("fit_target"), "--fit-target", 0, 1 << 20)  # MiB, as the llama-server line's check
        out.pop("fit_target", None)
        if "quant_mix" in out:
            from .quantmix import check_mix

            check_mix(out.pop("quant_mix"))
        spec_type, n_max = out.pop("spec_type", None), out.pop("spec_draft_n_max", None)
        build = out.get("build")
        tag = isinstance(build, str) and re.fullmatch(r"[bB]\d{1,6}", build) is not None
        chosen = TABLE.choose(build if tag else None)
        if tag:
            out["build"] = chosen.release.memory  # a build tag: the memory-module rules it was read with
        if spec_type is not None or n_max is not None:
            if spec_type is None or n_max is None:
                raise KvMathError("give --spec-type and --spec-draft-n-max together: the recurrent snapshots "
                                  "kvmath counts are --spec-draft-n-max for a draft-model --spec-type")
            from .launch import parse_spec_types

            types = parse_spec_types(spec_type, chosen.release)  # llama.cpp's list form, each value checked
            if not 0 <= n_max <= 1024:
                raise KvMathError(f"--spec-draft-n-max must be between 0 and 1,024, got {n_max:,}")
            rollback = any(t in chosen.release.spec_types_with_rollback for t in types)
            out["n_rs_seq"] = n_max if rollback else 0
        return out


ENGINE = LlamaCppEngine()
