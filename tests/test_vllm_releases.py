"""vLLM's releases as records (kvmath.engines.vllm.releases): the rules read switches, never version numbers,
and the covered range is said one way everywhere.

Independent checks: the switch flips are the releases the rule sources name (the alloc module's docstring and
the fixtures run against real vLLM give them; the values are written here by hand from those sources), the
source tree holds no inline version comparison, and the answer's header and note agree.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import kvmath
from kvmath.engines.vllm import releases
from kvmath.errors import KvMathError

VLLM_PKG = Path(kvmath.__file__).resolve().parent / "engines" / "vllm"
FIXTURES = Path(__file__).parent / "fixtures" / "vllm"

# the first release of each rule, from the sources cited in kvmath/engines/vllm/alloc.py, settings.py and
# weights.py (kv_cache_utils.py 0.21.0 / 0.22.0 / 0.24.0 / 0.27.0 / 0.29.0, config/vllm.py 0.26.0,
# engine/arg_utils.py 0.28.0 / 0.33.0, config/cache.py 0.34.0), written out by hand; the "GPU KV cache size"
# formula of 0.21 was backported to the 0.20.2 patch release (kv_cache_utils.py 0.20.2 l.1706)
FIRST = {"token_formula": ("0.20.2", "groups", "concurrency"), "turboquant_hybrid": ("0.21.0", False, True),
         "cpu_backend_messages": ("0.22.0", False, True), "pad_attention_pages": ("0.24.0", False, True),
         "in_flight_batches": ("0.26.0", False, True), "align_block_check": ("0.27.0", True, False),
         "promote_specs_message": ("0.27.0", False, True), "mla_align_128": ("0.27.0", False, True),
         "trtllm_mxfp4_intermediate_128": ("0.27.0", False, True), "batch_tier_160": ("0.28.0", False, True),
         "null_block_check": ("0.29.0", False, True), "gb10_small_tier": ("0.33.0", False, True),
         "encoder_frame_loop": ("0.22.0", True, False)}


@pytest.mark.parametrize("switch", sorted(FIRST))
def test_each_switch_flips_once_at_the_release_its_source_names(switch):
    first, before, after = FIRST[switch]
    for rec in releases.TABLE.releases:
        want = after if rec.key >= releases.release(first).key else before
        assert getattr(rec, switch) == want, (switch, rec.name)


def test_serve_default_and_profile_switches_by_release():
    # vllm/config/cache.py: 0.9 to 0.19, 0.92 from 0.20 to 0.33, unset in 0.34
    assert releases.profile_release("0.19.0").serve_gpu_memory_utilization == 0.9
    assert {r.serve_gpu_memory_utilization for r in releases.TABLE.releases
            if (0, 20, 0, 0) <= r.key < (0, 34, 0, 0)} == {0.92}
    assert releases.release("0.34.0").serve_gpu_memory_utilization is None
    # PR #30515 (estimate on by default from 0.20) and PR #33538 (Triton top-k / top-p, taken as 0.16)
    assert not releases.profile_release("0.10.1").estimate_cudagraphs
    assert releases.profile_release("0.15.2").sort_top_k_top_p and not releases.profile_release("0.16.0").sort_top_k_top_p
    # the records of 0.10-0.19 (read in part) are in the plan table and keep 0.9 / no estimate
    assert releases.release("0.19.0").serve_gpu_memory_utilization == 0.9


def test_fixture_releases_are_read_in_full():
    ran = {json.loads(p.read_text())["vllm_version"] for p in FIXTURES.glob("vllm-*.json")}
    assert ran and all(releases.release(v).read == "full" and releases.release(v).name == v for v in ran)


def test_no_inline_version_comparison_in_the_vllm_engine():
    """A rule that changes between releases reads its record: no ``x >= (0, N)`` anywhere in the engine."""
    offenders = []
    for path in sorted(VLLM_PKG.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if (isinstance(side, ast.Tuple) and len(side.elts) >= 2 and isinstance(side.elts[0], ast.Constant)
                            and side.elts[0].value == 0 and all(isinstance(e, ast.Constant) for e in side.elts)):
                        offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders


@pytest.mark.parametrize("version, record", [("0.24.0", "0.24.0"), ("0.27.1", "0.27.0"), ("v0.26", "0.26.0"),
                                             ("0.30.0", "0.29.0"), ("0.32.5", "0.29.0"), ("0.34.2", "0.34.0"),
                                             ((0, 25), "0.25.0"), ("0.20.0rc1", "0.20.0")])
def test_a_version_takes_the_newest_record_not_after_it(version, record):
    assert releases.release(version).name == record


@pytest.mark.parametrize("version", ["0.9.0", "0.10.0", "0.5.2"])
def test_a_release_before_the_rules_is_refused_naming_the_range(version):
    with pytest.raises(KvMathError, match="older than the releases these rules were read from; vLLM 0.20.0-0.27.0"):
        releases.release(version)


@pytest.mark.parametrize("version", ["latest", "", "0.24.x", "b8190", "1.2.3.4.5"])
def test_a_malformed_version_is_refused(version):
    with pytest.raises(KvMathError, match="must look like 0.24.0"):
        releases.release(version)


def test_notes_name_the_record_taken_and_what_it_does_not_model():
    assert releases.notes("0.24.0") == [] and releases.notes("0.27.1") == []
    n = releases.notes("0.30.0")
    assert "takes the rules of 0.29.0" in n[0] and "packed groups from 0.30" in n[1] and "not modelled" in n[1]


def test_header_and_note_state_the_covered_range_one_way():
    """The issue's case: ``--vllm-version 0.99.0`` said "0.20-0.26 read" in the header and "(0.20-0.27)" in
    its note."""
    out = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "qwen3.6-27b", "--vllm-version", "0.34.0"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    header = next(line for line in out.stdout.splitlines() if line.strip().startswith("engine:"))
    assert ("vLLM 0.20.0-0.27.0 read in full, 0.28.0-0.34.0 in part, 0.10.1-0.19.0 in part for full and "
            "sliding-window attention") in header
    assert "0.20-0.26" not in out.stdout and "(0.20-0.27)" not in out.stdout
    # issue 25: a release past the newest read (0.99.0 does not exist) is refused, naming the range
    new = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "qwen3.6-27b", "--vllm-version", "0.99.0"],
                         capture_output=True, text=True, timeout=120)
    assert new.returncode == 2 and "newer than the newest vLLM release read (0.34.0); vLLM releases 0.10.1-0.34.0" \
        in new.stderr
    bad = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "qwen3.6-27b", "--vllm-version", "0.9.0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "vLLM 0.20.0-0.27.0 read in full, 0.28.0-0.34.0 in part" in bad.stderr
