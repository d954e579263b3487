"""verify's bounded chunks: a layer's K/V go through the cache write a few thousand token rows at
a time, so a run's memory follows the chunk, not the kv heads x head size that config.json (or
kv_scales.json) declares; the statistics come out exactly as they do from the whole layer.

Three things make a chunked run equal to a whole one, value for value:

* the synthetic sample is drawn again chunk by chunk from saved generator states, in chunks whose
  value counts are multiples of 16 (``DRAW_BLOCK``), so the generator hands out the same numbers
  as one draw of the whole layer;
* counts and maxima add up exactly whatever the chunks;
* the relative RMS error sums with torch's own float64 sum over ``SUM_BLOCK`` values at a time,
  taken from the values in their order whatever the chunks, and adds the block sums exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

CHUNK_BYTES = 64 << 20
"""The memory one chunk of a layer may take while verify draws, writes and measures it.

Why: verify held a layer's whole sample at once, about 60 bytes per K or V value at the widest
point (draws, quotients, float64 copies for the sums), so a one-layer checkpoint whose
config.json declares head_dim 4096 x 16 kv heads took 16.9 GB at the default 4,096 tokens. 64 MiB
(1,048,576 values: a Llama 3 8B layer of 4,096 tokens in 4 chunks) keeps a run's peak a few
hundred MB above the interpreter's own, whatever the config declares, while the per-chunk work
of Python stays noise."""

BYTES_PER_VALUE = 64
"""The memory one K or V value of a chunk takes at a run's peak: K and V in bf16, the chunk's
cache, and while one kind is measured its float32 copy, quotient, read-back, masks and kept
values (measured: 44 bytes when freed memory goes back to the system at once, up to about 90
with glibc's default heap, which keeps some of it)."""

DRAW_BLOCK = 16
"""torch's CPU ``normal_`` turns uniforms into normals 16 at a time and, for a tensor whose size
is not a multiple of 16, draws its last 16 values again (``normal_fill`` in
``aten/src/ATen/native/cpu/DistributionTemplates.h``); a tensor of fewer than 16 values takes
another path altogether. A chunk of a multiple of 16 values, and a last chunk of at least 16,
draw exactly the numbers one draw of the whole layer does."""

SUM_BLOCK = 1 << 22
"""The values one torch float64 sum covers in the relative RMS error: 4,194,304, the default
4,096-token sample of 8 kv heads x 128 (Llama 3, Mistral, Qwen2.5), so such a layer's error is
the single sum verify always took, to the last bit; a larger layer adds the sums of its blocks
exactly (``math.fsum``), and no chunk size changes a block."""


def chunk_values() -> int:
    """K or V values one chunk holds: ``CHUNK_BYTES`` at ``BYTES_PER_VALUE``."""
    return max(DRAW_BLOCK, CHUNK_BYTES // BYTES_PER_VALUE)


def rows_granule(row_values: int) -> int:
    """Token rows per chunk come in multiples of this, so that every chunk draws a multiple of
    ``DRAW_BLOCK`` values."""
    return DRAW_BLOCK // math.gcd(max(1, row_values), DRAW_BLOCK)


def row_fits(row_values: int) -> bool:
    """One granule of token rows fits in a chunk (otherwise memory would follow the row)."""
    return rows_granule(row_values) * row_values <= chunk_values()


def token_spans(tokens: int, row_values: int) -> tuple[tuple[int, int], ...]:
    """The ``[start, stop)`` token ranges a layer of ``tokens`` rows is processed in."""
    granule = rows_granule(row_values)
    rows = max(granule, chunk_values() // max(1, row_values) // granule * granule)
    spans = [(start, min(start + rows, tokens)) for start in range(0, tokens, rows)]
    if len(spans) > 1 and (spans[-1][1] - spans[-1][0]) * row_values < DRAW_BLOCK:
        # A last chunk under 16 values would be drawn one value at a time: it joins the one
        # before it (a chunk larger by less than 16 values).
        spans[-2:] = [(spans[-2][0], tokens)]
    return tuple(spans)


class RelativeRmsError:
    """``sqrt(sum((y - x)^2) / sum(x^2))`` over value pairs that arrive chunk by chunk (``x`` the
    finite inputs, ``y`` what the cache gives back for them, float32), summed as verify always
    summed them: torch's float64 sum over the values in their order, ``SUM_BLOCK`` at a time.

    A layer of up to ``SUM_BLOCK`` values gets exactly the one sum of the whole layer; a larger
    one the exact sum (``math.fsum``) of its block sums, which no chunking changes. The pairs of
    the block being filled are held in two float32 buffers of ``SUM_BLOCK`` values."""

    def __init__(self) -> None:
        self._x = torch.empty(0)
        self._y = torch.empty(0)
        self._held = 0
        self._errors: list[float] = []
        self._energies: list[float] = []

    def add(self, x: torch.Tensor, y: torch.Tensor) -> None:
        x, y = x.reshape(-1), y.reshape(-1)
        taken = 0
        while taken < x.numel():
            if self._x.numel() == 0:
                # Allocated when first needed (the untouched part of a block costs nothing).
                self._x, self._y = torch.empty(SUM_BLOCK), torch.empty(SUM_BLOCK)
            size = min(SUM_BLOCK - self._held, x.numel() - taken)
            self._x[self._held : self._held + size] = x[taken : taken + size]
            self._y[self._held : self._held + size] = y[taken : taken + size]
            self._held += size
            taken += size
            if self._held == SUM_BLOCK:
                self._sum_block()

    def _sum_block(self) -> None:
        # The operations of sum(x^2) and sum((y - x)^2) on float64 copies, done in place (the
        # same values in half the memory).
        xd, yd = self._x[: self._held].double(), self._y[: self._held].double()
        self._errors.append(float(yd.sub_(xd).pow_(2).sum()))
        self._energies.append(float(xd.pow_(2).sum()))
        self._held = 0

    def value(self) -> float:
        if self._held:
            self._sum_block()
        self._x = self._y = torch.empty(0)
        denominator = math.fsum(self._energies)
        return math.sqrt(math.fsum(self._errors) / denominator) if denominator > 0 else 0.0


# --- samples: the K or V of one layer, whole or chunk by chunk -------------------------------


@dataclass(frozen=True)
class HeldSample:
    """K or V held in memory (captured activations, or a synthetic sample of one chunk)."""

    values: torch.Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    @property
    def dtype(self) -> torch.dtype:
        return self.values.dtype

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return token_spans(self.values.shape[0], _row_values(self.shape))

    def chunks(self) -> Iterator[torch.Tensor]:
        for start, stop in self.spans:
            yield self.values[start:stop]

    def whole(self) -> torch.Tensor:
        return self.values


@dataclass(frozen=True)
class DrawnSample:
    """A synthetic K or V larger than a chunk: drawn again, chunk by chunk, from the generator
    states its first draw started from (``draw_heavy_tailed``), and sized by ``factor``."""

    shape: tuple[int, int, int]
    spans: tuple[tuple[int, int], ...]
    normal_state: torch.Tensor
    chi2_state: torch.Tensor
    channel: torch.Tensor
    factor: torch.Tensor | None
    """Per kv head, what the values are multiplied by (None: left at unit magnitude)."""

    @property
    def dtype(self) -> torch.dtype:
        return torch.bfloat16

    def chunks(self) -> Iterator[torch.Tensor]:
        normal = torch.Generator().set_state(self.normal_state)
        chi2 = torch.Generator().set_state(self.chi2_state)
        for start, stop in self.spans:
            t = _student_t(normal, chi2, (stop - start, *self.shape[1:]))
            values = _finish(t.mul_(self.channel), self.factor)
            del t  # not held while the chunk is used
            yield values

    def whole(self) -> torch.Tensor:
        return torch.cat(list(self.chunks()))


Sample = HeldSample | DrawnSample


def _row_values(shape: tuple[int, ...]) -> int:
    return math.prod(shape[1:])


def _student_t(
    normal: torch.Generator, chi2: torch.Generator, shape: tuple[int, ...]
) -> torch.Tensor:
    """Student-t with 4 degrees of freedom: a normal over the root mean square of 4 more (the
    operations of the draw verify always made, done in place where they allocate nothing)."""
    t = torch.randn(shape, generator=normal, dtype=torch.float32)
    squares = torch.randn((*shape, 4), generator=chi2, dtype=torch.float32).pow_(2)
    return t.div_(squares.sum(-1).div_(4).sqrt_())


def _finish(x: torch.Tensor, factor: torch.Tensor | None) -> torch.Tensor:
    if factor is not None:
        x = x * factor.reshape(1, -1, 1)
    return x.to(torch.bfloat16)


def draw_heavy_tailed(
    tokens: int,
    heads: int,
    head_size: int,
    generator: torch.Generator,
    sizing: Callable[[torch.Tensor], torch.Tensor] | None,
) -> Sample:
    """``[tokens, heads, head_size]`` bf16 values like real attention K/V: Student-t (4 degrees
    of freedom) per element for heavy tails, times per-channel magnitudes with a few outlier
    channels (as in real K projections), times ``sizing(amax)`` per head, where ``amax`` is each
    head's absolute max before sizing (None: unit magnitude).

    The generator advances exactly as one draw of the whole tensor advances it: the normals,
    then the chi-square draws, then the outlier channels. A sample larger than a chunk is drawn
    three times in chunks (to find where the chi-square draws start, to find each head's max, to
    use it) and never held whole."""
    shape = (tokens, heads, head_size)
    spans = token_spans(tokens, heads * head_size)
    if len(spans) == 1:
        t = _student_t(generator, generator, shape)
        peak = t.abs().amax(dim=0)
        normal_state = chi2_state = None
    else:
        normal_state = generator.get_state()
        for start, stop in spans:
            torch.randn((stop - start, heads, head_size), generator=generator)
        chi2_state = generator.get_state()
        normal = torch.Generator().set_state(normal_state)
        chi2 = torch.Generator().set_state(chi2_state)
        peak = torch.zeros(heads, head_size)
        for start, stop in spans:
            chunk_peak = _student_t(normal, chi2, (stop - start, heads, head_size)).abs().amax(0)
            peak = torch.maximum(peak, chunk_peak)
        generator.set_state(chi2.get_state())
    channel = torch.ones(head_size)
    channel[torch.randperm(head_size, generator=generator)[: max(1, head_size // 64)]] = 6.0
    # max |t x c| = max |t| x c for c > 0: rounding is monotonic, so the head's max of the
    # product is the product's rounding at the max, whatever the chunks.
    factor = None if sizing is None else sizing((peak * channel).amax(dim=1))
    if normal_state is None or chi2_state is None:
        return HeldSample(_finish(t * channel, factor))
    return DrawnSample(shape, spans, normal_state, chi2_state, channel, factor)


# --- the paged cache of one chunk -----------------------------------------------------------


def chunk_slots(slot_mapping: torch.Tensor, block_size: int) -> tuple[torch.Tensor, int]:
    """A chunk's own slot mapping into a cache just large enough for its live tokens: each live
    token keeps its place in the order of the layer's shuffled slots, padding entries stay -1.
    Returns the mapping and the cache's block count."""
    live = slot_mapping >= 0
    slots = slot_mapping[live]
    rank = torch.empty_like(slots)
    rank[torch.argsort(slots)] = torch.arange(slots.numel(), dtype=slots.dtype)
    local = torch.full_like(slot_mapping, -1)
    local[live] = rank
    return local, max(1, -(-slots.numel() // block_size))
