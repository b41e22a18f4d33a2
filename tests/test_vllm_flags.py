"""Every vllm serve option of the covered releases is accepted with a note, modelled, or refused with the reason
(kvmath/engines/vllm/flags.py), checked against the option sets read from the released wheels
(data/vllm-flags.json; tests/fixtures/vllm/flags.py re-reads a wheel when it is on this machine)."""

import glob
import sys
from pathlib import Path

import pytest

from kvmath import facts
from kvmath.engines.vllm import cli, flags as F

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "vllm"))
import flags as reader  # noqa: E402

SERVE = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--card", "rtx3090"]
WHEELS = {"0.24.0": "/tmp/vl/vllm-0.24.0-*.whl", "0.33.0": "/tmp/vl33/vllm-0.33.0-*.whl"}


def _modelled():
    return {o for a in cli.build_parser()._actions for o in a.option_strings
            if not isinstance(a, cli._Ignored) and type(a).__name__ != "_Refused"}


@pytest.mark.parametrize("version", sorted(WHEELS))
def test_flag_lists_are_the_wheels_parser(version):
    """data/vllm-flags.json against a fresh static read of the wheel (the read matched the imported 0.24.0
    parser: 359 option strings, every arity the same)."""
    found = glob.glob(WHEELS[version])
    if not found:
        pytest.skip(f"vLLM {version}'s wheel is not downloaded (pip download --no-deps vllm=={version})")
    assert reader.options(found[0]) == facts.read_json("vllm-flags.json")["releases"][version]


def test_every_flag_of_every_release_is_classified():
    modelled = _modelled()
    kinds = {f: F.classify(F.ALIASES.get(f, f), modelled)[0] for f in F.all_flags()}
    assert {f for f, k in kinds.items() if k not in ("modelled", "ignored", "refused", "value")} == set()
    assert not set(F.IGNORED) & set(F.REFUSED)
    assert (set(F.IGNORED) | set(F.REFUSED) | set(F.VALUES)) <= F.all_flags()  # no misspelt entry


def test_known_counts_and_arity():
    # read off the wheels by hand: 0.24.0 arg_utils.py has --lora-modules as list (nargs +), --hf-token as
    # bool | str | None (nargs ?), --enable-sleep-mode as bool (BooleanOptionalAction); cli_args.py deletes
    # allowed_origins' nargs (a JSON list in one value)
    f24 = F.release_flags("0.24.0")
    assert len(f24) == 359 and len(F.release_flags("0.33.0")) == 433
    assert (f24["--lora-modules"], f24["--hf-token"], f24["--enable-sleep-mode"], f24["--no-enable-sleep-mode"],
            f24["--allowed-origins"]) == ("+", "?", 0, 0, 1)
    assert F.release_flags("0.25.0") != F.release_flags("0.24.0")


def fit(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_line_of_serving_flags_is_answered_with_a_note(capsys):
    base = fit([*SERVE, "--json"], capsys)
    extra = ["--default-chat-template-kwargs", '{"enable_thinking": false}', "--max-logprobs", "5",
             "--load-format", "safetensors", "--distributed-executor-backend", "mp", "--root-path", "/v1",
             "--enable-prompt-tokens-details", "--structured-outputs-config", '{"backend": "xgrammar"}',
             "--scheduling-policy", "priority", "--tokenizer-revision", "main", "--api-server-count", "2",
             "--allowed-origins", '["*"]', "--served-model-name", "a", "b", "--no-enable-sleep-mode", "-asc=2"]
    code, out, err = fit([*SERVE, *extra, "--json"], capsys)
    assert (code, err) == (0, "") and out.split('"notes"')[0] == base[1].split('"notes"')[0]
    assert "--max-logprobs" in out and "--no-enable-sleep-mode" in out


@pytest.mark.parametrize("line, says", [
    (["--hf-overrides", '{"max_position_embeddings": 4096}'], "--hf-overrides is not modelled"),
    (["--enable-sleep-mode"], "sleep mode"),
    (["--lora-modules", "a=x", "b=y"], "LoRA"),
    (["--kv-transfer-config", "{}"], "connector"),
    (["--enable-eplb"], "parallel"),
    (["--disable-sliding-window"], "model vLLM builds"),
    (["--model-impl", "transformers"], "model vLLM builds"),
    (["--compilation-config.cudagraph_mode", "NONE"], "--compilation-config is not modelled"),
    (["--cudagraph-capture-sizes", "1", "2", "4"], "CUDA graph"),
    (["--load-format", "bitsandbytes"], "other weights"),
    (["--runner", "pooling"], "pooling"),
    (["--no-enable-chunked-prefill"], "whole prompts"),
    (["--cuda-graph-sizes", "8"], "not a vLLM 0.24.0 flag (vllm serve has it in 0.10.1-0.12.0"),
    (["--swap-space", "4"], "not a vLLM 0.24.0 flag"),
    (["--max-num-queued-reqs", "8"], "not a vLLM 0.24.0 flag"),
])
def test_refused_with_the_reason(line, says, capsys):
    code, out, err = fit([*SERVE, *line], capsys)
    assert code == 2 and out == "" and says in err and err.count("\n") == 1


def test_the_release_decides(capsys):
    # --swap-space is an 0.12.0 flag (host swap: ignored), --max-num-queued-reqs one of 0.33.0 only
    code, out, err = fit([*SERVE, "--swap-space", "4", "--vllm-version", "0.12.0"], capsys)
    assert err == "" and "--swap-space" in out
    code, out, err = fit([*SERVE, "--max-num-queued-reqs", "8", "--vllm-version", "0.33.0"], capsys)
    assert err == "" and "--max-num-queued-reqs" in out


def test_optimization_level_is_o(capsys):
    assert fit([*SERVE, "--optimization-level", "3"], capsys)[0] == 0
    with pytest.raises(SystemExit) as e:  # argparse's own exit
        cli.main([*SERVE, "--optimization-level", "0"])
    assert e.value.code == 2 and "-O0 is not modelled" in capsys.readouterr().err
