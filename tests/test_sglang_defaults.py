"""SGLang 0.5.23's default ``--mem-fraction-static``: kvmath's ``mfs_rule="reserve_graphs"`` against SGLang's own
resolution code, run on the CPU from the released wheel (``.cache/sglang-wheels``, ``make sglang-wheels``; the
tests skip without it).

The wheel's files executed as their real modules (tests/fixtures/sglang/loader.py stubs every other import):
``model_executor/cuda_graph_config.py`` (the graph backends' defaults), ``arg_groups/model_override_base.py``
and ``arg_groups/overrides.py`` (the resolving view, ``declare_resolution``, ``use_mla_backend``,
``post_capture_kv_sizing_planned``), ``arg_groups/cuda_graph_hook.py`` (``handle_cuda_graph_config``: the flags,
the prefill backend's auto-disable rules; the capture lists), ``arg_groups/model_overrides/qwen3_vl.py`` and
``arg_groups/memory_hook.py`` (``handle_gpu_memory_settings``). Each case runs the two pipeline steps in
pipeline.py's order (l.191, then l.218) on a stand-in ServerArgs whose model facts are read here, by the test,
from the wheel: the model classes' MLA switch from configs/model_config.py (the test's own list, checked
against the source text), ``is_multimodal`` / ``uses_kda_attention`` from that file's own functions (extracted
by name and executed), the vision config built by the wheel's ``Qwen3VLVisionConfig`` on transformers'
``PretrainedConfig``. The fraction SGLang declares is compared with kvmath's, exactly.

The stubs, each a fact of the machine SGLang would run on: ``get_device_memory_capacity`` -> the card's MiB,
``is_cuda`` -> True (a CUDA build), ``is_sm90_supported`` -> True (the Qwen3-VL rule at its widest),
``SGLANG_ENABLE_POST_CAPTURE_KV_SIZING`` unset (environ.py l.640: False), no DeepSeek-V4 (kvmath serves none).
"""

from __future__ import annotations

import ast
import json
import sys
import types
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
RealPretrainedConfig = transformers.PretrainedConfig  # taken before the loader stubs "transformers"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "sglang"))
import loader  # noqa: E402

from kvmath.engines import get_engine  # noqa: E402
from kvmath.engines.sglang import geometry as geo  # noqa: E402
from kvmath.engines.sglang.releases import TABLE  # noqa: E402
from kvmath.engines.sglang.settings import default_mem_fraction, graph_reserve  # noqa: E402
from kvmath.errors import KvMathError  # noqa: E402
from kvmath.model.load import load_architecture  # noqa: E402

V = "0.5.23"
REL = TABLE.by_name[V]
ENGINE = get_engine("sglang")
MODS = ("sglang.srt.model_executor.cuda_graph_config", "sglang.srt.arg_groups.model_override_base",
        "sglang.srt.arg_groups.overrides", "sglang.srt.arg_groups.cuda_graph_hook",
        "sglang.srt.arg_groups.model_overrides.qwen3_vl", "sglang.srt.arg_groups.memory_hook")

# GPU memory as nvidia-smi reports it, MiB: RTX 4090, H100 80GB, H200, A100 40GB, a 16 GiB card, B200
GPUS = (24564, 81559, 143771, 40960, 16384, 183359)
# the test's reading of configs/model_config.py l.1367-1397 / l.1463-1470 (attention_arch = MLA), checked below
MLA = {"DeepseekV3ForCausalLM", "KimiLinearForCausalLM"}


def _src(path: str) -> str:
    return zipfile.ZipFile(loader.wheel_path(V)).read(path).decode()


def _extract(source: str, names: set[str], ns: dict) -> dict:
    """Execute the top-level definitions ``names`` (functions, assignments) of ``source`` in ``ns``."""
    tree = ast.parse(source)
    keep = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            keep.append(node)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) in names for t in node.targets):
            keep.append(node)
    exec(compile(ast.Module(body=keep, type_ignores=[]), "sglang-wheel-extract", "exec"), ns)
    return ns


def _module(name: str, **attrs):
    """``sys.modules[name]`` (a stub the loader made, or a new module) with ``attrs`` set."""
    m = sys.modules.get(name)
    if m is None:
        m = sys.modules[name] = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


@pytest.fixture(scope="module")
def sg():
    if loader.wheel_path(V) is None:
        pytest.skip(f"sglang {V} wheel not downloaded (make sglang-wheels)")
    mods = loader.load(V, *MODS)
    mc_src = _src("sglang/srt/configs/model_config.py")
    facts = _extract(mc_src, {"_hf_attr", "uses_kda_attention", "MIMO_V2_MULTIMODAL_ARCHS", "multimodal_model_archs",
                              "multimodal_breakable_cuda_graph_supported_model_archs", "is_multimodal_model",
                              "is_multimodal_breakable_cuda_graph_supported"}, {"List": list})
    # the stubbed modules the real code imports from at call time (the loader's finder is gone by then)
    _module("sglang.srt.utils", is_cuda=lambda: True)  # cuda_graph_config.py l.119-123: a CUDA build
    _module("sglang.srt.configs.model_config", uses_kda_attention=facts["uses_kda_attention"],
            is_deepseek_v4=lambda config: False, ModelConfig=None,
            AttentionArch=types.SimpleNamespace(MLA="MLA", MHA="MHA"))
    for name in ("sglang.srt.layers", "sglang.srt.layers.cp"):
        _module(name)
    # only asked for DeepSeek-V4 or attn_cp_size > 1 (cuda_graph_hook.py l.196-211), neither of which occurs here
    _module("sglang.srt.layers.cp.bcg", supports_prefill_cp_bcg=lambda server_args: False)
    rc = _extract(_src("sglang/srt/runtime_context.py"), {"attn_dp_enabled_of"}, {"Any": object})
    mh = mods["sglang.srt.arg_groups.memory_hook"]
    mh.attn_dp_enabled_of = rc["attn_dp_enabled_of"]  # its import of ep_scale_joiner_of finds the real module
    mh.envs = types.SimpleNamespace(SGLANG_SYMM_MEM_PREALLOC_GB_SIZE=None)
    ov = mods["sglang.srt.arg_groups.overrides"]
    ov.envs = types.SimpleNamespace(SGLANG_ENABLE_POST_CAPTURE_KV_SIZING=types.SimpleNamespace(get=lambda: False))
    q3 = mods["sglang.srt.arg_groups.model_overrides.qwen3_vl"]
    q3.is_sm90_supported = lambda: True
    vision_ns = {"PretrainedConfig": RealPretrainedConfig}
    exec(compile(_src("sglang/srt/configs/qwen3_vl.py").replace("from transformers import PretrainedConfig", ""),
                 "sglang-wheel:configs/qwen3_vl.py", "exec"), vision_ns)
    return types.SimpleNamespace(mods=mods, mh=mh, cg=mods["sglang.srt.arg_groups.cuda_graph_hook"], q3=q3,
                                 facts=facts, vision=vision_ns["Qwen3VLVisionConfig"], mc_src=mc_src)


def test_the_mla_list_is_the_wheels(sg):
    """The test's MLA classes are the ones model_config.py switches to AttentionArch.MLA (l.1367-1397, l.1463-1470);
    the other classes kvmath's 0.5.23 record serves are not in those blocks."""
    lines = sg.mc_src.splitlines()
    block = "\n".join(lines[1366:1397] + lines[1462:1470])
    assert block.count("self.attention_arch = AttentionArch.MLA") == 2
    for arch in REL.archs:
        assert (f'"{arch}" in self.hf_config.architectures' in block) == (arch in MLA), arch


def _model_config(sg, raw: dict):
    archs = raw["architectures"]
    hf = dict(raw)
    if isinstance(raw.get("vision_config"), dict):  # Qwen3_5VisionConfig(Qwen3VLVisionConfig), configs/qwen3_5.py
        hf["vision_config"] = sg.vision(**{k: v for k, v in raw["vision_config"].items() if k != "model_type"})
    hf_config = types.SimpleNamespace(**hf)
    mm = sg.facts["is_multimodal_model"](archs) and not raw.get("language_model_only", False)
    return types.SimpleNamespace(
        attention_arch="MLA" if set(archs) & MLA else "MHA", hf_config=hf_config, is_multimodal=mm,
        is_multimodal_breakable_cuda_graph_supported=sg.facts["is_multimodal_breakable_cuda_graph_supported"](archs))


class _Args(types.SimpleNamespace):
    pass


def _server_args(sg, raw: dict, *, model_path: str, tp: int, **kw):
    """A stand-in ServerArgs: every field the two steps read, at its arg_groups/fields/*.py default unless given."""
    fields = dict(
        device="cuda", model_path=model_path, tp_size=tp, pp_size=1, dcp_size=1, attn_cp_size=1, dp_size=1,
        attn_dp_size=1, ep_join_mode=None, enable_dp_attention=False, chunked_prefill_size=None,
        max_prefill_tokens=16384, max_running_requests=None, max_total_tokens=None, mem_fraction_static=None,
        cuda_graph_config=None, disable_cuda_graph=False, disable_prefill_cuda_graph=False,
        disable_decode_cuda_graph=False, cuda_graph_backend_decode=None, cuda_graph_backend_prefill=None,
        cuda_graph_max_bs_decode=None, cuda_graph_max_bs_prefill=None, cuda_graph_max_seq_len_prefill=None,
        cuda_graph_bs_decode=None, cuda_graph_bs_prefill=None, cuda_graph_prefill_max_context=None,
        disable_cuda_graph_padding=False, speculative_algorithm=None, speculative_num_draft_tokens=None,
        enable_two_batch_overlap=False, moe_a2a_backend="none", disaggregation_mode="null", language_only=False,
        language_model_only=False, enable_kv_cache_sharding=False, enable_symm_mem=False, torch_compile_max_bs=32)
    fields.update(kw)
    sa = _Args(**fields)
    sa._resolved_overrides = []
    sa._model_config = _model_config(sg, raw)
    return sa


def sglang_default(sg, raw, G, *, model_path="org/model", tp=1, **kw):
    """SGLang's own: handle_cuda_graph_config (pipeline.py l.191) then handle_gpu_memory_settings (l.218),
    the deprecated DP spelling turned into attn_dp_size first (l.45, parallel_hook.py l.49-61)."""
    if kw.get("enable_dp_attention") and kw.get("dp_size", 1) > 1:
        kw = dict(kw, attn_dp_size=kw["dp_size"], dp_size=1, enable_dp_attention=False)
    sa = _server_args(sg, raw, model_path=model_path, tp=tp, **kw)
    sg.mh.get_device_memory_capacity = lambda device=None: G
    sg.q3.get_device_memory_capacity = lambda device=None: G
    sg.cg.handle_cuda_graph_config(sa)
    sg.mh.handle_gpu_memory_settings(sa)
    view = sg.mods["sglang.srt.arg_groups.model_override_base"].resolving_view(sa)
    return view.mem_fraction_static, view.cuda_graph_config, view.chunked_prefill_size


def kvmath_default(model, G, *, model_path="org/model", tp=1, **kw):
    arch = load_architecture(model)
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=tp, kv_format=None, sglang_version=V, **kw)
    gr = graph_reserve(REL, s, G, geo.hf_config(arch), model_path)
    assert default_mem_fraction(REL, s, G, 0, 0, config=geo.hf_config(arch), model_path=model_path) == gr.fraction
    return gr


def _compare(sg, model, G, **kw):
    raw = geo.hf_config(load_architecture(model))
    try:
        ours = kvmath_default(model, G, **kw)
    except KvMathError as e:
        if "heads" in str(e) or "TP" in str(e):
            pytest.skip(f"{model} does not split over TP {kw.get('tp')}: {e}")
        raise
    f, graphs, chunk = sglang_default(sg, raw, G, **kw)
    assert ours.fraction == f, (model, G, kw, ours.describe())
    assert ours.chunk == chunk
    assert ours.decode_max_bs == graphs.decode.max_bs
    assert ours.prefill_max_bs == graphs.prefill.max_bs
    assert ours.prefill_sizes == len(graphs.prefill.bs)
    assert ours.prefill_backend == graphs.prefill.backend
    assert ours.decode_graph == (graphs.decode.backend != "disabled")
    return ours, f


MODELS = ["llama-3.1-8b", "deepseek-v3", "qwen3.6-27b", "qwen3.5-35b-a3b", "kimi-linear-48b-a3b",
          "qwen3-next-80b-a3b", "nemotron-3-nano-30b-a3b", "gpt-oss-20b"]


@pytest.mark.parametrize("G", GPUS)
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
@pytest.mark.parametrize("model", MODELS)
def test_default_fraction_matches_sglang(sg, model, G, tp):
    _compare(sg, model, G, tp=tp)


@pytest.mark.parametrize("G", [24564, 81559, 143771])
@pytest.mark.parametrize("model", ["llama-3.1-8b", "deepseek-v3", "qwen3.6-27b"])
@pytest.mark.parametrize("kw", [
    dict(max_running_requests=16),  # caps the decode max_bs (memory_hook.py l.182-188)
    dict(max_running_requests=1000),  # above every table entry: no cap
    dict(disable_cuda_graph=True),  # both phases DISABLED (cuda_graph_hook.py l.55-57): no graph terms
    dict(chunked_prefill_size=16384),
    dict(chunked_prefill_size=2048, max_total_tokens=1000),  # the prefill capture capped by max_total_tokens
    dict(cuda_graph_max_bs=64),  # an explicit decode max_bs (SGLang: --cuda-graph-max-bs-decode)
    dict(model_path="meta-llama/Llama-2-70b-hf"),  # 'llama-2' in the path caps the prefill capture at 4096
    dict(tp=8, dp_size=8, enable_dp_attention=True),  # attn_dp_size 8: the DP attention terms (l.370-378)
    dict(tp=8, dp_size=2, enable_dp_attention=True, max_running_requests=400),
    dict(tp=2, dp_size=1, enable_dp_attention=True),  # attn_dp_size 1: no DP terms in 0.5.23
])
def test_default_fraction_matches_sglang_with_flags(sg, model, G, kw):
    kw = dict(kw)
    if "cuda_graph_max_bs" in kw:  # kvmath's setting is the decode max_bs; SGLang's field is per phase
        ours = kvmath_default(model, G, **kw)
        kw["cuda_graph_max_bs_decode"] = kw.pop("cuda_graph_max_bs")
        f, graphs, _ = sglang_default(sg, geo.hf_config(load_architecture(model)), G, **kw)
        assert ours.fraction == f and ours.decode_max_bs == graphs.decode.max_bs == 64
        return
    _compare(sg, model, G, **kw)


def test_the_conditions_the_cases_cover(sg):
    """The cases above reach each term: MLA's 1.5 GiB, the capture list, the KDA and --disable-cuda-graph
    disables, the vision factor, the 10 GiB floor, the DP attention terms, the running-request cap."""
    mla, _ = _compare(sg, "deepseek-v3", 81559, tp=8)
    assert mla.mla and mla.prefill_mib == 1536
    kda, _ = _compare(sg, "kimi-linear-48b-a3b", 81559, tp=2)
    assert kda.prefill_backend == "disabled" and kda.prefill_mib == 0 and kda.mla
    vlm, _ = _compare(sg, "qwen3.6-27b", 143771, tp=2)
    assert vlm.multimodal and vlm.prefill_backend == "breakable" and vlm.vlm_factor < 1
    small, _ = _compare(sg, "llama-3.1-8b", 24564)
    assert small.reserve_mib < 10 * 1024  # no floor below 60 GiB
    off, _ = _compare(sg, "llama-3.1-8b", 81559, disable_cuda_graph=True)
    assert off.decode_mib == 0 and off.prefill_mib == 0
    dp, _ = _compare(sg, "deepseek-v3", 143771, tp=8, dp_size=8, enable_dp_attention=True)
    assert dp.dp_attention_mib == 512 * 8 * 3 + 512 * 8 * 1.5
    capped, _ = _compare(sg, "llama-3.1-8b", 81559, max_running_requests=16)
    assert capped.decode_max_bs == 16


def test_hand_derived_defaults():
    """Three cases with the arithmetic of memory_hook.py written out (independent of kvmath's helper)."""
    # H100 (81,559 MiB), Llama-3.1-8B, TP 1: chunk 8192, decode max_bs 256 (l.132-145); prefill max_bs 8192,
    # 8 + 14 + 8 + 8 + 12 + 8 = 58 capture sizes (cuda_graph_hook.py l.486-493) x 8 MiB = 464;
    # reserve = 512 + 1.5 x 8192 + 1 x 1 / 8 x 1024 + 256 x 2 + 464 = 13,904 MiB (> 10 GiB)
    assert kvmath_default("llama-3.1-8b", 81559).fraction == round((81559 - 13904) / 81559, 3) == 0.830
    # RTX 4090 (24,564 MiB), Llama-3.1-8B, TP 1: chunk 4096, max_bs 48 (l.101-117); 50 capture sizes up to 4096;
    # reserve = 512 + 6144 + 128 + 96 + 400 = 7,280 MiB (no floor below 60 GiB)
    assert kvmath_default("llama-3.1-8b", 24564).fraction == round((24564 - 7280) / 24564, 3) == 0.704
    # H200 (143,771 MiB), DeepSeek-V3 (MLA), TP 8: chunk 8192, max_bs 512; MLA prefill graph 1.5 GiB (l.387-389);
    # reserve = 512 + 12,288 + 8 / 8 x 1024 + 1024 + 1536 = 16,384 MiB
    assert kvmath_default("deepseek-v3", 143771, tp=8).fraction == round((143771 - 16384) / 143771, 3) == 0.886
    # H200, Qwen3.6-27B (multimodal, breakable prefill kept), TP 2: reserve = 512 + 12,288 + 256 + 512 + 464
    # = 14,032; f0 = round(129,739 / 143,771, 3) = 0.902; vision tower 24 layers (no num_hidden_layers in
    # Qwen3VLVisionConfig) x 1152^2: ratio 1.265625, factor 0.95 x (1 - 0.0265625) (l.438-461)
    assert kvmath_default("qwen3.6-27b", 143771, tp=2).fraction == 0.902 * (0.95 * (1.0 - 0.1 * (1.265625 - 1.0)))


def test_front_door_answers_with_the_default(capsys, monkeypatch, tmp_path):
    """``kvmath-fit python -m sglang.launch_server --model-path Qwen/Qwen3-8B --card h100 --sglang-version
    0.5.23`` (no --mem-fraction-static) answers with 0.5.23's default and names it. Qwen/Qwen3-8B is served by
    a Hub on 127.0.0.1 (tests/hubserver.py) from its config.json."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hubserver import HubServer

    import huggingface_hub.constants
    from kvmath.fit import run as fit_run
    from kvmath.model import load

    cfg = {"architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "bos_token_id": 151643,
           "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
           "intermediate_size": 12288, "max_position_embeddings": 40960, "max_window_layers": 36,
           "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
           "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "tie_word_embeddings": False,
           "torch_dtype": "bfloat16", "vocab_size": 151936}  # Qwen/Qwen3-8B config.json
    hub = HubServer()
    hub.add("Qwen/Qwen3-8B", {"config.json": json.dumps(cfg).encode()})
    url = hub.start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        for k in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_ASSETS_CACHE"):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        load._hub.cache_clear()
        rc = fit_run(["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--card", "h100",
                      "--sglang-version", "0.5.23", "--json", "--no-solve"])
        v = json.loads(capsys.readouterr().out)
    finally:
        load._hub.cache_clear()
        hub.stop()
    assert rc in (0, 1) and v["outcome"] == "boots"
    # kvmath reads the H100 as 79.11 GiB = 81,008.64 MiB: chunk 8192, max_bs 256, 58 capture sizes;
    # reserve = 512 + 12,288 + 128 + 512 + 464 = 13,904 MiB
    G = 79.11 * 1024
    f = round((G - 13904) / G, 3)
    assert v["engine_detail"]["mem_fraction_static"] == f
    assert f"--mem-fraction-static not given: SGLang 0.5.23's default for this GPU is {f} " in " ".join(v["notes"])
    assert any("reserve 13904 MiB" in n and "58 capture sizes" in n for n in v["notes"])


@pytest.mark.parametrize("argv,words", [
    (["--cuda-graph-max-bs", "64"], "ambiguous"),
    (["--cuda-graph-bs", "1,2,4"], "ambiguous"),
    (["--load-format", "expert_pack"], "expert_pack"),
])
def test_0523_flags_it_has_not(argv, words):
    with pytest.raises(KvMathError, match=words):
        ENGINE.parse_launch(["--model-path", "llama-3.1-8b", *argv, "--sglang-version", V])
    ENGINE.parse_launch(["--model-path", "llama-3.1-8b", *argv, "--sglang-version", "0.5.9"])  # 0.5.9 has them


def test_refusals_name_what_is_missing():
    arch = load_architecture("llama-3.1-8b")
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=1, kv_format=None, sglang_version=V)
    with pytest.raises(KvMathError, match="give --mem-fraction-static"):
        graph_reserve(REL, s, 81559, {}, "x")  # no config.json: the model class is unknown
    with pytest.raises(KvMathError, match="give --mem-fraction-static"):
        graph_reserve(REL, s, 81559, geo.hf_config(arch), None)  # no --model-path string
    with pytest.raises(KvMathError, match="multimodal"):  # a sub-config on a class whose multimodality was not read
        graph_reserve(REL, s, 81559, dict(geo.hf_config(arch), vision_config={"hidden_size": 1024}), "x")
    s2 = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=1, kv_format=None, sglang_version=V,
                         attention_backend="aiter")
    with pytest.raises(KvMathError, match="aiter"):
        graph_reserve(REL, s2, 81559, geo.hf_config(arch), "x")
    qvl = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl"}
    s3 = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=1, kv_format=None, sglang_version=V,
                         max_running_requests=400)
    with pytest.raises(KvMathError, match="Qwen3-VL"):
        graph_reserve(REL, s3, 81559, qvl, "x")
