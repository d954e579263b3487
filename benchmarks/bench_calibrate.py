"""Calibration cost: a bare forward pass vs kvscale's capture vs llm-compressor's KV-only oneshot.

On one model, dtype, device and set of token ids, it times each variant ``--runs`` times,
interleaved (run 1 of every variant, then run 2, ...), and reports medians:

* ``forward``: the bare forward pass, ``model(input_ids=ids, use_cache=False)`` per sample
  (batch 1) under ``torch.inference_mode()``. Issue 11's budgets are measured against this one.
* ``forward_last``: the same with ``logits_to_keep=1``. A calibrator needs no logits, and
  kvscale and llm-compressor both skip the vocabulary projection. Shown for reference.
* ``calibrate``: ``kvscale.model.capture.capture_kv_amax`` over the same samples (the
  statistic of ``kvscale calibrate``; model load and file writing are not counted).
* ``llmcompressor``: llm-compressor's ``oneshot`` with one ``QuantizationModifier`` whose only
  scheme is ``kv_cache_scheme`` (FP8, ``static_minmax`` observer, ``tensor`` strategy), batch 1,
  no shuffling, its default pipeline unless ``--llmc-pipeline``. Each run gets a freshly loaded
  model, because oneshot changes the model in place; the load is not counted. The variant is
  skipped, with a message, when ``llmcompressor`` cannot be imported.

Peak memory: each variant runs once more in a child process of its own, which loads the model,
runs the variant and exits. The child's peak RSS is the ``ru_maxrss`` that ``os.wait4`` returns
for it, model load included. On CUDA the child also reports ``torch.cuda.max_memory_allocated``,
and the memory budget is checked on that.

Budgets (issue 11), printed as PASS/FAIL lines; the exit status is 1 when one fails:
calibrate <= 1.15 x forward; llmcompressor >= 3 x calibrate; calibrate peak <= forward peak
+ 16 MB.

Model: ``--model DIR``, ``--random-llama SIZE`` (a randomly initialised Llama, ``HIDDENxLAYERS``
such as ``2048x16``, with optional ``,heads=N,kv=N,ffn=N,vocab=N``; made once and kept in the
cache directory), or by default SmolLM2-135M-Instruct, made once with
``examples/smollm2/make_model.py`` in the cache directory (``--cache``, default
``$KVSCALE_BENCH_CACHE`` or ``~/.cache/kvscale-bench``). Tokens: ``--data`` (default the bundled
``examples/calibration/kvscale-calibration.txt``), tokenized with the model's tokenizer and cut
into ``--samples`` x ``--seq-len``. Random ids (``--seed``) are used when the model has no
tokenizer. Everything is seeded, so the inputs are identical on every run.

    PYTHONPATH=. python3 benchmarks/bench_calibrate.py                    # SmolLM2, CPU
    PYTHONPATH=. python3 benchmarks/bench_calibrate.py --samples 4 --seq-len 256 --runs 3
    PYTHONPATH=. python3 benchmarks/bench_calibrate.py --random-llama 4096x32 --device cuda \\
        --seq-len 2048 --json out.json

Run it in an environment with torch, transformers (5.17), accelerate and safetensors, plus
llmcompressor (0.14.0.1) for the third variant. bench_evaluate.py and compare_llmcompressor.py
import the helpers below.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_DATA = REPO / "examples" / "calibration" / "kvscale-calibration.txt"
MAKE_MODEL = REPO / "examples" / "smollm2" / "make_model.py"
MB = 1 << 20

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LLM_COMPRESSOR_LOG_DISABLED", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
try:
    import kvscale  # noqa: F401
except ImportError:  # a checkout run without PYTHONPATH=.
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from kvscale.model.capture import capture_kv_amax  # noqa: E402
from kvscale.model.data import load_calibration_data  # noqa: E402
from kvscale.model.load import DTYPES, LoadedModel, load_model  # noqa: E402

Samples = list[tuple[int, ...]]


# --- model and tokens ----------------------------------------------------------------------------


def default_cache() -> Path:
    env = os.environ.get("KVSCALE_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kvscale-bench"


def llama_config(spec: str) -> dict[str, int]:
    """``HIDDENxLAYERS[,heads=N,kv=N,ffn=N,vocab=N]`` -> Llama config values.

    Defaults follow Llama 2/3 proportions: head size 128, a quarter as many KV heads as query
    heads, FFN 8/3 of the hidden size rounded up to 256, vocabulary 32000.
    """
    head, *extra = spec.split(",")
    try:
        hidden, layers = (int(x) for x in head.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--random-llama {spec!r}: expected HIDDENxLAYERS, e.g. 2048x16") from None
    heads = max(1, hidden // 128)
    out = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv": max(1, heads // 4),
        "ffn": -(-hidden * 8 // 3 // 256) * 256,
        "vocab": 32000,
    }
    for item in extra:
        key, _, value = item.partition("=")
        if key not in out or not value.isdigit():
            raise SystemExit(f"--random-llama: unknown or bad item {item!r} (keys: {list(out)})")
        out[key] = int(value)
    if out["hidden"] % out["heads"] or out["heads"] % out["kv"]:
        raise SystemExit(f"--random-llama {spec!r}: hidden/heads/kv do not divide: {out}")
    return out


def make_random_llama(spec: str, dtype: str, device: str, cache: Path, seed: int) -> Path:
    """A randomly initialised LlamaForCausalLM saved as safetensors (reused when present).

    The weights are drawn on ``device`` after ``torch.manual_seed(seed)``, so they are the same
    on every run of one device type. There is no tokenizer: benchmarks feed random ids.
    """
    cfg = llama_config(spec)
    name = f"llama-{spec.replace(',', '-').replace('=', '')}-{dtype}-{device}-seed{seed}"
    out = cache / name
    if (out / "config.json").is_file() and any(out.glob("*.safetensors")):
        return out
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(
        vocab_size=cfg["vocab"],
        hidden_size=cfg["hidden"],
        intermediate_size=cfg["ffn"],
        num_hidden_layers=cfg["layers"],
        num_attention_heads=cfg["heads"],
        num_key_value_heads=cfg["kv"],
        max_position_embeddings=8192,
        tie_word_embeddings=False,
    )
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=cache))
    start = time.perf_counter()
    try:
        torch.manual_seed(seed)
        with torch.device("cuda" if device == "cuda" else "cpu"):
            model = AutoModelForCausalLM.from_config(config, dtype=DTYPES[dtype])
        model.save_pretrained(str(tmp))
        del model
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    params = (
        cfg["layers"]
        * (
            2 * cfg["hidden"] ** 2
            + 2 * cfg["hidden"] * cfg["kv"] * (cfg["hidden"] // cfg["heads"])
            + 3 * cfg["hidden"] * cfg["ffn"]
        )
        + 2 * cfg["vocab"] * cfg["hidden"]
    )
    note(f"made {out} ({params / 1e9:.2f}B parameters) in {time.perf_counter() - start:.1f} s")
    return out


def ensure_smollm2(cache: Path, dtype: str) -> Path:
    """SmolLM2-135M-Instruct as a model directory, made once with make_model.py."""
    out = cache / f"smollm2-{dtype}"
    if (out / "config.json").is_file():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    note(f"making {out} with {MAKE_MODEL.relative_to(REPO)} (once)")
    cmd = [sys.executable, str(MAKE_MODEL), "--out", str(out), "--dtype", dtype]
    rc = subprocess.run(cmd, check=False).returncode
    if rc != 0:
        raise SystemExit(rc)
    return out


def resolve_model(args: argparse.Namespace) -> tuple[Path, str]:
    """(model directory, dtype to run it in) from --model / --random-llama / the default."""
    cache = Path(args.cache)
    if args.model and args.random_llama:
        raise SystemExit("give --model or --random-llama, not both")
    if args.random_llama:
        dtype = "bfloat16" if args.dtype == "auto" else args.dtype
        return make_random_llama(args.random_llama, dtype, args.device, cache, args.seed), dtype
    if args.model:
        return Path(args.model), args.dtype
    return ensure_smollm2(cache, "bfloat16"), args.dtype


def load_tokens(
    loaded: LoadedModel, data: Path | None, samples: int, seq_len: int, seed: int
) -> tuple[Samples, str]:
    """Token id samples and where they came from: ``data`` through the model's tokenizer, or
    (no tokenizer, or ``data`` None) seeded random ids of exactly ``seq_len`` tokens each."""
    if data is not None and loaded.has_tokenizer:
        cd = load_calibration_data(
            data,
            seq_len=seq_len,
            max_samples=samples,
            encode=loaded.encode,
            vocab_size=loaded.vocab_size,
        )
        if cd.short:
            note(
                f"{data} gave {len(cd.samples)} samples / {cd.tokens} tokens, not {samples} x "
                f"{seq_len}"
            )
        return [tuple(s) for s in cd.samples], f"{data.name} ({cd.sha256[:12]})"
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, loaded.vocab_size, (samples, seq_len), generator=g)
    return [tuple(int(t) for t in row) for row in ids.tolist()], f"random ids (seed {seed})"


def model_label(path: Path, loaded: LoadedModel) -> str:
    layers = len(loaded.layers)
    first = loaded.layers[0]
    return (
        f"{path.name} ({loaded.architecture}, {layers} attention layers, "
        f"{first.num_kv_heads} KV heads x {first.head_size})"
    )


# --- timing and reporting ------------------------------------------------------------------------


def note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class SelfTimed(NamedTuple):
    """What a variant returns when it times itself (llm-compressor: its model load excluded)."""

    wall: float
    cpu: float


def timed(fn: Callable[[], object], device: str) -> SelfTimed:
    """Wall-clock and process CPU seconds of ``fn()`` (CUDA synchronized before and after)."""
    sync(device)
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    sync(device)
    if isinstance(out, SelfTimed):
        return out
    return SelfTimed(time.perf_counter() - start, time.process_time() - cpu)


def forward_fn(loaded: LoadedModel, samples: Samples, **kwargs: Any) -> Callable[[], None]:
    """One bare forward pass per sample, batch 1, no cache, ids built per call (as the capture
    builds them)."""
    model, device = loaded.model, loaded.input_device

    def run() -> None:
        with torch.inference_mode():
            for s in samples:
                ids = torch.tensor([list(s)], dtype=torch.long).to(device)
                model(input_ids=ids, use_cache=False, **kwargs)

    return run


def run_interleaved(
    fns: dict[str, Callable[[], object]], runs: int, device: str
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run 1 of every variant, then run 2, ...: (wall seconds, CPU seconds) per variant."""
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(runs):
        for name, fn in fns.items():
            t = timed(fn, device)
            wall[name].append(t.wall)
            cpu[name].append(t.cpu)
        row = "  ".join(f"{n} {t[-1]:.3f}s" for n, t in wall.items())
        note(f"run {r + 1}/{runs}: {row}")
    return wall, cpu


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def print_times(
    times: dict[str, list[float]],
    cpu: dict[str, list[float]],
    tokens: int,
    reference: str = "forward",
) -> None:
    """Wall-clock medians (the budgets' numbers), min and max, and the median CPU seconds."""
    ref = median(times[reference])
    ref_min = min(times[reference])
    print(
        f"{'variant':<24}{'median s':>10}{'min s':>9}{'max s':>9}{'cpu s':>9}{'tokens/s':>10}"
        f"{'x ' + reference:>12}{'(min)':>8}"
    )
    for name, t in times.items():
        m = median(t)
        c = median(cpu[name]) if name in cpu else float("nan")
        print(
            f"{name:<24}{m:>10.3f}{min(t):>9.3f}{max(t):>9.3f}{c:>9.3f}{tokens / m:>10.0f}"
            f"{m / ref:>12.3f}{min(t) / ref_min:>8.3f}"
        )


def budget_line(name: str, value: float, op: str, limit: float, unit: str = "") -> dict[str, Any]:
    ok = value <= limit if op == "<=" else value >= limit
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {value:.3f}{unit} {op} {limit:g}{unit}")
    return {"name": name, "value": value, "op": op, "limit": limit, "pass": ok}


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__}
    for mod in ("transformers", "accelerate", "llmcompressor", "compressed_tensors", "triton"):
        if importlib.util.find_spec(mod) is not None:
            with contextlib.suppress(Exception):
                out[mod] = str(getattr(__import__(mod), "__version__", "?"))
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out


def write_json(path: str | None, doc: dict[str, Any]) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        note(f"wrote {path}")


# --- llm-compressor --------------------------------------------------------------------------


def llmcompressor_available() -> bool:
    return importlib.util.find_spec("llmcompressor") is not None


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """llm-compressor and datasets draw progress bars and print; keep this script's output."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


def placeholder_tokenizer() -> Any:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<unk>")


def run_llmcompressor(
    model_dir: Path,
    samples: Samples,
    dtype: str,
    device: str,
    strategy: str = "tensor",
    pipeline: str | None = None,
    attn_implementation: str | None = None,
) -> tuple[SelfTimed, dict[str, dict[str, Any]]]:
    """llm-compressor's KV-only calibration on ``samples``: (time of ``oneshot``, scales).

    The recipe of llm-compressor's ``examples/quantization_kv_cache``, with the static min-max
    observer named explicitly (its default KV observer changed between releases,
    shared/reference/calibration.md section 2). The model is loaded fresh, as a user would;
    the load is not timed. Scales: attention module path -> k/v scale values, dtype and shape,
    read from the ``k_scale``/``v_scale`` parameters oneshot attaches.
    """
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": DTYPES[dtype] if dtype != "auto" else "auto"}
    if device == "cuda":
        kwargs["device_map"] = {"": "cuda:0"}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    with quiet():
        model = AutoModelForCausalLM.from_pretrained(str(model_dir), **kwargs)
        dataset = Dataset.from_dict(
            {
                "input_ids": [list(s) for s in samples],
                "attention_mask": [[1] * len(s) for s in samples],
            }
        )
    recipe = QuantizationModifier(
        kv_cache_scheme={
            "num_bits": 8,
            "type": "float",
            "strategy": strategy,
            "dynamic": False,
            "symmetric": True,
            "observer": "static_minmax",
        }
    )
    extra: dict[str, Any] = {"pipeline": pipeline} if pipeline else {}
    if not any((model_dir / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
        # oneshot insists on a processor when given a dataset, even one of token ids it never
        # tokenizes; a random model has none, so hand it a one-word tokenizer.
        extra["processor"] = placeholder_tokenizer()
    sync(device)
    start, cpu = time.perf_counter(), time.process_time()
    with quiet():
        oneshot(
            model=model,
            dataset=dataset,
            recipe=recipe,
            num_calibration_samples=len(samples),
            max_seq_length=max(len(s) for s in samples),
            batch_size=1,
            shuffle_calibration_samples=False,
            **extra,
        )
    sync(device)
    seconds = SelfTimed(time.perf_counter() - start, time.process_time() - cpu)
    scales: dict[str, dict[str, Any]] = {}
    for name, module in model.named_modules():
        k, v = getattr(module, "k_scale", None), getattr(module, "v_scale", None)
        if isinstance(k, torch.Tensor) and isinstance(v, torch.Tensor):
            scales[name] = {
                "k": k.detach().float().reshape(-1).tolist(),
                "v": v.detach().float().reshape(-1).tolist(),
                "dtype": str(k.dtype).removeprefix("torch."),
                "shape": list(k.shape),
            }
    del model
    return seconds, scales


# --- child processes for peak memory --------------------------------------------------------


def child_args(args: argparse.Namespace, model_dir: Path, dtype: str, tokens: Path) -> list[str]:
    return ["--model", str(model_dir), "--dtype", dtype, "--device", args.device,
            "--tokens", str(tokens), "--threads", str(args.threads)]  # fmt: skip


# The child is started by a minimal launcher, not by this process: on Linux a process's
# ru_maxrss starts from the RSS high-water mark of the image it exec'd from (exec_mmap keeps the
# old mm's hiwater in signal->maxrss), and subprocess starts children with vfork/posix_spawn, so a
# child of this multi-GB process would report at least this process's peak. The launcher is a
# bare interpreter (~10 MB); it runs the child with posix_spawn and reports wait4's ru_maxrss.
LAUNCHER = """
import json, os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.posix_spawn(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    json.dump({"exit": os.waitstatus_to_exitcode(status), "ru_maxrss": usage.ru_maxrss}, f)
"""


def measure_child(script: Path, variant: str, extra: list[str]) -> dict[str, Any]:
    """Run ``script --child VARIANT ...`` in a process of its own; its report plus its peak RSS
    (``ru_maxrss`` from ``wait4``, through ``LAUNCHER``)."""
    with tempfile.TemporaryDirectory(prefix="kvscale-child-") as tmp:
        report_file, out_file = Path(tmp) / "rusage.json", Path(tmp) / "stdout"
        cmd = [sys.executable, "-S", "-c", LAUNCHER, str(report_file), sys.executable,
               str(script), "--child", variant, *extra]  # fmt: skip
        with out_file.open("wb") as out:
            subprocess.run(cmd, stdout=out, check=False)
        usage = json.loads(report_file.read_text(encoding="utf-8"))
        text = out_file.read_text(encoding="utf-8", errors="replace")
    if usage["exit"] != 0:
        raise SystemExit(f"child {variant} failed (exit {usage['exit']})")
    report: dict[str, Any] = json.loads(text.strip().splitlines()[-1])
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    scale = 1 if sys.platform == "darwin" else 1024
    report["peak_rss_mb"] = usage["ru_maxrss"] * scale / MB
    return report


def peak_rss_kb() -> int:
    """This process's peak RSS so far, in KiB: VmHWM on Linux (the current image only), else
    ``ru_maxrss``."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss // 1024 if sys.platform == "darwin" else rss


def child_report(device: str, after_load_kb: int | None, seconds: float) -> None:
    """The child's last stdout line: what it measured of itself (``after_load_kb`` None: the
    variant loads its model itself, as llm-compressor's does)."""
    doc: dict[str, Any] = {
        "after_load_rss_mb": after_load_kb / 1024 if after_load_kb is not None else None,
        "self_peak_rss_mb": peak_rss_kb() / 1024,
        "seconds": seconds,
    }
    if device == "cuda":
        doc["cuda_peak_mb"] = torch.cuda.max_memory_allocated() / MB
    print(json.dumps(doc), flush=True)


def read_tokens(path: Path) -> Samples:
    return [tuple(s) for s in json.loads(path.read_text(encoding="utf-8"))]


def print_memory(memory: dict[str, dict[str, Any]], device: str) -> None:
    cuda = device == "cuda"
    print(
        f"{'variant':<24}{'peak RSS MB':>13}{'VmHWM MB':>10}{'after load':>12}{'run adds':>10}"
        + (f"{'CUDA peak MB':>14}" if cuda else "")
    )
    for name, m in memory.items():
        after = m["after_load_rss_mb"]
        loaded = (
            f"{after:>12.1f}{m['self_peak_rss_mb'] - after:>10.1f}"
            if after
            else f"{'-':>12}{'-':>10}"
        )
        print(
            f"{name:<24}{m['peak_rss_mb']:>13.1f}{m['self_peak_rss_mb']:>10.1f}{loaded}"
            + (f"{m.get('cuda_peak_mb', 0.0):>14.1f}" if cuda else "")
        )


# --- this benchmark ------------------------------------------------------------------------------


def child_main(args: argparse.Namespace) -> int:
    samples = read_tokens(Path(args.tokens))
    if args.child == "llmcompressor":
        seconds, _ = run_llmcompressor(
            Path(args.model), samples, args.dtype, args.device, pipeline=args.llmc_pipeline
        )
        child_report(args.device, None, seconds.wall)
        return 0
    loaded = load_model(args.model, dtype=args.dtype, device=args.device)
    after = peak_rss_kb()
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    fns: dict[str, Callable[[], object]] = {
        "forward": forward_fn(loaded, samples),
        "forward_last": forward_fn(loaded, samples, logits_to_keep=1),
        "calibrate": lambda: capture_kv_amax(loaded, samples),
    }
    seconds = timed(fns[args.child], args.device)
    child_report(args.device, after, seconds.wall)
    return 0


def add_common(ap: argparse.ArgumentParser, samples: int, seq_len: int) -> None:
    ap.add_argument("--model", help="a local Hugging Face model directory")
    ap.add_argument("--random-llama", metavar="SIZE", help="e.g. 2048x16 or 4096x32,kv=8")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument(
        "--dtype",
        choices=("auto", *DTYPES),
        default="auto",
        help="default: the model config's dtype (bfloat16 for --random-llama)",
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="calibration text (default: the bundled one)",
    )
    ap.add_argument("--samples", type=int, default=samples)
    ap.add_argument("--seq-len", type=int, default=seq_len)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--cache",
        default=str(default_cache()),
        help="where made models are kept (default %(default)s)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default 1 on --device cpu: timings of several threads swing "
        "by 5x on a machine others share; 0 = torch's default)",
    )
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory children")
    ap.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tokens", help=argparse.SUPPRESS)


def set_threads(args: argparse.Namespace) -> None:
    """Apply --threads (see add_common); children get the same number."""
    if args.threads is None:
        args.threads = 1 if args.device == "cpu" else 0
    if args.threads > 0:
        torch.set_num_threads(args.threads)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_common(ap, samples=8, seq_len=512)
    ap.add_argument("--no-llmcompressor", action="store_true")
    ap.add_argument(
        "--llmc-pipeline",
        default=None,
        help="llm-compressor pipeline (default: its own choice, 'independent')",
    )
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        note("--device cuda: no CUDA device")
        return 3
    set_threads(args)
    if args.child:
        return child_main(args)

    torch.manual_seed(args.seed)
    model_dir, dtype = resolve_model(args)
    loaded = load_model(model_dir, dtype=dtype, device=args.device)
    dtype = loaded.dtype
    samples, source = load_tokens(loaded, args.data, args.samples, args.seq_len, args.seed)
    tokens = sum(len(s) for s in samples)
    label = model_label(model_dir, loaded)
    print(f"model   {label}, {dtype}, {args.device}, attention {loaded.attn_implementation}")
    print(f"tokens  {len(samples)} samples x {args.seq_len} = {tokens} tokens from {source}")
    print(f"threads {torch.get_num_threads()}; runs {args.runs}, interleaved; medians below")

    fns: dict[str, Callable[[], object]] = {
        "forward": forward_fn(loaded, samples),
        "forward_last": forward_fn(loaded, samples, logits_to_keep=1),
        "calibrate": lambda: capture_kv_amax(loaded, samples),
    }
    use_llmc = not args.no_llmcompressor and llmcompressor_available()
    if not args.no_llmcompressor and not use_llmc:
        print("llmcompressor: not importable, variant skipped (pip install llmcompressor)")
    if use_llmc:
        # Times itself: oneshot only, the fresh model's load excluded.
        fns["llmcompressor"] = lambda: run_llmcompressor(
            model_dir, samples, dtype, args.device, pipeline=args.llmc_pipeline
        )[0]
    # Warm-up: first-call costs (allocator, kernels, lazy imports) stay out of the timings.
    warm = samples[:1]
    forward_fn(loaded, warm)()
    capture_kv_amax(loaded, warm)

    times, cpu = run_interleaved(fns, args.runs, args.device)
    print()
    print_times(times, cpu, tokens)
    med = {name: median(t) for name, t in times.items()}
    low = {name: min(t) for name, t in times.items()}
    pairs = [("calibrate", "forward"), ("calibrate", "forward_last")]
    if use_llmc:
        pairs.append(("llmcompressor", "calibrate"))
    ratios = {f"{a}/{b}": med[a] / med[b] for a, b in pairs}
    print()
    for a, b in pairs:
        print(
            f"ratio {a + '/' + b:<26}{med[a] / med[b]:.3f} (medians), {low[a] / low[b]:.3f} (min)"
        )

    memory: dict[str, dict[str, Any]] = {}
    if not args.no_memory:
        with tempfile.TemporaryDirectory(prefix="kvscale-bench-") as tmp:
            token_file = Path(tmp) / "tokens.json"
            token_file.write_text(json.dumps([list(s) for s in samples]), encoding="utf-8")
            extra = child_args(args, model_dir, dtype, token_file)
            if args.llmc_pipeline:
                extra += ["--llmc-pipeline", args.llmc_pipeline]
            for variant in ("forward", "calibrate") + (("llmcompressor",) if use_llmc else ()):
                note(f"memory: {variant} in a child process")
                memory[variant] = measure_child(Path(__file__), variant, extra)
        print()
        print_memory(memory, args.device)

    print()
    budgets = [budget_line("calibrate / forward", ratios["calibrate/forward"], "<=", 1.15)]
    if use_llmc:
        budgets.append(
            budget_line("llmcompressor / calibrate", ratios["llmcompressor/calibrate"], ">=", 3.0)
        )
    if memory:
        key = "cuda_peak_mb" if args.device == "cuda" else "peak_rss_mb"
        extra_mb = memory["calibrate"][key] - memory["forward"][key]
        what = "CUDA peak" if args.device == "cuda" else "peak RSS"
        budgets.append(
            budget_line(f"calibrate {what} - forward {what}", extra_mb, "<=", 16.0, " MB")
        )
    write_json(
        args.json,
        {
            "schema": "kvscale.bench_calibrate/1",
            "model": label,
            "model_dir": str(model_dir),
            "dtype": dtype,
            "device": args.device,
            "attention": loaded.attn_implementation,
            "samples": len(samples),
            "seq_len": args.seq_len,
            "tokens": tokens,
            "token_source": source,
            "runs": args.runs,
            "threads": torch.get_num_threads(),
            "llmc_pipeline": args.llmc_pipeline or ("independent" if use_llmc else None),
            "versions": versions(),
            "seconds": times,
            "cpu_seconds": cpu,
            "median_s": med,
            "min_s": low,
            "ratios": ratios,
            "ratios_of_min": {f"{a}/{b}": low[a] / low[b] for a, b in pairs},
            "memory": memory,
            "budgets": budgets,
        },
    )
    return 0 if all(b["pass"] for b in budgets) else 1


if __name__ == "__main__":
    sys.exit(main())
