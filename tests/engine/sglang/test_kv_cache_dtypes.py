"""SGLang 0.5.23's ``--kv-cache-dtype`` (kvscale/engine/sglang/kv_cache_dtypes.py and the
``auto`` resolution of quant_config.py) against what the parity oracle executed: SGLang's own
``configure_kv_cache_dtype`` for every producer's config, every accepted value, on CUDA and
ROCm gfx942, and ``NVFP4KVCacheMethod.load_scales_from_model`` per GPU
(tests/parity/sglang_expected.json ``facts``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from parity import cases

from kvscale.engine.options import GPU_ARCHS, EngineOptions
from kvscale.engine.sglang import kv_cache_dtypes as D
from kvscale.engine.sglang.engine import SGLANG
from kvscale.model_config import find_quant_config, parse_model_shape

FACTS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "parity" / "sglang_expected.json").read_text()
)["facts"]

PRODUCERS: dict[str, dict[str, Any] | None] = {
    # tests/parity/sglang_oracle.py PRODUCER_CONFIGS, built from the same case builders
    "none": None,
    "fp8": cases.FP8_QC,
    "modelopt_kv_fp8": {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_quant_algo": "FP8",
    },
    "modelopt_kv_nvfp4": {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_quant_algo": "NVFP4",
    },
    "modelopt_kv_scheme_fp8": cases.MODELOPT_QC,
    "compressed_tensors_tensor": cases.ct_qc("tensor"),
    "compressed_tensors_attn_head": cases.ct_qc("attn_head"),
    "quark": cases.quark_qc(),
}

TORCH_DTYPE = {
    # kvscale's cache format -> the pool's torch dtype SGLang allocates for it (bf16 model)
    "model-dtype": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "fp8_e4m3fnuz": "float8_e4m3fnuz",
    "mxfp8": "float8_e4m3fn",
    "nvfp4": "float4_e2m1fn_x2",
    "fp4_mx_block16": "float4_e2m1fn_x2",
}


def test_accepted_values_are_sglangs() -> None:
    assert list(D.KV_CACHE_DTYPES) == FACTS["kv_cache_dtypes"]["choices"]["values"]
    assert SGLANG.kv_cache_dtypes == D.KV_CACHE_DTYPES


def test_producers_are_the_oracles() -> None:
    for platform in ("ocp", "fnuz"):
        assert set(FACTS["kv_cache_dtypes"]["resolution"][platform]) == set(PRODUCERS)


@pytest.mark.parametrize("platform", ["ocp", "fnuz"])
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_resolution_matches_configure_kv_cache_dtype(platform: str, producer: str) -> None:
    gold = FACTS["kv_cache_dtypes"]["resolution"][platform][producer]
    config = cases.llama_config(PRODUCERS[producer])
    quant = SGLANG.quant_config(find_quant_config(config, None, "config.json"))
    shape = parse_model_shape(config)
    for choice in D.KV_CACHE_DTYPES:
        options = EngineOptions(
            engine="sglang",  # type: ignore[arg-type]
            kv_cache_dtype=choice,
            platform=platform,  # type: ignore[arg-type]
            model_dtype="bfloat16",
        )
        settings, _ = SGLANG.settings(quant, shape, options, frozenset())
        if "engine_error" in gold:
            assert settings.refusal == gold["engine_error"], choice
            continue
        want = gold["dtypes"][choice]
        assert settings.refusal is None
        assert settings.kv_cache_dtype == want["kv_cache_dtype"], choice
        fmt = SGLANG.cache_format(settings.kv_cache_dtype, platform)
        assert TORCH_DTYPE[fmt.name] == want["torch_dtype"], (choice, fmt.name)


def test_fnuz_stores_e4m3fnuz_for_both_fp8_names() -> None:
    assert D.cache_format("fp8_e5m2", "fnuz", latent=False).name == "fp8_e4m3fnuz"
    assert D.cache_format("fp8_e4m3", "fnuz", latent=True).name == "fp8_e4m3fnuz"
    assert D.cache_format("fp8_e5m2", "ocp", latent=False).name == "fp8_e5m2"
    assert D.cache_format("mxfp8", "fnuz", latent=False).name == "mxfp8"


def test_fp4_pools_and_scales() -> None:
    # MLA: MLATokenToKVPoolFP4 for both FP4 names, per-16 UE8M0 blocks, no checkpoint scale
    for name in ("nvfp4", "fp4_mx_block16"):
        fmt = D.cache_format(name, "ocp", latent=True)
        assert fmt.name == "fp4_mx_block16" and not fmt.scale_use.reads_checkpoint
    assert not D.cache_format("fp4_mx_block16", "ocp", latent=False).scale_use.reads_checkpoint
    assert D.cache_format("nvfp4", "ocp", latent=False).scale_use.reads_checkpoint


SCENARIOS = FACTS["nvfp4_global_scale"]["devices"]


@pytest.mark.parametrize("device", sorted(SCENARIOS))
def test_nvfp4_global_scale_per_gpu(device: str) -> None:
    assert FACTS["nvfp4_global_scale"]["E2M1_MAX"] == D.E2M1_MAX
    if device not in GPU_ARCHS:
        assert device == "sm110"  # Jetson Thor: no --gpu-arch value (not multiplied either)
        return
    for name, gold in SCENARIOS[device]["scenarios"].items():
        got = (
            D.nvfp4_global_scale(gold["layer_k_scale"], device),
            D.nvfp4_global_scale(gold["layer_v_scale"], device),
        )
        want = (gold["k_scales_float"][0], gold["v_scales_float"][0])
        assert got == want, (device, name)
        assert list(got) == gold["get_bmm_scales_layer0"], (device, name)


def test_nvfp4_global_scale_rounds_to_float32() -> None:
    # the quantizer reads k_scales_gpu, a float32 copy of the Python product
    value = 0.1  # float32 0.1 times 6 is not a float32
    assert D.nvfp4_global_scale(value, "sm100") == 0.6000000238418579
    assert D.nvfp4_global_scale(value, "sm120") == value
    assert D.nvfp4_global_scale(1.0, "sm103") == 1.0
    assert D.E2M1_SCALED_ARCHS == {"sm100", "sm103"}
