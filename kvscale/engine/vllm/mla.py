"""vLLM 0.33.0 on MLA models (DeepSeek-V2/V3/R1/V3.2, Kimi-K2/K2.5, GLM-4.7-Flash, GLM-5,
Mistral-Large-3, BailingMoeV3, LongCat-Flash, Sarvam-MLA): which layers are latent, the
KV-cache dtype their ``MLAAttention`` builds, and what the MLA attention backends do with the
k scale.

Which checkpoint names reach an MLA layer is the loaders' business
(``kvscale.engine.vllm.placement``); this module holds what follows from the layer being
``MLAAttention`` rather than ``Attention``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvscale.engine.base import EngineSettings, QuantConfig, ResolvedLayer, Rule
from kvscale.engine.options import EngineOptions
from kvscale.engine.vllm import backends, placement
from kvscale.engine.vllm import kv_cache_dtypes as kv_dtypes
from kvscale.model_config import ModelShape
from kvscale.problems import Problem, problem

MAX_NAMED = 3


def is_latent(shape: ModelShape) -> bool:
    """The model's attention layers cache one latent row per token: ``MLAAttention`` (or a
    custom MLA layer). Keyed on the architecture (vLLM's registry), not on ``kv_lora_rank``:
    MiniCPM3 has one and plain ``Attention``; an architecture vLLM does not register loads
    through the Transformers backend, where ``kv_lora_rank`` decides (``ModelConfig.use_mla``)."""
    found = placement.resolve_architecture(shape)
    if found is None:
        return shape.latent_width is not None and not placement.mla_disabled()
    _, facts, _ = found
    custom = "custom-mla" in facts.holders and "Attention" not in facts.holders
    return placement.holds_mla(facts, shape) or custom


# --- the KV-cache dtype of MLA layers ------------------------------------------------------

_SM10X = ("sm100", "sm103")


def model_kv_cache_dtype(
    requested: str, quant: QuantConfig, shape: ModelShape, options: EngineOptions
) -> str:
    """The dtype an MLA model's layers cache, from the ``--kv-cache-dtype`` asked for:

    1. ``auto`` with a ModelOpt KV-cache config becomes its dtype
       (``resolve_kv_cache_dtype_string``); ``MLAAttention.__init__`` lacks ``Attention``'s
       promotion of ``auto`` to ``fp8`` for a compressed-tensors ``kv_cache_scheme``;
    2. the architecture's config hook (``MODELS_CONFIG_MAP``, model_executor/models/config.py)
       on the result: ``DeepseekV32ForCausalLM`` serves ``bfloat16`` as ``auto``;
       ``GlmMoeDsaForCausalLM`` turns ``auto`` into ``fp8_e4m3`` on SM10x CUDA devices;
    3. a sparse model's backend canonicalises it (``_canonicalize_sparse_mla_kv_cache_dtype``,
       layers/attention/mla_attention.py), which also rewrites the engine's
       ``cache_config.cache_dtype``: FLASHMLA_SPARSE serves every quantized dtype but
       ``nvfp4_ds_mla`` as ``fp8_ds_mla``; FLASHINFER_MLA_SPARSE_SM120 serves ``auto``,
       ``fp8`` and ``fp8_e4m3`` so.
    """
    found = placement.resolve_architecture(shape)
    arch = found[0] if found is not None else ""
    dtype = requested
    if dtype == "auto" and quant.quant_method == "modelopt":
        dtype = quant.auto_kv_cache_dtype
    if arch == "DeepseekV32ForCausalLM" and dtype == "bfloat16":
        dtype = "auto"
    if (
        arch == "GlmMoeDsaForCausalLM"
        and dtype == "auto"
        and options.gpu_arch in _SM10X
        and options.platform_name == "ocp"
    ):
        dtype = "fp8_e4m3"
    if shape.index_topk is not None:
        backend = (options.attention_backend or "").upper() or default_sparse_backend(
            dtype, options.gpu_arch, options.platform_name
        )
        dtype = backends.sparse_mla_kv_cache_dtype(backend, dtype)
    return dtype


def default_sparse_backend(kv_cache_dtype: str, gpu_arch: str | None, platform: str) -> str:
    """The sparse MLA backend vLLM picks without ``--attention-backend``
    (``_get_backend_priorities``, platforms/cuda.py; ROCm: ``ROCM_AITER_MLA_SPARSE``), for a
    576-wide latent row. Without ``--gpu-arch`` kvscale assumes Hopper (SM90)."""
    if platform == "fnuz":
        return "ROCM_AITER_MLA_SPARSE"
    quantized = kv_dtypes.is_quantized_kv_cache(kv_cache_dtype)
    if gpu_arch in _SM10X:
        return "FLASHINFER_MLA_SPARSE" if quantized else "FLASHMLA_SPARSE"
    if gpu_arch in ("sm120", "sm121"):
        return "FLASHINFER_MLA_SPARSE_SM120"
    # SM90: FLASH_ATTN_MLA_SPARSE runs no fp8, so a quantized cache goes to FLASHMLA_SPARSE.
    return "FLASHMLA_SPARSE" if quantized else "FLASH_ATTN_MLA_SPARSE"


def apply_to_settings(
    settings: EngineSettings, quant: QuantConfig, shape: ModelShape, options: EngineOptions
) -> EngineSettings:
    """The model-level settings of an MLA model: its layers' dtype
    (``model_kv_cache_dtype``), the latent row as the head size, and the ``fp8_e5m2`` refusal
    only where the MLA layer has a KV method (``_init_kv_cache_quant`` raises from the quant
    method's check; compressed-tensors gives ``MLAAttention`` none). A model that is not latent
    keeps its settings (MiniCPM3 caches per-head K/V of ``head_dim``)."""
    if not is_latent(shape):
        if shape.latent_width is not None and settings.head_size == shape.latent_width:
            return replace(settings, head_size=shape.head_size)
        return settings
    dtype = model_kv_cache_dtype(options.requested_kv_cache_dtype, quant, shape, options)
    model = placement.model_of(quant, shape)
    has_method = bool(model is not None and model.params)
    return replace(
        settings,
        kv_cache_dtype=dtype,
        head_size=shape.latent_width,
        dtype_refusals=settings.dtype_refusals if has_method else {},
        uses_kv_scales=kv_dtypes.cache_format(dtype, settings.platform).scale_use.reads_checkpoint,
    )


# --- what the MLA backends do with the scales ----------------------------------------------


@dataclass(frozen=True)
class MlaBackend:
    """An MLA attention backend (``--attention-backend`` name) that does not apply the k scale
    consistently to what the latent write divided by it."""

    name: str
    reads: str
    """``refuses``: raises on a k or q scale other than 1.0; ``k_pe_unscaled``: reads the
    latent with k but its RoPE part with 1.0."""
    where: str
    """The vLLM 0.33.0 code that decides it."""


MLA_BACKENDS: dict[str, MlaBackend] = {
    b.name: b
    for b in (
        MlaBackend(
            "CUTLASS_MLA",
            "refuses",
            "v1/attention/backends/mla/cutlass_mla.py: NotImplementedError('CutlassMLAImpl does "
            "not support scaling for q and kv_latent yet') at the first decode",
        ),
        MlaBackend(
            "FLASHINFER_MLA_SPARSE_SM90",
            "k_pe_unscaled",
            "v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py: ckv_scale=_k_scale_float, "
            "kpe_scale=1.0",
        ),
    )
}
"""The others read ``_k_scale`` (and ``_q_scale``) for the whole row as the write used it:
FLASHMLA (``descale_q``/``descale_k``), TRITON_MLA (``k_scale=v_scale=_k_scale``),
FLASHINFER_MLA and FLASHINFER_MLA_SPARSE (``bmm1 *= q*k``, ``bmm2 *= k``), TOKENSPEED_MLA,
ROCM_AITER_MLA (``kv_scale=_k_scale``); FLASHMLA_SPARSE and FLASHINFER_MLA_SPARSE_SM120 keep
their own scales in the cache (``fp8_ds_mla``); FLASH_ATTN_MLA(_SPARSE) and XPU_MLA_SPARSE run
no quantized cache (the backend table refuses the dtype)."""


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def backend_problems(layers: Sequence[ResolvedLayer], settings: EngineSettings) -> list[Problem]:
    """What the MLA backend chosen with ``--attention-backend`` does with each latent layer's
    scales: CUTLASS_MLA refuses a k or q other than 1.0 (``backend-refuses-scale``);
    FLASHINFER_MLA_SPARSE_SM90 reads the RoPE part unscaled although the write divided it by k
    (``scales-ignored-by-backend``). A backend that runs no such dtype at all is the backend
    table's refusal (``backends.reasons``: ``backend-unsupported-dtype``)."""
    backend = MLA_BACKENDS.get((settings.attention_backend or "").upper())
    if backend is None:
        return []
    latent = [
        layer
        for layer in layers
        if layer.cache is not None
        and layer.cache.latent
        and layer.rule is not Rule.ERROR
        and layer.cache.scale_use.reads_checkpoint
    ]
    out: list[Problem] = []
    if backend.reads == "refuses":
        hit = [
            lay.name for lay in latent if lay.value("k_scale") != 1.0 or lay.value("q_scale") != 1.0
        ]
        if hit:
            out.append(
                problem(
                    "backend-refuses-scale",
                    f"--attention-backend {backend.name.lower()} raises at the first decode on a "
                    f"k or q scale other than 1.0, held by {len(hit)} of {len(layers)} layers "
                    f"({_names(hit)}): {backend.where}",
                    hit[0] if len(hit) == 1 else None,
                    layers=tuple(hit),
                )
            )
    elif backend.reads == "k_pe_unscaled":
        hit = [lay.name for lay in latent if lay.value("k_scale") != 1.0]
        if hit:
            out.append(
                problem(
                    "scales-ignored-by-backend",
                    f"--attention-backend {backend.name.lower()} writes the whole latent row "
                    f"divided by k_scale but reads its RoPE part (k_pe) with 1.0 in {len(hit)} "
                    f"layers ({_names(hit)}): {backend.where}",
                    hit[0] if len(hit) == 1 else None,
                    layers=tuple(hit),
                )
            )
    return out


def checkpoint_names(prefix: str, kind: str) -> tuple[str, ...]:
    """Names a normalized checkpoint may use for one scale of an MLA attention block, in the
    order kvscale prefers them: the producers' own (llm-compressor ``<prefix>.k_scale``,
    ModelOpt ``<prefix>.k_proj.k_scale``), then vLLM's parameter paths (DeepSeek's wrapped
    ``mla_attn.mla_attn``, V3.2's block itself, an ``Attention``'s ``attn``)."""
    out = [f"{prefix}.{kind}"]
    if kind in ("k_scale", "v_scale"):
        out.append(f"{prefix}.{kind[0]}_proj.{kind}")
    out += [f"{prefix}.mla_attn.mla_attn.{kind}", f"{prefix}.attn.{kind}"]
    return tuple(out)
