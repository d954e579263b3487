"""Every serving command ``kvscale plan`` can answer with, built by kvscale's own code.

``plan_model`` chooses one candidate of ``candidates_for`` (optionally with layers kept
unquantized) and renders it with ``serve_flags`` (the backend rule, then the engine's
``serve_command``). This module runs those same functions over a sweep of the inputs that change
their answer -- engine, model kind (MHA with checkpoint scales, MLA), platform, ``--gpu-arch``,
head size, the user's ``--attention-backend`` -- and keeps the distinct commands. Nothing here
writes a flag by hand; ``serve_flags_oracle.py`` parses each command with the engine's parser.

A case is one serving configuration:

* ``engine``, ``argv`` (kvscale's command line, verbatim);
* ``intent``: what kvscale means by it -- the checkpoint, the KV-cache dtype, the layers kept
  unquantized, the attention backend (kvscale's name) -- taken from the candidate, never from
  ``argv``;
* ``produced_by``: the candidates that answer with it (``mha fp8:calibrated``, ...).

The checkpoint is ``model`` (MODEL as the user gave it) or, for calibrated scales,
``out/checkpoint`` (what ``plan --out out`` writes and then serves). Skipped layers: plan keeps
decoder-layer indices (``_skip_sets``: sorted, as strings); ``sliding_window`` is the other
entry vLLM's list takes (an attention type), which kvscale's options accept too.

``CONTROLS`` are the exception: commands written by hand, each with one mistake the oracle must
expose (vLLM's skip list comma-separated, vLLM's spellings given to SGLang, ...), so that the
judgement of the golden file is seen to fail where it should.

Loaded by file path (``_load`` in the oracle and the tests), like ``cases.py``.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from support.checkpoints import llama_config, make_checkpoint_dir, quant_config

from kvscale.core.inspect import inspect_checkpoint
from kvscale.core.plan import Candidate, _status, candidates_for, serve_flags
from kvscale.engine.options import GPU_ARCHS, EngineOptions, Platform
from kvscale.engine.registry import get_engine
from kvscale.scales_file import CHECKPOINT_DIR

ENGINES = ("vllm", "sglang")
MODEL = "model"
OUT_CHECKPOINT = f"out/{CHECKPOINT_DIR}"
CHECKPOINT_DIRS = (MODEL, OUT_CHECKPOINT)
"""The directories the oracle creates in its working directory, so that vLLM's offline model
lookup (``get_model_path``: a path that exists is the model) takes them as local models."""

SKIP_SETS: tuple[tuple[str, ...], ...] = (("0", "1"), ("sliding_window",))
"""Layers kept unquantized, for engines that can (``supports_skip_layers``): two indices (the
list form, more than one entry) and the attention-type entry."""

MHA_HEAD_SIZES = (64, 128, 256)
"""Head sizes of the MHA sweep: vLLM's backends differ by head size (``backends_for``)."""


@dataclasses.dataclass(frozen=True)
class ServeCase:
    engine: str
    argv: tuple[str, ...]
    checkpoint: str
    kv_cache_dtype: str
    skip_layers: tuple[str, ...]
    attention_backend: str | None
    produced_by: tuple[str, ...]

    @property
    def name(self) -> str:
        name = f"{self.engine} {self.kv_cache_dtype}"
        if self.attention_backend is not None:
            name += f" @{self.attention_backend}"
        if self.skip_layers:
            name += f" skip:{','.join(self.skip_layers)}"
        if self.checkpoint != MODEL:
            name += f" [{self.checkpoint}]"
        return name

    def as_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "argv": list(self.argv),
            "intent": {
                "checkpoint": self.checkpoint,
                "kv_cache_dtype": self.kv_cache_dtype,
                "skip_layers": list(self.skip_layers),
                "attention_backend": self.attention_backend,
            },
            "produced_by": list(self.produced_by),
        }


def _control(
    engine: str, argv: tuple[str, ...], dtype: str, skip: tuple[str, ...], backend: str | None
) -> ServeCase:
    return ServeCase(engine, argv, MODEL, dtype, skip, backend, ())


_VLLM = ("vllm", "serve", MODEL)
_SGLANG = ("python", "-m", "sglang.launch_server", "--model-path", MODEL)
CONTROLS = {
    "vllm skip list comma-separated": _control(
        "vllm",
        (*_VLLM, "--kv-cache-dtype", "fp8", "--kv-cache-dtype-skip-layers", "0,1"),
        "fp8",
        ("0", "1"),
        None,
    ),
    "vllm SGLang's fp8 spelling and backend": _control(
        "vllm",
        (*_VLLM, "--kv-cache-dtype", "fp8_e4m3fn", "--attention-backend", "fa3"),
        "fp8_e4m3fn",
        (),
        "fa3",
    ),
    "vllm unknown backend": _control(
        "vllm",
        (*_VLLM, "--kv-cache-dtype", "fp8", "--attention-backend", "FLASH_ATTENTION"),
        "fp8",
        (),
        "flash_attention",
    ),
    "sglang vLLM's fp8 spelling": _control(
        "sglang", (*_SGLANG, "--kv-cache-dtype", "fp8"), "fp8", (), None
    ),
    "sglang vLLM's backend name": _control(
        "sglang",
        (*_SGLANG, "--kv-cache-dtype", "fp8_e4m3", "--attention-backend", "FLASH_ATTN"),
        "fp8_e4m3",
        (),
        "flash_attn",
    ),
    "sglang vLLM's skip list": _control(
        "sglang",
        (*_SGLANG, "--kv-cache-dtype", "fp8_e4m3", "--kv-cache-dtype-skip-layers", "0"),
        "fp8_e4m3",
        ("0",),
        None,
    ),
}
"""Hand-written commands with one mistake each (the oracle parses them like the cases)."""


def _models(root: Path) -> dict[str, Path]:
    """A Llama with FP8 checkpoint scales (so every scale source is a candidate) and a
    DeepSeek-V2 MLA model (latent cache: MLA backends and dtypes)."""
    mha = make_checkpoint_dir(
        root,
        "mha",
        config=llama_config(2, head_dim=128, hidden_size=512, quant=quant_config("fp8")),
    )
    mla_config = {
        "architectures": ["DeepseekV2ForCausalLM"],
        "model_type": "deepseek_v2",
        "num_hidden_layers": 2,
        "hidden_size": 1024,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "q_lora_rank": None,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "torch_dtype": "bfloat16",
    }
    kv_a = {
        f"model.layers.{i}.self_attn.kv_a_proj_with_mqa.weight": torch.zeros(
            4, 4, dtype=torch.bfloat16
        )
        for i in range(2)
    }
    mla = make_checkpoint_dir(root, "mla", config=mla_config, tensors=kv_a)
    return {"mha": mha, "mla": mla}


def _choices(root: Path) -> Iterator[tuple[str, str, Candidate, str | None, str]]:
    """(engine, model kind, candidate, the user's --attention-backend, platform) for every
    choice plan can make: candidates it measures (``_status``), with every backend the user may
    name."""
    for engine_name in ENGINES:
        engine = get_engine(engine_name)
        for kind, path in _models(root).items():
            for platform in Platform:
                report = inspect_checkpoint(
                    path, EngineOptions(engine=engine_name, platform=platform)
                )
                assert report.shape.head_size and report.shape.kv_heads
                heads = (
                    MHA_HEAD_SIZES
                    if report.shape.latent_width is None
                    else (report.shape.head_size,)
                )
                for gpu_arch in (None, *GPU_ARCHS):
                    options = EngineOptions(
                        engine=engine_name, platform=platform, gpu_arch=gpu_arch
                    )
                    for head_size in heads:
                        for c in candidates_for(report, options, head_size, report.shape.kv_heads):
                            for backend in (None, *engine.attention_backends):
                                if _status(c, backend)[0] == "measured":
                                    yield engine_name, kind, c, backend, report.platform


def serve_cases() -> dict[str, ServeCase]:
    """Every distinct serving configuration, by name (sorted)."""
    found: dict[tuple[Any, ...], tuple[tuple[str, ...], set[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="kvscale-serve-flags-") as tmp:
        for engine_name, kind, candidate, user_backend, platform in _choices(Path(tmp)):
            engine = get_engine(engine_name)
            checkpoint = OUT_CHECKPOINT if candidate.scales == "calibrated" else MODEL
            skips: tuple[tuple[str, ...], ...] = ((),)
            if engine.supports_skip_layers and user_backend is None:
                skips += SKIP_SETS
            for skip in skips:
                chosen = dataclasses.replace(candidate, skip_layers=skip)
                argv, backend = serve_flags(engine, chosen, checkpoint, user_backend, platform)
                key = (engine_name, checkpoint, candidate.kv_cache_dtype, skip, backend)
                if key not in found:
                    found[key] = (argv, set())
                assert found[key][0] == argv, key
                found[key][1].add(f"{kind} {candidate.name}")
    cases = [
        ServeCase(engine, argv, ckpt, dtype, skip, backend, tuple(sorted(by)))
        for (engine, ckpt, dtype, skip, backend), (argv, by) in found.items()
    ]
    return {c.name: c for c in sorted(cases, key=lambda c: c.name)}
