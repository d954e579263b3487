"""What each SGLang 0.5.23 attention backend does with an MLA layer's k/v scales
(kvscale/engine/sglang/backends.py ``mla_path``), as the code facts the oracle checks state them
(tests/parity/sglang_code_facts.py, ``mla.backend.*``)."""

from __future__ import annotations

import pytest

from kvscale.engine.sglang import backends as B
from kvscale.problems import Severity

K, V = 0.0234375, 0.015625


def _effect(backend: str, dtype: str, k: float = K, v: float = V) -> tuple[Severity | None, str]:
    path = B.mla_path(backend, dtype, k, v)
    assert path is not None and path.backend == backend
    return path.severity, path.code


def test_flashinfer_and_fa3_ignore_the_scale_on_both_sides() -> None:
    for backend in ("flashinfer", "fa3"):
        assert _effect(backend, "fp8_e4m3") == (Severity.WARNING, "scales-ignored-by-backend")
        assert _effect(backend, "fp8_e4m3", k=1.0, v=1.0)[0] is None
        assert _effect(backend, "auto")[0] is None  # a bf16 pool: the scale never mattered
    path = B.mla_path("fa3", "fp8_e4m3", K, V)
    assert path is not None and path.text == (
        "fa3 writes the latent unscaled and reads no scale (flashattention_backend.py:1428: only "
        "heads <= 256 are descaled, never the latent): the checkpoint's k_scale is ignored, the "
        "cache runs at 1.0"
    )


def test_triton_reads_prompt_tokens_written_unscaled() -> None:
    assert _effect("triton", "fp8_e4m3", k=1.0, v=1.0)[0] is None
    for k, v in ((K, K), (K, V), (1.0, V)):
        assert _effect("triton", "fp8_e4m3", k=k, v=v)[0] is Severity.ERROR
    path = B.mla_path("triton", "auto", K, V)  # divides whatever the pool
    assert path is not None and path.severity is Severity.ERROR
    assert path.text.endswith(
        "(attention_backend_handler.py:247-251, forward_mha.py:596-610): prompt tokens are read "
        "with scores x 0.0234375 and values x 0.015625, decode tokens with values x 0.666667"
    )


@pytest.mark.parametrize("backend", ["flashmla", "trtllm_mla", "cutedsl_mla"])
def test_unscaled_write_scaled_read(backend: str) -> None:
    assert _effect(backend, "fp8_e4m3") == (Severity.ERROR, "scales-ignored-by-backend")
    path = B.mla_path(backend, "fp8_e4m3", K, V)
    assert path is not None and path.text.endswith(
        ": every score is multiplied by k_scale (0.0234375)"
    )
    assert _effect(backend, "fp8_e4m3", k=1.0)[0] is None
    assert _effect(backend, "auto")[0] is None


def test_trtllm_mla_dtypes() -> None:
    # bmm1 takes k only for a float8_e4m3fn cache; trtllm_mla refuses the other fp8 at start
    assert _effect("trtllm_mla", "fp8_e5m2") == (Severity.ERROR, "backend-unsupported-dtype")
    assert _effect("trtllm_mla", "bfloat16") == (Severity.ERROR, "backend-unsupported-dtype")
    assert _effect("trtllm_mla", "bf16")[0] is None
    assert _effect("cutedsl_mla", "fp8_e5m2")[0] is None  # not checked there: 1.0 and a warning


def test_aiter_is_not_in_the_wheel() -> None:
    assert _effect("aiter", "fp8_e4m3") == (Severity.WARNING, "scales-ignored-by-backend")
    assert _effect("aiter", "fp8_e4m3", k=1.0)[0] is None


def test_mha_only_backend_has_no_mla_path() -> None:
    assert B.mla_path("trtllm_mha", "fp8_e4m3", K, V) is None
    assert B.MLA_ONLY <= set(B.ATTENTION_BACKENDS)


def test_mha_backend_problems() -> None:
    assert B.backend_problem("flashinfer", "auto", False) == (
        "scales-on-unquantized-cache",
        "the KV cache is auto (not FP8): the write does not divide by the checkpoint scales, but "
        "flashinfer still multiply attention by k_scale_float / v_scale_float on read, so logits "
        "and outputs are off by those factors (srt/layers/attention/flashinfer_backend.py, "
        "triton_backend.py); serve with --kv-cache-dtype fp8_e4m3, or remove the scales",
    )
    found = B.backend_problem("trtllm_mha", "fp8_e5m2", True)
    assert found is not None and found[0] == "scales-ignored-by-backend"
    assert B.backend_problem("flashmla", "fp8_e4m3", True) is None  # MLA only: mla_path


def test_backends_for_the_other_kind_of_model() -> None:
    assert B.model_kind_refusal("trtllm_mla", mla=False) == (
        "ValueError: trtllm_mla backend can only be used with MLA models. "
        "(attention_registry.py:96-97)"
    )
    assert B.model_kind_refusal("cutedsl_mla", mla=False) is not None
    assert B.model_kind_refusal("trtllm_mha", mla=True) == (
        "ValueError: trtllm_mha backend can only be used with non-MLA models. "
        "(attention_registry.py:279-280)"
    )
    assert B.model_kind_refusal("trtllm_mla", mla=True) is None
    assert B.model_kind_refusal("flashinfer", mla=True) is None
    assert B.model_kind_refusal(None, mla=False) is None
