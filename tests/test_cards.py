"""Cards (kvmath.cards, data/cards.json): one lookup for every engine, the names the tools print, each figure
with its source, and no silent default card.

Independent checks: a total read from a quoted message must be the number in the quote (the row's own source
text, parsed here); the AMD totals are rocminfo's Pool 1 sizes (KB) / 2^20 by hand; the Apple working sets are
llama.cpp's logged recommendedMaxWorkingSetSize (MB = MiB) / 1024 by hand.
"""

from __future__ import annotations

import json
import re

import pytest

from kvmath import cards, facts
from kvmath.engines.llamacpp import budget as LB
from kvmath.engines.vllm import budget as VB
from kvmath.errors import KvMathError

ALL = facts.cards()


@pytest.mark.parametrize("name", ["rtx3090", "3090", "RTX 3090", "rtx-3090", "NVIDIA GeForce RTX 3090",
                                  "nvidia geforce rtx 3090", "RTX_3090"])
def test_names_people_type(name):
    assert cards.card(name)["id"] == "rtx3090"


@pytest.mark.parametrize("name, cid", [
    ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA A100-PCIE-40GB", "a100-40"), ("NVIDIA H100 80GB HBM3", "h100"),
    ("Tesla T4", "t4"), ("Tesla V100-SXM2-32GB", "v100-32"), ("NVIDIA RTX A6000", "a6000"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA GeForce RTX 4070 SUPER", "rtx4070super"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"), ("AMD Instinct MI300X", "mi300x"),
    ("Radeon RX 7900 XTX", "rx7900xtx"), ("7900xtx", "rx7900xtx"), ("AMD Radeon PRO W7900", "w7900"),
    ("Apple M3 Max 128GB", "m3-max-128gb"), ("m2-ultra-192gb", "m2-ultra-192gb"),
])
def test_printed_names(name, cid):
    assert cards.card(name)["id"] == cid


def test_both_engines_read_one_lookup():
    # kvmath-fit took "RTX 3090" and the llama.cpp engine refused it (issue #18): now one reader
    for name in ("RTX 3090", "NVIDIA GeForce RTX 3090", "5070ti", "rtx4060ti-16", "mi300x", "m4-max-128gb"):
        assert VB.card(name) == LB.card(name) == cards.card(name)


def test_a_printed_name_two_sizes_share_is_refused_unless_the_memory_decides():
    with pytest.raises(KvMathError, match="names 2 cards: rtx4060ti-16, rtx4060ti-8"):
        cards.card("NVIDIA GeForce RTX 4060 Ti")
    assert cards.card("NVIDIA GeForce RTX 4060 Ti", memory_gib=8188 / 1024)["id"] == "rtx4060ti-8"
    assert cards.card("NVIDIA GeForce RTX 4060 Ti", memory_gib=16380 / 1024)["id"] == "rtx4060ti-16"


def test_unknown_card_is_one_short_line():
    with pytest.raises(KvMathError) as e:
        cards.card("voodoo5")
    assert "unknown card 'voodoo5'" in str(e.value) and len(str(e.value)) < 400
    with pytest.raises(KvMathError, match="did you mean .*rtx4090"):
        cards.card("rtx4009")


@pytest.mark.parametrize("cid", sorted(ALL))
def test_every_card_has_its_figures_and_sources(cid):
    c = ALL[cid]
    assert c["vendor"] in ("nvidia", "amd", "apple") and c["runtime"] == {"nvidia": "cuda", "amd": "rocm",
                                                                          "apple": "metal"}[c["vendor"]]
    assert 0 < c["total_gib"] <= c["nominal_gb"] + 0.01  # a runtime never reports more than the marketing GiB
    assert isinstance(c["source"], str) and len(c["source"]) > 20
    assert c["bandwidth_gbs"] > 0 and ("bandwidth_gbs" in c.get("sources", {}) or "bandwidth" in c["source"])
    if c["vendor"] == "nvidia":
        assert isinstance(c["compute_capability"], int) and 60 <= c["compute_capability"] <= 121
    if c["vendor"] == "amd":
        assert re.fullmatch(r"gfx[0-9a-f]{3,4}", c["gfx_arch"])
    if c["vendor"] == "apple":
        assert c["unified_memory_gb"] == c["nominal_gb"]
    # a derived figure says so
    if not re.search(r"total capac?i?ty", c["source"]) and "recommendedMaxWorkingSetSize  =" not in c["source"] and \
            "recommendedMaxWorkingSetSize =" not in c["source"]:
        assert re.search(r"no (message|log|rocminfo|PyTorch)|derived|assumed|nominal|Total Global|total=|"
                         r"before\.total|rocminfo", c["source"]), c["source"]


def test_quoted_totals_are_the_numbers_in_their_quotes():
    checked = 0
    for cid, c in ALL.items():
        m = re.search(r"(\d+\.\d+) GiB total capacity|total capac?i?ty of (\d+\.\d+) GiB", c["source"])
        if m and not c["source"].startswith("no message found"):
            if "Windows" in c["source"] and cid in ("rtx4080", "titan-rtx", "rtx3080ti"):
                continue  # the quote is the Windows figure, said so; the row is derived for Linux
            assert c["total_gib"] == float(m.group(1) or m.group(2)), cid
            checked += 1
    assert checked >= 20


def test_amd_totals_from_rocminfo_by_hand():
    assert ALL["mi300x"]["total_gib"] == round(201310208 / 2**20, 2) == 191.98
    assert ALL["rx7900xtx"]["total_gib"] == round(25149440 / 2**20, 2) == 23.98
    assert ALL["mi210"]["total_gib"] == round((64 * 1024 - 16) / 1024, 2)  # the same 16 MiB, said derived
    assert "derived" in ALL["mi210"]["source"]


def test_apple_working_sets_from_llamacpp_logs_by_hand():
    assert ALL["m1-pro-16gb"]["total_gib"] == round(10922.67 / 1024, 2)
    assert ALL["m2-max-32gb"]["total_gib"] == round(21845.34 / 1024, 2)
    assert ALL["m2-max-96gb"]["total_gib"] == 73728.00 / 1024
    assert "iogpu.wired_limit_mb" in ALL["m4-max-128gb"]["source"]


def test_existing_card_ids_keep_their_figures():
    # the figures the book and the calibration were computed with
    assert [ALL[c]["total_gib"] for c in ("rtx3090", "rtx4090", "h100", "a100", "rtx5070ti", "l4")] == \
        [23.69, 23.64, 79.11, 79.25, 15.48, 22.03]


# --- asking the machine ----------------------------------------------------------------------------------

def _fake(monkeypatch, answers: dict):
    monkeypatch.setattr(cards, "_run", lambda argv: answers.get(argv[0]))


def test_detect_nvidia_smi(monkeypatch):
    _fake(monkeypatch, {"nvidia-smi": "NVIDIA GeForce RTX 4090, 24564\nNVIDIA GeForce RTX 4090, 24564\n"})
    c, said = cards.detect()
    assert c["id"] == "rtx4090" and said == "nvidia-smi: NVIDIA GeForce RTX 4090, 24564 MiB (GPU 0 of 2)"


def test_detect_uses_the_memory_to_tell_sizes_apart(monkeypatch):
    _fake(monkeypatch, {"nvidia-smi": "NVIDIA GeForce RTX 4060 Ti, 8188\n"})
    assert cards.detect()[0]["id"] == "rtx4060ti-8"


def test_grace_blackwell_totals_from_nvidia_smi_by_hand():
    # nvidia-smi prints 189471 MiB (GB200) and 284208 MiB (GB300); the B200 prints 183359 MiB where PyTorch reads
    # 178.35 GiB (pytorch/ao#4002). A TensorRT-LLM run log says its runtime detector reports "184 GiB per GPU".
    ratio = 178.35 / (183359 / 1024)
    assert ALL["gb200"]["total_gib"] == round(189471 / 1024 * ratio, 2) == 184.3
    assert ALL["gb300"]["total_gib"] == round(284208 / 1024 * ratio, 2)
    assert abs(ALL["gb200"]["total_gib"] - 184) < 0.5


@pytest.mark.parametrize("smi, cid", [
    ("NVIDIA GeForce RTX 4090 Laptop GPU, 16376", "rtx4090-laptop"),
    ("NVIDIA GeForce RTX 5090 Laptop GPU, 24463", "rtx5090-laptop"),
    ("NVIDIA GeForce RTX 5050 Laptop GPU, 8151", "rtx5050-laptop"),
    ("NVIDIA GeForce RTX 3080 Laptop GPU, 16384", "rtx3080-laptop-16g"),
    ("NVIDIA GeForce RTX 3080 Laptop GPU, 8192", "rtx3080-laptop-8g"),
    ("NVIDIA GeForce RTX 3050, 6144", "rtx3050-6g"),
    ("NVIDIA GeForce RTX 3050, 8192", "rtx3050-8g"),
    ("NVIDIA GeForce RTX 5050, 8151", "rtx5050"),
    ("NVIDIA GB200, 189471", "gb200"),
])
def test_detect_laptops_small_cards_and_grace_blackwell(monkeypatch, smi, cid):
    _fake(monkeypatch, {"nvidia-smi": smi + "\n"})
    assert cards.detect()[0]["id"] == cid


def test_a_laptop_name_of_two_sizes_is_refused_without_the_memory():
    with pytest.raises(KvMathError, match="names 2 cards: rtx3080-laptop-16g, rtx3080-laptop-8g"):
        cards.card("NVIDIA GeForce RTX 3080 Laptop GPU")
    assert cards.card("rtx 4060 laptop")["id"] == "rtx4060-laptop" and cards.card("5050")["id"] == "rtx5050"
    with pytest.raises(KvMathError, match="names 2 cards: rtx3050-6g, rtx3050-8g"):
        cards.card("RTX 3050")  # 6 GB and 8 GB print one name


def test_detect_rocm_and_apple(monkeypatch):
    _fake(monkeypatch, {"rocm-smi": "device,Card series,Card model\ncard0,AMD Instinct MI300X,0x74a1\n"})
    assert cards.detect()[0]["id"] == "mi300x"
    _fake(monkeypatch, {"system_profiler": "Hardware:\n  Chip: Apple M3 Max\n  Memory: 128 GB\n"})
    assert cards.detect()[0]["id"] == "m3-max-128gb"


def test_detect_unknown_gpu_names_it(monkeypatch):
    _fake(monkeypatch, {"nvidia-smi": "NVIDIA Voodoo 5, 64\n"})
    with pytest.raises(KvMathError, match=r"this machine's GPU \(nvidia-smi: NVIDIA Voodoo 5, 64 MiB\) is not a card"):
        cards.detect()


def test_absent_tool_is_no_answer():
    assert cards._run(["kvmath-no-such-tool-xyz"]) is None


# --- no silent default card --------------------------------------------------------------------------------

def _fit(capsys, *argv):
    from kvmath.engines.vllm.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_pasted_line_without_card_and_no_gpu_is_refused(capsys, monkeypatch):
    monkeypatch.setattr(cards, "detect", lambda: None)
    code, out, err = _fit(capsys, "vllm", "serve", "Qwen/Qwen3.6-27B", "--tensor-parallel-size", "2")
    assert code == 2 and not out and err.count("\n") == 1
    assert "--card" in err and "--device-memory" in err


def test_pasted_line_without_card_says_which_card(capsys, monkeypatch):
    _fake(monkeypatch, {"nvidia-smi": "NVIDIA H100 80GB HBM3, 81559\n"})
    code, out, err = _fit(capsys, "vllm", "serve", "Qwen/Qwen3.6-27B", "--max-model-len", "32k", "--json")
    d = json.loads(out)
    assert d["card"] == "h100" and round(d["total_gib"], 2) == 79.11
    assert any("this machine's GPU as nvidia-smi: NVIDIA H100 80GB HBM3, 81559 MiB" in n for n in d["notes"])


def test_anchor_flags_without_card_say_rtx3090(capsys):
    code, out, err = _fit(capsys, "--model", "qwen3.6-27b", "--max-ctx", "32768", "--anchor-defaults", "--json")
    d = json.loads(out)
    assert d["card"] == "rtx3090" and any(n.startswith("card: rtx3090") for n in d["notes"])


def test_no_card_without_anchor_defaults_is_a_question_not_a_guess(capsys):
    """One defaults story: --model without --card is priced on no card of kvmath's choosing (this machine's GPU,
    said so, or a refusal, as a pasted line); the anchor's rtx3090 only with --anchor-defaults."""
    code, out, err = _fit(capsys, "--model", "qwen3.6-27b", "--max-ctx", "32768", "--json")
    if code == 2:
        assert "which card?" in err and "--anchor-defaults" in err and not out
    else:  # a machine with a GPU: its card, named
        assert any(n.startswith("card: ") and "this machine's GPU" in n for n in json.loads(out)["notes"])


def test_device_memory_flag(capsys):
    code, out, _ = _fit(capsys, "--model", "qwen3.6-27b", "--max-ctx", "32768", "--device-memory", "24GiB", "--json")
    a = json.loads(out)
    code, out, _ = _fit(capsys, "--model", "qwen3.6-27b", "--max-ctx", "32768", "--device-memory", "24576MiB", "--json")
    b = json.loads(out)
    assert a["total_bytes"] == b["total_bytes"] == 24 * 2**30


def test_vllm_refuses_apple_silicon(capsys):
    code, out, err = _fit(capsys, "--model", "qwen3.6-27b", "--card", "m3-max-128gb")
    assert code == 2 and "vLLM does not run on Apple silicon" in err


def test_the_peak_is_named_by_the_tool_of_the_card(capsys):
    # on an AMD card the user reads the peak with rocm-smi, not nvidia-smi
    for card, tool in (("mi300x", "rocm-smi"), ("h100", "nvidia-smi")):
        code, out, err = _fit(capsys, "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", card,
                              "--vllm-version", "0.24.0")
        assert code == 0 and f"Predicted {tool} peak" in out, (card, out[-400:])
        assert ("nvidia-smi peak" in out) == (tool == "nvidia-smi")


def test_llamacpp_line_device_memory_and_no_default(capsys, monkeypatch):
    from kvmath.fit import run

    line = ["llama-server", "-m", "gemma-4-26b-a4b", "-c", "8192", "--json"]
    assert run(line + ["--device-memory", "16GiB"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["devices"][0]["capacity_bytes"] == 16 * 2**30
    _fake(monkeypatch, {"system_profiler": "  Chip: Apple M2 Max\n  Memory: 96 GB\n"})
    assert run(line) in (0, 1)
    d = json.loads(capsys.readouterr().out)
    assert d["devices"][0]["capacity_bytes"] == 73728 * 2**20  # the logged 73728.00 MB working set
    assert any("this machine's GPU as system_profiler" in n for n in d["notes"])


def test_front_door_pasted_lines_without_card(capsys, monkeypatch):
    from kvmath.fit import main

    monkeypatch.setattr(cards, "detect", lambda: None)
    for line in (["vllm", "serve", "Qwen/Qwen3.6-27B"], ["llama-server", "-m", "gemma-4-26b-a4b", "-c", "8192"]):
        assert main(line) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--card" in err and "--device-memory" in err, err
