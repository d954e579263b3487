"""The model on real text with its KV cache quantized: perplexity and KL, per cache variant.

For every sample (batch 1, ``use_cache=False``, through ``attention_hook``) the model runs once
unquantized (the reference: its own K/V, what an unquantized cache holds) and once per
``CacheVariant``: every layer the variant names gets its K and V replaced, at the attention
function (the cache point), by what the cache gives back, ``LayerCodec.k(x)`` / ``.v(x)``: the
round trip through the variant's format (FP8 at a scale, NVFP4, per-token-head, ...; built by
``kvscale.kernel.roundtrip``), as float32, then cast to the model dtype the attention computes
in. With a float32 model the attention sees exactly what the cache dequantizes to; with
bf16/fp16, that rounded once to the model dtype (the engines' kernels multiply inside the
attention in float32: at most half an ulp of the model dtype per element, far below the
quantization itself).

MLA layers (``AttentionLayer.latent``) are replaced where their cache is written: with any latent
layer the model runs with ``use_cache=True`` and a fresh ``RecordingCache`` per forward pass, and
a latent codec (``LayerCodec(row_roundtrip, latent=True)``) replaces the ``(kv_c, k_pe)`` that
``cache.update`` gets by what the cache gives back for the row ``[kv_c | k_pe]`` (``[tokens,
kv_lora_rank + rope_dim]``; vLLM 0.33.0 ``concat_and_cache_mla`` then the readers' ``fp8 *
k_scale``), so ``expand_kv`` and the attention read the dequantized latent, as vLLM's decode
does. transformers' ``k_pe`` is de-interleaved relative to vLLM's GPT-J order when
``rope_interleave`` is set; a per-tensor scale quantizes each element on its own, so the order
changes no value. Every token attends to the quantized latent of every token, itself included:
vLLM's decode, where the new token's row is written before it is read (its prefill reads the new
tokens' own latent unquantized: ``MLAAttention.forward_impl`` passes ``k_c_normed``/``k_pe`` to
``forward_mha``, ``vllm/model_executor/layers/attention/mla_attention.py`` at 0.33.0).

Each variant's loss is the model's own (``model(input_ids, labels=input_ids).loss``: mean
next-token cross entropy in float32); over several samples the mean is weighted by predicted
tokens. KL is ``KL(P_unquantized || P_variant)`` of the next-token distributions at the same
positions (``_Reference``: in chunks of positions, each clamped at 0), mean and max
over all positions.

``reference_hidden`` (``kvscale.model.capture``'s ``keep_final_hidden``: per sample, the
decoder's last hidden state of an unquantized pass) replaces the reference's forward passes: its
logits are the output embeddings applied to that state and its loss the model's own
``loss_function`` of them, what a transformers ``*ForCausalLM.forward`` computes after its decoder
(``LlamaForCausalLM.forward``, transformers 5). The first sample checks it: the reference runs
once for real there and its logits and loss must equal the recomputed ones bit for bit, or the
reference runs for every sample (``ModelEvaluation.reference_from_hidden`` says which).

``activations_out`` saves the reference run's K/V (``<layer>.k`` / ``<layer>.v``, ``[tokens,
num_kv_heads, head_size]``; an MLA layer's two halves of the cache row, ``<layer>.kv_c``
``[tokens, kv_lora_rank]`` and ``<layer>.k_pe`` ``[tokens, rope_dim]``, the arguments of vLLM's
``concat_and_cache_mla``): the tensors ``calibrate`` measures, on which ``verify`` computes its
per-layer statistics (``kvscale.core.verify.stats``) and ``plan`` quantizes each candidate.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kvscale.errors import LimitExceededError, UsageError
from kvscale.io.staging import write_file_atomic
from kvscale.limits import MAX_ACTIVATION_BYTES
from kvscale.model.hook import (
    HookError,
    RecordingCache,
    attention_hook,
    cache_kwarg_name,
    quiet_transformers,
)
from kvscale.model.load import LoadedModel, UnsupportedModelError
from kvscale.progress import ProgressEvent, ProgressFn

__all__ = [
    "ACTIVATION_DTYPES",
    "KL_CHUNK",
    "REFERENCE",
    "CacheVariant",
    "LayerCodec",
    "ModelEvaluation",
    "Roundtrip",
    "VariantResult",
    "evaluate_model",
    "latent_rows",
]

Roundtrip = Callable[[torch.Tensor], torch.Tensor]
"""``roundtrip(x) -> what the cache gives back``: ``x`` ``[tokens, num_kv_heads, head_size]`` (an
MLA row: ``[tokens, kv_lora_rank + rope_dim]``) in the model dtype, the result float32 of the
same shape, on x's device."""

REFERENCE = "unquantized"
"""The reference run's name: the model's own K/V, every variant's KL is against it."""
KL_CHUNK = 256
"""Positions per chunk of the KL's log-softmax, difference, product and row sums on a GPU."""
KL_CHUNK_BYTES_CPU = 6 * 2**20
"""On the CPU, a chunk holds as many positions as make about this many bytes of float32
log-probabilities (32 of a 49,152-token vocabulary), at least 2: its passes (log-softmax,
difference, product, row sums) then find the chunk in cache. On the 2-core VM one variant's KL
over 511 positions of 49,152 took 18 ms in chunks of 32, 20 in chunks of 16 or 64, 29 in
chunks of 256 (``benchmarks/bench_plan_parts.py``, ``kl_chunks``)."""
IGNORE_INDEX = -100
"""transformers' ``ForCausalLMLoss`` default: the label of the last position, which predicts
nothing."""
ACTIVATION_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass(frozen=True)
class LayerCodec:
    """How one layer's cache stores K and V: ``k`` and ``v`` round trips; for an MLA layer
    (``latent=True``) ``k`` is the round trip of the whole cache row ``[kv_c | k_pe]`` and ``v``
    is None (the latent has no V of its own)."""

    k: Roundtrip
    v: Roundtrip | None = None
    latent: bool = False

    def __post_init__(self) -> None:
        if self.latent and self.v is not None:
            raise UsageError("a latent (MLA) codec has one round trip for the row: pass v=None")
        if not self.latent and self.v is None:
            raise UsageError("a K/V codec needs a v round trip")


@dataclass(frozen=True)
class CacheVariant:
    """One configuration of the KV cache to run the model with."""

    name: str
    layers: Mapping[str, LayerCodec]
    """Engine layer name -> its codec; a layer not named keeps its K/V unquantized."""


@dataclass(frozen=True)
class VariantResult:
    name: str
    loss: float
    """Mean next-token cross entropy (nats) over the predicted tokens."""
    ppl: float
    kl_mean: float
    """Mean KL(unquantized || this) per predicted position; 0.0 for the reference."""
    kl_max: float
    tokens: int
    """Predicted tokens (each sample's length minus one)."""
    seconds: float = 0.0
    """Wall time of this variant's forward passes, its K/V round trips included."""


@dataclass(frozen=True)
class ModelEvaluation:
    samples: int
    tokens: int
    """Tokens run through the model (per variant)."""
    variants: tuple[VariantResult, ...]
    """The reference first, then each variant in the order given."""
    activations_path: str | None
    reference_from_hidden: bool = False
    """The reference's logits came from ``reference_hidden`` (checked on the first sample)."""
    check_seconds: float = 0.0
    """Wall time of that check, not in the reference's seconds: its one real reference pass,
    or with ``reference_output`` the comparison alone."""

    @property
    def forward_passes(self) -> int:
        """Passes of the model over the samples: one per variant, and the reference's own
        unless it came from ``reference_hidden`` (whose check runs one sample, or none with
        ``reference_output``)."""
        return len(self.variants) - (1 if self.reference_from_hidden else 0)

    def variant(self, name: str) -> VariantResult:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)


def _flat(x: torch.Tensor) -> torch.Tensor:
    """``[B, H, S, D]`` (the attention function's layout) -> tokens-major ``[B*S, H, D]``."""
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b * s, h, d)


def _back(deq: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    b, h, s, d = like.shape
    _check_codec_output(deq, (b * s, h, d))
    return deq.to(like.dtype).reshape(b, s, h, d).transpose(1, 2)


def _check_codec_output(deq: torch.Tensor, shape: tuple[int, ...]) -> None:
    if deq.dtype != torch.float32 or tuple(deq.shape) != shape:
        raise UsageError(
            f"a codec returned {deq.dtype} {tuple(deq.shape)}, expected float32 {shape}"
        )


def latent_rows(kv_c: torch.Tensor, k_pe: torch.Tensor) -> torch.Tensor:
    """``cache.update``'s ``[B, 1, S, kv_lora_rank]`` and ``[B, 1, S, rope_dim]`` -> the cache
    rows ``[B*S, kv_lora_rank + rope_dim]`` (``[kv_c | k_pe]``, vLLM's row layout)."""
    b, _, s, _ = kv_c.shape
    return torch.cat([kv_c, k_pe], dim=-1).reshape(b * s, -1)


def _latent_back(
    deq: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    b, _, s, rank = kv_c.shape
    _check_codec_output(deq, (b * s, rank + k_pe.shape[-1]))
    rows = deq.to(kv_c.dtype).reshape(b, 1, s, -1)
    return rows[..., :rank].contiguous(), rows[..., rank:].contiguous()


class _ReusedLogits:
    """On the CPU, the causal-LM head (a bias-free ``torch.nn.Linear``) writes its logits into
    one tensor that every pass reuses, instead of a fresh one per pass.

    A fresh ``[1, 512, 49,152]`` bf16 tensor is 48 MiB: glibc serves it with a fresh mmap (past
    its 32 MiB mmap threshold) and unmaps it when freed, so each of its 12,289 pages faults on
    first write: the head took 188 ms per SmolLM2 sample that way, 175 ms into the reused tensor
    (2-core VM, torch 2.13; ``benchmarks/bench_plan_parts.py``, ``logits_head``). Without a
    bias, ``Linear`` is ``matmul(input, weight.t())`` (``aten/src/ATen/native/Linear.cpp``);
    ``matmul``'s ``out=`` form runs the same product into the given tensor
    (``tests/model/test_evaluate.py`` checks the bits and that no new tensor is made), and the
    check of the reference from hidden states compares it with the model's own logits on the
    first sample. Each pass's logits are read (log-softmax, loss, KL) before the next pass
    writes them again; a caller that keeps two passes' logits at once (the reference's check)
    leaves one of them outside ``writing()``.

    Another kind of head (a bias, a subclass, a patched ``forward``, another device) keeps its own
    forward."""

    def __init__(self, model: Any) -> None:
        get = getattr(model, "get_output_embeddings", None)
        head = get() if callable(get) else None
        usable = (
            type(head) is torch.nn.Linear
            and head.bias is None
            and head.weight.device.type == "cpu"
            and "forward" not in vars(head)  # another wrapper (accelerate's offload) owns it
        )
        self.head: torch.nn.Linear | None = head if usable else None
        self._storage: torch.Tensor | None = None

    def _forward(self, hidden: torch.Tensor) -> torch.Tensor:
        assert self.head is not None
        weight = self.head.weight
        if hidden.dtype != weight.dtype or hidden.device != weight.device:
            return torch.nn.functional.linear(hidden, weight)  # its own error or promotion
        shape = (*hidden.shape[:-1], weight.shape[0])
        numel = math.prod(shape)
        if self._storage is None or self._storage.numel() < numel:
            self._storage = None  # the old one is freed before the new one is made
            self._storage = torch.empty(numel, dtype=weight.dtype, device=weight.device)
        out = self._storage[:numel].view(shape)
        return torch.matmul(hidden, weight.t(), out=out)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """While inside, the head's logits go to the reused tensor."""
        head = self.head
        if head is None:
            yield
            return
        head.forward = self._forward  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            del head.forward


def _check_variants(loaded: LoadedModel, variants: Sequence[CacheVariant]) -> None:
    layers = {layer.engine_name: layer for layer in loaded.layers}
    seen: set[str] = {REFERENCE}
    for variant in variants:
        if variant.name in seen:
            raise UsageError(f"variant {variant.name!r} given twice (or named like the reference)")
        seen.add(variant.name)
        extra = sorted(set(variant.layers) - set(layers))
        if extra:
            raise UsageError(
                f"variant {variant.name!r} names {len(extra)} layer(s) the model does not have, "
                f"first {extra[0]}"
            )
        for name, codec in variant.layers.items():
            latent = layers[name].latent is not None
            if codec.latent != latent:
                raise UsageError(
                    f"variant {variant.name!r}: {name} caches "
                    + ("an MLA latent row" if latent else "K and V")
                    + ", its codec "
                    + ("a latent row" if codec.latent else "K and V")
                )


def _activation_budget(loaded: LoadedModel, tokens: int, dtype: torch.dtype, path: Path) -> None:
    # An MLA layer: one row of head_size (kv_lora_rank + rope_dim) values, v_head_size 0.
    per_token = sum(
        layer.num_kv_heads * (layer.head_size + layer.v_head_size) for layer in loaded.layers
    )
    size = tokens * per_token * torch.empty((), dtype=dtype).element_size()
    if size > MAX_ACTIVATION_BYTES.value():
        raise LimitExceededError(
            path,
            f"--activations-out would hold {size:,} bytes of K/V for {tokens:,} tokens",
            hint=MAX_ACTIVATION_BYTES.describe() + ", or pass fewer --samples",
        )


class _Reference:
    """The unquantized run's next-token log-probabilities of one sample (float32), kept for the
    KL of the other variants: ``KL(p || q) = sum p * (log p - log q)`` per position, computed in
    place chunk by chunk (one log-softmax of the variant, a subtraction, a product with the
    reference's probabilities, exponentiated once per sample, and a row sum; 2.7x faster on CPU
    than ``kl_div`` over two fresh log-softmaxes). Summed over positions in float64. float32
    log-softmax rounding leaves errors of about 1e-7 nats times the logits' magnitude, so each
    position is clamped at 0.

    The variant's loss comes from the same log-softmax (``kl(..., with_loss=True)``): the
    next token's log-probability per position, gathered into one column, then the reduction the
    model's own loss ends in (transformers' ``ForCausalLMLoss``: ``cross_entropy`` of the float32
    logits, which is ``nll_loss`` of their ``log_softmax``, mean over every position but the
    last, which it ignores; the column holds exactly the values ``nll_loss`` reads, in the same
    order, so the sum is the same). ``evaluate_model`` checks it against the model's own loss
    once per run (the first variant pass), then takes every later loss from it, the
    reference's included (``loss()``: about 0.07 s less per sample than the model's
    ``cross_entropy`` over 512 x 49,152 bf16 logits, which upcasts them first).
    """

    _buffers: tuple[torch.Tensor, torch.Tensor, torch.Tensor]

    def __init__(
        self,
        logits: torch.Tensor,
        positions: int,
        next_tokens: torch.Tensor,
        previous: _Reference | None = None,
        *,
        chunk: int | None = None,
    ) -> None:
        """``previous``: the last sample's reference, done with: its buffers are reused when
        they are large enough (fresh ones cost their page faults each sample, about 0.1 s for
        512 x 49,152 on the CPU). ``chunk``: positions per chunk (default ``_chunk_positions``;
        a ``previous`` of another chunk size must not be given)."""
        self.positions = positions
        self.next_tokens = next_tokens.reshape(-1, 1)
        # ForCausalLMLoss pads the shifted labels with ignore_index for the last position.
        self.loss_targets = torch.zeros(positions + 1, dtype=torch.long, device=logits.device)
        self.loss_targets[-1] = IGNORE_INDEX
        vocab = logits.shape[-1]
        size = chunk or _chunk_positions(vocab, logits.device)
        self.chunks = _chunks(positions, size)
        # log p, p, and one scratch chunk for every variant's log-softmax (a fresh tensor per
        # chunk costs its page faults each time). The previous sample's serve when they have
        # the rows: its scratch then has min(size + 1, its rows) >= the widest chunk here.
        reuse = previous._buffers if previous is not None else None
        if (
            reuse is not None
            and reuse[0].device == logits.device
            and reuse[0].shape[1] == vocab
            and reuse[0].shape[0] >= positions
        ):
            self._buffers = reuse
        else:
            rows = (positions, positions, min(size + 1, positions))
            logp, p, scratch = (
                torch.empty((r, vocab), dtype=torch.float32, device=logits.device) for r in rows
            )
            self._buffers = (logp, p, scratch)
        self.logp = self._buffers[0][:positions]
        # The probabilities once per sample, not once per variant, each chunk while in cache.
        self.p = self._buffers[1][:positions]
        for start, stop in self.chunks:
            _log_softmax_float32(logits[start:stop], self.logp[start:stop])
            torch.exp(self.logp[start:stop], out=self.p[start:stop])
        self.scratch = self._buffers[2][: max(stop - start for start, stop in self.chunks)]

    def kl(
        self, logits: torch.Tensor, *, with_loss: bool = False
    ) -> tuple[float, float, torch.Tensor | None]:
        """(sum, max) of KL(reference || softmax(logits)) over the positions, and with
        ``with_loss`` the model's loss of ``logits`` (float32 scalar tensor; see the class doc)."""
        picked = self._picked_column() if with_loss else None
        kl = torch.empty(self.positions, dtype=torch.float32, device=logits.device)
        for start, stop in self.chunks:
            ref = self.logp[start:stop]
            p = self.p[start:stop]
            d = self.scratch[: stop - start]
            _log_softmax_float32(logits[start:stop], d)
            if picked is not None:
                torch.gather(d, 1, self.next_tokens[start:stop], out=picked[start:stop])
            torch.sub(ref, d, out=d)
            d.mul_(p)
            torch.sum(d, -1, out=kl[start:stop])
        kl.clamp_min_(0.0)
        total = float(kl.sum(dtype=torch.float64))
        # max() propagates a NaN: a NaN KL stays visible.
        peak = float(kl.max())
        loss = None if picked is None else self._mean_nll(picked)
        if math.isnan(total) or math.isnan(peak):
            return math.nan, math.nan, loss
        return total, peak, loss

    def loss(self) -> torch.Tensor:
        """The model's loss of the reference's own logits, from its log p (see the class doc):
        what ``kl(..., with_loss=True)`` gives a variant, without a second log-softmax."""
        picked = self._picked_column()
        torch.gather(self.logp, 1, self.next_tokens, out=picked[: self.positions])
        return self._mean_nll(picked)

    def _picked_column(self) -> torch.Tensor:
        """``[positions + 1, 1]`` zeros: each position's log-probability of its next token goes
        there (the last row, ignored by the loss, stays 0)."""
        return torch.zeros((self.positions + 1, 1), dtype=torch.float32, device=self.logp.device)

    def _mean_nll(self, picked: torch.Tensor) -> torch.Tensor:
        """``picked``: a filled ``_picked_column``."""
        return torch.nn.functional.nll_loss(
            picked, self.loss_targets, ignore_index=IGNORE_INDEX, reduction="mean"
        )


def _chunk_positions(vocab: int, device: torch.device) -> int:
    """Positions per KL chunk (``KL_CHUNK``, ``KL_CHUNK_BYTES_CPU``)."""
    if device.type != "cpu":
        return KL_CHUNK
    return max(2, min(KL_CHUNK, KL_CHUNK_BYTES_CPU // (4 * vocab)))


def _chunks(positions: int, size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of consecutive chunks of ``size`` positions; a last one of a single
    position joins the chunk before it. A row sum over one row alone is torch's two-pass
    reduction (``TensorIteratorBase::parallel_reduce``, one output), whose order differs from
    the per-row order it has among other rows: this way each position's KL is the same
    whatever the chunking."""
    bounds = [*range(0, positions, size), positions]
    if len(bounds) > 2 and bounds[-1] - bounds[-2] == 1:
        del bounds[-2]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _log_softmax_float32(logits: torch.Tensor, out: torch.Tensor) -> None:
    """``out = log_softmax(logits.float(), -1)`` (``out``: float32, the shape of ``logits``).

    The logits are copied into ``out`` first and the log-softmax runs on float32 in place: the
    float32 kernel the model's own loss runs (``ForCausalLMLoss`` upcasts with ``.float()``).
    ``log_softmax(logits, dtype=torch.float32)`` gives the same values on the CPU but takes 3.5x
    as long with bf16 logits (27 ms for 256 x 49,152 against 7.7 ms, torch 2.13; the half-input
    kernel upcasts as it goes), and on CUDA with fp16 logits it differs in the last bits (H200,
    torch 2.11). In place is safe: torch's log-softmax kernels (CPU
    ``_vec_log_softmax_lastdim``, CUDA ``cunn_SoftMaxForward``) read a whole row for its max
    and sum before they write it; ``tests/model/test_evaluate.py`` checks the values."""
    out.copy_(logits)
    torch.log_softmax(out, dim=-1, out=out)


def _ppl(loss: float) -> float:
    if math.isnan(loss):
        return math.nan
    return math.exp(loss) if loss < 709.0 else math.inf


def require_predicted_tokens(samples: Sequence[Sequence[int]]) -> None:
    """Perplexity and KL score each token's prediction of the next one: a sample of one token
    predicts nothing, and data made only of such samples would report NaN for every number.
    Called on the loaded data before any pass of the model runs."""
    if not samples or any(len(s) == 0 for s in samples):
        raise UsageError("evaluation needs at least one non-empty sample")
    predicted = sum(len(s) - 1 for s in samples)
    if predicted < 1:
        raise UsageError(
            f"too few tokens: {len(samples)} sample(s) of 1 token predict no next token, so "
            "perplexity and KL cannot be measured",
            hint="give --data whose samples hold at least 2 tokens each",
        )


def evaluate_model(
    loaded: LoadedModel,
    samples: Sequence[Sequence[int]],
    variants: Sequence[CacheVariant],
    *,
    activations_out: Path | str | None = None,
    activations_dtype: str | None = None,
    reference_hidden: Sequence[torch.Tensor] | None = None,
    reference_output: tuple[torch.Tensor, torch.Tensor] | None = None,
    progress: ProgressFn | None = None,
) -> ModelEvaluation:
    """Run the reference and ``variants`` over ``samples`` (see the module doc).

    ``reference_hidden``: one ``[1, tokens, hidden]`` tensor per sample, the decoder's last
    hidden state of the unquantized model on it (``CaptureResult.final_hidden``); the reference
    is then computed from it instead of run (not with ``activations_out``, which needs its K/V).
    ``reference_output``: with it, the model's own logits and loss on the first sample
    (``CaptureResult.first_output``), which the recomputed reference is checked against instead
    of a pass of the reference there.

    ``activations_out``: also write the reference run's K/V as a safetensors file
    (``<layer>.k`` / ``<layer>.v``, ``[tokens, num_kv_heads, head_size]``; MLA layers
    ``<layer>.kv_c`` ``[tokens, kv_lora_rank]`` / ``<layer>.k_pe`` ``[tokens, rope_dim]``) in
    ``activations_dtype`` (default: the model dtype, lossless), atomically.
    """
    require_predicted_tokens(samples)
    _check_variants(loaded, variants)
    if reference_output is not None and reference_hidden is None:
        raise UsageError("reference_output is the check of reference_hidden: pass both")
    if reference_hidden is not None:
        if activations_out is not None:
            raise UsageError("activations_out needs the reference's own pass: no reference_hidden")
        if len(reference_hidden) != len(samples):
            raise UsageError(
                f"reference_hidden holds {len(reference_hidden)} states for {len(samples)} samples"
            )
    save_path = Path(activations_out) if activations_out is not None else None
    save_dtype = None
    if save_path is not None:
        name = activations_dtype or loaded.dtype
        if name not in ACTIVATION_DTYPES:
            raise UsageError(
                f"activations dtype {name!r} is not one of {', '.join(ACTIVATION_DTYPES)}"
            )
        save_dtype = ACTIVATION_DTYPES[name]
        _activation_budget(loaded, sum(len(s) for s in samples), save_dtype, save_path)
    model = loaded.model
    by_module = {
        id(model.get_submodule(layer.module_path)): layer
        for layer in loaded.layers
        if layer.latent is None
    }
    latent_by_idx = {layer.layer_idx: layer for layer in loaded.layers if layer.latent is not None}
    saved: dict[str, list[torch.Tensor]] = {
        f"{layer.engine_name}.{kind}": []
        for layer in loaded.layers
        for kind in (("kv_c", "k_pe") if layer.latent is not None else ("k", "v"))
    }
    active: dict[str, Mapping[str, LayerCodec] | None] = {"codecs": None}

    def on_kv(
        module: Any, key: torch.Tensor, value: torch.Tensor, _: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        layer = by_module.get(id(module))
        if layer is None:
            return None
        codecs = active["codecs"]
        if codecs is None:
            if save_dtype is not None:
                saved[f"{layer.engine_name}.k"].append(_flat(key).detach().to("cpu", save_dtype))
                saved[f"{layer.engine_name}.v"].append(_flat(value).detach().to("cpu", save_dtype))
            return None
        codec = codecs.get(layer.engine_name)
        if codec is None:
            return None
        assert codec.v is not None  # _check_variants: K/V layers get K/V codecs
        return _back(codec.k(_flat(key)), key), _back(codec.v(_flat(value)), value)

    def on_update(
        layer_idx: int, kv_c: torch.Tensor, k_pe: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        layer = latent_by_idx.get(layer_idx)
        if layer is None:
            return None
        codecs = active["codecs"]
        if codecs is None:
            if save_dtype is not None:
                for kind, part in (("kv_c", kv_c), ("k_pe", k_pe)):
                    flat = part.detach().reshape(-1, part.shape[-1]).to("cpu", save_dtype)
                    saved[f"{layer.engine_name}.{kind}"].append(flat)
            return None
        codec = codecs.get(layer.engine_name)
        if codec is None:
            return None
        return _latent_back(codec.k(latent_rows(kv_c, k_pe)), kv_c, k_pe)

    cache_kwarg = cache_kwarg_name(model) if latent_by_idx else None

    def forward(ids: torch.Tensor, labels: bool = True) -> Any:
        kwargs: dict[str, Any] = {"use_cache": False}
        if cache_kwarg is not None:
            # MLA: a fresh cache per pass, its update the replacement point.
            kwargs = {"use_cache": True, cache_kwarg: RecordingCache(model.config, on_update)}
        if labels:
            kwargs["labels"] = ids
        return model(input_ids=ids, **kwargs)

    def reference_pass(ids: torch.Tensor) -> tuple[Any, Any]:
        out = forward(ids)
        return out.logits, out.loss

    from_hidden = reference_hidden is not None
    # Every pass's logits but the reference check's own pass (whose logits are compared with
    # the recomputed ones, which live there) go to one reused tensor.
    reused_logits = _ReusedLogits(model)
    checked = False
    # The variants' loss from the KL's own log-softmax (_Reference): None until the first
    # variant pass compares it with the model's own loss, then whether it equalled it.
    fused_loss: bool | None = None
    check_seconds = 0.0

    runs: list[tuple[str, Mapping[str, LayerCodec] | None]] = [(REFERENCE, None)]
    runs.extend((v.name, v.layers) for v in variants)
    sums = {name: [0.0, 0.0, 0.0] for name, _ in runs}  # loss * n, kl sum, kl max
    seconds = dict.fromkeys(sums, 0.0)
    predicted = 0
    tokens = 0
    device = loaded.input_device
    ref: _Reference | None = None
    previous: _Reference | None = None  # the last sample's, whose buffers the next one reuses
    if progress is not None:
        # The phase's start: a rate and an ETA need it (the next events come after a sample).
        progress(ProgressEvent("evaluate", 0, len(samples), tokens=0))
    try:
        with attention_hook(model, on_kv), torch.inference_mode(), quiet_transformers():
            for i, sample in enumerate(samples):
                ids = torch.tensor([list(sample)], dtype=torch.long, device=device)
                n = len(sample) - 1
                if ref is not None:
                    previous, ref = ref, None
                for name, codecs in runs:
                    active["codecs"] = codecs
                    began = time.perf_counter()
                    # Once the first variant has shown that the loss from the KL's log-softmax
                    # is the model's own (fused_loss), the reference's comes from its log p too.
                    ref_loss_from_logp = codecs is None and bool(fused_loss)
                    if codecs is None and from_hidden:
                        assert reference_hidden is not None
                        with reused_logits.writing():
                            batch_logits, loss = _from_hidden(
                                model, reference_hidden[i], ids, with_loss=not ref_loss_from_logp
                            )
                        if not checked or batch_logits is None:
                            check_began = time.perf_counter()
                            given = not checked and reference_output is not None
                            real = reference_output if given else reference_pass(ids)
                            assert real is not None
                            checked = True
                            if _same_output(batch_logits, loss, *real):
                                # The check is not the reference's time.
                                check_seconds = time.perf_counter() - check_began
                                began += check_seconds
                            else:
                                from_hidden = False
                                # Against a given output, which of the two is off is not
                                # known: the reference's own pass decides, as for every
                                # later sample.
                                batch_logits, loss = reference_pass(ids) if given else real
                            del real
                    else:
                        with reused_logits.writing():
                            out = forward(
                                ids,
                                labels=not fused_loss or (codecs is not None and ref is None),
                            )
                        batch_logits, loss = out.logits, out.loss
                        del out
                    logits = batch_logits[0]
                    if codecs is None:
                        ref = _Reference(logits, n, ids[0, 1:], previous) if n > 0 else None
                        if ref_loss_from_logp and ref is not None:
                            loss = ref.loss()
                    elif ref is not None:
                        kl_sum, kl_max, own_loss = ref.kl(logits, with_loss=fused_loss is not False)
                        if fused_loss is None:
                            fused_loss = _same_loss(own_loss, loss)
                        if fused_loss:
                            loss = own_loss
                        acc = sums[name]
                        acc[1] += kl_sum
                        # max() would drop a NaN; a NaN KL must stay visible.
                        acc[2] = kl_max if math.isnan(kl_max) or kl_max > acc[2] else acc[2]
                    if n > 0:
                        sums[name][0] += float(loss) * n
                    del batch_logits, logits, loss
                    seconds[name] += time.perf_counter() - began
                predicted += max(0, n)
                tokens += len(sample)
                if progress is not None:
                    progress(ProgressEvent("evaluate", i + 1, len(samples), tokens=tokens))
    except HookError as exc:
        raise UnsupportedModelError(loaded.path, str(exc)) from None

    results = []
    for name, _ in runs:
        loss_sum, kl_sum, kl_max = sums[name]
        loss = loss_sum / predicted if predicted else math.nan
        results.append(
            VariantResult(
                name=name,
                loss=loss,
                ppl=_ppl(loss),
                kl_mean=kl_sum / predicted if predicted else math.nan,
                kl_max=kl_max,
                tokens=predicted,
                seconds=seconds[name],
            )
        )
    written = None
    if save_path is not None:
        _write_activations(save_path, saved, loaded)
        written = str(save_path)
    return ModelEvaluation(
        samples=len(samples),
        tokens=tokens,
        variants=tuple(results),
        activations_path=written,
        reference_from_hidden=from_hidden,
        check_seconds=check_seconds,
    )


def _from_hidden(
    model: Any, hidden: torch.Tensor, ids: torch.Tensor, *, with_loss: bool = True
) -> tuple[Any, Any]:
    """The reference's logits and loss from its decoder's last hidden state, as the causal-LM
    head computes them (``LlamaForCausalLM.forward``, transformers 5: ``lm_head`` of every
    position, then ``self.loss_function(logits=..., labels=..., vocab_size=...)``); without
    ``with_loss`` the loss is None (the caller has it from the log p)."""
    if hidden.dim() != 3 or tuple(hidden.shape[:2]) != tuple(ids.shape):
        return None, None
    try:
        head = model.get_output_embeddings()
        if head is None:
            return None, None
        logits = head(hidden)
        loss = (
            model.loss_function(logits=logits, labels=ids, vocab_size=model.config.vocab_size)
            if with_loss
            else None
        )
    except (AttributeError, NotImplementedError, RuntimeError, TypeError, ValueError):
        # Not a causal-LM head of this shape: the caller runs the reference instead.
        return None, None
    return logits, loss


def _same_loss(mine: torch.Tensor | None, model_loss: Any) -> bool:
    """Bit for bit, a NaN equal to a NaN."""
    if mine is None or not isinstance(model_loss, torch.Tensor):
        return False
    if mine.dtype != model_loss.dtype or mine.shape != model_loss.shape:
        return False
    return bool(torch.equal(mine, model_loss) or (mine.isnan() & model_loss.isnan()).all())


def _same_output(logits: Any, loss: Any, real_logits: Any, real_loss: Any) -> bool:
    """The recomputed reference equals the real pass bit for bit (shape, dtype, values)."""
    if not isinstance(logits, torch.Tensor) or not isinstance(loss, torch.Tensor):
        return False
    return (
        real_logits.dtype == logits.dtype
        and real_logits.shape == logits.shape
        and bool(torch.equal(real_logits, logits))
        and _same_loss(loss, real_loss)
    )


def _write_activations(
    path: Path, saved: Mapping[str, list[torch.Tensor]], loaded: LoadedModel
) -> None:
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    for name, parts in saved.items():
        tensors[name] = torch.cat(parts).contiguous()
        parts.clear()
    metadata = {"producer": "kvscale verify --model", "model": loaded.path}
    write_file_atomic(
        path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata), "activations"
    )
