"""kvmath's SGLang pools against SGLang's own code, run on the CPU from the released wheels.

The wheels are downloaded by ``make sglang-wheels`` (tools/sglang_wheels.py: ``pip download --no-deps
--require-hashes``, each wheel pinned by its sha256, into .cache/sglang-wheels; nothing is committed, nothing
here reaches the network). Each test loads one file of a release (tests/fixtures/sglang/loader.py stubs every
other import) and runs:

- the pool classes (``MHATokenToKVPool``, ``MLATokenToKVPool``, ``SWAKVPool``, ``MambaPool``) with
  ``device="cpu"`` at a small size, whose buffers' bytes and "KV Cache is allocated" lines are compared with
  kvmath's for the same token count;
- the sizing functions (``profile_max_num_token``, ``handle_max_mamba_cache``, ``set_num_tokens_hybrid_swa``)
  on a stand-in ``self`` carrying the geometry read from each reference config by hand below, compared with
  kvmath's token counts for the same free-memory figures.
"""

from __future__ import annotations

import json
import logging
import sys
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "sglang"))
import loader  # noqa: E402

from kvmath.engines import get_engine  # noqa: E402
from kvmath.errors import KvMathError  # noqa: E402
from kvmath.engines.sglang.pools import size_pools  # noqa: E402
from kvmath.engines.sglang.releases import TABLE  # noqa: E402
from kvmath.model.load import load_architecture  # noqa: E402

RELEASES = [r.name for r in TABLE.releases]
ENGINE = get_engine("sglang")
CONFIGS = ROOT / "data" / "configs"


@pytest.fixture(autouse=True)
def _no_cuda_streams(monkeypatch):
    """0.4.4-0.4.7 pools open a side CUDA stream in __init__ (``torch.cuda.Stream()``); none on the CPU."""
    monkeypatch.setattr(torch.cuda, "Stream", lambda *a, **k: None)


def _pool_module(version, *more):
    """memory_pool.py of ``version`` (and ``more`` files), with the one stub that must return a tuple set."""
    mods = loader.load(version, "sglang.srt.mem_cache.memory_pool", *more)
    for m in mods.values():
        if "maybe_init_custom_mem_pool" in vars(m):
            m.maybe_init_custom_mem_pool = lambda device=None: (False, None, None)
        if "ceil_align" in vars(m):  # 0.5.23: rows padded to whole pages (utils helper)
            m.ceil_align = lambda x, a: -(-x // a) * a
        if "get_tensor_size_bytes" in vars(m):
            m.get_tensor_size_bytes = lambda t: sum(x.numel() * x.element_size() for x in (t if isinstance(t, (list, tuple)) else [t]))
        if "UnquantizedKVCacheMethod" in vars(m):  # 0.5.23: the unquantized recipe is a class of another file
            m.UnquantizedKVCacheMethod = type("UnquantizedKVCacheMethod", (), {"name": "unquantized"})
    return mods


def _unserved(version, model) -> bool:
    """Qwen3 (Qwen3ForCausalLM) first ships in 0.4.7's srt/models/qwen3.py: kvmath must refuse it before."""
    if model == "qwen3-32b" and version in ("0.4.3", "0.4.3.post4", "0.4.4"):
        arch = load_architecture(model)
        with pytest.raises(KvMathError, match="no model class for qwen3-32b"):
            ENGINE.geometry(arch, ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=1, kv_format=None,
                                                  sglang_version=version))
        return True
    return False


def _need(version):
    if loader.wheel_path(version) is None:
        pytest.skip(f"sglang {version} wheel not downloaded (make sglang-wheels)")


def _cfg(name: str) -> dict:
    c = json.loads((CONFIGS / name).read_text())
    return c.get("text_config") or c if "text_config" in c and "num_hidden_layers" not in c else c


# Geometry read by hand from each reference config (the test's own reading, not kvmath's):
# (known model id, config file, pool kind, num_key_value_heads, head_dim, layers in the KV pool)
MHA = [
    ("llama-3.1-8b", "meta-llama__Llama-3.1-8B-Instruct.json", 8, 128, 32),
    ("llama-3.1-70b", "meta-llama__Llama-3.1-70B.json", 8, 128, 80),
    ("qwen2.5-7b", "Qwen__Qwen2.5-7B.json", 4, 128, 28),
    ("qwen3-32b", "Qwen__Qwen3-32B.json", 8, 128, 64),
    ("mistral-7b-v0.1", "mistralai__Mistral-7B-v0.1.json", 8, 128, 32),
    ("gemma-2-9b", "google__gemma-2-9b.json", 8, 256, 42),  # no SWA pool for Gemma 2: 42 full layers
]


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _captured(fn):
    h = _Capture()
    root = logging.getLogger()
    root.addHandler(h)
    old = root.level
    root.setLevel(logging.INFO)
    try:
        out = fn()
    finally:
        root.removeHandler(h)
        root.setLevel(old)
    return out, h.lines


def _mha_pool(mp, version, size, heads, dim, layers, dtype=torch.bfloat16, page=1):
    import inspect

    kw = dict(size=size, dtype=dtype, head_num=heads, head_dim=dim, layer_num=layers, device="cpu",
              enable_memory_saver=False)
    if "page_size" in inspect.signature(mp.MHATokenToKVPool.__init__).parameters:
        kw["page_size"] = page
    return mp.MHATokenToKVPool(**kw)


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("model,cfg,heads,dim,layers", MHA)
@pytest.mark.parametrize("tp", [1, 4])
def test_mha_pool_matches_sglang(version, model, cfg, heads, dim, layers, tp):
    """MHATokenToKVPool's buffers and log line at the token count kvmath computes for a small budget."""
    _need(version)
    if _unserved(version, model):
        return
    arch = load_architecture(model)
    if model == "gemma-2-9b" and version == "0.4.10":  # 0.4.10 gives Gemma 2 the hybrid SWA pool (token split test)
        s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=tp, kv_format=None, sglang_version=version)
        assert ENGINE.geometry(arch, s).pool == "swa"
        return
    mp = _pool_module(version)["sglang.srt.mem_cache.memory_pool"]
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=tp, kv_format=None, sglang_version=version,
                        kv_cache_memory_bytes=24 * 2**20)
    ours = ENGINE.allocate(arch, s)
    n = ours.max_total_num_tokens
    kvh = max(1, heads // tp)
    assert n == (24 * 2**20) // (kvh * dim * layers * 2 * 2)  # the hand cell: heads x dim x L x (K, V) x bf16
    pool, lines = _captured(lambda: _mha_pool(mp, version, n, kvh, dim, layers))
    k = sum(b.numel() * b.element_size() for b in pool.k_buffer)
    v = sum(b.numel() * b.element_size() for b in pool.v_buffer)
    assert (ours.full_k_bytes, ours.full_v_bytes) == (k, v)
    kv_lines = [x for x in lines if x.startswith("KV Cache is allocated")]
    assert kv_lines and kv_lines[-1] == ours.log_lines[-1]


@pytest.mark.parametrize("version", RELEASES)
def test_mla_pool_matches_sglang(version):
    """DeepSeek-V3's MLATokenToKVPool: one (512 + 64)-wide latent row per token and layer, 61 layers."""
    _need(version)
    mp = _pool_module(version)["sglang.srt.mem_cache.memory_pool"]
    arch = load_architecture("deepseek-v3")
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=8, kv_format=None, sglang_version=version,
                        kv_cache_memory_bytes=40 * 2**20)
    ours = ENGINE.allocate(arch, s)
    n = ours.max_total_num_tokens
    assert n == (40 * 2**20) // ((512 + 64) * 61 * 2)
    import inspect

    kw = dict(size=n, dtype=torch.bfloat16, kv_lora_rank=512, qk_rope_head_dim=64, layer_num=61, device="cpu",
              enable_memory_saver=False)
    if "page_size" in inspect.signature(mp.MLATokenToKVPool.__init__).parameters:
        kw["page_size"] = 1
    pool, lines = _captured(lambda: mp.MLATokenToKVPool(**kw))
    kv = sum(b.numel() * b.element_size() for b in pool.kv_buffer)
    assert ours.full_k_bytes == kv
    assert [x for x in lines if x.startswith("KV Cache")] == [x for x in ours.log_lines if x.startswith("KV Cache")]


def _fake_runner(mod_globals, *, heads, dim, layers, tp, elt_dtype, fraction, mla=None, v_dim=None):
    mc = types.SimpleNamespace(
        get_num_kv_heads=lambda t: max(1, heads // t), head_dim=dim, v_head_dim=v_dim or dim,
        num_hidden_layers=layers, kv_lora_rank=(mla or (0, 0))[0], qk_rope_head_dim=(mla or (0, 0))[1],
        attention_arch="MLA" if mla else "MHA", hf_config=types.SimpleNamespace(), is_hybrid_swa=False,
        context_len=4096)
    sa = types.SimpleNamespace(disable_mla=False, mem_fraction_static=fraction, max_mamba_cache_size=None,
                               disable_radix_cache=False, max_running_requests=None, mamba_full_memory_ratio=0.9,
                               speculative_num_draft_tokens=None, enable_dp_attention=False, dp_size=1)
    return types.SimpleNamespace(model_config=mc, server_args=sa, kv_cache_dtype=elt_dtype, device="cpu", gpu_id=0,
                                 tp_size=tp, is_draft_worker=False, num_effective_layers=layers,
                                 use_mla_backend=bool(mla), mem_fraction_static=fraction, mambaish_config=None,
                                 start_layer=0, end_layer=layers, pp_size=1,
                                 spec_algorithm=types.SimpleNamespace(is_none=lambda: True))


_PROFILE_FILE = {"0.5.9": "sglang.srt.model_executor.model_runner_kv_cache_mixin"}


def _profile(version, runner, T, A, tp):
    modname = _PROFILE_FILE.get(version, "sglang.srt.model_executor.model_runner")
    mods = loader.load(version, modname)
    m = mods[modname]
    m.get_available_gpu_memory = lambda *a, **k: A
    m.get_attention_tp_size = lambda: tp
    if hasattr(m, "AttentionArch"):
        m.AttentionArch = types.SimpleNamespace(MLA="MLA")
    cls = getattr(m, "ModelRunnerKVCacheMixin", None) or m.ModelRunner
    if hasattr(cls, "get_cell_size_per_token"):
        runner.get_cell_size_per_token = types.MethodType(cls.get_cell_size_per_token, runner)
    if hasattr(cls, "handle_max_mamba_cache"):
        runner.handle_max_mamba_cache = types.MethodType(cls.handle_max_mamba_cache, runner)
    return cls.profile_max_num_token(runner, T)


_PROFILED = [v for v in RELEASES if v != "0.5.23"]  # 0.5.23's budget is a configurator object (below: its refusal)


@pytest.mark.parametrize("version", _PROFILED)
@pytest.mark.parametrize("model,cfg,heads,dim,layers", MHA[:4])
@pytest.mark.parametrize("T,A,f", [(78.5, 62.4, 0.85), (23.2, 8.1, 0.88), (39.1, 21.77, 0.9)])
def test_profile_max_num_token_matches_sglang(version, model, cfg, heads, dim, layers, T, A, f):
    """SGLang's profile_max_num_token (the real function, a stand-in self) vs kvmath's tokens for the same
    free memory before (T) and after (A) the weights, GiB."""
    _need(version)
    if _unserved(version, model):
        return
    runner = _fake_runner(None, heads=heads, dim=dim, layers=layers, tp=1, elt_dtype=torch.bfloat16, fraction=f)
    theirs = _profile(version, runner, T, A, 1)
    arch = load_architecture(model)
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=1, kv_format=None, sglang_version=version)
    ours = ENGINE.pools_for(arch, s, A - T * (1 - f))
    assert ours.profiled_tokens == theirs


@pytest.mark.parametrize("version", _PROFILED)
def test_profile_mla_matches_sglang(version):
    _need(version)
    runner = _fake_runner(None, heads=128, dim=192, layers=61, tp=8, elt_dtype=torch.bfloat16, fraction=0.81,
                          mla=(512, 64))
    theirs = _profile(version, runner, 78.6, 5.3 + 78.6 * 0.19, 8)
    arch = load_architecture("deepseek-v3")
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=8, kv_format=None, sglang_version=version)
    ours = ENGINE.pools_for(arch, s, (5.3 + 78.6 * 0.19) - 78.6 * (1 - 0.81))
    assert ours.profiled_tokens == theirs


@pytest.mark.parametrize("version", ["0.5.9"])
@pytest.mark.parametrize("model,tp", [("gpt-oss-120b", 1), ("gpt-oss-20b", 2)])
def test_swa_split_and_pool_match_sglang(version, model, tp):
    """gpt-oss's hybrid SWA: set_num_tokens_hybrid_swa's split and SWAKVPool's buffers (0.5.9)."""
    _need(version)
    mods = _pool_module(version, "sglang.srt.mem_cache.swa_memory_pool",
                        "sglang.srt.model_executor.model_runner_kv_cache_mixin")
    mixin = mods["sglang.srt.model_executor.model_runner_kv_cache_mixin"]
    swa_mod = mods["sglang.srt.mem_cache.swa_memory_pool"]
    raw = json.loads((CONFIGS / f"openai__{model}.json").read_text())
    types_ = raw["layer_types"]
    full = [i for i, t in enumerate(types_) if t == "full_attention"]
    swa = [i for i, t in enumerate(types_) if t != "full_attention"]
    heads, dim = raw["num_key_value_heads"], raw["head_dim"]
    mixin.get_attention_tp_size = lambda: tp
    budget = 30 * 2**20
    arch = load_architecture(model)
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=tp, kv_format=None, sglang_version=version,
                        kv_cache_memory_bytes=budget)
    ours = ENGINE.allocate(arch, s)
    kvh = max(1, heads // tp)
    cell = kvh * dim * 2 * 2 * (len(full) + len(swa))
    mc = types.SimpleNamespace(full_attention_layer_ids=full, swa_attention_layer_ids=swa,
                               get_num_kv_heads=lambda t: max(1, heads // t), get_swa_num_kv_heads=lambda t: max(1, heads // t),
                               head_dim=dim, v_head_dim=dim, swa_head_dim=dim, swa_v_head_dim=dim)
    runner = types.SimpleNamespace(model_config=mc, server_args=types.SimpleNamespace(page_size=1, swa_full_tokens_ratio=0.8),
                                   sliding_window_size=raw["sliding_window"], max_total_num_tokens=budget // cell,
                                   kv_cache_dtype=torch.bfloat16)
    mixin.ModelRunnerKVCacheMixin.set_num_tokens_hybrid_swa(runner)
    assert (ours.max_total_num_tokens, ours.swa_tokens) == (runner.full_max_total_num_tokens, runner.swa_max_total_num_tokens)
    pool, lines = _captured(lambda: swa_mod.SWAKVPool(
        size=runner.full_max_total_num_tokens, size_swa=runner.swa_max_total_num_tokens, page_size=1,
        dtype=torch.bfloat16, head_num=kvh, head_dim=dim, swa_attention_layer_ids=swa, full_attention_layer_ids=full,
        enable_kvcache_transpose=False, device="cpu"))
    k, v = pool.get_kv_size_bytes()
    assert ours.full_k_bytes + ours.swa_k_bytes == k and ours.full_v_bytes + ours.swa_v_bytes == v
    assert [x for x in lines if x.startswith(("KV Cache", "SWAKVPool"))] == list(ours.log_lines[1:])


@pytest.mark.parametrize("version", ["0.5.4.post1", "0.5.6", "0.5.9"])
@pytest.mark.parametrize("model,cfg,tp", [("qwen3-next-80b-a3b", "Qwen__Qwen3-Next-80B-A3B-Instruct.json", 4),
                                          ("qwen3.6-27b", "Qwen__Qwen3.6-27B.json", 2)])
def test_state_pool_matches_sglang(version, model, cfg, tp):
    """Qwen3-Next / 3.6 GDN state: Mamba2StateShape.create's shapes, handle_max_mamba_cache's pool size and
    MambaPool's buffers (real code), against kvmath's."""
    _need(version)
    arch = load_architecture(model)
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=tp, kv_format=None, sglang_version=version)
    if "Qwen3_5" in json.loads((CONFIGS / cfg).read_text())["architectures"][0] and version != "0.5.9":
        with pytest.raises(Exception):
            ENGINE.geometry(arch, s)
        return
    import os
    os.environ.setdefault("SGLANG_MAMBA_SSM_DTYPE", "float32")  # 0.5.4-0.5.6: server_args sets it from --mamba-ssm-dtype
    mods = _pool_module(version, "sglang.srt.configs.mamba_utils")
    mu = mods["sglang.srt.configs.mamba_utils"]
    mp = mods["sglang.srt.mem_cache.memory_pool"]
    mu.divide = lambda a, b: (a // b) if a % b == 0 else (_ for _ in ()).throw(AssertionError)
    if hasattr(mu, "envs"):
        mu.envs = types.SimpleNamespace(SGLANG_MAMBA_CONV_DTYPE=types.SimpleNamespace(get=lambda: "bfloat16"),
                                        SGLANG_MAMBA_SSM_DTYPE=types.SimpleNamespace(get=lambda: None))
    raw = _cfg(cfg)
    linear = [i for i, t in enumerate(raw.get("layer_types") or []) if t == "linear_attention"] or \
        [i for i in range(raw["num_hidden_layers"]) if (i + 1) % raw["full_attention_interval"] != 0]
    shape = mu.Mamba2StateShape.create(tp_world_size=tp, intermediate_size=raw["linear_value_head_dim"] * raw["linear_num_value_heads"],
                                       n_groups=raw["linear_num_key_heads"], num_heads=raw["linear_num_value_heads"],
                                       head_dim=raw["linear_value_head_dim"], state_size=raw["linear_key_head_dim"],
                                       conv_kernel=raw["linear_conv_kernel_dim"])
    if version == "0.5.9":
        ssm = {"float32": torch.float32, "bfloat16": torch.bfloat16}[raw.get("mamba_ssm_dtype", "float32")]
        params = mu.Mamba2CacheParams(shape=shape, layers=linear, dtype=mu.Mamba2StateDType(conv=torch.bfloat16, temporal=ssm))
    else:
        mu.CONV_DTYPE = torch.bfloat16
        params = mu.Mamba2CacheParams(shape=shape, layers=linear,
                                      dtype=mu.Mamba2StateDType(conv=torch.bfloat16, temporal=torch.float32))
    g = ENGINE.geometry(arch, s)
    assert g.state.per_req == params.mamba_cache_per_req
    # handle_max_mamba_cache on a stand-in self, then the real MambaPool at that size
    rest = 3.0
    sa = types.SimpleNamespace(max_mamba_cache_size=None, disable_radix_cache=False, max_running_requests=None,
                               mamba_full_memory_ratio=0.9, speculative_num_draft_tokens=None,
                               enable_dp_attention=False, dp_size=1)
    runner = types.SimpleNamespace(mambaish_config=types.SimpleNamespace(mamba2_cache_params=params), server_args=sa,
                                   spec_algorithm=types.SimpleNamespace(is_none=lambda: True), dp_size=1,
                                   hybrid_gdn_config=object())
    name = _PROFILE_FILE.get(version, "sglang.srt.model_executor.model_runner")
    m = loader.load(version, name)[name]
    cls = getattr(m, "ModelRunnerKVCacheMixin", None) or m.ModelRunner
    left = cls.handle_max_mamba_cache(runner, rest)
    ours = ENGINE.pools_for(arch, s, rest, g)
    assert ours.mamba_size == sa.max_mamba_cache_size
    assert ours.profiled_tokens == int(left * (1 << 30)) // g.cell
    pool_kw = dict(size=4, cache_params=params, device="cpu")
    import inspect

    if "spec_state_size" in inspect.signature(mp.MambaPool.__init__).parameters:
        pool_kw.update(spec_state_size=4)
    pool, lines = _captured(lambda: mp.MambaPool(**pool_kw))
    st = pool.mamba_cache
    conv = sum(t.numel() * t.element_size() for t in st.conv)
    ssm_b = st.temporal.numel() * st.temporal.element_size()
    assert conv == (4 + 1) * g.state.conv_bytes_per_req and ssm_b == (4 + 1) * g.state.ssm_bytes_per_req


def test_minimum_fraction_refusal_text_0523():
    """0.5.23's refusal names the minimum fraction: the f-string of kv_cache_configurator.py, formatted by the
    wheel's own code path (the source text is compiled; the message is compared with kvmath's)."""
    _need("0.5.23")
    import zipfile

    src = zipfile.ZipFile(loader.wheel_path("0.5.23")).read("sglang/srt/mem_cache/kv_cache_configurator.py").decode()
    assert "Loaded weights leave no GPU memory for the KV cache under" in src
    arch = load_architecture("llama-3.1-70b")
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=1, kv_format=None, mem_fraction_static=0.5)
    T, A = 79.0, 20.0
    p = ENGINE.pools_for(arch, s, A - T * 0.5, minimum_fraction=1 - A / T)
    assert p.refusal == ("Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. "
                         "Raise --mem-fraction-static above 0.747 (minimum viable = 1 - available/pre = 0.7468). "
                         "If using speculative decoding, draft weights are now counted.")


@pytest.mark.parametrize("version,model,cfg", [("0.4.10", "gemma-2-9b", "google__gemma-2-9b.json"),
                                               ("0.5.6", "gpt-oss-20b", "openai__gpt-oss-20b.json"),
                                               ("0.5.4.post1", "gpt-oss-120b", "openai__gpt-oss-120b.json")])
def test_token_era_swa_split_matches_sglang(version, model, cfg):
    """0.4.10-0.5.6: ModelRunner.set_num_token_hybrid's token split (the real method on a stand-in self whose
    layers carry the sliding windows read from the config) against kvmath's."""
    _need(version)
    m = loader.load(version, "sglang.srt.model_executor.model_runner")["sglang.srt.model_executor.model_runner"]
    raw = json.loads((CONFIGS / cfg).read_text())
    L = raw["num_hidden_layers"]
    types_ = raw.get("layer_types") or ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)]
    layers = [types.SimpleNamespace(layer_id=i, self_attn=types.SimpleNamespace(attn=types.SimpleNamespace(
        sliding_window_size=(raw["sliding_window"] - 1) if t == "sliding_attention" else None)))
        for i, t in enumerate(types_)]
    budget = 40 * 2**20
    arch = load_architecture(model)
    s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=1, kv_format=None, sglang_version=version,
                        kv_cache_memory_bytes=budget)
    ours = ENGINE.allocate(arch, s)
    heads, dim = raw["num_key_value_heads"], raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]
    n = budget // (heads * dim * L * 2 * 2)  # the token era's cell: full geometry on every layer
    runner = types.SimpleNamespace(
        model_config=types.SimpleNamespace(hf_config=types.SimpleNamespace(architectures=raw["architectures"]),
                                           num_hidden_layers=L),
        server_args=types.SimpleNamespace(page_size=1, swa_full_tokens_ratio=0.8),
        model=types.SimpleNamespace(model=types.SimpleNamespace(layers=layers)),
        sliding_window_size=raw["sliding_window"] - 1, max_total_num_tokens=n, is_hybrid=True, is_hybrid_swa=True)
    m.ModelRunner.set_num_token_hybrid(runner)
    assert (ours.max_total_num_tokens, ours.swa_tokens) == (runner.full_max_total_num_tokens,
                                                            runner.swa_max_total_num_tokens)
    assert ours.log_lines[0] == (f"Use Sliding window memory pool. full_layer_tokens={runner.full_max_total_num_tokens}, "
                                 f"swa_layer_tokens={runner.swa_max_total_num_tokens}")
