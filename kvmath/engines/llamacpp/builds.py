"""llama.cpp builds as release records, by their tag (``b9272``), on one :class:`ReleaseTable`.

A launch is priced by the rules of its build (``--llamacpp-build bNNNN``; without it the newest build read,
said in the output). Each record names where its rules were read and the switches that change device
memory between builds:

- ``memory``: the memory-module rules (:data:`memory.BUILDS`, by the commit whose tree was read): how the KV,
  iSWA and recurrent caches are sized and logged;
- ``reserve_outputs``: how many output rows (logits ``n_vocab x rows`` f32) the reserved prompt graph holds,
  which decides the device compute buffer on large-vocabulary models:

  * ``"n_ubatch"``: every token of the micro-batch is an output. ``llama_context::reserve`` calls
    ``graph_reserve(n_tokens, n_seqs, n_tokens, ...)`` (quoted in ggml-org/llama.cpp issue #23527, build
    b9272 = 1d7ab2b94, 2026-05-22), so the device buffer is about ``4 x n_vocab x n_ubatch`` plus a small rest;
  * ``"server_limits"``: PR #23861 ("llama: limit max outputs of llama_context", merged 2026-05-30) added
    ``llama_context_params.n_outputs_max``; llama-server sets it to ``n_parallel x (1 + draft tokens)``
    (``server_output_limits``, ``common_speculative_get_output_limits``) and the prompt graph is reserved with
    ``min(n_ubatch, n_outputs_max)`` outputs. Tools of ``common`` that leave it 0 (``llama-cli``,
    ``llama-fit-params``, ``llama-bench``) still reserve ``n_ubatch`` rows. Present in b9776 (ac4105d68,
    2026-06-24: issue #24967 asserts on ``cparams.n_outputs_max``) and in 0c1e570, the tree built and run for
    ``tests/fixtures/llamacpp``;
- ``fa_mask``: the KQ mask the reserved graph holds with flash attention. ``"f32_cast"``: the mask is
  reserved in f32 and cast to f16 for the kernel, so the device compute buffer holds the f32 copy and its f16
  cast at the first attention layer; ``"f16"``: PR #23764 ("llama: use f16 mask for FA to save VRAM", merged
  2026-05-27, between b9272 and b9776) reserves it in f16 (``build_attn_inp_kq_mask``: ``type =
  cparams.flash_attn ? GGML_TYPE_F16 : GGML_TYPE_F32``, src/llama-graph.cpp @00395eb);
- ``ffn_live``: the ``n_ff x n_ubatch`` f32 tensors alive at a gated feed-forward. 3 since the GLU ops (PR
  #14158, 2025-06): ``build_ffn`` calls ``ggml_swiglu_split(gate, up)`` and ``ggml_op_can_inplace`` (ggml-alloc.c)
  has no GLU, so gate, up and the product coexist (the MoE path likewise); 2 before (``silu`` and ``mul`` ran in
  place);
- ``cli_server``: ``llama-cli`` runs llama-server's context (it prints ``n_outputs_max = 1`` for one slot:
  b10068 and b10950 logs), so it reserves the server's output rows;
- ``alloc_chunks``: ``ggml-alloc`` splits a compute buffer into chunks of the backend's maximum buffer size
  (PR #15815, "ggml : split graph allocations according to backend max buffer size", opened 2025-09-05, and
  PR #16788, "make gallocr prefer chunks that allow memory reuse", 2025-10-26: both between b6057 and b7444;
  ``ggml_vbuffer`` in ggml/src/ggml-alloc.c). Only Vulkan's cap (1 GiB) is small enough to matter
  (:func:`.backends.max_chunk`); b6057's Vulkan log (L07) fails on one 4757131264-byte buffer, b7444's (L08) on
  a sum of chunks;
- ``embd_select``: every graph holds both embedding paths, the token ``get_rows`` and the ``inp_embd`` input
  (PR #18550, ``ggml_build_forward_select``; in 0c1e570's src/llama-graph.cpp ``build_inp_embd``; after b7444,
  before b9106): three ``E x T`` vectors under a dense feed-forward instead of two (:data:`.compute.FFN_VECTORS`);
- ``spec_types``: the values ``--spec-type`` accepts (a comma-separated list of them), and
  ``spec_types_with_rollback`` the model-based draft types for which the target keeps ``--spec-draft-n-max``
  recurrent snapshots per sequence (common/common.h ``need_n_rs_seq()``).

The builds between two records take the rules of the older one (:mod:`kvmath.engines.releases`): #23764 and
#23861 landed in builds between b9272 and b9776 that were not read, so b9273-b9775 are priced with the f32 FA
mask and the full-logits rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..releases import Release, ReleaseTable

SPEC_TYPES = ("none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark", "ngram-simple",
              "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
"""``common_speculative_type_name_str()`` of 2026 builds (as launchers that pass it through list it)."""
SPEC_ROLLBACK = ("draft-mtp", "draft-eagle3", "draft-dflash", "draft-dspark")


@dataclass(frozen=True)
class LlamaCppBuild(Release):
    """One llama.cpp build whose rules were read: ``name`` is its tag (``b9776``), ``commit`` its short hash."""

    commit: str = ""
    memory: str = "0c1e570"
    reserve_outputs: str = "n_ubatch"
    fa_mask: str = "f16"
    ffn_live: int = 3
    cli_server: bool = False
    alloc_chunks: bool = True
    embd_select: bool = True
    spec_types: tuple[str, ...] = SPEC_TYPES
    spec_types_with_rollback: tuple[str, ...] = SPEC_ROLLBACK


BUILD_RECORDS = (
    LlamaCppBuild(
        "b4406", "ggml-org/llama.cpp b4406 (release of 2025-01-03, ggml-org/llama.cpp issue #11083's Metal log): "
        "every ubatch token an output, the f32 FA mask, silu and mul in place (before the GLU ops of PR #14158); "
        "cache padding flash_attn ? 256 : 32 (rules 1c872f71)",
        memory="1c872f71", reserve_outputs="n_ubatch", fa_mask="f32_cast", ffn_live=2, alloc_chunks=False,
        embd_select=False),
    LlamaCppBuild(
        "b6057", "ggml-org/llama.cpp b6057 (1c872f71, 2025-08-01; issue #15009's Vulkan log: 70016 cells for -c "
        "70000 without FA): GLU ops present; cache padding flash_attn ? 256 : 32 until PR #16812 (2025-10-28) "
        "and #17046 (2025-11-07), which landed in builds between b6057 and b7444 that were not read",
        commit="1c872f71", memory="1c872f71", reserve_outputs="n_ubatch", fa_mask="f32_cast", alloc_chunks=False,
        embd_select=False),
    LlamaCppBuild(
        "b7444", "ggml-org/llama.cpp b7444 (58062860a, 2025-12-18; issue #18160): 256-cell padding (PR #17046); "
        "cache rules of ec98e2002 (2025-12-16, as vendored in ollama: MLA stores V)",
        commit="58062860a", memory="ec98e2002", reserve_outputs="n_ubatch", fa_mask="f32_cast",
        embd_select=False),
    LlamaCppBuild(
        "b9106", "ggml-org/llama.cpp b9106 (dd9280a66, 2026-05; ROCm/ROCm issue #6227's log): every ubatch token "
        "an output (ROCm1 compute 204.00 MiB = 4 x 100352 x 512 + one 4096 x 512 f32 row block); cache rules of "
        "0c1e570 (MLA without V since PR #19067)",
        commit="dd9280a66", reserve_outputs="n_ubatch", fa_mask="f32_cast"),
    LlamaCppBuild(
        "b9272", "ggml-org/llama.cpp b9272 (1d7ab2b94, 2026-05-22): llama_context::reserve as quoted in issue "
        "#23527 (every ubatch token an output); cache rules of 0c1e570 (MLA without V since PR #19067, 2026-01-24)",
        commit="1d7ab2b94", reserve_outputs="n_ubatch", fa_mask="f32_cast"),
    LlamaCppBuild(
        "b9776", "ggml-org/llama.cpp b9776 (ac4105d68, 2026-06-24; cparams.n_outputs_max of PR #23861); rules read "
        "in 0c1e570's tree (llama-cpp-python 0.3.36 vendor/llama.cpp, built and run for tests/fixtures/llamacpp)",
        commit="ac4105d68", reserve_outputs="server_limits", fa_mask="f16", cli_server=True),
)
TABLE = ReleaseTable("llama.cpp", BUILD_RECORDS, flag="--llamacpp-build")
"""The builds read, oldest first; the default is the newest."""
