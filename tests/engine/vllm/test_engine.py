"""The vLLM engine's own problems about backends and dtypes, through ``kvscale.inspect``:
``backend-unsupported-dtype`` (the chosen backend, or every backend, refuses a layer's dtype)
and ``no-in-tree-backend`` (fp8_inc). Which backend runs what is tested against vLLM's code in
test_backends.py; here, that inspect reports it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import kvscale
from kvscale.problems import Problem, Severity

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "modelopt-fp8"
ALL_LAYERS = tuple(f"model.layers.{i}.self_attn.attn" for i in range(4))


def _problems(path: Path = EXAMPLE, **options: str) -> dict[str, Problem]:
    report = kvscale.inspect(path, **options)
    return {p.code: p for p in report.problems}


def test_chosen_backend_that_cannot_run_the_dtype() -> None:
    found = _problems(kv_cache_dtype="int8_per_token_head", attention_backend="FLASH_ATTN")
    problem = found["backend-unsupported-dtype"]
    assert problem.severity is Severity.ERROR and problem.layers == ALL_LAYERS
    assert problem.message == (
        "--attention-backend FLASH_ATTN cannot run 4 of 4 layers (kv-cache dtype "
        "int8_per_token_head): vLLM refuses to start, 'Selected backend "
        "AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: "
        "['kv_cache_dtype not supported']'; backends that run it: triton_attn"
    )
    assert "backend-unsupported-dtype" not in _problems(
        kv_cache_dtype="int8_per_token_head", attention_backend="triton_attn"
    )


def test_skipped_layers_are_checked_with_their_own_dtype() -> None:
    # layers 0 and 2 keep auto, which FLASH_ATTN runs; layers 1 and 3 are per-token-head
    found = _problems(
        kv_cache_dtype="int8_per_token_head",
        attention_backend="flash_attn",
        kv_cache_dtype_skip_layers="0,2",
    )
    assert found["backend-unsupported-dtype"].layers == (ALL_LAYERS[1], ALL_LAYERS[3])


def test_no_backend_for_the_model() -> None:
    found = _problems(kv_cache_dtype="fp8_ds_mla")
    assert found["backend-unsupported-dtype"].message == (
        "no attention backend of vLLM 0.33.0 runs kv-cache dtype fp8_ds_mla on a non-MLA model "
        "with head size 8 (4 of 4 layers): the engine fails in backend selection ('No valid "
        "attention backend found')"
    )
    # Octave runs on ROCm only: fine without a GPU named, refused on an NVIDIA one
    assert "backend-unsupported-dtype" not in _problems(kv_cache_dtype="octave_k3v4")
    assert "backend-unsupported-dtype" in _problems(kv_cache_dtype="octave_k3v4", gpu_arch="sm90")


def test_gpu_and_head_size_constraints(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    shutil.copytree(EXAMPLE, ckpt)
    config = json.loads((ckpt / "config.json").read_text())
    config["head_dim"] = 64
    (ckpt / "config.json").write_text(json.dumps(config))
    # FlashInfer's FA2 writer (SM80-90, SM12x) refuses NVFP4 at head size 64; SM100 does not
    sm90 = _problems(ckpt, kv_cache_dtype="nvfp4", attention_backend="flashinfer", gpu_arch="sm90")
    assert "fa2 prefill misreads an NVFP4 KV cache at head_size 64" in (
        sm90["backend-unsupported-dtype"].message
    )
    sm100 = _problems(
        ckpt, kv_cache_dtype="nvfp4", attention_backend="flashinfer", gpu_arch="sm100"
    )
    assert "backend-unsupported-dtype" not in sm100


def test_fp8_inc_needs_a_plugin() -> None:
    report = kvscale.inspect(EXAMPLE, kv_cache_dtype="fp8_inc")
    found = {p.code: p for p in report.problems}
    assert report.ok and found["no-in-tree-backend"].severity is Severity.WARNING
    assert "scales-unused" not in found
    # the values are vLLM's own loading (BaseKVCacheMethod, FP8 rules) all the same
    fp8 = kvscale.inspect(EXAMPLE, kv_cache_dtype="fp8_e4m3")
    assert [x.k_scale for x in report.layers] == [x.k_scale for x in fp8.layers]
    assert all(x.cache is not None and x.cache.format.name == "fp8_inc" for x in report.layers)
