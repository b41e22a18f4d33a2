"""vLLM's --limit-mm-per-prompt and --language-model-only (issue 21): the towers vLLM does not build leave the
weights, a modality at 0 leaves the encoder profile, the profiled modality's limit bounds its items.

Rules read from vLLM 0.24.0: vllm/config/multimodal.py ``get_limit_per_prompt`` (999 for a modality left out, 0
for every modality with ``language_model_only``), vllm/model_executor/models/interfaces.py ``_mark_tower_model``
(a tower whose modalities are all at 0 is a ``StageMissingLayer``: no weights), vllm/multimodal/encoder_budget.py
``MultiModalBudget._get_max_items`` (items per batch = max(1, min(budget // tok, S x max(1, min(limit, L // tok))))).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kvmath.engines.vllm.activation import encoder_terms
from kvmath.engines.vllm.budget import budget, checkpoint_weights_per_rank
from kvmath.engines.vllm.cli import main
from kvmath.errors import KvMathError
from kvmath.model.load import load_architecture

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


def _json(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out.strip() else None), out.err


def test_language_model_only_weights_match_a_public_log():
    """P114 (data/measurements/vllm-public-boots.csv): Qwen 3.6 35B-A3B bf16 with language_model_only logged
    'Model loading took 64.69 GiB' (https://github.com/djangodevreng/dgx-spark-benchmarks, _bootlog.txt). Without
    the vision tower kvmath's tensors come within 0.15 GiB of it; with the tower they are 0.7 GiB over."""
    rows = {r["id"]: r for r in csv.DictReader((ROOT / "data/measurements/vllm-public-boots.csv").open())}
    p114 = rows["P114"]
    assert "language_model_only=True" in p114["other_settings"]
    logged = float(p114["model_loading_gib"]) * GIB
    arch = load_architecture("qwen3.6-35b-a3b")
    whole, _ = checkpoint_weights_per_rank(arch, 1)
    lean, _ = checkpoint_weights_per_rank(arch, 1, skip_towers=("vision",))
    assert abs(lean.total - logged) < 0.15 * GIB
    assert whole.total - logged > 0.5 * GIB
    assert any("vision tower is not loaded" in n for n in lean.notes)


def test_all_zero_limits_are_language_model_only(capsys):
    line = ["vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "rtx3090", "--max-model-len", "32768",
            "--kv-cache-dtype", "fp8_e5m2", "--weights-variant", "int4"]
    _, base, _ = _json(capsys, *line)
    _, zero, _ = _json(capsys, *line, "--limit-mm-per-prompt", '{"image": 0, "video": 0}')
    _, lmo, _ = _json(capsys, *line, "--language-model-only")
    keys = ("weights_bytes", "profile_peak_bytes", "available_kv_bytes", "pool_tokens")
    assert {k: zero[k] for k in keys} == {k: lmo[k] for k in keys}
    # no encoder profile, and the tower's tensors off the published int4 size (they are bf16 in that checkpoint)
    assert zero["profile_peak_bytes"] < base["profile_peak_bytes"]
    assert zero["weights_bytes"] < base["weights_bytes"] and zero["available_kv_bytes"] > base["available_kv_bytes"]
    assert any("taken off the published size" in n for n in zero["notes"])
    # vLLM's count form of a limit is the same limit
    _, counted, _ = _json(capsys, *line, "--limit-mm-per-prompt", '{"image": {"count": 0}, "video": {"count": 0}}')
    assert counted["available_kv_bytes"] == zero["available_kv_bytes"]


def test_the_profiled_modalitys_limit_bounds_its_items():
    """Qwen 3.6's profiling image is 16,384 tokens (activation.QWEN_VL_MAX_PIXELS). With 65,536 batched tokens the
    encoder budget holds 65,536 // 16,384 = 4 items, and one sequence of 131,072 tokens 8: 4 items at vLLM's
    default limit (999), 1 item at a limit of 1. Every encoder term is linear in the items."""
    arch = load_architecture("qwen3.6-27b")
    free = encoder_terms(arch, 65536, 1, 131072)
    one = encoder_terms(arch, 65536, 1, 131072, mm_limit=1)
    assert [t.name for t in free] == [t.name for t in one] and free
    for a, b in zip(free, one):
        assert a.bytes == 4 * b.bytes, a.name
    assert encoder_terms(arch, 65536, 1, 131072, mm_limit=0) == []


@pytest.mark.parametrize("model,limits,message", [
    ("qwen3.6-27b", {"image": 0}, "vLLM then profiles video"),   # image off, video on: video would be profiled
    ("gemma-4-31b", {"video": 0}, "vLLM then profiles image"),   # Gemma 4 profiles video; images are not modelled
    ("qwen3.6-27b", {"smell": 0}, "unknown modality"),
    ("qwen3.6-27b", {"image": -1, "video": 0}, "whole number >= 0"),
    ("qwen3.6-27b", {"image": 1.5}, "whole number >= 0"),
    ("qwen3.6-27b", [0], "must be an object"),
])
def test_limits_kvmath_cannot_price_are_refused(model, limits, message):
    with pytest.raises(KvMathError, match=message):
        budget(model, card="h100", max_model_len=8192, limit_mm_per_prompt=limits)


def test_a_text_model_takes_the_flag_with_a_note(capsys):
    code, d, _ = _json(capsys, "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", "rtx3090",
                       "--max-model-len", "8192", "--language-model-only")
    assert code == 0 and any("has no vision tower" in n for n in d["notes"])


def test_the_solver_and_pipeline_stages_keep_the_limit(capsys):
    line = ["vllm", "serve", "google/gemma-4-31B-it", "--card", "h100", "--max-model-len", "32768"]
    _, a, _ = _json(capsys, *line, "--language-model-only", "--solve-max-ctx")
    _, b, _ = _json(capsys, *line, "--solve-max-ctx")
    assert a["largest_max_model_len"] > b["largest_max_model_len"]  # the rebudgets of the solver carry the flag
    with pytest.raises(SystemExit) as e:  # argparse's error: one line, exit 2
        main([*line, "--limit-mm-per-prompt", "nope"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "is not JSON" in err and err.count("\n") == 1


# --- --mm-processor-kwargs: the Qwen 3.5 / 3.6 profiling image (vLLM 0.20.0 / 0.24.0 qwen2_vl.py, qwen3_vl.py) ---

@pytest.mark.parametrize("max_pixels, expected", [
    # the preprocessor's own longest_edge: 16777216 / 32^2 = 16,384 = 128 x 128, the 16,384-token encoder budget
    # vLLM logs for Qwen 3.6 (https://github.com/noonghunna/club-3090/issues/602)
    (16777216, (16384, 4096, 4096)),
    # 1003520 / 1024 = 980 = 28 x 35 (closest pair: isqrt(980) = 31; 31, 30, 29 do not divide, 28 does)
    (1003520, (980, 35 * 32, 28 * 32)),
    # 211 is prime: its pair (1, 211) is flatter than 200:1, so vLLM steps down to 210 = 14 x 15
    (211 * 1024 + 1023, (210, 15 * 32, 14 * 32)),
])
def test_the_profiling_image_is_vllms_most_features_image(max_pixels, expected):
    from kvmath.engines.vllm.activation import qwen_vl_image_tokens

    assert qwen_vl_image_tokens(max_pixels, 16, 2) == expected


def test_max_pixels_shrinks_the_encoder_profile(capsys):
    arch = load_architecture("qwen3.6-27b")
    base = encoder_terms(arch, 8192, 4, 32768)
    small = encoder_terms(arch, 8192, 4, 32768, max_pixels=1003520)
    # items: default 16,384 tokens an image, budget max(8192, 16384) // 16384 = 1 image; 980 tokens: 8192 // 980 = 8
    # images (4 sequences x min(999, 32768 // 980 = 33) = 132 allow more): 8 x 980 x 4 = 31,360 patches against
    # 16,384 x 4 = 65,536, and the tower's live set is linear in the patches
    assert "[65536," in base[0].shape and "[31360," in small[0].shape
    assert small[0].bytes * 65536 == base[0].bytes * 31360
    code, out, err = _json(capsys, "vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "h100", "--max-model-len", "32768",
                           "--max-num-seqs", "4", "--mm-processor-kwargs", '{"max_pixels": 1003520}')
    assert code == 0, err
    assert any("1120 x 896 image of 980 tokens" in n for n in out["notes"])
    code0, out0, _ = _json(capsys, "vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "h100", "--max-model-len", "32768",
                           "--max-num-seqs", "4")
    assert out["profile_peak_bytes"] < out0["profile_peak_bytes"] and out["available_kv_bytes"] > out0["available_kv_bytes"]


@pytest.mark.parametrize("kwargs, message", [
    ('{"fps": 2}', "'fps' is not modelled"),
    ('{"max_pixels": 1e6}', "whole number of pixels"),
    ('{"max_pixels": 4096}', "at least 262,144 pixels"),
    ('{"size": {"shortest_edge": 4096}}', "reads size['longest_edge']"),
    ('{"max_pixels": 1003520, "min_pixels": 2000000}', "above the profiling image"),
    ('[1]', "must be a JSON object"),
])
def test_mm_processor_kwargs_kvmath_cannot_price_are_refused(capsys, kwargs, message):
    try:
        code = main(["vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "h100", "--mm-processor-kwargs", kwargs])
    except SystemExit as e:  # argparse's own exit for a value its type refuses
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_mm_processor_kwargs_on_a_model_without_a_qwen_tower_is_refused():
    with pytest.raises(KvMathError, match="Qwen 3.5 / 3.6 vision towers only"):
        budget("llama-3.1-8b", card="h100", max_model_len=8192, mm_processor_kwargs={"max_pixels": 1003520})


@pytest.mark.parametrize("config, tower", [("Qwen__Qwen2.5-VL-7B-Instruct.json", "vision_config without a model_type"),
                                           ("mistralai__Devstral-Small-2-24B-Instruct.json", "'pixtral'"),
                                           ("llava-hf__llava-v1.6-mistral-7b-hf.json", "'clip_vision_model'"),
                                           ("transformers-5.23-defaults__internvl.json", "'internvl_vision'")])
def test_a_tower_whose_profile_is_not_modelled_is_refused(capsys, config, tower):
    """A vision tower kvmath has no profile rule for (Qwen2.5-VL's, Pixtral's) was left out of the profile run
    without a word, so the pool came out larger than vLLM's (vLLM encodes a dummy batch through every tower it
    builds: gpu_model_runner.py ``profile_run``). It is refused naming the tower; with the tower off
    (--language-model-only, or every modality at 0) the text model is priced."""
    path = str(ROOT / "tests/fixtures/configs" / config)
    line = ["--config", path, "--card", "h100", "--max-model-len", "8192", "--weights-gb", "20"]
    assert main(line) == 2
    err = capsys.readouterr().err.strip()
    assert tower in err and "--language-model-only" in err and "\n" not in err
    assert main([*line, "--language-model-only"]) == 0
    assert "BOOTS" in capsys.readouterr().out
    assert main([*line, "--limit-mm-per-prompt", '{"image": 0, "video": 0}']) == 0
