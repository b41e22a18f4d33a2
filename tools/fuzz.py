"""Long fuzz run (``make fuzz``): the suite's fuzz cases with many more examples, counted.

    python tools/fuzz.py                      # 50,000 examples: GGUF headers, configs, command lines
    python tools/fuzz.py --examples 20000
    python tools/fuzz.py --only config,cli    # some of the three parts

Parts (their strategies live in the tests, so the suite's short runs and this one draw alike):

- GGUF (tests/test_gguf_fuzz.py): a small valid ``.gguf`` corrupted one way (random byte edits; huge
  lengths / counts / types in the header; bad metadata values), read with ``read_gguf``;
- configs (tests/test_fuzz_config.py): reference and minimal configs mutated, and configs made of
  random fields, through ``load_architecture``, ``derive`` on vLLM, llama.cpp and transformers, the
  vLLM block plan with a random memory, and ``budget()``;
- command lines (tests/test_bad_input.py): random flags of ``kvmath`` and ``kvmath-fit`` with good,
  edge and absurd values, flags given twice and repeated thousands of times, run in-process;
- hostile files (issue #25): a FIFO, a device, a folder or a link out of the folder where a config.json or a
  safetensors file is due, JSON nested up to 100,000 levels, impossible shard names, negative, non-finite
  and list-valued config fields, through all three commands in-process (a FIFO opened blocking would hang
  the case: the alarm counts it).
- the weight estimators (tests/test_fuzz_config.py ``check_weights``) run in every config case.

Printed: cases run per part and kind, how many were accepted and how many refused with KvMathError,
exceptions other than KvMathError (by type, with a sample), cases over 2 s (a 10 s alarm ends a case
that hangs), NaN / negative figures, totals that are not the sum of their parts (a derivation's total
and its groups' bytes; a budget's non-KV memory and its terms), and refusals that are not one line.
Exit status 1 when any of those is non-zero.
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import copy  # noqa: E402

from hypothesis import strategies as st  # noqa: E402

import test_bad_input as C  # noqa: E402
import test_fuzz_config as K  # noqa: E402
import test_gguf_fuzz as F  # noqa: E402
import kvmath  # noqa: E402
from kvmath import KvMathError  # noqa: E402
from kvmath.model.gguf import read_gguf  # noqa: E402

PARTS = {"gguf": 0.35, "config": 0.35, "cli": 0.2, "files": 0.1}
GGUF_KINDS = {"byte edits": (F.byte_edits, 0.4), "huge lengths/counts": (F.field_edits, 0.3),
              "bad metadata values": (F.key_edits, 0.3)}
HANG_SECONDS = 10


class Hang(Exception):
    pass


class Bad(Exception):
    """A case that ran but broke an invariant: (counter, detail)."""


def _alarm(signum, frame):
    raise Hang()


# --- the cases ------------------------------------------------------------------------------------

def gguf_case(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    model = read_gguf(path)
    bad = F.bad_figures(F.figures(model))
    if bad:
        raise Bad("NaN / negative figures", str(bad[:5]))


def _derive_checks(d) -> None:
    if d.total_bytes != sum(g.bytes for g in d.groups):
        raise Bad("totals not the sum of their parts", f"{d.engine}: total {d.total_bytes} != groups")
    bad = K.bad_numbers(d.to_dict())
    if bad:
        raise Bad("NaN / negative figures", f"{d.engine}: {bad[:5]}")


def config_case(cfg, data) -> str:
    """One config through the loader, every engine, the vLLM plan and the budget. Returns what happened."""
    arch = kvmath.load_architecture(cfg)
    ctx = data.draw(st.sampled_from([None, 1, 300, 4096, 131072]), label="ctx")
    seqs = data.draw(st.sampled_from([1, 2, 8]), label="seqs")
    refused = []
    for engine in ("vllm", "llama.cpp", "transformers"):
        try:
            d = kvmath.derive(arch, engine=engine, max_ctx=ctx, max_num_seqs=seqs)
        except KvMathError as e:
            _one_line(e)
            refused.append(engine)
            continue
        _derive_checks(d)
    memory = data.draw(K.PLAN_MEMORY, label="memory")
    try:
        p = kvmath.vllm_plan(arch, memory, max_model_len=ctx, max_num_seqs=seqs)
    except KvMathError as e:
        _one_line(e)
    else:
        bad = K.bad_numbers(p.to_dict())
        if bad:
            raise Bad("NaN / negative figures", f"plan: {bad[:5]}")
    from kvmath.engines.vllm.budget import budget

    kw = dict(max_model_len=ctx, max_num_seqs=seqs, allow_long_max_model_len=True,
              weights_gb_total=data.draw(st.sampled_from([0.5, 10.0, 80.0, 1e6]), label="weights"),
              mem_util=data.draw(st.sampled_from([0.5, 0.92, 1.0]), label="mem_util"),
              tp=data.draw(st.sampled_from([1, 2, 8]), label="tp"),
              kv_format=data.draw(st.sampled_from(["auto", "fp8_e5m2", "int8_per_token_head"]), label="kv"))
    if data.draw(st.booleans(), label="custom card"):
        kw.update(card=None, total_gib=data.draw(st.sampled_from([0.5, 24.0, 80.0, 2.0**20]), label="gib"))
    try:
        b = budget(arch, **kw)
    except KvMathError as e:
        _one_line(e)
    else:
        if b.non_kv != sum(v for _, v in b.terms()) or b.available_kv != b.requested - b.non_kv:
            raise Bad("totals not the sum of their parts", f"budget non_kv {b.non_kv} != its terms")
        bad = K.bad_numbers(b.to_dict())
        if bad:
            raise Bad("NaN / negative figures", f"budget: {bad[:5]}")
    try:
        K.check_weights(cfg)
    except AssertionError as e:
        raise Bad("weight estimate misbehaviour", str(e)[:200]) from None
    return "derived (some engines refused)" if refused else "derived on every engine"


def _one_line(e: Exception) -> None:
    msg = str(e)
    if not msg.strip() or "\n" in msg:
        raise Bad("KvMathError not one line", msg[:200])


def cli_case(prog: str, argv: list[str]) -> str:
    code, out, err = C.run_cli_in_process(prog, argv)
    problems = C.cli_problems(prog, argv, code, out, err)
    if problems:
        raise Bad("command-line misbehaviour", f"{prog} {' '.join(argv)[:200]}: {problems[0]}")
    return {0: "exit 0", 1: "exit 1 (does not boot)", 2: "exit 2 (bad input)"}[code]


FILE_KINDS = ("fifo config", "device config", "folder as config.json", "fifo shard", "device link shard",
              "link out", "deep json", "shard of 0", "bad field")
FILE_PROGS = ("kvmath", "kvmath-fit", "kvmath-llamacpp-fit")
FILE_READERS = {"fifo shard": ("kvmath-fit",), "device link shard": ("kvmath-fit",), "shard of 0": ("kvmath-fit",),
                "link out": ("kvmath", "kvmath-fit")}
"""Kinds only some commands meet: the weights of a folder are read by kvmath-fit alone (kvmath sizes the cache,
llama.cpp's command takes the config.json path, and a path the user names is followed wherever it leads)."""


def file_case(tmp: Path, kind: str, prog: str, data) -> str:
    """One hostile file through one command, in-process; it must refuse it in one line (exit 2)."""
    import json
    import shutil

    case = tmp / "case"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir()
    folder = case / "model"
    folder.mkdir()
    base = K.SEEDS["shipped:qwen3.6-27b"]
    (folder / "config.json").write_text(json.dumps(base))
    target = str(folder)
    if kind == "fifo config":
        target = str(case / "config.json")
        os.mkfifo(target)
    elif kind == "device config":
        target = data.draw(st.sampled_from(["/dev/zero", "/dev/full", "/dev/null", "/dev/urandom"]))
    elif kind == "folder as config.json":
        (folder / "config.json").unlink()
        (folder / "config.json").mkdir()
    elif kind == "fifo shard":
        os.mkfifo(folder / "model.safetensors")
    elif kind == "device link shard":
        os.symlink(data.draw(st.sampled_from(["/dev/zero", "/dev/full"])), folder / "model.safetensors")
    elif kind == "link out":
        (case / "out.json").write_text(json.dumps(base))
        (folder / "config.json").unlink()
        os.symlink(case / "out.json", folder / "config.json")
    elif kind == "deep json":
        depth = data.draw(st.sampled_from([65, 999, 5000, 100_000]))
        (folder / "config.json").write_text('{"model_type": "llama", "x": ' + "[" * depth + "]" * depth + "}")
    elif kind == "shard of 0":
        (folder / "model-00001-of-00000.safetensors").write_bytes(b"\0" * 16)
    else:
        cfg = copy.deepcopy(base)
        t = cfg.get("text_config", cfg)
        t[data.draw(st.sampled_from(["intermediate_size", "hidden_size", "num_hidden_layers", "vocab_size",
                                     "num_key_value_heads", "head_dim"]))] = data.draw(
            st.sampled_from([-5, 0, [5120], float("nan"), float("inf"), "64", True, 10**40]))
        (folder / "config.json").write_text(json.dumps(cfg))
    if prog == "kvmath-llamacpp-fit":
        target = target if kind in ("fifo config", "device config") else str(folder / "config.json")
        argv = ["-m", target]
    else:
        argv = ["--config", target] + (["--weights-gb", "10"] if prog == "kvmath-fit" and "shard" not in kind else [])
    code, out, err = C.run_cli_in_process(prog, argv)
    lines = err.strip().splitlines()
    if code != 2 or len(lines) != 1 or not lines[0].startswith(f"{prog}: error: ") or "Traceback" in err:
        raise Bad("hostile file accepted or not one line", f"{prog} {kind}: exit {code}, {err[:200]!r}")
    return "refused in one line"


def config_strategy():
    seeds = sorted(K.SEEDS)

    @st.composite
    def make(draw):
        if draw(st.integers(0, 5), label="random fields") == 0:
            fields = draw(st.dictionaries(st.sampled_from(K.READ_KEYS), K.JUNK, max_size=12), label="fields")
            model_type = draw(st.sampled_from(kvmath.supported_model_types() + ["jamba", ""]), label="type")
            return "random fields", {**fields, "model_type": model_type}
        cfg = copy.deepcopy(K.SEEDS[draw(st.sampled_from(seeds), label="seed")])

        class _D:  # test_fuzz_config.mutate draws through a data object
            def draw(self, strategy, label=None):
                return draw(strategy)

        for _ in range(draw(st.integers(0, 3), label="mutations")):
            K.mutate(cfg, _D())
        return "mutated configs", cfg

    return make()


# --- the runner -----------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=50_000, help="total examples (default 50,000)")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default random)")
    ap.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts ({', '.join(PARTS)})")
    args = ap.parse_args(argv)
    parts = [x.strip() for x in args.only.split(",") if x.strip()]
    for x in parts:
        if x not in PARTS:
            ap.error(f"unknown part {x!r}; parts: {', '.join(PARTS)}")
    share_total = sum(PARTS[x] for x in parts)

    counts: collections.Counter = collections.Counter()
    others: dict[str, str] = {}
    problems: list[str] = []
    slowest = collections.defaultdict(float)
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / "case.gguf"
    use_alarm = hasattr(signal, "SIGALRM")
    if use_alarm:
        signal.signal(signal.SIGALRM, _alarm)

    def one(part: str, kind: str, fn, detail: str = "") -> None:
        counts[f"{part}: cases"] += 1
        counts[f"{part}: cases: {kind}"] += 1
        t0 = time.perf_counter()
        if use_alarm:
            signal.alarm(HANG_SECONDS)
        try:
            outcome = fn()
        except KvMathError as e:
            counts[f"{part}: refused (KvMathError)"] += 1
            msg = str(e)
            if not msg.strip() or "\n" in msg:
                counts["KvMathError not one line"] += 1
                problems.append(f"{part} message not one line: {msg[:200]!r}")
        except Bad as e:
            what, detail = e.args
            counts[what] += 1
            problems.append(f"{part} ({kind}): {what}: {detail}")
        except Hang:
            counts["hangs (> 10 s)"] += 1
            problems.append(f"{part} hang ({kind})")
        except BaseException as e:  # noqa: BLE001 - counting is the point
            if isinstance(e, KeyboardInterrupt) or type(e).__module__.startswith("hypothesis"):
                raise  # hypothesis' own control flow (a case drawing past its data), not a kvmath error
            name = type(e).__name__
            counts["exceptions other than KvMathError"] += 1
            counts[f"  {name}"] += 1
            others.setdefault(name, f"{part} ({kind}): {str(e)[:200]}")
        else:
            counts[f"{part}: {outcome or 'accepted'}"] += 1
        finally:
            if use_alarm:
                signal.alarm(0)
        dt = time.perf_counter() - t0
        slowest[part] = max(slowest[part], dt)
        if dt > F.CASE_SECONDS:
            counts["cases over 2 s"] += 1
            problems.append(f"{part} ({kind}) took {dt:.1f} s: {detail[:300]}")

    def run_hypothesis(n: int, strategy, body) -> None:
        cfg = settings(max_examples=max(1, n), database=None, deadline=None, phases=[Phase.generate],
                       suppress_health_check=list(HealthCheck), derandomize=False)

        @cfg
        @given(data=strategy)
        def run(data):
            body(data)

        if args.seed is not None:
            from hypothesis import seed

            run = seed(args.seed)(run)
        run()

    start = time.perf_counter()
    for part in parts:
        n_part = int(args.examples * PARTS[part] / share_total)
        if part == "gguf":
            for kind, (strategy, share) in GGUF_KINDS.items():
                run_hypothesis(int(n_part * share), strategy(),
                               lambda data, kind=kind: one("gguf", kind, lambda: (gguf_case(path, data), "read")[1]))
        elif part == "config":
            def body(data):
                kind, cfg = data.draw(config_strategy())
                one("config", kind, lambda: config_case(cfg, data))

            run_hypothesis(n_part, st.data(), body)
        elif part == "files":
            def body(data):
                kind = data.draw(st.sampled_from(FILE_KINDS))
                prog = data.draw(st.sampled_from(FILE_READERS.get(kind, FILE_PROGS)))
                one("files", kind, lambda: file_case(Path(tmp.name), kind, prog, data), detail=f"{prog} {kind}")

            run_hypothesis(n_part, st.data(), body)
        else:
            def body(data):
                prog = data.draw(st.sampled_from(["kvmath", "kvmath-fit"]))
                argv = data.draw(C.cli_args(prog))
                one("cli", prog, lambda: cli_case(prog, argv), detail=f"{prog} {' '.join(argv)}")

            run_hypothesis(n_part, st.data(), body)
    elapsed = time.perf_counter() - start

    total = sum(counts[f"{p}: cases"] for p in parts)
    print(f"Fuzz: {total:,} cases in {elapsed:.1f} s "
          f"(slowest case: {', '.join(f'{p} {slowest[p] * 1000:.0f} ms' for p in parts)})")
    per_part = sorted(k for k in counts if k.split(":")[0] in parts)
    keys = per_part + ["exceptions other than KvMathError", *sorted(k for k in counts if k.startswith("  ")),
                       "cases over 2 s", "hangs (> 10 s)", "NaN / negative figures",
                       "totals not the sum of their parts", "KvMathError not one line", "command-line misbehaviour",
                       "weight estimate misbehaviour", "hostile file accepted or not one line"]
    width = max(len(k) for k in keys)
    for k in keys:
        print(f"  {k:<{width}}  {counts.get(k, 0):>8,}")
    for name, sample in others.items():
        print(f"  sample {name}: {sample}")
    for p in problems[:20]:
        print(f"  problem: {p}")
    bad = sum(counts[k] for k in ("exceptions other than KvMathError", "cases over 2 s", "hangs (> 10 s)",
                                  "NaN / negative figures", "totals not the sum of their parts",
                                  "KvMathError not one line", "command-line misbehaviour",
                                  "weight estimate misbehaviour", "hostile file accepted or not one line"))
    tmp.cleanup()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
