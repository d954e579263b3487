"""Start-up of ``kvscale inspect`` on a bundled example as a fresh process, as a pre-commit hook
runs it, side by side with the interpreter alone and with the two libraries the CLI needs.

    python benchmarks/bench_startup.py                  # 15 runs of each, medians and ratios
    python benchmarks/bench_startup.py --runs 31 --importtime

Every program runs with a warm bytecode cache (a private ``PYTHONPYCACHEPREFIX``, one warm-up
run each), as after ``pip install``, which compiles the package: without it (e.g. with
``PYTHONDONTWRITEBYTECODE=1`` and an editable install) every run recompiles kvscale's modules and
measures the compiler instead. ``--importtime`` adds the modules that cost most
(``python -X importtime``, cumulative microseconds, one run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llm-compressor-fp8"
TARGET_S = 0.15
"""The issue's bound for a pre-commit hook (issue 15)."""


def programs() -> dict[str, list[str]]:
    py = sys.executable
    out = {
        "python -c pass": [py, "-c", "pass"],
        "import typer, rich.table": [py, "-c", "import typer, rich.console, rich.table"],
        "kvscale inspect EXAMPLE": [py, "-m", "kvscale", "inspect", str(EXAMPLE)],
        "kvscale inspect EXAMPLE --json": [py, "-m", "kvscale", "inspect", str(EXAMPLE), "--json"],
    }
    script = Path(py).parent / "kvscale"
    if script.exists():  # the installed console script, as a pre-commit hook runs it
        out["(console script) inspect EXAMPLE"] = [str(script), "inspect", str(EXAMPLE)]
    return out


def run_once(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def import_costs(env: dict[str, str], top: int) -> list[tuple[int, str]]:
    cmd = [sys.executable, "-X", "importtime", "-m", "kvscale", "inspect", str(EXAMPLE)]
    err = subprocess.run(
        cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2]
            depth = (len(name) - len(name.lstrip())) // 2
            if depth <= 1:
                rows.append((int(parts[1]), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--importtime", action="store_true", help="show the costliest imports")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kvscale-pycache-") as cache:
        env = dict(os.environ, PYTHONPYCACHEPREFIX=cache, NO_COLOR="1", COLUMNS="100")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        cmds = programs()
        for cmd in cmds.values():  # warm-up: bytecode cache and page cache
            run_once(cmd, env)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.runs):  # interleaved, so that load on the machine hits all alike
            for name, cmd in cmds.items():
                times[name].append(run_once(cmd, env))
        medians = {name: statistics.median(t) for name, t in times.items()}
        base = medians["python -c pass"]
        print(f"{'program':<32} {'median s':>9} {'min s':>7} {'minus python':>13}")
        for name, t in times.items():
            m = medians[name]
            print(f"{name:<32} {m:9.3f} {min(t):7.3f} {m - base:13.3f}")
        kv = medians["kvscale inspect EXAMPLE"]
        libs = medians["import typer, rich.table"] - base
        print(
            f"\nkvscale inspect / bound {TARGET_S} s: {kv / TARGET_S:.2f}x "
            f"({'PASS' if kv < TARGET_S else 'FAIL'}); typer+rich are "
            f"{libs / max(kv - base, 1e-9):.0%} of kvscale's time above the interpreter"
        )
        if args.importtime:
            print("\ncostliest top-level imports (cumulative us, -X importtime):")
            for us, name in import_costs(env, 15):
                print(f"{us:>9}  {name}")


if __name__ == "__main__":
    main()
