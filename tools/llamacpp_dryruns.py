"""(tools/, not the package: it reads tests/fixtures) kvmath against real llama.cpp dry runs: compute buffers and per-device totals.

``tests/fixtures/llamacpp/compute_fixtures.json`` holds what llama.cpp 0c1e570's CPU build printed for
GGUF files with the real tensor shapes of 7 models (``llama-fit-params --fit-print on``: model loaded with
``no_alloc``, one context created, the compute buffer sized by ``sched_reserve``). :func:`cases` puts each
run's printed figures beside kvmath's: the compute buffer (:mod:`compute`, ``backend="cpu"``), and the
device total model + KV + RS + compute (weights from the tensor table by :mod:`placement`, cache from
:mod:`memory`) against the ``memory breakdown`` rows llama.cpp printed (``Host`` + ``CPU_REPACK``: one CPU
device; integer MiB, so a total can differ by up to 2 MiB from rounding alone).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from kvmath.units import MiB
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llamacpp" / "compute_fixtures.json"
_FLAGS = {"-c": "n_ctx", "-np": "n_parallel", "-ctk": "cache_type_k", "-ctv": "cache_type_v", "-fa": "flash_attn",
          "-ub": "n_ubatch", "-b": "n_batch"}


@dataclass(frozen=True)
class Case:
    model: str
    flags: tuple[str, ...]
    command: str
    compute_logged_mib: float
    compute_kvmath_mib: float
    dominant: str
    total_logged_mib: float      # memory breakdown: model + context + compute, summed over the CPU rows
    total_kvmath_mib: float
    model_logged_mib: float
    model_kvmath_mib: float
    context_logged_mib: float
    context_kvmath_mib: float
    compute_upper_kvmath_mib: float = 0.0   # the logits placed above the earlier phases' peak (compute.py)

    @property
    def compute_in_range(self) -> bool:
        """The printed buffer lies between kvmath's live set (less 5 %) and its placement upper bound."""
        return 0.95 * self.compute_kvmath_mib <= self.compute_logged_mib <= self.compute_upper_kvmath_mib

    @property
    def compute_error_pct(self) -> float:
        return 100.0 * (self.compute_kvmath_mib - self.compute_logged_mib) / self.compute_logged_mib

    @property
    def total_error_mib(self) -> float:
        return self.total_kvmath_mib - self.total_logged_mib


def load(path: Path | str = FIXTURES) -> dict:
    return json.loads(Path(path).read_text())


def flags_to_kwargs(flags) -> dict:
    kw, it = {}, iter(flags)
    for f in it:
        v = next(it)
        if f in _FLAGS:
            kw[_FLAGS[f]] = int(v) if _FLAGS[f] in ("n_ctx", "n_parallel", "n_ubatch", "n_batch") else v
    return kw


def _breakdown(lines):
    """Sum of the ``memory breakdown`` rows: (self, model, context, compute) in MiB."""
    tot = [0, 0, 0, 0]
    for l in lines:
        m = re.search(r"\|\s+- (\S+)\s+\|\s+(\d+) =\s+(\d+) \+\s+(\d+) \+\s+(\d+)", l)
        if m:
            for i in range(4):
                tot[i] += int(m.group(i + 2))
    return tot


def cases(data: dict | None = None) -> list[Case]:
    import kvmath
    from kvmath.errors import KvMathError
    from kvmath.model.gguf import gguf_to_hf_config
    from kvmath.engines.llamacpp.compute import compute_buffers, shape_from_gguf
    from kvmath.engines.llamacpp.memory import llamacpp_memory
    from kvmath.engines.llamacpp.placement import Tensor, place

    data = data or load()
    out = []
    for name, m in data["models"].items():
        meta = m["gguf_metadata"]
        tensors = [Tensor(n, tuple(s), t, b, o) for n, t, s, b, o in m["tensors"]]
        try:
            cfg = gguf_to_hf_config(meta, tensor_names={t.name for t in tensors})
        except KvMathError:  # no GGUF mapping (Nemotron-H): the config the file was converted from
            cfg = json.loads((FIXTURES.parents[3] / m["config"]).read_text())
        arch = kvmath.load_architecture(cfg, name=name)
        shape = shape_from_gguf(meta)
        n_layer = int(meta[meta["general.architecture"] + ".block_count"])
        p = place(tensors, n_layer=n_layer, n_gpu_layers=0)
        model_b = sum(p.buffers.values())
        for r in m["runs"]:
            if r["returncode"]:
                continue
            text = "\n".join(r["lines"])
            kw = flags_to_kwargs(r["flags"])
            mem = llamacpp_memory(arch, **kw)
            full = [c.cells for c in mem.kv if c.kind != "SWA"]
            swa = [c.cells for c in mem.kv if c.kind == "SWA"]
            cb = compute_buffers(shape, n_ubatch=mem.n_ubatch, n_kv=max(full, default=0),
                                 n_kv_swa=max(swa, default=0), flash_attn=mem.flash_attn, backend="cpu")
            logged = float(re.search(r"CPU compute buffer size = +([\d.]+) MiB", text).group(1))
            tot, mod, ctx, _ = _breakdown(r["lines"])
            ctx_k = (mem.kv_bytes + mem.recurrent_bytes) / MiB
            out.append(Case(name, tuple(r["flags"]), r["command"], logged, cb.device / MiB, cb.dominant, float(tot),
                            (model_b + mem.kv_bytes + mem.recurrent_bytes + cb.device) / MiB, float(mod),
                            model_b / MiB, float(ctx), ctx_k, cb.device_upper / MiB))
    return out


def summary(cs: list[Case] | None = None) -> dict:
    cs = cs if cs is not None else cases()
    n = len(cs)
    return {"runs": n, "models": len({c.model for c in cs}),
            "compute_within_5pct": sum(abs(c.compute_error_pct) <= 5 for c in cs),
            "compute_within_1pct": sum(abs(c.compute_error_pct) <= 1 for c in cs),
            "compute_max_abs_pct": max(abs(c.compute_error_pct) for c in cs),
            "compute_in_range": sum(c.compute_in_range for c in cs),
            "total_within_100mib": sum(abs(c.total_error_mib) <= 100 for c in cs),
            "total_max_abs_mib": max(abs(c.total_error_mib) for c in cs)}
