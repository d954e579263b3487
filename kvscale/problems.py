"""Problem codes: stable kebab-case identifiers users can script and write policy against.

Every code is documented here once (meaning and fix); the README's problem table and
``kvscale codes`` are generated from this catalogue and a test keeps them in sync.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    """A fact worth knowing that is not a defect (a self-scaled format does not read the
    checkpoint's scales): reported, never fails a run unless named in ``--fail-on``."""


@dataclass(frozen=True)
class ProblemCode:
    code: str
    severity: Severity
    """The usual severity; value problems are errors only when the engine uses the value."""
    meaning: str
    fix: str


@dataclass(frozen=True)
class Problem:
    severity: Severity
    code: str
    layer: str | None
    message: str
    layers: tuple[str, ...] = ()
    """Every layer the problem concerns, when it is one problem for several layers (one cause,
    reported once); ``layer`` is then None, or the single layer."""

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "severity": self.severity.value,
            "code": self.code,
            "layer": self.layer,
            "message": self.message,
        }
        if self.layers:
            doc["layers"] = list(self.layers)
        return doc


def _codes(*entries: ProblemCode) -> dict[str, ProblemCode]:
    return {e.code: e for e in entries}


E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

CATALOGUE: dict[str, ProblemCode] = _codes(
    ProblemCode(
        "layer-refused",
        E,
        "The engine raises while loading this layer's scales (or refuses the whole model at "
        "start): the model does not load.",
        "Follow the message: it names the failing check (assertion, ValueError, "
        "NotImplementedError) and the tensor or config entry that triggers it.",
    ),
    ProblemCode(
        "scale-zero",
        E,
        "A scale is 0. Used as-is (compressed-tensors path) every cached value saturates; on the "
        "base path the engine substitutes another value (warning) or refuses the layer.",
        "Recalibrate, or write the calibrated amax / fp8_max for that layer.",
    ),
    ProblemCode(
        "scale-negative",
        E,
        "A scale is negative. The compressed-tensors path uses it (flipping every cached sign); "
        "the base path treats negative as 'absent'.",
        "Recalibrate, or write the positive amax / fp8_max for that layer.",
    ),
    ProblemCode(
        "scale-nan",
        E,
        "A scale is NaN. Used as-is it turns the whole cache into NaN; the base path ignores a "
        "NaN v/q/prob scale and refuses a NaN k scale.",
        "Recalibrate the layer; a NaN scale usually means calibration saw no data or overflowed.",
    ),
    ProblemCode(
        "scale-infinite",
        E,
        "A scale is infinite. +inf is accepted by both paths and produces NaN downstream.",
        "Recalibrate the layer.",
    ),
    ProblemCode(
        "scale-subnormal",
        E,
        "A scale is a float32 subnormal (below 2^-126): dividing by it saturates every value.",
        "Recalibrate the layer; such a scale is almost certainly a bug in the producer.",
    ),
    ProblemCode(
        "scale-overflow",
        E,
        "A finite checkpoint scale becomes infinite when rounded to the model dtype "
        "(e.g. above 65504 in float16).",
        "Store a smaller scale, or serve the model in bfloat16 (--dtype bfloat16).",
    ),
    ProblemCode(
        "scale-underflow",
        W,
        "A nonzero checkpoint scale rounds to 0 in the model dtype (e.g. below 2^-25 in float16).",
        "Serve the model in bfloat16, or recalibrate.",
    ),
    ProblemCode(
        "precision-lost",
        W,
        "The base path rounds checkpoint scales to the model dtype before use "
        "(0.3 in float32 becomes 0.30078125 in bfloat16): the engine does not use the value on "
        "disk.",
        "Usually harmless; to make it exact, store scales already representable in the model "
        "dtype (kvscale normalize writes the engine's value).",
    ),
    ProblemCode(
        "default-scale-used",
        W,
        "No k/v scale reaches this layer on a quantized KV cache: the engine silently uses 1.0, "
        "which assumes |K|, |V| <= 448 and loses accuracy (vLLM no longer estimates scales at "
        "runtime).",
        "Calibrate KV-cache scales (llm-compressor, ModelOpt, Quark) or fix the names the "
        "producer wrote; kvscale inspect lists what it found.",
    ),
    ProblemCode(
        "scale-missing",
        W,
        "One of k/v has no scale: the engine fills it with the other (base path) or with 1.0 "
        "(compressed-tensors).",
        "Write both k_scale and v_scale.",
    ),
    ProblemCode(
        "coverage-gap",
        W,
        "Some attention layers have KV scales and others do not.",
        "Check the layers listed: a loader or export step dropped their scales.",
    ),
    ProblemCode(
        "declared-scheme-no-scales",
        W,
        "The config declares KV-cache quantization but the checkpoint holds no KV-scale tensors: "
        "every layer runs at 1.0.",
        "Re-export with the calibrated scales, or remove the KV-cache declaration.",
    ),
    ProblemCode(
        "scales-unused",
        W,
        "The checkpoint has KV scales but the effective KV-cache dtype is not a per-tensor "
        "quantized one, so the engine ignores them.",
        "Serve with --kv-cache-dtype fp8 (fp8 and quark checkpoints default to an unquantized "
        "cache); pass the same --kv-cache-dtype to kvscale.",
    ),
    ProblemCode(
        "scales-not-loaded",
        E,
        "The engine's loader never places the checkpoint's k/v scales on this layer, so the KV "
        "cache runs at 1.0 although the checkpoint was calibrated: vLLM's DeepSeek-family "
        "loaders rewrite every scale name with the cache-scale mapper before the MLA-aware "
        "remap can match it, and only ModelOpt configs create scale parameters on MLA layers; "
        "SGLang models that build their attention without quant_config have no KV method "
        "(Qwen3, Llama-4, gpt-oss, ...), some of its loaders drop the names, and its NVFP4 "
        "cache finds no scale on attention modules outside its search (NemotronH's mixer); "
        "architectures that build attention without a quant config (vLLM's Jamba, LFM2) or "
        "whose loader knows no scale name (LongCat-Flash, Sarvam-MLA) refuse the names, so "
        "the model does not load. A warning where kvscale cannot tell whether the "
        "architecture gives its attention a KV method.",
        "No checkpoint name reaches the layer under this engine (kvscale normalize says so): "
        "measure what 1.0 costs with kvscale verify --data, serve with an engine that loads "
        "the scales (kvscale inspect --engine sglang), or --allow scales-not-loaded.",
    ),
    ProblemCode(
        "scales-in-cache",
        INFO,
        "The KV-cache dtype keeps its own scales in the cache (per token and head, per tile or "
        "per block, computed when K/V are written): the checkpoint's k/v scales are not read.",
        "Nothing to fix. To serve with the checkpoint's scales, choose an FP8 per-tensor dtype "
        "(kvscale plan compares them).",
    ),
    ProblemCode(
        "nvfp4-convention-unknown",
        INFO,
        "The checkpoint's NVFP4 k/v values are a global scale, but producers write it under two "
        "conventions (amax/2688 before ModelOpt 0.42, amax/448 since) and nothing in this "
        "checkpoint says which: the engine's block scales differ 6x between the two readings, "
        "both of which are reported (JSON: nvfp4.layers).",
        "Check the producer and its version; kvscale normalize --nvfp4-convention-from "
        "amax/448|amax/2688 --nvfp4-convention TARGET rewrites the values for a known target.",
    ),
    ProblemCode(
        "nvfp4-block-scales-out-of-range",
        W,
        "What the engine computes from the NVFP4 global scale puts the per-16 e4m3 block scales "
        "outside the range the format is used with: above 448 the largest blocks saturate; with "
        "a global scale above amax/448 every block scale shrinks (SGLang's x6 on SM100 applied "
        "to an amax/448 checkpoint leaves the largest at 12.4) and more blocks store zeros.",
        "Rewrite the values for the engine and GPU (kvscale normalize --nvfp4-convention "
        "engine --gpu-arch ARCH), or recalibrate (kvscale calibrate --kv-cache-dtype nvfp4).",
    ),
    ProblemCode(
        "layers-kept-unquantized",
        INFO,
        "--kv-cache-dtype-skip-layers (or a format's own boundary layers, e.g. TurboQuant's "
        "first and last two) keeps these layers' KV cache in the model dtype: their k/v scales "
        "are not read.",
        "Nothing to fix; each such layer costs the model dtype's bytes per token.",
    ),
    ProblemCode(
        "skip-entry-matches-nothing",
        W,
        "A --kv-cache-dtype-skip-layers entry matches no attention layer: vLLM compares it "
        "with str(layer index) (so '01' or ' 1' never match) or with 'sliding_window', which "
        "matches only layers with a sliding window and which MLA layers ignore.",
        "Give plain layer indices (vLLM: --kv-cache-dtype-skip-layers 0 31) or sliding_window.",
    ),
    ProblemCode(
        "v-scale-unused",
        INFO,
        "An MLA layer caches one latent row per token ([kv_c | k_pe]), written and read with "
        "the k scale alone: the checkpoint's v_scale is resolved but never read.",
        "Nothing to fix; calibrate writes k = v = max(amax(kv_c), amax(k_pe)) / 448.",
    ),
    ProblemCode(
        "backend-refuses-scale",
        E,
        "The chosen attention backend raises on a k or q scale other than 1.0 (vLLM's "
        "CUTLASS_MLA: 'does not support scaling for q and kv_latent yet' at the first decode).",
        "Serve with a backend that reads the scale (vLLM FLASHMLA, TRITON_MLA), or with 1.0.",
    ),
    ProblemCode(
        "backend-unsupported-dtype",
        E,
        "No attention backend can run these layers with their KV-cache dtype: the one chosen "
        "with --attention-backend refuses it (vLLM's validate_configuration: the dtype, or the "
        "head size, GPU or model kind it needs with it), or, without the flag, no backend of "
        "the engine takes this dtype for this model (fp8_ds_mla on a model without MLA, "
        "Octave on an NVIDIA GPU). The engine refuses to start.",
        "Choose a backend that runs the dtype (kvscale inspect names them), or another "
        "--kv-cache-dtype.",
    ),
    ProblemCode(
        "no-in-tree-backend",
        W,
        "No attention backend in the engine's own code runs this KV-cache dtype: the engine "
        "starts only with a platform plugin that brings one (vLLM's fp8_inc: Intel Gaudi's "
        "vllm-gaudi). kvscale resolves the scales by the engine's rules, but what the "
        "plugin's cache write does with them is not in the engine's code.",
        "Serve with the plugin and check what its cache write reads, or choose a dtype an "
        "in-tree backend runs (fp8 for a per-tensor FP8 cache).",
    ),
    ProblemCode(
        "scales-without-quant-config",
        W,
        "KV-scale tensors exist but config.json declares no quantization method that loads them.",
        "Add the producer's quantization_config, or remove the stray tensors.",
    ),
    ProblemCode(
        "unmapped-scale-name",
        W,
        "A tensor named like a KV scale is not mapped to any attention layer by this quant "
        "method's name conventions: the engine does not use it (some loaders reject it).",
        "Rename it to <attention prefix>.k_scale / v_scale (kvscale normalize --checkpoint does "
        "this).",
    ),
    ProblemCode(
        "unloadable-kv-tensor",
        E,
        "A tensor of the KV-cache scheme that no engine parameter takes (ModelOpt's affine KV "
        "cache writes k_proj.k_bias / v_proj.v_bias): the engine's loader raises, so the model "
        "does not load.",
        "Re-export with a symmetric FP8 KV-cache config (no affine bias), or serve with an engine "
        "that supports the scheme.",
    ),
    ProblemCode(
        "ignored-kv-tensor",
        W,
        "A tensor of the KV-cache scheme that no engine parameter takes is silently skipped "
        "(SGLang drops ModelOpt's affine-KV k_bias / v_bias): the cache is written without it.",
        "Check the tensor is zero (then nothing changes), or re-export with a symmetric FP8 "
        "KV-cache config.",
    ),
    ProblemCode(
        "dropped-by-architecture",
        E,
        "The model's own name mapper rewrites this tensor before the KV-scale conventions run, "
        "so the engine cannot load it as a KV scale.",
        "Rename it to <attention prefix>.k_scale / v_scale (kvscale normalize --checkpoint does "
        "this).",
    ),
    ProblemCode(
        "duplicate-scale-source",
        W,
        "Two tensors feed the same scale parameter; the one loaded last wins. An error when "
        "their values differ.",
        "Keep one tensor per scale.",
    ),
    ProblemCode(
        "scale-equals-default",
        W,
        "A scale read from the checkpoint is exactly 1.0, indistinguishable from the engine's "
        "uncalibrated default (ModelOpt clamps scales below 1.0 up to 1.0).",
        "If 1.0 is the calibrated value, allow the code (--allow scale-equals-default).",
    ),
    ProblemCode(
        "uncalibrated-q-prob",
        W,
        "FP8 attention with a 1.0 q or prob scale: the engine warns 'Using uncalibrated "
        "q_scale ... with fp8 attention'.",
        "Export q/prob scales (ModelOpt-style q_proj / prob_output_scale) or use an attention "
        "backend that keeps queries in bf16.",
    ),
    ProblemCode(
        "legacy-kv-scale",
        W,
        "The deprecated single kv_scale is used for both k and v (AutoFP8 before 2024-07).",
        "Write separate k_scale and v_scale (kvscale normalize --checkpoint does this).",
    ),
    ProblemCode(
        "unusual-scale-dtype",
        W,
        "A scale is stored in an integer or 8-bit float dtype; it is converted on load.",
        "Store scales as float32.",
    ),
    ProblemCode(
        "per-head-truncated",
        W,
        "A compressed-tensors attn_head scale holds more values than the layer has kv heads; "
        "the engine silently keeps the first ones.",
        "Write exactly num_key_value_heads values ([num_kv_heads, 1, 1]).",
    ),
    ProblemCode(
        "per-head-broadcast",
        W,
        "A compressed-tensors attn_head layer got a single value, which the engine broadcasts "
        "to every head.",
        "Write per-head scales, or declare strategy 'tensor'.",
    ),
    ProblemCode(
        "index-missing-tensor",
        W,
        "A shard holds tensors that model.safetensors.index.json does not list (vLLM loads "
        "them; transformers ignores them).",
        "Regenerate the index.",
    ),
    ProblemCode(
        "duplicate-tensor",
        W,
        "A tensor name occurs in more than one shard; the engine keeps the last one loaded.",
        "Remove the stale copy.",
    ),
    ProblemCode(
        "no-attention-layers",
        E,
        "No attention layer could be found from config.json or the weight names: there is "
        "nothing whose scales could be checked, which is not a pass.",
        "Pass a model checkpoint: a directory with config.json (num_hidden_layers) or a "
        "safetensors file with attention weights.",
    ),
    # --- engine-specific (the engine named in the message) ---
    ProblemCode(
        "kv-scheme-ignored",
        W,
        "SGLang: the checkpoint declares a KV-cache scheme the engine does not support (e.g. "
        "compressed-tensors attn_head); it logs a warning, creates no KV-cache quant method and "
        "drops every k/v scale tensor: the layers run at 1.0.",
        "Write per-tensor scales with a static per-tensor scheme (kvscale normalize --engine "
        "sglang --checkpoint does this).",
    ),
    ProblemCode(
        "zero-scale-replaced",
        W,
        "SGLang: a zero k/v scale counts as absent and is silently replaced by 1.0 (vLLM refuses "
        "the layer): the layer runs uncalibrated.",
        "Recalibrate the layer (kvscale calibrate).",
    ),
    ProblemCode(
        "per-head-refused",
        W,
        "SGLang loads one value per k/v scale: per-head tensors fail its loader's size assertion "
        "and the model does not start.",
        "Write the max over heads as a [] tensor (kvscale normalize --engine sglang --checkpoint).",
    ),
    ProblemCode(
        "host-device-disagree",
        E,
        "The engine's host copy of a scale differs from its device tensor (e.g. a fnuz-doubled "
        "value beyond float32: inf on the device, finite on the host), so backends that read "
        "different copies disagree.",
        "Store a smaller scale; recalibrate.",
    ),
    ProblemCode(
        "scales-on-unquantized-cache",
        E,
        "SGLang: the KV cache is not FP8, so the write does not divide by the checkpoint scales, "
        "but FlashInfer and Triton still multiply attention by them on read: logits and outputs "
        "are off by those factors.",
        "Serve with --kv-cache-dtype fp8_e4m3 (or an attention backend that gates on the cache "
        "dtype: fa3, trtllm_mha), or remove the scales.",
    ),
    ProblemCode(
        "scales-ignored-by-backend",
        W,
        "The attention backend does not apply the checkpoint's scales as written: it writes "
        "and reads the cache with different scales (an error: attention is off by the scale), "
        "or ignores them on both sides (the cache runs at 1.0). SGLang's MLA backends differ "
        "(flashinfer and fa3 ignore them; flashmla, trtllm_mla and cutedsl_mla multiply the "
        "scores by k; triton writes a prompt unscaled and decode steps divided by k, and reads "
        "all of it with k and v).",
        "Use another attention backend, or a KV-cache dtype the backend applies scales to.",
    ),
    ProblemCode(
        "shared-cache-scale-mismatch",
        E,
        "A KV-sharing layer (Gemma-4's last num_kv_shared_layers) reads another layer's cache "
        "with its own k/v scales while the cache was written with that layer's: where they "
        "differ attention is off by the ratio (NVFP4: one global scale per shared slot, from "
        "the last layer using it).",
        "Give each sharing layer the k/v scales of the layer whose cache it reads (kvscale "
        "calibrate measures K/V where that layer writes them).",
    ),
    ProblemCode(
        "per-head-collapsed",
        E,
        "vLLM's Triton cache write reads only element 0 of the scale tensor: with per-head "
        "scales every head is written with head 0's scale while attention reads its own.",
        "Serve per-head checkpoints with the FlashAttention backend, or use per-tensor scales.",
    ),
    ProblemCode(
        "format-overridden-by-backend",
        W,
        "vLLM's Triton cache write always stores the platform's e4m3 type, also for "
        "--kv-cache-dtype fp8_e5m2.",
        "Use --kv-cache-dtype fp8_e4m3 with that backend, or the FlashAttention backend.",
    ),
    ProblemCode(
        "misleading-engine-log",
        W,
        "The engine logs a message that is wrong for this checkpoint (e.g. SGLang's 'no scaling "
        "factors provided' although checkpoint scales were loaded).",
        "Nothing to fix in the checkpoint; ignore the log line (--allow misleading-engine-log).",
    ),
    ProblemCode(
        "scales-never-used",
        W,
        "TensorRT-LLM's PyTorch backend runs an FP8 KV cache at 1.0 whatever the checkpoint holds "
        "(it forwards KV scales only for an FP4 cache).",
        "Expect uncalibrated FP8 accuracy, or serve with an engine that loads the scales.",
    ),
    # --- kvscale normalize ---
    ProblemCode(
        "invalid-scale-value",
        E,
        "normalize: a value the engine would use is not a positive finite number, so it cannot "
        "be written as an explicit scale.",
        "Recalibrate the layer, or pass --unsafe-write-unfixed to write its tensors as they are "
        "(the engine still uses the invalid value).",
    ),
    ProblemCode(
        "unsafe-tensor-name",
        E,
        "normalize: a layer name holds path separators or control characters; kvscale writes no "
        "tensor name derived from it.",
        "Rename the checkpoint's tensors, or pass --unsafe-write-unfixed to write the layer as it "
        "is.",
    ),
    ProblemCode(
        "unmappable-name",
        E,
        "normalize: no checkpoint name maps back to this layer's scale under the checkpoint's "
        "quant method, so it cannot be written explicitly.",
        "Pass --unsafe-write-unfixed to write the layer as it is.",
    ),
    ProblemCode(
        "no-loadable-name",
        E,
        "normalize --checkpoint: the engine's loader takes no checkpoint name for these k/v "
        "scales in any attention layer of this architecture (vLLM 0.33.0's DeepSeek-family "
        "loaders drop every k/v name on MLA layers; Jamba and LFM2 refuse them): a normalized "
        "copy would still run at the default, so kvscale writes none.",
        "Run without --checkpoint for kv_scales.json (what the engine holds), serve with an "
        "engine that loads the scales (kvscale inspect --engine sglang), or measure what the "
        "default costs with kvscale verify --data.",
    ),
    ProblemCode(
        "name-collision",
        E,
        "normalize: a tensor the copy must write already exists under that name and is kept.",
        "Remove the stale tensor from the checkpoint (--unsafe-write-unfixed cannot resolve this).",
    ),
    ProblemCode(
        "layer-skipped",
        W,
        "normalize --unsafe-write-unfixed: a layer that could not be normalized is written "
        "unfixed, its tensors as they are.",
        "Fix the reason given; the copy still loads as the original does for this layer.",
    ),
    ProblemCode(
        "kept-as-is",
        W,
        "normalize: explicit tensors would not reproduce the engine's values for this layer "
        "(e.g. compressed-tensors attn_head without config_groups), so it is left as it is.",
        "Nothing to do: the copy loads as the original does.",
    ),
    # --- kvscale calibrate ---
    ProblemCode(
        "fewer-tokens-than-asked",
        W,
        "calibrate: the data file holds fewer samples or tokens than --samples x --seq-len; the "
        "scales come from what it holds (the output says how many).",
        "Give more data, or ask for fewer samples to silence this.",
    ),
    ProblemCode(
        "layer-not-calibrated",
        W,
        "calibrate: a decoder layer has no KV cache of its own (linear attention, Mamba, a shared "
        "cache) and gets no scale; as an error, an attention layer of the target that MODEL did "
        "not calibrate.",
        "Nothing to do for cache-less layers; for target layers, calibrate the model the target "
        "was made from.",
    ),
    ProblemCode(
        "nonfinite-activations",
        E,
        "calibrate: a layer's K or V held NaN or inf on the calibration data, so no scale exists "
        "for it; nothing is written.",
        "Check the model in its dtype on this data (float16 overflows are common: try --dtype "
        "bfloat16 or float32).",
    ),
    ProblemCode(
        "scales-replaced",
        W,
        "calibrate --checkpoint: the target already had k/v scales for these layers; the copy "
        "holds the calibrated ones instead.",
        "Compare both with kvscale diff TARGET DIR/checkpoint.",
    ),
    ProblemCode(
        "calibrated-scales-not-loaded",
        W,
        "calibrate: the engine's loader takes no checkpoint name for these layers' k/v scales "
        "(vLLM 0.33.0's DeepSeek-family loaders, for MLA layers), so it runs them at 1.0 "
        "whatever a checkpoint holds: kv_scales.json/.safetensors hold the calibrated values, "
        "and a --checkpoint copy carries no scale for these layers.",
        "Serve with an engine that loads them (kvscale calibrate --engine sglang writes "
        "self_attn.k_proj.k_scale), or measure what 1.0 costs: kvscale verify DIR --data FILE.",
    ),
    ProblemCode(
        "json-scales-disagree",
        W,
        "normalize --format sglang-json: SGLang's --quantization-param-path file holds one scale "
        "per layer for both K and V; layers whose k and v differ get max(k, v) (no saturation, "
        "less resolution for the smaller one).",
        "Prefer the checkpoint path (normalize --checkpoint --engine sglang), which keeps k and "
        "v apart.",
    ),
    ProblemCode(
        "sglang-json-incomplete",
        E,
        "normalize --format sglang-json: SGLang refuses a --quantization-param-path file that "
        "lacks a hidden layer (and then runs every layer at 1.0), so none is written.",
        "Normalize a checkpoint whose every hidden layer has k/v scales.",
    ),
    ProblemCode(
        "name-repaired",
        W,
        "normalize --checkpoint: scale tensors the engine cannot load under their names (the "
        "architecture's own rename drops them, e.g. Quark k_proj.output_scale on Gemma2, or the "
        "quant method does not map that convention) are written under names it loads, with the "
        "values their producer meant.",
        "Nothing to do: inspect the copy to see the scales the engine now loads.",
    ),
    ProblemCode(
        "kv-dtype-promoted",
        W,
        "normalize: the effective KV-cache dtype reads no k/v scales (unquantized, or a format "
        "that computes its own scales when K/V are written, such as the per-token-head ones), "
        "or the skip list keeps some layers unquantized; the values written for those layers "
        "are those of --kv-cache-dtype fp8 (or the layer's dtype without the skip list), so "
        "loading the copy is unchanged and the calibrated scales stay in it.",
        "Normalize for the --kv-cache-dtype you serve with; a dtype that computes its own "
        "scales has nothing to normalize.",
    ),
    ProblemCode(
        "default-made-explicit",
        W,
        "normalize: a layer that used the engine's 1.0 default gets an explicit 1.0; on ROCm fnuz "
        "the engine doubles explicit scales but not the default, so the copy loads 2.0 there.",
        "Calibrate the layer, or normalize with --platform fnuz for a copy served on MI300.",
    ),
    ProblemCode(
        "fnuz-specific-copy",
        W,
        "normalize --platform fnuz: default layers hold 0.5 so that fnuz loads 1.0; the copy is "
        "for ROCm fnuz only (OCP engines would load 0.5).",
        "Normalize again without --platform fnuz for NVIDIA deployments.",
    ),
    ProblemCode(
        "no-kv-scale-parameters",
        W,
        "normalize: no quant method of this checkpoint creates KV-scale parameters; the "
        "checkpoint copy is left unchanged.",
        "Add the producer's quantization_config if the checkpoint is meant to carry KV scales.",
    ),
    ProblemCode(
        "file-not-copied",
        W,
        "normalize: a file or directory of the checkpoint is not copied (e.g. .git, a symlinked "
        "directory).",
        "Copy it yourself if the deployment needs it.",
    ),
    ProblemCode(
        "unknown-quant-method",
        W,
        "config.json has a quantization_config without a quant_method the engine recognizes "
        "for KV-cache scales.",
        "Check the producer's export; kvscale treats the model as unquantized.",
    ),
)


def problem(
    code: str,
    message: str,
    layer: str | None = None,
    *,
    severity: Severity | None = None,
    layers: tuple[str, ...] = (),
) -> Problem:
    entry = CATALOGUE[code]
    return Problem(severity or entry.severity, code, layer, message, layers)
