"""Models by Hugging Face Hub id (kvmath.hub), with the real client (huggingface_hub) against a Hub-compatible
server the tests start on 127.0.0.1 (tests/hubserver.py; HF_ENDPOINT points at it, HF_HOME at a temporary
folder). Nothing reaches the network.

Independent figures:
- meta-llama/Llama-3.1-8B-Instruct's published ``model.safetensors.index.json`` states ``metadata.total_size``
  16,060,522,496 bytes (8,030,261,248 bf16 parameters); the server's headers are laid out from the config's
  shapes (the Llama layout transformers saves), and kvmath's table read by ranged reads must sum to it.
- KV bytes per token by hand: Llama 3.1 8B, 32 layers x (8 K + 8 V heads) x 128 x 2 B (bf16) = 131,072 B; the
  tiny GGUF, 4 layers x (2 + 2 heads) x 32 x 2 B (f16) = 1,024 B.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from hubserver import READ_AHEAD, HubServer, gguf_header, safetensors_header  # noqa: E402

import kvmath  # noqa: E402
from kvmath import facts, hub  # noqa: E402
from kvmath.errors import KvMathError  # noqa: E402
from kvmath.model import load  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LLAMA = "kvmath-test/Llama-3.1-8B-Instruct"
GATED = "kvmath-test/gated-Llama-3.1-8B"
GGUF = "kvmath-test/tiny-llama-GGUF"
PUBLISHED_TOTAL = 16_060_522_496  # meta-llama/Llama-3.1-8B-Instruct model.safetensors.index.json metadata.total_size


def _llama_tensors(cfg):
    """The Llama checkpoint layout (transformers LlamaForCausalLM state dict names), bf16, from the config."""
    H, I, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    hd = H // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    t = [("model.embed_tokens.weight", "BF16", (V, H))]
    for i in range(L):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", "BF16", (H,)), (p + "mlp.down_proj.weight", "BF16", (H, I)),
              (p + "mlp.gate_proj.weight", "BF16", (I, H)), (p + "mlp.up_proj.weight", "BF16", (I, H)),
              (p + "post_attention_layernorm.weight", "BF16", (H,)),
              (p + "self_attn.k_proj.weight", "BF16", (kv, H)), (p + "self_attn.o_proj.weight", "BF16", (H, H)),
              (p + "self_attn.q_proj.weight", "BF16", (H, H)), (p + "self_attn.v_proj.weight", "BF16", (kv, H))]
    return t + [("model.norm.weight", "BF16", (H,)), ("lm_head.weight", "BF16", (V, H))]


def _sharded(cfg, shards=4):
    t = _llama_tensors(cfg)
    per = -(-len(t) // shards)
    files, weight_map = {}, {}
    for k in range(shards):
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = t[k * per:(k + 1) * per]
        files[name] = safetensors_header(part, {"format": "pt"})
        weight_map.update({n: name for n, _, _ in part})
    files["model.safetensors.index.json"] = json.dumps(
        {"metadata": {"total_size": PUBLISHED_TOTAL}, "weight_map": weight_map}).encode()
    files["config.json"] = json.dumps(cfg).encode()
    files["README.md"] = b"kvmath test repository\n"
    return files


def _tiny_gguf(tmp, quant):
    import gguf

    Q = gguf.GGMLQuantizationType
    q = {"Q4_K_M": Q.Q4_K, "Q8_0": Q.Q8_0}[quant]
    S, U32 = gguf.GGUFValueType.STRING, gguf.GGUFValueType.UINT32
    n_embd, n_ff, L, heads, kv, hd, vocab = 256, 512, 4, 8, 2, 32, 60_000
    meta = {"general.name": (f"tiny-llama-{quant}", S), "llama.block_count": (L, U32),
            "llama.context_length": (8192, U32), "llama.embedding_length": (n_embd, U32),
            "llama.feed_forward_length": (n_ff, U32), "llama.attention.head_count": (heads, U32),
            "llama.attention.head_count_kv": (kv, U32), "llama.attention.key_length": (hd, U32),
            "llama.attention.value_length": (hd, U32), "llama.vocab_size": (vocab, U32),
            "tokenizer.ggml.model": ("gpt2", S),
            # ~1 MB of tokenizer strings: the header outgrows the first ranged read
            "tokenizer.ggml.tokens": ([f"tok{i:07d}" for i in range(vocab)], "array")}
    t = [("token_embd.weight", (n_embd, vocab), q), ("output_norm.weight", (n_embd,), Q.F32),
         ("output.weight", (n_embd, vocab), q)]
    for i in range(L):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", (n_embd,), Q.F32), (b + "attn_q.weight", (n_embd, heads * hd), q),
              (b + "attn_k.weight", (n_embd, kv * hd), q), (b + "attn_v.weight", (n_embd, kv * hd), q),
              (b + "attn_output.weight", (heads * hd, n_embd), q), (b + "ffn_norm.weight", (n_embd,), Q.F32),
              (b + "ffn_gate.weight", (n_embd, n_ff), q), (b + "ffn_up.weight", (n_embd, n_ff), q),
              (b + "ffn_down.weight", (n_ff, n_embd), q)]
    return gguf_header("llama", meta, t, tmp / f"tiny-llama-{quant}.gguf")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    cfg = json.loads((ROOT / "data/configs/meta-llama__Llama-3.1-8B-Instruct.json").read_text())
    s = HubServer()
    s.add(LLAMA, _sharded(cfg), revisions=("main", "v1"))
    s.add(GATED, _sharded(cfg), gated=True)
    tmp = tmp_path_factory.mktemp("gguf")
    s.add(GGUF, {"tiny-llama-Q4_K_M.gguf": _tiny_gguf(tmp, "Q4_K_M"), "tiny-llama-Q8_0.gguf": _tiny_gguf(tmp, "Q8_0"),
                 "README.md": b"gguf test repository\n"})
    url = s.start()
    s.url = url
    yield s
    s.stop()


@pytest.fixture
def env(server, tmp_path, monkeypatch):
    """HF_ENDPOINT at the test server, a fresh HF_HOME, no token, online; the log emptied."""
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for k in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_ASSETS_CACHE"):
        monkeypatch.delenv(k, raising=False)
    # huggingface_hub read conftest's HF_HUB_OFFLINE=1 into its constants when first imported; kvmath.hub reads
    # the environment at call time (and passes local_files_only itself), the library's own gate must follow
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    server.log.clear()
    server.weight_reads.clear()
    load._hub.cache_clear()
    yield server
    load._hub.cache_clear()


def _run(main, argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def kvmath_cli(argv, capsys):
    from kvmath.cli import main

    return _run(main, argv, capsys)


def fit_cli(argv, capsys):
    from kvmath.engines.vllm.cli import main

    return _run(main, argv, capsys)


def _one_line_error(code, err):
    assert code == 2, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- the grammar ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, ref", [
    ("Qwen/Qwen3.6-27B-FP8", ("Qwen/Qwen3.6-27B-FP8", None, None)),
    ("org/name@v1.0", ("org/name", "v1.0", None)),
    ("org/name@refs/pr/1", ("org/name", "refs/pr/1", None)),
    ("unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M", ("unsloth/Qwen3-30B-A3B-GGUF", None, "Q4_K_M")),
])
def test_hub_id_grammar(text, ref):
    r = hub.parse_hub_id(text)
    assert (r.repo, r.revision, r.quant) == ref


@pytest.mark.parametrize("text", ["qwen3.6-27b", "a/b/c", "./x/y", "/abs/path", "org/na--me", "org/..", "org/",
                                  "org/name@", "x" * 500, "org/name.json@../x"])
def test_not_hub_ids(text):
    assert hub.parse_hub_id(text) is None


def test_an_existing_path_is_not_a_hub_id(tmp_path, monkeypatch):
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "name").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert hub.parse_hub_id("org/name") is not None and not hub.is_hub_id("org/name")


def test_import_kvmath_does_not_import_huggingface_hub():
    code = "import sys, kvmath, kvmath.cli, kvmath.model.load; print('huggingface_hub' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# --- did you mean --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, hint", [
    ("Qwen/Qwen3.6-27B-FP8", "qwen3.6-27b"),
    ("Qwen/Qwen3.6-35B-A3B-FP8", "qwen3.6-35b-a3b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", None),  # not mistral-7b-v0.1: another family and size
    ("Qwen/Qwen3-30B-A3B", None),  # not qwen3.6-35b-a3b
    ("Qwen/Qwen2.5-72B-Instruct-AWQ", None),  # not qwen2.5-7b-instruct
])
def test_suggestions_only_for_the_same_family_and_size(name, hint):
    assert facts.suggest_model(name) == hint
    with pytest.raises(KvMathError) as e:
        facts.resolve_model(name)
    assert ("did you mean" in str(e.value)) == (hint is not None)
    if hint:
        assert f"did you mean {hint}?" in str(e.value)


# --- answers from the server ---------------------------------------------------------------------------

def test_kvmath_config_hub_id(env, capsys):
    code, out, err = kvmath_cli(["--config", LLAMA, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["totals"]["bytes_per_token"] == 32 * (8 + 8) * 128 * 2 == 131_072
    assert d["source"].startswith(f"{LLAMA}@") and "Hugging Face Hub" in d["source"]
    # config.json came through hf_hub_download into the HF cache, pinned to the commit
    commit = env.repos[LLAMA].commit
    assert (Path(os.environ["HF_HOME"]) / "hub" / "models--kvmath-test--Llama-3.1-8B-Instruct" / "snapshots" / commit
            / "config.json").is_file()


def test_safetensors_headers_only(env):
    arch = kvmath.load_architecture(LLAMA)
    ck = arch.extras["checkpoint"]
    assert ck.total_bytes == PUBLISHED_TOTAL and not ck.estimated
    assert ck.index_total_size == PUBLISHED_TOTAL
    assert len(ck.tensors) == 2 + 32 * 9 + 1
    assert env.weight_reads == []
    gets = [(p, r) for m, p, r in env.log if m == "GET" and p.endswith(".safetensors")]
    assert len(gets) == 4  # one ranged read per shard: each header is under 100 kB
    for p, r in gets:
        a, b = map(int, r.split("=")[1].split("-"))
        assert a == 0 and b - a + 1 <= READ_AHEAD
        head = env.repos[LLAMA].files[p.rsplit("/", 1)[1]].head
        assert len(head) < b + 1 < env.repos[LLAMA].files[p.rsplit("/", 1)[1]].size


def test_fit_model_hub_id(env, capsys):
    code, out, err = fit_cli(["--model", LLAMA, "--card", "h100", "--max-model-len", "8192", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert any("safetensors headers" in n for n in d["notes"])
    # TP=1: vLLM loads every tensor of the checkpoint; the budget's weights are at least the published total
    assert d["weights_bytes"] >= PUBLISHED_TOTAL
    assert env.weight_reads == []


def test_fit_pasted_vllm_serve_line(env, capsys):
    code, out, err = fit_cli(["vllm", "serve", LLAMA, "--tensor-parallel-size", "2", "--card", "a100",
                              "--max-model-len", "32k"], capsys)
    assert code == 0, err
    assert f"vLLM budget - {LLAMA} on a100" in out and "safetensors headers" in out


def test_revision(env, capsys):
    code, out, err = kvmath_cli(["--config", f"{LLAMA}@v1", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["totals"]["bytes_per_token"] == 131_072
    assert any(p.endswith("/revision/v1") for _, p, _ in env.log)
    line = _one_line_error(*kvmath_cli(["--config", f"{LLAMA}@nope"], capsys)[::2])
    assert "has no revision 'nope'" in line


def test_known_repo_without_revision_stays_offline(env, capsys):
    code, out, err = kvmath_cli(["--config", "meta-llama/Llama-3.1-8B-Instruct", "--json"], capsys)
    assert code == 0, err
    assert env.log == []  # read from kvmath's data, pinned to its recorded revision


def test_offline_from_the_cache(env, capsys, monkeypatch):
    online = kvmath.load_architecture(LLAMA)
    load._hub.cache_clear()
    env.log.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = fit_cli(["--model", LLAMA, "--card", "h100", "--max-model-len", "8192", "--json"], capsys)
    assert code == 0, err
    assert env.log == []  # not one request
    offline = kvmath.load_architecture(LLAMA)
    assert offline.extras["checkpoint"].total_bytes == online.extras["checkpoint"].total_bytes == PUBLISHED_TOTAL
    load._hub.cache_clear()
    assert kvmath.load_architecture(LLAMA, offline=True).extras["checkpoint"].total_bytes == PUBLISHED_TOTAL


def test_offline_subprocess_with_the_hub_down(env, capsys):
    """The real command with HF_HUB_OFFLINE=1 in its environment (huggingface_hub reads it at import) and the
    endpoint a closed port: it answers from the cache the first run filled."""
    kvmath.load_architecture(LLAMA)
    e = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}")
    out = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", LLAMA, "--json"], capture_output=True,
                         text=True, env=e, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["totals"]["bytes_per_token"] == 131_072


def test_hub_down_answers_from_the_cache_with_a_note(env, monkeypatch):
    kvmath.load_architecture(LLAMA)
    load._hub.cache_clear()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    arch = kvmath.load_architecture(LLAMA)
    assert "could not be reached" in arch.source and "answered from the HF cache" in arch.source
    assert arch.extras["checkpoint"].total_bytes == PUBLISHED_TOTAL


def test_offline_with_nothing_cached(env, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = _one_line_error(*kvmath_cli(["--config", LLAMA], capsys)[::2])
    assert "is not in the HF cache" in line and "run once online" in line
    assert env.log == []


# --- one line, exit 2 ----------------------------------------------------------------------------------

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unknown_repository(env, capsys):
    line = _one_line_error(*fit_cli(["--model", "kvmath-test/no-such-model", "--card", "h100"], capsys)[::2])
    assert "unknown Hugging Face repository 'kvmath-test/no-such-model'" in line and "404" in line
    line = _one_line_error(*kvmath_cli(["--config", "Qwen/Qwen3.6-27B-FP8"], capsys)[::2])
    assert "did you mean qwen3.6-27b?" in line
    line = _one_line_error(*fit_cli(["vllm", "serve", "mistralai/Mixtral-8x7B-Instruct-v0.1", "--card", "a100"],
                                    capsys)[::2])
    assert "unknown Hugging Face repository" in line and "mistral-7b" not in line


def test_gated(env, capsys, monkeypatch):
    line = _one_line_error(*kvmath_cli(["--config", GATED], capsys)[::2])
    assert "gated" in line and "HF_TOKEN" in line and "401" in line
    load._hub.cache_clear()
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    line = _one_line_error(*kvmath_cli(["--config", GATED], capsys)[::2])
    assert "HF_TOKEN has no access" in line and "403" in line
    load._hub.cache_clear()
    monkeypatch.setenv("HF_TOKEN", env.token)
    code, out, err = kvmath_cli(["--config", GATED, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["totals"]["bytes_per_token"] == 131_072


def test_server_down(env, capsys, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    line = _one_line_error(*fit_cli(["--model", LLAMA, "--card", "h100"], capsys)[::2])
    assert "cannot reach the Hugging Face Hub" in line and "not in the HF cache" in line


# --- GGUF ----------------------------------------------------------------------------------------------

def test_gguf_header_by_growing_ranged_reads(env, capsys, monkeypatch):
    monkeypatch.setattr(hub, "GGUF_FIRST_READ", 64 * 1024)
    code, out, err = kvmath_cli(["--config", f"{GGUF}:Q8_0", "--engine", "llama.cpp", "-c", "4096", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["totals"]["bytes_per_token"] == 4 * (2 + 2) * 32 * 2 == 1024
    assert "tiny-llama-Q8_0.gguf" in d["source"]
    ranges = [r for m, p, r in env.log if m == "GET" and p.endswith("Q8_0.gguf")]
    assert len(ranges) >= 3  # 64 KiB, then doubled until the ~1 MB header parses
    served = sum(int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1 for r in ranges)
    f = env.repos[GGUF].files["tiny-llama-Q8_0.gguf"]
    assert served < 2 * len(f.head) + 64 * 1024 and served < f.size
    assert env.weight_reads == []
    # offline, from the kept header
    load._hub.cache_clear()
    env.log.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert kvmath_cli(["--config", f"{GGUF}:Q8_0", "--engine", "llama.cpp", "-c", "4096"], capsys)[0] == 0
    assert env.log == []


def test_gguf_default_tag_and_unknown_tag(env, capsys):
    arch = kvmath.load_architecture(GGUF)  # no config.json: llama.cpp's default tag Q4_K_M
    assert "tiny-llama-Q4_K_M.gguf" in arch.source
    line = _one_line_error(*kvmath_cli(["--config", f"{GGUF}:Q6_K"], capsys)[::2])
    assert "no .gguf file for tag 'Q6_K'" in line and "Q4_K_M" in line and "Q8_0" in line


def test_llamacpp_hf(env, capsys):
    from kvmath.fit import run

    rc = run(["llama-server", "-hf", f"{GGUF}:Q8_0", "-c", "4096", "-np", "1", "--card", "rtx3090", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0, d
    assert any("tiny-llama-Q8_0.gguf" in n and "GGUF header" in n for n in d["notes"])
    kv = next(t["bytes"] for t in d["devices"][0]["terms"] if t["name"] == "kv")
    # f16 cache, 4,096 cells x 1,024 B per token (4 layers x (2 + 2 heads) x 32 x 2 B)
    assert kv == 4096 * 1024
    assert env.weight_reads == []
    # -m org/name:QUANT is the same file
    assert run(["llama-server", "-m", f"{GGUF}:Q8_0", "-c", "4096", "-np", "1", "--card", "rtx3090", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["devices"][0]["terms"] == d["devices"][0]["terms"]
    line = _one_line_error(run(["llama-server", "-hf", "kvmath-test/no-such-GGUF", "--card", "rtx3090"]),
                           capsys.readouterr().err)
    assert "unknown Hugging Face repository" in line


def test_offline_flag(env, capsys, monkeypatch):
    assert kvmath_cli(["--config", LLAMA, "--json"], capsys)[0] == 0
    load._hub.cache_clear()
    env.log.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "")  # restored after the test (the flag sets it for the process)
    code, out, err = fit_cli(["--model", LLAMA, "--card", "h100", "--max-model-len", "8192", "--offline"], capsys)
    assert code == 0, err
    assert env.log == []


def test_hostile_headers_are_one_line(env, capsys):
    from hubserver import Virtual

    cfg = json.loads((ROOT / "data/configs/meta-llama__Llama-3.1-8B-Instruct.json").read_text())
    huge = (2**40).to_bytes(8, "little") + b"{}"
    env.add("kvmath-test/hostile-st", {"config.json": json.dumps(cfg).encode(),
                                       "model.safetensors": Virtual(huge, 10**9)})
    env.add("kvmath-test/hostile-gguf", {"x-Q4_K_M.gguf": Virtual(b"NOTGGUF" + bytes(100), 10**9, 8 * 2**20)})
    env.add("kvmath-test/index-names-a-missing-shard", {
        "config.json": json.dumps(cfg).encode(),
        "model.safetensors.index.json": json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors"}}).encode()})
    for repo, want in (("kvmath-test/hostile-st", "header length"), ("kvmath-test/hostile-gguf", "GGUF magic"),
                       ("kvmath-test/index-names-a-missing-shard", "the index names model-00001-of-00002")):
        line = _one_line_error(*kvmath_cli(["--config", repo], capsys)[::2])
        assert want in line, line
    assert env.weight_reads == []
    # a bad magic is refused after the first read, not after reading up to GGUF_MAX_READ
    assert len([1 for m, p, r in env.log if m == "GET" and p.endswith("x-Q4_K_M.gguf")]) == 1


class _DrippingHub(HubServer):
    """A Hub that answers ``drip/info``'s file list, or ``drip/config``'s config.json, one byte every 0.2 s: each
    wait for a byte is short, the whole answer would take minutes (the third held-out probe's slow Hub)."""

    def _answer(self, h, head):
        import time
        from urllib.parse import unquote, urlsplit

        path = unquote(urlsplit(h.path).path)
        info = path.startswith("/api/models/drip/info")
        if info or (path.startswith("/drip/config/resolve/") and path.endswith("config.json") and not head):
            h.send_response(200)
            h.send_header("Content-Length", "100000")
            if not info:
                h.send_header("X-Repo-Commit", self.repos["drip/config"].commit)
                h.send_header("ETag", '"drip"')
            h.end_headers()
            for _ in range(1000):
                try:
                    h.wfile.write(b" ")
                    h.wfile.flush()
                except OSError:
                    return
                time.sleep(0.2)
            return
        return super()._answer(h, head)


@pytest.mark.parametrize("repo,what", [("drip/info", "its file list"), ("drip/config", "config.json")])
def test_a_dripping_hub_is_refused_not_waited_on(repo, what, tmp_path, monkeypatch):
    # huggingface_hub's timeouts bound each wait for a byte, not the whole read: a Hub sending a byte every 0.2 s
    # held the command for as long as it liked (kvmath.hub._bounded: the read's wall-clock bound)
    cfg = json.loads((ROOT / "data/configs/meta-llama__Llama-3.1-8B-Instruct.json").read_text())
    s = _DrippingHub()
    s.add(repo, {"config.json": json.dumps(cfg).encode()})
    monkeypatch.setenv("HF_ENDPOINT", s.start())
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for k in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_ASSETS_CACHE"):
        monkeypatch.delenv(k, raising=False)
    import huggingface_hub.constants  # online, as the env fixture makes it (conftest's HF_HUB_OFFLINE=1 is read
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # at the library's first import)
    monkeypatch.setattr(hub, "TIMEOUT_S", 1.0)
    monkeypatch.setattr(hub, "MIN_RATE", 2**40)  # the bound is TIMEOUT_S alone
    load._hub.cache_clear()
    try:
        with pytest.raises(KvMathError, match=f"no complete answer within 1 s.*{what}"):
            hub.fetch(repo)
    finally:
        load._hub.cache_clear()
        s.stop()


def test_bounded_reraises_and_returns():
    assert hub._bounded(5, lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(ZeroDivisionError):
        hub._bounded(5, lambda: 1 / 0)
