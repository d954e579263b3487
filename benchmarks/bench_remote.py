"""Remote inspect of a Llama-405B-shaped checkpoint (126 layers, 191 shards) served by a loopback
Hub with a simulated round trip, side by side with huggingface_hub's ``get_safetensors_metadata``.

    python benchmarks/bench_remote.py                         # 20 ms round trip, 5 runs each
    python benchmarks/bench_remote.py --cdn --window-kib 64   # shards redirected to a "CDN"; a
                                                              # 64 KiB window per round trip
    python benchmarks/bench_remote.py --runs 9 --rtt-ms 50 --concurrency 8

The checkpoint is benchmarks/bench_inspect.py's sparse one (built once in ``--dir``). The server
(tests/support/hub_server.py) runs in its own process, so that it does not share the GIL with the
client, and sleeps ``--rtt-ms`` before every answer. ``--window-kib`` also paces bodies at one
window per round trip (the bandwidth-delay product of one TCP connection), so that large answers
cost more round trips as on a real link; ``--cdn`` redirects every shard to a second port, as the
Hub redirects LFS files to its CDN.

Both sides run in this process with warm imports and a warm huggingface_hub cache (after one
untimed run each, which is also reported): kvscale's ``open_remote`` + ``resolve_checkpoint``
(every header validated, the 252 k/v scale values read and decoded, the same JSON as a local
inspect), and ``HfApi(endpoint).get_safetensors_metadata`` (headers only, no values). The table
gives the requests and bytes each made (counted by the server), the median wall time, and the
ratios; the byte budget is the bytes a local inspect reads (headers, scale tensors, config and
index).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
REPO = "bench/llama-405b-fp8"


def _bench_inspect() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_inspect", ROOT / "benchmarks/bench_inspect.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _server(args: argparse.Namespace, directory: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, str(ROOT / "tests/support/hub_server.py")]
    cmd += ["--rtt", str(args.rtt_ms / 1000), "--window", str(args.window_kib * 1024)]
    cmd += ["--mbit", str(args.mbit)]
    cmd += ["--cdn"] if args.cdn else []
    cmd += [f"{REPO}={directory}"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"hub server did not start: {url!r}")
    return proc, url


def _control(url: str, what: str) -> dict[str, Any]:
    with urlopen(f"{url}/_hub/{what}") as answer:  # noqa: S310 - loopback only
        doc: dict[str, Any] = json.loads(answer.read())
    return doc


def _reference(directory: Path) -> tuple[int, int, int]:
    """(header bytes incl. the 8-byte prefixes, k/v scale bytes, config + index bytes)."""
    sys.path.insert(0, str(ROOT))
    from kvscale.io.safetensors import read_header

    headers = scales = 0
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    for name in sorted(set(index["weight_map"].values())):
        h = read_header(directory / name)
        headers += 8 + h.header_size
        scales += sum(
            t.nbytes for t in h.tensors.values() if t.name.endswith(("k_scale", "v_scale"))
        )
    documents = sum(
        (directory / n).stat().st_size for n in ("config.json", "model.safetensors.index.json")
    )
    return headers, scales, documents


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kvscale-bench-405b"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rtt-ms", type=float, default=20.0)
    parser.add_argument("--window-kib", type=int, default=0)
    parser.add_argument("--mbit", type=float, default=0.0)
    parser.add_argument("--cdn", action="store_true")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--hf-cpus",
        type=int,
        default=None,
        help="os.cpu_count() as huggingface_hub sees it (its thread pool is min(32, cpus + 4))",
    )
    args = parser.parse_args()
    _bench_inspect().build(args.dir)

    home = tempfile.mkdtemp(prefix="kvscale-bench-hf-")
    proc, url = _server(args, args.dir)
    # Before huggingface_hub is imported: its constants read the environment once.
    os.environ.update(
        HF_ENDPOINT=url,
        HF_HOME=home,
        HF_HUB_CACHE=os.path.join(home, "hub"),
        HF_HUB_OFFLINE="0",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
    )
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))
    from huggingface_hub import HfApi
    from huggingface_hub import __version__ as hf_version

    from kvscale.core.inspect import inspect_checkpoint, resolve_checkpoint
    from kvscale.engine.options import EngineOptions
    from kvscale.io.remote.http import RemoteOptions
    from kvscale.io.remote.source import open_remote
    from kvscale.render.inspect import inspect_json

    options = RemoteOptions(concurrency=args.concurrency)
    api = HfApi(endpoint=url)

    def run_kvscale() -> Any:
        ckpt = open_remote(f"hf://{REPO}", None, None, options=options)
        return resolve_checkpoint(ckpt, EngineOptions())

    real_cpu_count = os.cpu_count
    cpus = args.hf_cpus or real_cpu_count()

    def run_hf() -> Any:
        os.cpu_count = lambda: cpus  # hf_thread_map sizes its pool from it, at call time
        try:
            return api.get_safetensors_metadata(REPO)
        finally:
            os.cpu_count = real_cpu_count

    def measured(fn: Any) -> tuple[float, dict[str, Any], Any]:
        _control(url, "reset")
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
        return elapsed, _control(url, "stats"), result

    try:
        cold = {"kvscale": measured(run_kvscale), "hf": measured(run_hf)}
        times: dict[str, list[float]] = {"kvscale": [], "hf": []}
        counts: dict[str, dict[str, Any]] = {}
        report: Any = None
        for i in range(args.runs):
            order = [("kvscale", run_kvscale), ("hf", run_hf)]
            for name, fn in order if i % 2 == 0 else order[::-1]:
                elapsed, stats, result = measured(fn)
                times[name].append(elapsed)
                counts[name] = stats
                if name == "kvscale":
                    report = result
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)

    local = inspect_json(inspect_checkpoint(args.dir))
    remote = inspect_json(report)
    where = ("checkpoint", "layout", "source")  # where it was read from, nothing else
    same = {k: v for k, v in remote.items() if k not in where} == {
        k: v for k, v in local.items() if k not in where
    }
    headers, scales, documents = _reference(args.dir)
    shards = len(report.files)  # the builder's 191st file is empty and not in the index
    hf_workers = min(32, (cpus or 1) + 4)

    link = f"{args.rtt_ms:g} ms round trip"
    link += f", {args.window_kib} KiB window per connection" if args.window_kib else ""
    link += f", {args.mbit:g} Mbit/s shared link" if args.mbit else ""
    link += "" if args.window_kib or args.mbit else ", no bandwidth limit"
    link += ", shards redirected to a CDN port" if args.cdn else ""
    on_disk = len(list(args.dir.glob("*.safetensors")))
    print(f"checkpoint: {shards} shards in the index ({on_disk} files), 126 layers; {link}")
    print(
        f"kvscale: {args.concurrency} requests at once; huggingface_hub {hf_version}: "
        f"{hf_workers} threads (min(32, cpu_count + 4), cpu_count = {cpus}"
        + (f", set by --hf-cpus; really {real_cpu_count()})" if args.hf_cpus else ")")
    )
    columns = f"{'requests':>8s} {'bytes':>12s} {'median s':>9s} {'min s':>7s} {'cold s':>7s}"
    print(f"{'program':44s} {columns}")
    rows = (
        ("kvscale open_remote + resolve (values)", "kvscale"),
        ("huggingface_hub get_safetensors_metadata", "hf"),
    )
    for label, key in rows:
        t = times[key]
        print(
            f"{label:44s} {counts[key]['requests']:8d} {counts[key]['bytes']:12,d} "
            f"{statistics.median(t):9.3f} {min(t):7.3f} {cold[key][0]:7.3f}"
        )
    kv, hf = statistics.median(times["kvscale"]), statistics.median(times["hf"])
    kv_requests, hf_requests = counts["kvscale"]["requests"], counts["hf"]["requests"]
    budget = headers + scales + documents
    print(f"wall time hf / kvscale: {hf / kv:.2f}x (target >= 5x)")
    print(
        f"requests: kvscale {kv_requests} = {kv_requests / shards:.2f} per shard "
        f"(target <= 2 per shard + API/config/index); hf {hf_requests}"
    )
    print(
        f"bytes: kvscale {counts['kvscale']['bytes']:,} = "
        f"{counts['kvscale']['bytes'] / budget:.2f}x what a local inspect reads ({budget:,}: "
        f"headers {headers:,} + scales {scales:,} + config/index {documents:,}; target <= 1.5x); "
        f"hf {counts['hf']['bytes'] / budget:.1f}x"
    )
    print(f"kvscale JSON equals local inspect (apart from checkpoint/layout/source): {same}")


if __name__ == "__main__":
    main()
