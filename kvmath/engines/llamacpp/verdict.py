"""A parsed llama.cpp launch priced per device: the :class:`~kvmath.engines.base.Verdict` of the protocol.

Per GPU (``CUDA0`` ...) the terms are the buffers llama.cpp logs: ``model`` (``load_tensors``, placed by
:mod:`placement`), ``kv`` and ``rs`` (:mod:`memory`, each layer's cache on its layer's device), ``compute``
(:mod:`compute`, the reserved graph with the build's output rows, :mod:`builds`), ``mmproj`` and the draft
model's weights and cache when given, plus two assumptions: the CUDA context (``--cuda-context-mib``, 400) and
the pool the first prompt batch grows (64 MiB). The host holds the mapped or pinned weights, the host compute
buffer and the ``output`` buffer (logits of ``n_outputs`` rows, ``CUDA_Host output buffer size``).

Outcome: ``oom`` when any GPU's terms exceed its memory less ``--headroom-mib`` (llama.cpp's message is
cudaMalloc's), else ``boots``. With ``--fit on`` (the default) and a launch that misses the free-memory target,
the verdict is the launch after what ``common_params_fit_impl`` changes (the context when ``-c`` was not set,
the experts of the last layers when ``-ngl`` and the overrides were not), with its lines in ``log_lines``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from functools import lru_cache

from ...errors import KvMathError
from ...units import GiB, MiB
from ...validate import _short
from ..base import Device, Term, Verdict
from . import budget as B
from .builds import TABLE

POOL_BYTES = B.FIRST_BATCH_POOL_MIB * MiB


def regular_file(path: str, what: str) -> str:
    """``path`` if it is a regular file (not a FIFO, a device such as /dev/zero, or a folder); else KvMathError.

    Checked with ``os.stat`` before anything opens it, so a FIFO cannot block the read."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:
        raise KvMathError(f"{what} {str(path)[:200]}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise KvMathError(f"{what} {str(path)[:200]} is not a regular file (a FIFO, device or folder is refused)")
    return path


@dataclass(frozen=True)
class Model:
    """The model of a launch: architecture, config, tensor table (None: estimated weights) and weights record."""

    arch: object
    config: dict
    tensors: tuple | None
    weights: object
    source: str
    notes: tuple[str, ...] = ()


def load_model(s: dict, ref: str) -> Model:
    """:func:`read_model` of the launch's model flags, cached per file state (the solvers ask again and again)."""
    key: tuple = (str(ref), s["quant_mix"], s["weight_bits"], s["imatrix"])
    if str(ref).endswith(".gguf"):
        st = os.stat(regular_file(ref, "-m"))
        key += (st.st_mtime_ns, st.st_size)
    return _cached_model(key)


@lru_cache(maxsize=16)
def _cached_model(key: tuple) -> Model:
    ref, quant_mix, weight_bits, imatrix = key[:4]
    return read_model({"quant_mix": quant_mix, "weight_bits": weight_bits, "imatrix": imatrix}, ref)


def read_model(s: dict, ref: str) -> Model:
    """The model ``-m`` names: a ``.gguf`` (its tensor table), or a config.json / model folder / known id with
    weights from ``--quant-mix`` (llama-quantize's rules), ``--weight-bits``, or Q4_K_M by default (said in the
    notes). Raises KvMathError for anything unreadable."""
    from ... import facts
    from ...model.load import load_architecture

    from ...hub import parse_hub_id

    hub_ref = parse_hub_id(str(ref)[5:]) if str(ref).startswith("hf://") else None
    if hub_ref is None and ":" in str(ref) and not os.path.exists(str(ref)):
        hub_ref = parse_hub_id(str(ref))  # -m org/name:QUANT, as -hf
    if hub_ref is not None:
        if s["quant_mix"] is not None or s["weight_bits"] is not None:
            raise KvMathError("--quant-mix / --weight-bits estimate a file from config.json; a .gguf has its own "
                              "tensor types")
        from ...hub import fetch
        from ...model.gguf import check_blocks, read_gguf, read_header
        from .placement import tensors_from_header

        m = fetch(str(hub_ref), want_gguf=True)
        g = read_gguf(m.gguf.path, name=str(hub_ref), file_size=m.gguf.size)
        header = read_header(m.gguf.path, file_size=m.gguf.size)
        check_blocks(g, [t.name for t in header.tensors])
        note = (f"model: {m.source} {m.gguf.filename} (GGUF header: the first {m.gguf.read:,} of {m.gguf.size:,} "
                "bytes, ranged reads)" + (f"; {m.notes[0]}" if m.notes else ""))
        return Model(g.architecture, g.config, tensors_from_header(header), g.weights, g.weights.source, (note,))
    if str(ref).endswith(".gguf"):
        if s["quant_mix"] is not None or s["weight_bits"] is not None:
            raise KvMathError("--quant-mix / --weight-bits estimate a file from config.json; a .gguf has its own "
                              "tensor types")
        from ...model.gguf import check_blocks, read_gguf, read_header
        from .placement import tensors_from_header

        g = read_gguf(regular_file(ref, "-m"))
        header = read_header(ref)
        check_blocks(g, [t.name for t in header.tensors])
        return Model(g.architecture, g.config, tensors_from_header(header), g.weights, g.weights.source)
    arch = load_architecture(ref)
    cfg = arch.extras.get("hf_config") or facts.resolve_model(ref)["config"]
    notes = []
    if s["weight_bits"] is not None:
        from .weights import estimate_weights

        w = estimate_weights(cfg, bits_per_weight=s["weight_bits"])
        return Model(arch, cfg, None, w, w.source)
    mix = s["quant_mix"]
    from .quantmix import check_mix

    if cfg.get("text_config", cfg).get("model_type") == "gpt_oss":
        mix = _gpt_oss_mix(mix, notes)
    elif mix is None:
        mix = "Q4_K_M"
        notes.append("no .gguf and no --quant-mix: weights estimated as llama-quantize Q4_K_M would make them")
    from .weights import weights_from_mix

    tensors, w = weights_from_mix(cfg, check_mix(mix), imatrix=s["imatrix"])
    return Model(arch, cfg, tuple(tensors), w, w.source, tuple(notes))


def _gpt_oss_mix(mix, notes: list) -> str:
    """The mix a gpt-oss file can be priced at without its GGUF: MXFP4_MOE only.

    convert_hf_to_gguf.py writes gpt-oss's experts as MXFP4 straight from the checkpoint (PR #16756, "avoid
    dequantizing mxfp4 for GPT-OSS"), and llama-quantize will not requantize an already quantized tensor
    without --allow-requantize (src/llama-quant.cpp: "requantizing from type %s is disabled"), so a "Q4_K_M"
    gpt-oss GGUF keeps MXFP4 experts and its other tensors are the publisher's choice (Unsloth's 20b Q4_K_M
    loads as q5_0 61 / q8_0 13 / q4_K 24 / mxfp4 72): no llama-quantize rule derives it. MXFP4_MOE is the
    file type of ggml-org's gpt-oss GGUFs (general.file_type 38) and llama-quant.cpp's rule for it (3-D expert
    tensors MXFP4, every other quantisable tensor and the output Q8_0) is exact.
    """
    if mix is None:
        notes.append("no .gguf and no --quant-mix: gpt-oss priced as its published GGUF, llama-quantize MXFP4_MOE "
                     "(experts MXFP4, the rest Q8_0, as ggml-org's files)")
        return "MXFP4_MOE"
    from .quantmix import check_mix

    if check_mix(mix) != "MXFP4_MOE":
        raise KvMathError(f"gpt-oss GGUFs keep the MoE experts in MXFP4 whatever the quant label, so --quant-mix "
                          f"{check_mix(mix)} cannot be derived: give the .gguf file, --weight-bits, or --quant-mix "
                          "MXFP4_MOE (ggml-org's files)")
    return "MXFP4_MOE"


@dataclass
class Priced:
    """The per-device terms of one launch (bytes), before the verdict is drawn."""

    gpus: list[dict]
    host: dict
    n_ctx: int
    memory: object
    compute: object
    placement: object
    notes: list[str] = field(default_factory=list)


def _gpu_count(s: dict) -> int:
    return s["n_devices"]


def _layer_dev(placement, il: int, n_layer: int) -> str:
    """Where block ``il``'s cache lives: its layer's device (llama-kv-cache.cpp ``dev_layer``)."""
    if placement is None:
        return "CUDA0"
    devs = placement.layer_device
    return devs[il] if il < len(devs) else devs[-1]


def price(launch, model: Model, *, n_ctx: int | None = None, n_cpu_moe: int | None = None) -> Priced:
    """Every buffer of ``launch`` per device (see the module docstring). Raises KvMathError."""
    from .compute import compute_buffers, shape_from_config
    from .memory import llamacpp_memory
    from .placement import place

    from .backends import max_chunk

    s = launch.settings
    build = TABLE.by_name[launch.release]
    backend = s.get("backend") or launch_backend(launch)[0]
    n_ctx = s["n_ctx"] if n_ctx is None else n_ctx
    ncm = s["n_cpu_moe"] if n_cpu_moe is None else n_cpu_moe
    arch, n_dev = model.arch, _gpu_count(s)
    mem = llamacpp_memory(arch, n_ctx=n_ctx, n_parallel=s["n_parallel"], cache_type_k=s["cache_type_k"],
                          cache_type_v=s["cache_type_v"], n_batch=s["n_batch"], n_ubatch=s["n_ubatch"],
                          swa_full=s["swa_full"], flash_attn=s["flash_attn"], kv_unified=s["kv_unified"],
                          n_rs_seq=s["n_rs_seq"], build=build.memory)
    gpus = [{} for _ in range(n_dev)]
    host: dict = {}
    p = None
    n_layer = arch.num_hidden_layers
    if model.tensors is not None:
        p = place(model.tensors, n_layer=n_layer, n_gpu_layers=s["n_gpu_layers"], n_cpu_moe=ncm,
                  cpu_moe=s["cpu_moe"], override_tensor=s["override_tensor"], tensor_split=s["tensor_split"],
                  split_mode=s["split_mode"], n_devices=n_dev, mmap=s["mmap"], main_gpu=s["main_gpu"])
        for k, v in p.buffers.items():
            if k.startswith("CUDA") and k != "CUDA_Host":
                i = int(k[4:].split("_")[0])
                gpus[i]["model"] = gpus[i].get("model", 0) + v
            else:
                host["model"] = host.get("model", 0) + v
    else:
        if n_dev > 1 or s["override_tensor"] or not _all_layers(s["n_gpu_layers"], n_layer):
            raise KvMathError("-ts / -dev / -ot / -ngl need a tensor table: give the .gguf or --quant-mix, not "
                              "--weight-bits")
        dev, ram = model.weights.split(ncm, cpu_moe=s["cpu_moe"])
        gpus[0]["model"], host["model"] = dev, ram
    _caches(mem, p, n_layer, gpus, host)
    out_dev = _layer_dev(p, n_layer, n_layer)
    on_dev = out_dev.startswith("CUDA")
    n_out = _output_rows(s, build, mem)
    shape = shape_from_config(model.config)
    full = [c for c in mem.kv if c.kind != "SWA"]
    swa = [c for c in mem.kv if c.kind == "SWA"]
    cb = compute_buffers(shape, n_ubatch=mem.n_ubatch, n_kv=max((c.cells for c in full), default=0),
                         n_kv_swa=max((c.cells for c in swa), default=0), flash_attn=mem.flash_attn,
                         output_on_device=on_dev, n_outputs=n_out, fa_mask=build.fa_mask, ffn_live=build.ffn_live,
                         backend=backend, max_chunk=max_chunk(backend, build), ffn_vectors=2 + build.embd_select)
    out_i = int(out_dev[4:]) if on_dev else s["main_gpu"]
    rest = max((v for k, v in cb.phases.items() if k != "output (logits)"), default=0)
    for i, g in enumerate(gpus):
        g["compute"] = cb.device if i == out_i else rest
    host["compute"] = cb.host
    host["output"] = 4 * shape.n_vocab * _output_buffer_rows(s, build)
    notes = list(model.notes) + (list(p.notes) if p else [])
    _extras(s, mem, gpus, host, notes)
    return Priced(gpus, host, mem.n_ctx, mem, cb, p, notes)


def launch_backend(launch) -> tuple[str, str | None]:
    """The backend a launch runs on and the note saying how it was chosen (:func:`.backends.resolve`): from
    ``-dev``, else the card (``--card``, else this machine's GPU), else CUDA's rules, said. Raises KvMathError."""
    from .backends import resolve

    card = None
    if launch.card is not None:
        card = B.card(launch.card)
    elif launch.device_bytes is None:
        from ...cards import detect

        found = detect()
        card = found[0] if found else None
    return resolve(launch.settings["devices"], card)


def with_backend(launch):
    """``launch`` with its backend resolved once into ``settings["backend"]`` / ``["backend_note"]``."""
    if launch.settings.get("backend"):
        return launch
    backend, note = launch_backend(launch)
    return launch.with_settings(backend=backend, backend_note=note)


def _all_layers(ngl, n_layer: int) -> bool:
    """``-ngl`` puts every layer and the output on the GPU (auto, all, -1, or a number above the block count)."""
    from .placement import _ngl

    return _ngl(ngl, n_layer) >= n_layer + 1


def _caches(mem, p, n_layer: int, gpus: list[dict], host: dict) -> None:
    """KV and recurrent state on each layer's device (a layer left on the CPU keeps its cache in RAM)."""
    for c in mem.kv:
        for t in c.layers:
            _add(_layer_dev(p, t.index, n_layer), "kv", t.k_bytes + t.v_bytes, gpus, host)
    r = mem.recurrent
    if r is not None:
        per = r.bytes // len(r.layers)
        for il in r.layers:
            _add(_layer_dev(p, il, n_layer), "rs", per, gpus, host)


def _add(dev: str, term: str, n: int, gpus: list[dict], host: dict) -> None:
    d = gpus[int(dev[4:])] if dev.startswith("CUDA") else host
    d[term] = d.get(term, 0) + n


def _server_context(s: dict, build) -> bool:
    """The launch runs llama-server's context: llama-server, or llama-cli where the build's CLI runs it."""
    return s["tool"] == "llama-server" or (s["tool"] == "llama-cli" and build.cli_server)


def _output_rows(s: dict, build, mem) -> int | None:
    """Rows of logits in the reserved prompt graph: the build's ``reserve_outputs`` rule (:mod:`builds`)."""
    if build.reserve_outputs == "server_limits" and _server_context(s, build):
        return min(mem.n_batch, s["n_parallel"] * (1 + s["n_draft"]))
    return None  # every token of the micro-batch


def _output_buffer_rows(s: dict, build) -> int:
    """Rows of the host output buffer allocated at start (``output_reserve``): ``n_seq_max`` (PR #6122), or
    llama-server's ``n_outputs_max`` where the build has it."""
    if build.reserve_outputs == "server_limits" and _server_context(s, build):
        return s["n_parallel"] * (1 + s["n_draft"])
    return s["n_parallel"]


def _extras(s: dict, mem, gpus: list[dict], host: dict, notes: list[str]) -> None:
    """The projector (``--mmproj``) and the draft model (``-md``): their weights from their GGUF headers, the
    draft's cache as the main cache's flags make it."""
    main = gpus[s["main_gpu"]]
    if s["mmproj"] is not None:
        from ...model.gguf import read_header

        h = read_header(regular_file(s["mmproj"], "--mmproj"))
        # a projector is written with general.architecture "clip" (convert_hf_to_gguf.py MmprojModel,
        # gguf-py MODEL_ARCH.MMPROJ); llama.cpp's clip loader (tools/mtmd/clip.cpp) refuses anything else
        arch = h.metadata.get("general.architecture")
        if arch != "clip" or not h.tensors:
            raise KvMathError(f"--mmproj {_short(s['mmproj'])} is not a multimodal projector: general.architecture "
                              f"{_short(arch)}, {len(h.tensors)} tensors (a projector GGUF is 'clip' with its tensors)")
        n = sum(int(t.n_bytes) for t in h.tensors)
        (main if s["mmproj_offload"] else host)["mmproj"] = n
        notes.append("--mmproj: the projector's weights counted from its header; its compute buffer (the image "
                     "warm-up graph) is not modelled")
    if s["model_draft"] is not None:
        from ...model.gguf import read_gguf
        from .memory import llamacpp_memory

        g = read_gguf(regular_file(s["model_draft"], "-md"))
        main["draft_model"] = g.weights.total
        dm = llamacpp_memory(g.architecture, n_ctx=mem.n_ctx, n_parallel=s["n_parallel"],
                             cache_type_k=s["cache_type_k"], cache_type_v=s["cache_type_v"], n_batch=s["n_batch"],
                             n_ubatch=s["n_ubatch"], flash_attn=s["flash_attn"], kv_unified=s["kv_unified"])
        main["draft_kv"] = dm.total_bytes
        notes.append("-md: the draft model's weights and cache on the main GPU; its compute buffer is not modelled")


BACKEND = {"cuda": "CUDA", "hip": "ROCm", "rocm": "ROCm", "metal": "MTL", "vulkan": "Vulkan"}
"""llama.cpp's device names per backend (ggml-cuda CUDA<i>, built for HIP ROCm<i>, ggml-metal MTL<i>, Vulkan<i>)."""


def _capacity(launch) -> tuple[int, str, list[str]]:
    """The memory of each GPU, bytes: ``--device-memory``, else the card's, else the default card (said);
    and the runtime (``cuda`` unless the card says otherwise: Apple silicon's total is Metal's
    recommendedMaxWorkingSetSize, the wired limit llama.cpp's Metal backend budgets against)."""
    if launch.device_bytes is not None and launch.card is not None:  # as the vLLM front door: no silent winner
        raise KvMathError("pass --card or --device-memory, not both")
    if launch.device_bytes is not None:
        return int(launch.device_bytes), "cuda", []
    name = launch.card
    notes = []
    if name is None:  # no silent default card: this machine's GPU, said so, or a refusal naming the flags
        from ...cards import detect

        found = detect()
        if found is None:
            raise KvMathError("which device? pass --card (e.g. --card rtx5070ti, --card 'NVIDIA GeForce RTX 3090', "
                              "--card m3-max-128gb) or --device-memory SIZE (24GiB); no nvidia-smi, rocm-smi or "
                              "system_profiler answered on this machine")
        name = found[0]["id"]
        notes.append(f"card: {name} ({found[0]['name']}, {found[0]['total_gib']} GiB), this machine's GPU as "
                     f"{found[1]}; pass --card for another")
    c = B.card(name)
    runtime = c.get("runtime") or "cuda"
    if runtime == "metal":
        notes.append(f"{c['name']}: Metal's recommendedMaxWorkingSetSize ({c['total_gib']} GiB, the GPU wired "
                     "limit of unified memory) is the budget; raising iogpu.wired_limit_mb raises it")
    return int(round(c["total_gib"] * GiB)), runtime, notes


_TERMS = ("model", "kv", "rs", "compute", "mmproj", "draft_model", "draft_kv")
_SOURCE = {"model": "load_tensors (placement.py)", "kv": "llama_kv_cache (memory.py)",
           "rs": "llama_memory_recurrent (memory.py)", "compute": "sched_reserve (compute.py)",
           "mmproj": "--mmproj GGUF header", "draft_model": "-md GGUF header", "draft_kv": "draft cache (memory.py)",
           "output": "output_reserve: 4 x n_vocab x rows", "cuda_context": "assumed (--cuda-context-mib)",
           "first_batch_pool": "assumed: ggml_cuda_pool growth at the first batch"}
_EXACT = {"model", "kv", "rs", "mmproj", "draft_model", "draft_kv", "output"}


def devices(launch, pr: Priced) -> tuple[tuple[Device, ...], list[str]]:
    """The priced terms as :class:`Device` records (one per GPU, then the host)."""
    s = launch.settings
    cap, runtime, notes = _capacity(launch)
    runtime = s.get("backend") or runtime
    limit = cap - int(s["headroom_mib"] * MiB)
    prefix = BACKEND.get(runtime, "CUDA")
    out = []
    for i, g in enumerate(pr.gpus):
        terms = [Term(k, int(g[k]), k in _EXACT, _SOURCE[k]) for k in _TERMS if g.get(k)]
        if runtime in ("cuda", "hip", "rocm"):  # the driver context and the ggml_cuda_pool (HIP builds share ggml-cuda)
            terms.append(Term("cuda_context", int(s["cuda_context_mib"] * MiB), False, _SOURCE["cuda_context"]))
            terms.append(Term("first_batch_pool", POOL_BYTES, False, _SOURCE["first_batch_pool"]))
        out.append(Device(f"{prefix}{i}", cap, tuple(terms), limit))
    host_terms = tuple(Term(k, int(pr.host[k]), k in _EXACT, _SOURCE.get(k, k))
                       for k in ("model", "kv", "rs", "compute", "output", "mmproj") if pr.host.get(k))
    host_cap = None
    if s["host_memory"] is not None:
        from ...units import parse_bytes

        host_cap = parse_bytes(s["host_memory"], "--host-memory")
    else:
        notes.append("system RAM is not checked (give --host-memory SIZE to check it)")
    used = sum(t.bytes for t in host_terms)
    out.append(Device("Host", host_cap if host_cap is not None else used, host_terms))
    return tuple(out), notes


@dataclass(frozen=True)
class Detail:
    """llama.cpp's own record of a verdict: the fit answer, the memory module, what the launch was read as."""

    build: str
    tool: str
    n_ctx: int
    n_ctx_seq: int
    weights: str
    fit: dict | None
    compute_dominant: str
    compute_upper_bytes: int
    moe: bool = False
    n_ctx_train: int = 0
    backend: str = ""

    def to_dict(self) -> dict:
        return {"build": self.build, "tool": self.tool, "n_ctx": self.n_ctx, "n_ctx_seq": self.n_ctx_seq,
                "weights": self.weights, "fit": self.fit, "compute_dominant": self.compute_dominant,
                "compute_upper_bytes": self.compute_upper_bytes, "moe": self.moe,
                "n_ctx_train": self.n_ctx_train, "backend": self.backend}




def verdict(launch) -> Verdict:
    """The :class:`Verdict` of a parsed llama.cpp launch (see the module docstring). Raises KvMathError."""
    launch = with_backend(launch)
    s = launch.settings
    model = load_model(s, launch.model)
    pr = price(launch, model)
    devs, cap_notes = devices(launch, pr)
    fit = _fit(launch, model, pr, devs) if s["fit"] else None
    lines = list(fit.lines) if fit else []
    notes = list(launch.notes) + cap_notes + pr.notes
    if s["backend_note"]:
        notes.append(s["backend_note"])
    if "two chunks" in pr.compute.dominant:
        notes.append("Vulkan: a layer tensor above ggml-vulkan's 1 GiB chunk takes two chunks of its size "
                     "(ggml-alloc chunks, PR #15815); each must also fit the driver's maxMemoryAllocationSize")
    if fit and fit.action in ("context reduced", "experts moved"):
        pr = price(launch, model, n_ctx=fit.n_ctx, n_cpu_moe=fit.n_cpu_moe_equivalent or s["n_cpu_moe"])
        devs, _ = devices(launch, pr)
        notes.append(f"--fit on: {fit.action} (see its lines); --fit off prices the line as written")
    dev0 = devs[0].name
    n_layer = model.arch.num_hidden_layers
    gpu_names = [d.name for d in devs[:-1]]  # CUDA0.. as placed, named by the card's backend (MTL0, ROCm0)

    def buffer_of(il: int) -> str:
        dev = _layer_dev(pr.placement, il, n_layer)
        return gpu_names[int(dev[4:])] if dev.startswith("CUDA") else dev

    lines += pr.memory.log_lines(buffers=buffer_of) + \
        pr.compute.log_lines(device_name=dev0, host_name=_host_buffer(dev0))
    short = [d for d in devs[:-1] if d.spare_bytes < 0]
    outcome, message = "boots", None
    if short:
        d = short[0]
        outcome = "oom"
        message = (f"ggml_backend_cuda_buffer_type_alloc_buffer: allocating on device {d.name[4:]}: cudaMalloc "
                   f"failed: out of memory ({d.name} short by {_mib(-d.spare_bytes)} MiB)"
                   if d.name.startswith(("CUDA", "ROCm")) else
                   f"{d.name}: failed to allocate the buffers, short by {_mib(-d.spare_bytes)} MiB")
    host = devs[-1]
    if host.spare_bytes < 0:
        outcome, message = "oom", f"system RAM short by {_mib(-host.spare_bytes)} MiB"
    n_train = int(model.arch.max_position_embeddings or 0)
    if not s["ctx_given"] or s["n_ctx_parsed"] == 0:
        notes.append(f"-c {'0' if s['ctx_given'] else 'not given'}: n_ctx = the model's training context "
                     f"(n_ctx_train {n_train:,})" + (" for each of the -np streams" if not s["kv_unified"] and
                                                     s["n_parallel"] > 1 else ""))
    if s["n_devices"] > 1:
        card = launch.card or (f"{launch.device_bytes / GiB:g} GiB" if launch.device_bytes is not None else "card")
        notes.append(f"{s.get('devices_from', '-ts')} names {s['n_devices']} GPUs: each priced as {card} (the "
                     f"--card / --device-memory given, {s['n_devices'] - 1} more of the same assumed)")
        ts = s.get("tensor_split")
        if ts and not any(ts):
            notes.append("-ts all zero: llama.cpp's default split, by each device's free memory (llama-model.cpp "
                         "load_tensors), priced as equal free memory on the equal cards: layers split evenly")
    if n_train and pr.memory.n_ctx_seq > n_train:
        notes.append(_train_cap_note(pr.memory.n_ctx_seq, n_train, s["tool"]))
    detail = Detail(launch.release, s["tool"], pr.memory.n_ctx, pr.memory.n_ctx_seq, model.source,
                    _fit_dict(fit), pr.compute.dominant, pr.compute.device_upper,
                    bool(getattr(model.weights, "experts", 0)), n_train, s["backend"])
    return Verdict("llama.cpp", launch.release, str(launch.model), outcome, devs, message, tuple(lines),
                   pr.memory.n_ctx, pr.memory.n_ctx, s["n_parallel"], tuple(notes), detail)


def _host_buffer(device: str) -> str:
    """The host buffer type beside a device, as llama.cpp prints it: ``CUDA_Host``, ``ROCm_Host``,
    ``Vulkan_Host`` (ggml-vulkan ``GGML_VK_NAME "_Host"``); Metal's is the plain ``CPU`` buffer."""
    prefix = device.rstrip("0123456789")
    return "CPU" if prefix == "MTL" else f"{prefix}_Host"


def _mib(n: int) -> str:
    """A shortfall in MiB: whole MiB, or two decimals below 1 MiB (never "short by 0 MiB")."""
    return f"{n / MiB:,.2f}" if n < MiB else f"{n / MiB:,.0f}"


def _fit_dict(fit) -> dict | None:
    if fit is None:
        return None
    return {"action": fit.action, "n_ctx": fit.n_ctx, "n_cpu_moe_equivalent": fit.n_cpu_moe_equivalent,
            "projected_mib": fit.projected_mib, "free_mib": fit.free_mib, "target_mib": fit.target_mib,
            "lines": list(fit.lines)}


def _fit(launch, model: Model, pr: Priced, devs):
    """``common_params_fit_impl`` on the first GPU (one device; several: not modelled, None)."""
    s = launch.settings
    if len(pr.gpus) > 1:
        return None
    d = devs[0]
    free = (d.capacity_bytes - d.term("cuda_context")) / MiB  # the free memory --fit reads
    by_user_ctx = s["ctx_given"] or s["n_ctx"] != s["n_ctx_parsed"]
    by_user_ot = bool(s["override_tensor"]) or s["cpu_moe"] or s["n_cpu_moe"] != 0 \
        or s["n_cpu_moe"] != s["n_cpu_moe_parsed"]
    n_blocks = model.arch.num_hidden_layers

    def project(n_ctx: int, k: int) -> int:
        g = price(launch, model, n_ctx=n_ctx, n_cpu_moe=k).gpus[0]
        return sum(g.get(t, 0) for t in _TERMS)

    is_moe = bool(getattr(model.weights, "experts", 0))
    return B.fit_like_llamacpp(project, free_mib=free, n_ctx=pr.n_ctx, n_ctx_set_by_user=by_user_ctx,
                               n_blocks=n_blocks, ngl_set_by_user=s["n_gpu_layers"] not in ("auto", "all", "-1"),
                               overrides_set_by_user=by_user_ot, is_moe=is_moe,
                               target_mib=s["fit_target_mib"][0], min_ctx=s["fit_ctx"])


CTX_SEARCH_MAX = 2**24
"""The top of the ``-c`` search (16,777,216 tokens, step 256): an answer there is "at least" (said)."""


def _train_cap_note(n_ctx_seq: int, n_ctx_train: int, tool: str) -> str:
    """What llama.cpp 0c1e570 says of a context past the training one: llama-context.cpp warns and allocates
    it; llama-server's load_model caps each slot at n_ctx_train ("the slot context (%d) exceeds the training
    context of the model (%d) - capping"), so the cells past it are allocated but no request reaches them."""
    out = (f"n_ctx_seq {n_ctx_seq:,} > n_ctx_train {n_ctx_train:,}: llama.cpp allocates it with a warning "
           f"('possible training context overflow')")
    if tool == "llama-server":
        out += f"; llama-server caps each slot at {n_ctx_train:,} ('the slot context ... - capping')"
    return out


def range_of(launch, setting: str) -> tuple[int, int, int]:
    """The solvers' search range: ``n_ctx`` 256 .. ``CTX_SEARCH_MAX`` (step 256, llama.cpp's padding; the
    memory decides, the training context is named where the answer passes it),
    ``n_parallel`` 1 .. 256, ``n_cpu_moe`` 0 .. the block count. Raises KvMathError for another setting."""
    s = launch.settings
    model = load_model(s, launch.model)
    if setting == "n_ctx":
        # memory decides, not n_ctx_train: llama.cpp allocates a -c above it (llama_context warns "n_ctx_seq
        # (%u) > n_ctx_train (%u) -- possible training context overflow" and goes on); render() and the
        # verdict's notes name the training context when the answer passes it
        return 256, CTX_SEARCH_MAX, 256
    if setting == "n_parallel":
        return 1, 256, 1
    if setting == "n_cpu_moe":
        if not getattr(model.weights, "experts", 0):
            return 0, -1, 1  # a dense model has no experts to keep in RAM: no answer
        return 0, model.arch.num_hidden_layers, 1
    raise KvMathError(f"llama.cpp has no search range for {setting!r}; valid: n_ctx, n_parallel, n_cpu_moe")


def render(v: Verdict, answers) -> str:
    """The text answer: per device its terms in MiB (what llama.cpp logs), the verdict, the solver answers,
    what --fit prints, and the notes."""
    lines = [f"llama.cpp {v.release} ({v.detail.tool if v.detail else 'llama-server'}): {v.model}, "
             f"n_ctx {v.context:,}, {v.max_num_seqs} slot(s)"]
    for d in v.devices:
        lines.append(f"  {d.name}: {d.capacity_bytes / MiB:,.0f} MiB" +
                     (f", limit {d.limit / MiB:,.0f} MiB" if d.limit != d.capacity_bytes else ""))
        for t in d.terms:
            lines.append(f"    {t.name:<18} {t.bytes / MiB:>12,.2f} MiB  {'exact' if t.exact else 'derived'}")
        if d.name != "Host" or d.capacity_bytes != d.used_bytes:
            lines.append(f"    {'spare' if d.spare_bytes >= 0 else 'short':<18} {abs(d.spare_bytes) / MiB:>12,.2f} MiB")
    lines.append(f"Verdict: {v.outcome}" + (f": {v.message}" if v.message else ""))
    names = {"largest_context": "largest -c that fits", "most_sequences": "most -np that fit at this -c",
             "smallest_offload": "smallest --n-cpu-moe that fits"}
    for k, val in answers.items():
        why = "none (dense model: no experts to keep in RAM)" if k == "smallest_offload" and v.detail and \
            not v.detail.moe else "none (no value in the range fits)"
        extra = ""
        if k == "largest_context" and val is not None:
            if val >= CTX_SEARCH_MAX:
                extra = f" or more (the search stops at {CTX_SEARCH_MAX:,})"
            per_seq = val * v.detail.n_ctx_seq // max(v.detail.n_ctx, 1) if v.detail else 0
            if v.detail and v.detail.n_ctx_train and per_seq > v.detail.n_ctx_train:
                extra += f" (memory's limit; past n_ctx_train {v.detail.n_ctx_train:,} per sequence" + \
                    (", which llama-server caps each slot at)" if v.detail.tool == "llama-server" else ")")
        lines.append(f"{names.get(k, k)}: {val if val is not None else why}{extra}")
    if answers:
        lines.append("  (the answers price the line as written, --fit's own changes off)")
    lines += [f"  {line}" for line in v.log_lines]
    lines += [f"Note: {n}" for n in v.notes]
    return "\n".join(lines)
