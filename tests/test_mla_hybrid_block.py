"""The hybrid block size of an MLA + KDA model (Kimi Linear) by card and release (issue 21).

vLLM's ``_align_hybrid_block_size`` (platforms/interface.py) sets the attention block to the smallest multiple of
the alignment ``a`` whose MLA page holds the KDA state: ``a x ceil(state / (a x page_1_token))``. ``a`` is the MLA
backend's smallest kernel block (vllm/v1/attention/backends/mla/*.py ``get_supported_kernel_block_sizes``: TRITON_MLA
and FLASH_ATTN_MLA MultipleOf(16), FLASHINFER_MLA [32, 64]; platforms/cuda.py puts FLASHINFER_MLA first on sm_100,
FLASH_ATTN_MLA on sm_90, TRITON_MLA on sm_8x), and from 0.27.0 at least 128 for every MLA hybrid.
"""

from __future__ import annotations

import math

import pytest

from kvmath.engines.vllm.budget import budget

SETTINGS = dict(tp=2, max_model_len=32768, max_num_seqs=8, max_num_batched_tokens=8192, mem_util=0.95)


def _block(card, version):
    return budget("kimi-linear-48b-a3b", card=card, vllm_version=version, **SETTINGS).plan.block_size


def test_kimi_linear_block_by_backend_and_release():
    ampere, hopper, blackwell = _block("a100", "0.24.0"), _block("h100", "0.24.0"), _block("b200", "0.24.0")
    assert ampere == hopper and ampere % 16 == 0  # TRITON_MLA and FLASH_ATTN_MLA: a = 16
    # the state needs more than ampere - 16 tokens of MLA page (ampere is the smallest multiple of 16 that holds it),
    # so with a = 32 (FLASHINFER_MLA on sm_100) it is the next multiple of 32 at or above ampere, and with a = 128
    # (0.27.0) the next multiple of 128
    assert blackwell == 32 * math.ceil(ampere / 32)
    for card in ("a100", "h100", "b200"):
        assert _block(card, "0.27.0") == 128 * math.ceil(ampere / 128)
    assert _block("b200", "0.26.0") == blackwell


@pytest.mark.parametrize("card,backend", [("rtx3090", "TRITON_MLA"), ("h100", "FLASH_ATTN_MLA"), ("b200", "FLASHINFER_MLA")])
def test_the_note_names_the_backend(card, backend):
    b = budget("kimi-linear-48b-a3b", card=card, vllm_version="0.24.0", **SETTINGS)
    assert any(f": {backend}, vLLM's first choice there" in n for n in b.notes)
