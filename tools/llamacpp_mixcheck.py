"""Evidence for the llama.cpp quantisation mixes (:mod:`kvmath.engines.llamacpp.quantmix`), for the book and
the tests: kvmath's mix estimates from config.json against published GGUF figures, and its per-tensor types
against ``llama-quantize --dry-run`` runs kept under ``tests/fixtures/llamacpp`` (a checkout's files: these
functions are for the book and the tests, not for an installed wheel)."""

from __future__ import annotations

from kvmath.units import MiB

from kvmath.engines.llamacpp.quantmix import mix_model_from_gguf, nbytes, tensor_types

PUBLISHED = "measurements/llamacpp-gguf-sizes.csv"


def published_checks(rows=None) -> list[dict]:
    """kvmath's mix estimate from config.json against published GGUF figures
    (``data/measurements/llamacpp-gguf-sizes.csv``: llama-bench ``size`` = the file's tensor bytes, or the
    loader's per-type tensor counts). Per row: the logged and estimated bytes (MiB), the error in MiB and %,
    the half-width of the logged figure's rounding (MiB), and the type counts side by side."""
    import json
    from collections import Counter
    from pathlib import Path

    from kvmath import facts
    from kvmath.engines.llamacpp.weights import weights_from_mix

    out = []
    for r in rows if rows is not None else facts.read_csv(PUBLISHED):
        cfg = (json.loads(facts.reference_config_path(Path(r["config"]).name).read_text()) if r["config"]
               else json.loads(r["config_fields"]))
        tensors, _ = weights_from_mix(cfg, r["quant"])
        est = sum(t.n_bytes for t in tensors) / MiB
        counts = Counter(t.ggml_type.lower() for t in tensors)
        row = {"id": r["id"], "model": r["model"], "quant": r["quant"], "url": r["url"], "kvmath_mib": est,
               "logged_mib": None, "error_mib": None, "error_pct": None, "rounding_mib": None,
               "logged_counts": r["type_counts"] or None,
               "kvmath_counts": " ".join(f"{k}:{v}" for k, v in sorted(counts.items()))}
        if r["size_logged"]:
            scale = {"MiB": 1.0, "GiB": 1024.0, "GB": 1e9 / MiB}[r["size_unit"]]
            logged = float(r["size_logged"]) * scale
            row.update(logged_mib=logged, error_mib=est - logged, error_pct=100 * (est - logged) / logged,
                       rounding_mib=0.005 * scale)
        if r.get("params_b"):
            from math import prod

            row["kvmath_params_b"] = sum(prod(t.shape) for t in tensors) / 1e9
            row["logged_params_b"] = float(r["params_b"])
        out.append(row)
    return out


def dryrun_checks(path=None) -> list[dict]:
    """kvmath's per-tensor types against ``llama-quantize --dry-run`` of llama.cpp 0c1e570, per mix over the 7
    models of ``tests/fixtures/llamacpp/quant_fixtures.json``: tensors compared, tensors whose type differs,
    and the largest size difference in MiB (the tool prints MiB to 2 decimals)."""
    import json
    from pathlib import Path

    fix = Path(path) if path else Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llamacpp"
    quant = json.loads((fix / "quant_fixtures.json").read_text())
    compute = json.loads((fix / "compute_fixtures.json").read_text())
    rows: dict[str, dict] = {}
    for name, e in quant["models"].items():
        mm = mix_model_from_gguf(compute["models"][name]["gguf_metadata"])
        tensors = [tuple(t) for t in e["tensors"]]
        for mix, r in e["mixes"].items():
            got = tensor_types(tensors, mm, mix)
            want = r["types"].split()
            size = sum(nbytes(s, got[n]) for n, s, _ in tensors) / MiB
            row = rows.setdefault(mix, {"mix": mix, "models": 0, "tensors": 0, "types_differing": 0,
                                        "max_abs_size_error_mib": 0.0, "max_abs_size_error_pct": 0.0})
            row["models"] += 1
            row["tensors"] += len(want)
            row["types_differing"] += sum(got[t[0]] != w for t, w in zip(tensors, want))
            err = abs(size - r["quant_size_mib"])
            row["max_abs_size_error_mib"] = max(row["max_abs_size_error_mib"], err)
            row["max_abs_size_error_pct"] = max(row["max_abs_size_error_pct"], 100 * err / r["quant_size_mib"])
    return list(rows.values())
