"""Per-query start-up of the commands, paired in one run with two peers (figures only, no assertions).

    python tools/bench_startup.py

Each command answers one question from a fresh interpreter, best of ``RUNS``:

- kvmath: ``kvmath --config qwen3-32b`` (the cache) and ``kvmath-fit vllm serve Qwen/Qwen3-32B --max-model-len
  32768 --card h100 --json`` (the verdict), both from the packaged data;
- kvfit 0.3.0 (PyPI, installed into ``.cache/bench/kvfit`` on first run): ``kvfit Qwen/Qwen3-32B --hardware
  h100-80 --context 32k --json``, its Hub reads answered by a server on 127.0.0.1 serving the same
  config.json (kvfit's ``HF_BASE`` pointed at it), so neither side touches the network;
- the public calculator (club-3090 ``tools/kv-calc.py --compose dual --vram 24 --json``) when a checkout of its
  repository is at ``$KVMATH_BENCH_CLUB3090`` (default ``.cache/bench/club-3090``), paired with ``kvmath-fit
  --compose dual --json`` (the same question); without one, that row says it was not measured.

Every command runs with bytecode caching on, after a warm-up run, as an installed command does.
Targets (issue #18): kvmath per query at most 0.7x kvfit and 0.5x the public calculator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "bench"
RUNS = 7
REPO = "Qwen/Qwen3-32B"


def _env(extra: dict | None = None) -> dict:
    """The environment of an installed command: bytecode caching on (pip compiles an installed wheel; this
    workplace sets PYTHONDONTWRITEBYTECODE=1, which would time the compiler instead of the command)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **(extra or {})}


def best_of(cmd: list[str], env: dict | None = None, cwd: Path | None = None, runs: int = RUNS) -> float:
    """Best wall time of ``runs`` runs, seconds, after one warm-up run (which writes the bytecode caches)."""
    env = _env(env)
    subprocess.run(cmd, capture_output=True, env=env, cwd=cwd)
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd)
        dt = time.perf_counter() - t
        if r.returncode not in (0, 1):
            raise SystemExit(f"{cmd[:4]} failed ({r.returncode}): {r.stderr.decode()[-300:]}")
        best = min(best, dt)
    return best


class _Hub(BaseHTTPRequestHandler):
    """config.json and the model's metadata for one repository, as the Hub serves them."""

    config: bytes = b""

    def log_message(self, *a):  # quiet
        pass

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.endswith("/config.json"):
            body, ctype = self.config, "application/json"
        elif path.startswith("/api/models/"):
            body = json.dumps({"id": REPO, "sha": "0" * 40, "siblings": [
                {"rfilename": "config.json", "size": len(self.config)}]}).encode()
            ctype = "application/json"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def kvfit_installed() -> Path:
    target = CACHE / "kvfit"
    if not (target / "kvfit").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target), "kvfit==0.3.0"],
                       check=True)
    return target


def main() -> None:
    py = sys.executable
    base = best_of([py, "-c", "pass"])
    print(f"interpreter alone: {base * 1000:.0f} ms")
    kv_cache = best_of([py, "-m", "kvmath.cli", "--config", "qwen3-32b"])
    kv_fit = best_of([py, "-m", "kvmath.fit", "vllm", "serve", REPO, "--max-model-len", "32768", "--card", "h100",
                      "--json"])
    print(f"kvmath --config qwen3-32b: {kv_cache * 1000:.0f} ms; kvmath-fit vllm serve {REPO}: {kv_fit * 1000:.0f} ms")

    target = kvfit_installed()
    from kvmath import facts

    _Hub.config = json.dumps(facts.reference_config("qwen3-32b")).encode()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stub = (f"import sys, kvfit.hf as h; h.HF_BASE = 'http://127.0.0.1:{server.server_port}'; "
            "from kvfit.cli import main; sys.exit(main())")
    env = {"PYTHONPATH": str(target)}
    kvfit = best_of([py, "-c", stub, REPO, "--hardware", "h100-80", "--context", "32k", "--weight-gib", "61",
                     "--json"], env=env)
    server.shutdown()
    print(f"kvfit {REPO} --hardware h100-80 --context 32k: {kvfit * 1000:.0f} ms")
    print(f"  kvmath-fit / kvfit = {kv_fit / kvfit:.2f}x, kvmath / kvfit = {kv_cache / kvfit:.2f}x (target <= 0.7x)")

    club = Path(os.environ.get("KVMATH_BENCH_CLUB3090", CACHE / "club-3090"))
    calc = club / "tools" / "kv-calc.py"
    if calc.is_file():
        public = best_of(["python3", str(calc), "--compose", "dual", "--vram", "24", "--json"], cwd=club)
        ours = best_of([py, "-m", "kvmath.fit", "--compose", "dual", "--json"])
        print(f"public calculator --compose dual: {public * 1000:.0f} ms; kvmath-fit --compose dual: "
              f"{ours * 1000:.0f} ms = {ours / public:.2f}x (target <= 0.5x)")
    else:
        print(f"public calculator: not measured (no checkout at {club}; set KVMATH_BENCH_CLUB3090)")


if __name__ == "__main__":
    main()
