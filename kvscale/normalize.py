"""``kvscale normalize``: write the engine's scales explicitly, and optionally a normalized copy.

Two steps, as the style guide asks ("validate everything, then write anything"):

* ``plan_normalize`` reads headers and scale bytes only (through ``inspect``), decides every value,
  name, shard and file of the output, and validates all of it. It writes nothing.
* ``write_plan`` builds the whole output in a hidden staging directory next to ``--out``, fsyncs
  every file and directory, and only then renames the staging directory to ``--out`` (atomically
  swapping it with a previous output under ``--force``). An interrupted run leaves no file under a
  final output name; a failed one removes its staging directory.

Values (vLLM v0.33.0 semantics, see ``kvscale.resolve``):

* ``kv_scales.safetensors``/``kv_scales.json`` hold the device values for the requested platform
  and the KV-cache dtype actually used (below), one float32 tensor per layer and kind.
* The normalized checkpoint holds, per layer, the value the engine reports on the ``ocp`` platform.
  Every such value is already exact in the model dtype (the base path rounds the loaded scale to the
  model dtype before anything else), so loading it again reproduces it bit for bit, and the fnuz
  doubling of ``BaseKVCacheMethod.process_weights_after_loading`` (``quantization/kv_cache.py``)
  applies to it exactly as it applied to the original.
* Exceptions, each reported as a warning:

  - base path, no k/v scales (rule ``default``): the engine's 1.0 is a constant that fnuz does not
    double, while an explicit value is doubled. With ``--platform ocp`` kvscale writes 1.0 (exact
    on OCP; the copy gives 2.0 on fnuz); with ``--platform fnuz`` it writes 0.5 (exact on fnuz;
    the copy is then fnuz-specific).
  - q/prob are written only where the engine took them from the checkpoint; where it used its 1.0
    default they are left out, so that neither platform sees a new explicit value.
  - an unquantized effective KV-cache dtype (``auto`` on fp8/quark checkpoints, ``bfloat16``,
    per-token-head dtypes) ignores k/v; kvscale then resolves with ``fp8`` for what it writes, so
    the calibrated values stay usable with ``--kv-cache-dtype fp8`` and the unquantized engine is
    unchanged (it ignores k/v either way).

Names (checked with ``kvscale.conventions.map_name`` for the checkpoint's own quant method; each
must map back to the same layer and kind): ``<prefix>.k_scale``/``v_scale``/``q_scale`` under the
attention prefix as the checkpoint spells it (NemotronH keeps ``backbone.``); prob is
``<prefix>.prob_output_scale`` under fp8/quark (the only methods whose suffix map knows it, and
only after ``.self_attn``), else the parameter's own name ``<prefix>.attn.prob_scale`` (ModelOpt,
``mixer`` prefixes). compressed-tensors: float32 as loaded, ``partial``/``default`` layers get an
explicit 1.0, ``attn_head`` keeps ``[heads, 1, 1]``; no prob (that path has no prob parameter).

What is removed: every source tensor of the four scale kinds of every normalized layer, shadowed
duplicates included. What stays: zero points (compressed-tensors creates parameters for them and
ignores their values; llm-compressor checkpoints carry them), tensors loaded straight into the
device buffers (``attn._k_scale``), scale-like names no loader maps, every other tensor, and
layers left as they are (refused ones under ``--force``; layers whose explicit form would not load
the same, see ``_verify_copy``). New tensors go to the shard that held the layer's winning scale,
else to the shard with its attention weights, else to the first shard.

Before anything is written, every layer's new tensors are resolved again with the engine rules
(both platforms, the requested and the written KV-cache dtype) and must give the source's values;
a layer where they would not (e.g. ``attn_head`` without ``config_groups``, whose loader refuses
any explicit tensor) keeps its original tensors and is reported (``kept-as-is``).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import math
import os
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kvscale import __version__
from kvscale.architectures import OUTPUT_SCALE_DROPPING
from kvscale.checkpoint import INDEX_NAME, Checkpoint, open_checkpoint
from kvscale.conventions import Convention, attention_prefix, map_name
from kvscale.errors import InputError, OutputError, RefusedError, UsageError
from kvscale.floats import decode_values, encode_json_value, max_nan
from kvscale.inspect import (
    InspectOptions,
    ScaleReport,
    inspect_opened,
)
from kvscale.model_config import EnginePath, is_quantized_kv_cache, uses_per_token_head_scales
from kvscale.problems import Problem, Severity
from kvscale.resolve import (
    EngineSettings,
    ResolvedLayer,
    Rule,
    ScaleSource,
    ScaleValue,
    resolve_layer,
)
from kvscale.safetensors_io import read_tensor_bytes
from kvscale.safetensors_write import (
    NewTensor,
    ShardLayout,
    SourceChangedError,
    copy_file,
    f32_tensor,
    fsync_dir,
    plan_layout,
    write_bytes,
    write_layout,
)

SCALES_SCHEMA = "kvscale.scales/1"
SCALES_FILE = "kv_scales.safetensors"
SCALES_JSON = "kv_scales.json"
CHECKPOINT_DIR = "checkpoint"
KINDS = ("k_scale", "v_scale", "q_scale", "prob_scale")
STAGING_MARK = ".kvscale-tmp-"
OLD_MARK = ".kvscale-old-"
DEFAULT_WORKERS = 4
SKIPPED_DIRS = frozenset([".git"])
"""Version-control data is not checkpoint content (and can hold a second copy of the weights)."""


# --- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NormalizeOptions:
    kv_cache_dtype: str = "auto"
    platform: str = "ocp"
    model_dtype: str | None = None
    checkpoint: bool = False
    """Also write ``DIR/checkpoint/``."""
    force: bool = False
    """Replace an existing output; skip (keep as they are) layers that cannot be normalized."""
    digests: bool = False
    """sha256 of every output file (reads every byte back); else only of the files kvscale
    generates (scales and index)."""
    workers: int = 0
    """Files copied at once; 0 = ``DEFAULT_WORKERS``."""
    fsync: bool = True
    """Make every file durable before the final rename (never turn off outside tests)."""


@dataclass(frozen=True)
class ProgressUpdate:
    phase: str
    """``headers`` (reading shard headers) or ``writing``."""
    done: int
    total: int
    """Bytes (writing) or shards (headers)."""
    files_done: int
    files_total: int
    label: str = ""


ProgressFn = Callable[[ProgressUpdate], None]


@dataclass(frozen=True)
class LayerPlan:
    """What normalize writes for one attention layer."""

    name: str
    rule: str
    """The rule under the KV-cache dtype used for the values (``kv_cache_dtype`` of the plan)."""
    device: Mapping[str, ScaleValue]
    """Device values (k/v/q/prob) for the requested platform: ``kv_scales.safetensors``."""
    sources: Mapping[str, ScaleSource]
    shadowed: tuple[ScaleSource, ...]
    checkpoint_tensors: tuple[tuple[str, NewTensor], ...] = ()
    """(kind, tensor) written to the normalized checkpoint."""
    shard: str | None = None
    """The shard that receives this layer's new tensors."""
    skipped: str | None = None
    """Why this layer is left out (only with ``--force``): no device values, sources kept."""
    kept: str | None = None
    """Why the copy keeps this layer's source tensors as they are (its values are still in
    ``kv_scales``): the explicit form would not load to the same values."""

    def host(self, kind: str) -> float:
        value = self.device[kind]
        return max_nan(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class FileJob:
    """One file of the output."""

    path: str
    """Relative to the output directory, with ``/`` separators."""
    action: str
    """``generated`` (kvscale's own bytes), ``rewritten`` (shard with new scales) or ``copied``."""
    size: int
    source: Path | None = None
    data: bytes | None = None
    layout: ShardLayout | None = None


@dataclass(frozen=True)
class NormalizePlan:
    checkpoint: str
    out: Path
    options: NormalizeOptions
    report: ScaleReport
    """``inspect`` of the source with the requested options."""
    values_report: ScaleReport
    """The report the written values come from (KV-cache dtype ``kv_cache_dtype``)."""
    kv_cache_dtype: str
    layers: tuple[LayerPlan, ...]
    files: tuple[FileJob, ...]
    removed: tuple[tuple[str, str], ...]
    """(shard, tensor) removed from the normalized checkpoint."""
    added: tuple[tuple[str, str], ...]
    """(shard, tensor) added to the normalized checkpoint."""
    warnings: tuple[Problem, ...]
    blocking: tuple[Problem, ...]
    """Problems that stop the run (exit 1, nothing written) unless ``--force``."""
    skipped_files: tuple[tuple[str, str], ...] = ()
    fingerprint: Mapping[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether ``write_plan`` will write (with ``--force`` only layer problems are waived;
        layer problems are then warnings, so ``blocking`` holds what cannot be forced)."""
        return not self.blocking

    @property
    def total_bytes(self) -> int:
        return sum(job.size for job in self.files)

    @property
    def skipped_layers(self) -> tuple[LayerPlan, ...]:
        return tuple(layer for layer in self.layers if layer.skipped)


@dataclass(frozen=True)
class WrittenFile:
    path: str
    action: str
    bytes: int
    sha256: str | None
    method: str


@dataclass(frozen=True)
class NormalizeResult:
    plan: NormalizePlan
    out: Path
    files: tuple[WrittenFile, ...]
    replaced: bool
    """An existing output was replaced (``--force``)."""


# --- planning -----------------------------------------------------------------------------------


def _warning(code: str, message: str, layer: str | None = None) -> Problem:
    return Problem(Severity.WARNING, code, layer, message)


def _error(code: str, message: str, layer: str | None = None) -> Problem:
    return Problem(Severity.ERROR, code, layer, message)


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def safe_tensor_name(name: str) -> bool:
    """Names kvscale writes: printable, no path separators, no control characters."""
    return bool(name) and name.isprintable() and "/" not in name and "\\" not in name


def _flat(value: ScaleValue | None) -> tuple[float, ...]:
    if value is None:
        return ()
    return value if isinstance(value, tuple) else (value,)


def _per_tensor_quantized(kv_cache_dtype: str) -> bool:
    return is_quantized_kv_cache(kv_cache_dtype) and not uses_per_token_head_scales(kv_cache_dtype)


def _stacked_first(report: ScaleReport) -> bool:
    # Same as inspect: these architectures run the stacked qkv renames in the cache-scale pass.
    return bool(set(report.shape.architectures) & OUTPUT_SCALE_DROPPING)


def _candidate_names(prefix: str, kind: str, quant_method: str | None) -> list[str]:
    """Checkpoint names for one scale, best first: the contract's ``<prefix>.<kind>`` (prob:
    ``<prefix>.prob_output_scale``), then the engine's own parameter name
    ``<prefix>.attn.<kind>``.

    ``prob_output_scale`` reaches the engine only through the Fp8Config/QuarkConfig suffix map
    (``quantization/fp8.py``, ``quark/quark.py`` v0.33.0) and only after ``.self_attn``; under
    ModelOpt (and for ``mixer`` prefixes) the canonical ``<prefix>.attn.prob_scale`` is the one
    name that loads, because it is the parameter itself.
    """
    names = []
    if kind == "prob_scale":
        if quant_method in ("fp8", "quark"):
            names.append(f"{prefix}.prob_output_scale")
    else:
        names.append(f"{prefix}.{kind}")
    names.append(f"{prefix}.attn.{kind}")
    return names


def checkpoint_name(
    prefix: str, kind: str, quant_method: str | None, stacked_first: bool = False
) -> str | None:
    """The first candidate name under the checkpoint's attention ``prefix`` (e.g.
    ``model.layers.0.self_attn``) that the engine's cache-scale mapper (``map_name``, vLLM
    v0.33.0 ``get_cache_scale_mapper``) sends back to (``<prefix>.attn``, kind) for this quant
    method, or None."""
    for name in _candidate_names(prefix, kind, quant_method):
        mapped = map_name(name, quant_method, stacked_first)
        if mapped.layer == f"{prefix}.attn" and mapped.kind == kind:
            return name
    return None


def _prefix(layer: ResolvedLayer) -> str:
    """The attention prefix as the checkpoint spells it (NemotronH: ``backbone.`` not
    ``model.``)."""
    return layer.checkpoint_prefix or attention_prefix(layer.name)


def _checkpoint_tensor(name: str, kind: str, value: ScaleValue, num_heads: int | None) -> NewTensor:
    if isinstance(value, tuple):
        # compressed-tensors attn_head: k/v [num_kv_heads,1,1]; q [num_heads,1,1] holding each
        # GQA group's max on every head of the group, so that the loader's
        # amax(view(-1, num_heads // num_kv_heads)) gives back exactly the device values
        # (_tp_aware_loader, compressed_tensors.py v0.33.0).
        if kind == "q_scale":
            heads = num_heads or len(value)
            group = max(1, heads // max(1, len(value)))
            expanded = tuple(v for v in value for _ in range(group))
            return f32_tensor(name, expanded, (len(expanded), 1, 1))
        return f32_tensor(name, value, (len(value), 1, 1))
    return f32_tensor(name, (value,), ())


def _device_tensor(name: str, value: ScaleValue) -> NewTensor:
    if isinstance(value, tuple):
        return f32_tensor(name, value, (len(value),))
    return f32_tensor(name, (value,), ())


def _value_problems(layer: ResolvedLayer, platform: str) -> list[str]:
    out = []
    for kind in KINDS:
        for i, v in enumerate(_flat(layer.value(kind))):
            if not (math.isfinite(v) and v > 0.0):
                where = f"{kind}[{i}]" if isinstance(layer.value(kind), tuple) else kind
                src = layer.sources.get(kind)
                origin = f" (from {src.tensor} in {src.file})" if src is not None else ""
                out.append(
                    f"{where} would be {_fmt(v)} on {platform}{origin}; only positive finite "
                    "scales can be written"
                )
    return out


def _same_value(a: ScaleValue | None, b: ScaleValue | None) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _verify_copy(
    layer: ResolvedLayer,
    tensors: Sequence[tuple[str, NewTensor]],
    shard: str,
    settings_variants: Sequence[EngineSettings],
    platform: str,
) -> str | None:
    """Resolve the layer again from what the copy will hold (the new tensors plus the zero
    points that stay) with the same rules as the source, for both platforms and for the
    requested and the written KV-cache dtype; None when the engine gets the same values.

    The one accepted difference is the documented one: a base-path layer that used the 1.0
    default loads differently on the platform the copy was not written for.
    """
    everything = [*layer.sources.values(), *layer.shadowed]
    kept = [src for src in everything if src.kind not in KINDS]
    new = [
        ScaleSource(
            tensor=t.name,
            file=shard,
            dtype=t.dtype,
            shape=t.shape,
            kind=kind,
            convention=Convention.CANONICAL,
            load_order=(1 << 40) + i,
            values=tuple(decode_values(t.dtype, t.data)),
        )
        for i, (kind, t) in enumerate(tensors)
    ]
    for settings in settings_variants:
        for engine_platform in ("ocp", "fnuz"):
            variant = replace(settings, platform=engine_platform)
            before = resolve_layer(layer.name, everything, variant)
            after = resolve_layer(layer.name, [*kept, *new], variant)
            if (
                engine_platform != platform
                and settings.engine_path is EnginePath.BASE
                and before.rule is Rule.DEFAULT
            ):
                continue
            if after.rule is Rule.ERROR and before.rule is not Rule.ERROR:
                return f"the engine would refuse the explicit form ({after.error})"
            for kind in KINDS:
                if not _same_value(before.value(kind), after.value(kind)):
                    return (
                        f"the explicit form would load {kind} differently on {engine_platform} "
                        f"with --kv-cache-dtype {settings.kv_cache_dtype}"
                    )
    return None


def _check_paths(ckpt: Checkpoint, out: Path) -> None:
    """``--out`` must not be inside the input, nor the input inside ``--out`` (symlinks
    resolved), so that writing (or replacing, with --force) can never touch the input."""
    out_real = Path(os.path.realpath(out))
    protected: set[Path] = {Path(os.path.realpath(ckpt.given))}
    if ckpt.layout != "file":
        protected.add(Path(os.path.realpath(ckpt.root)))
    for name in ckpt.files:
        real = Path(os.path.realpath(ckpt.path_of(name)))
        protected.add(real)
        if ckpt.layout != "file":
            protected.add(real.parent)  # e.g. the blobs/ directory of a Hugging Face cache
    for p in sorted(protected):
        if out_real == p or p in out_real.parents:
            raise UsageError(
                f"--out {out} is inside the input checkpoint ({p})",
                hint="choose an output directory outside the checkpoint",
            )
        if out_real in p.parents:
            raise UsageError(
                f"the input checkpoint ({p}) is inside --out {out}",
                hint="choose an output directory that does not contain the checkpoint",
            )


def _looks_like_output(path: Path) -> bool:
    try:
        with open(path / SCALES_JSON, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return f'"schema": "{SCALES_SCHEMA}"'.encode() in head


def check_out(out: Path, force: bool) -> bool:
    """Validate ``--out`` before anything is written; returns whether it exists (to be
    replaced). An empty directory may be reused without ``--force``."""
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        parent = out.parent
        if not parent.is_dir():
            raise UsageError(
                f"the parent directory of --out {out} does not exist",
                hint="create it first",
            ) from None
        return False
    except OSError as exc:
        raise OutputError(f"{out}: cannot check the output path: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"--out {out} is a symbolic link", hint="pass the real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"--out {out} exists and is not a directory")
    try:
        with os.scandir(out) as entries:
            empty = next(entries, None) is None
    except OSError as exc:
        raise OutputError(f"{out}: cannot read the existing output: {exc.strerror}") from None
    if empty:
        return True
    if not force:
        raise UsageError(
            f"--out {out} already exists", hint="pass --force to replace it, or choose a new name"
        )
    if not _looks_like_output(out):
        raise UsageError(
            f"--out {out} exists and is not a kvscale normalize output (no {SCALES_JSON} with "
            f"schema {SCALES_SCHEMA}); refusing to replace it even with --force",
            hint="choose a new output directory",
        )
    return True


def _other_files(
    ckpt: Checkpoint, exclude: set[str]
) -> tuple[list[tuple[str, Path]], list[tuple[str, str]]]:
    """Every other file of the checkpoint, as (relative path, source), sorted; and what is
    skipped. Symlinks to files are followed (Hugging Face snapshots are made of them)."""
    files: list[tuple[str, Path]] = []
    skipped: list[tuple[str, str]] = []
    if ckpt.layout == "file":
        for name in ("config.json", "hf_quant_config.json"):
            path = ckpt.root / name
            if path.is_file():
                files.append((name, path))
        return files, skipped
    root = ckpt.root

    def onerror(exc: OSError) -> None:
        raise InputError(exc.filename or root, f"cannot read: {exc.strerror}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        rel_dir = os.path.relpath(dirpath, root)
        kept_dirs = []
        for d in sorted(dirnames):
            rel = d if rel_dir == "." else f"{rel_dir}/{d}"
            full = Path(dirpath) / d
            if d in SKIPPED_DIRS:
                skipped.append((rel, "version-control data"))
            elif full.is_symlink():
                skipped.append((rel, "symbolic link to a directory"))
            else:
                kept_dirs.append(d)
        dirnames[:] = kept_dirs
        for f in sorted(filenames):
            rel = f if rel_dir == "." else f"{rel_dir}/{f}"
            if rel in exclude:
                continue
            full = Path(dirpath) / f
            try:
                st = os.stat(full)
            except OSError:
                skipped.append((rel, "dangling or looping symbolic link"))
                continue
            if not stat.S_ISREG(st.st_mode):
                skipped.append((rel, "not a regular file"))
                continue
            files.append((rel, full))
    return files, skipped


def _scales_fingerprint(ckpt: Checkpoint, layers: Sequence[ResolvedLayer]) -> str:
    """sha256 over every scale tensor's name, file, dtype, shape and raw bytes."""
    digest = hashlib.sha256()
    seen: set[tuple[str, str]] = set()
    entries: list[tuple[str, str]] = []
    for layer in layers:
        for src in [*layer.sources.values(), *layer.shadowed]:
            key = (src.file, src.tensor)
            if key not in seen:
                seen.add(key)
                entries.append(key)
    for file, tensor in sorted(entries):
        info = ckpt.headers[file].tensors[tensor]
        digest.update(f"{file}\0{tensor}\0{info.dtype}\0{list(info.shape)}\0".encode())
        try:
            digest.update(read_tensor_bytes(ckpt.path_of(file), info))
        except InputError:
            digest.update(b"<not read>")
    return digest.hexdigest()


def _target_shard(ckpt: Checkpoint, layer: ResolvedLayer) -> str:
    """The shard that held the layer's scales, else its attention weights, else the first."""
    for kind in (*KINDS, "k_zero_point", "v_zero_point", "q_zero_point"):
        src = layer.sources.get(kind)
        if src is not None:
            return src.file
    prefix = _prefix(layer) + "."
    best = None
    for ref in ckpt.tensors.values():
        if ref.name.startswith(prefix) and (best is None or ref.load_order < best.load_order):
            best = ref
    return best.file if best is not None else ckpt.files[0]


def plan_normalize(
    checkpoint: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: NormalizeOptions | None = None,
    progress: ProgressFn | None = None,
) -> NormalizePlan:
    """Decide and validate everything; writes nothing. ``plan.blocking`` lists what stops
    the run (the caller decides, see ``write_plan``)."""
    options = options or NormalizeOptions()
    if options.platform not in ("ocp", "fnuz"):
        raise UsageError(f"unknown --platform {options.platform!r}", hint="use ocp or fnuz")
    out_path = Path(out)

    def header_progress(done: int, total: int, name: str) -> None:
        if progress is not None:
            progress(ProgressUpdate("headers", done, total, done, total, name))

    ckpt = open_checkpoint(checkpoint, header_progress)
    _check_paths(ckpt, out_path)
    check_out(out_path, options.force)

    requested = InspectOptions(options.kv_cache_dtype, options.platform, options.model_dtype)
    report = inspect_opened(ckpt, requested)
    warnings: list[Problem] = []
    blocking: list[Problem] = []
    engine = report.engine_path
    kv_dtype = report.kv_cache_dtype
    values_report = report
    if engine is not EnginePath.NONE and not _per_tensor_quantized(kv_dtype):
        kv_dtype = "fp8"
        values_report = inspect_opened(
            ckpt, InspectOptions("fp8", options.platform, options.model_dtype)
        )
        warnings.append(
            _warning(
                "kv-dtype-promoted",
                f"the effective KV-cache dtype {report.kv_cache_dtype} does not use k/v scales; "
                "the values written are those of --kv-cache-dtype fp8 (the engine ignores k/v "
                f"with {report.kv_cache_dtype}, so loading the copy is unchanged, and the "
                "calibrated scales stay usable with fp8)",
            )
        )
    ocp_report = values_report
    if options.platform != "ocp":
        ocp_report = inspect_opened(ckpt, InspectOptions(kv_dtype, "ocp", options.model_dtype))

    quant_method = report.quant_method
    stacked = _stacked_first(report)
    base = engine is EnginePath.BASE
    write_scales = options.checkpoint and engine is not EnginePath.NONE
    if options.checkpoint and engine is EnginePath.NONE:
        warnings.append(
            _warning(
                "no-kv-scale-parameters",
                "no quant method of this checkpoint creates KV-scale parameters (every scale is "
                "1.0 and checkpoint scales reach nothing); the checkpoint copy is left unchanged",
            )
        )

    plans: list[LayerPlan] = []
    default_layers: list[str] = []
    settings_variants = [r.settings for r in (values_report, report) if r.settings is not None]
    for layer, ocp_layer in zip(values_report.layers, ocp_report.layers, strict=True):
        assert layer.name == ocp_layer.name
        reasons: list[tuple[str, str]] = []
        if not (safe_tensor_name(layer.name) and safe_tensor_name(_prefix(layer))):
            reasons.append(
                (
                    "unsafe-tensor-name",
                    f"layer name {_prefix(layer)!r} holds control characters or "
                    "path separators; kvscale writes no name derived from it",
                )
            )
        if layer.rule is Rule.ERROR:
            reasons.append(("layer-refused", layer.error or "the engine refuses this layer"))
        else:
            reasons.extend(
                ("invalid-scale-value", m) for m in _value_problems(layer, options.platform)
            )
            if options.platform != "ocp":
                reasons.extend(
                    ("invalid-scale-value", m) for m in _value_problems(ocp_layer, "ocp")
                )
        tensors: list[tuple[str, NewTensor]] = []
        if not reasons and write_scales:
            kinds: list[str] = ["k_scale", "v_scale"]
            kinds += [k for k in ("q_scale", "prob_scale") if k in ocp_layer.used_from_checkpoint]
            fnuz_default = base and layer.rule is Rule.DEFAULT and options.platform == "fnuz"
            if base and layer.rule is Rule.DEFAULT:
                default_layers.append(layer.name)
            for kind in kinds:
                name = checkpoint_name(_prefix(ocp_layer), kind, quant_method, stacked)
                if name is None:
                    reasons.append(
                        (
                            "unmappable-name",
                            f"no checkpoint name maps back to {layer.name}.{kind} "
                            f"under quant_method {quant_method}",
                        )
                    )
                    continue
                value = ocp_layer.value(kind)
                assert value is not None
                if fnuz_default and kind in ("k_scale", "v_scale"):
                    # fnuz doubles explicit k/v but not the 1.0 default: 0.5 x 2 = 1.0.
                    value = 0.5
                tensors.append(
                    (kind, _checkpoint_tensor(name, kind, value, report.shape.num_attention_heads))
                )
        if reasons and layer.name in default_layers:
            default_layers.remove(layer.name)
        sources = dict(layer.sources)
        kept = None
        if tensors and not reasons:
            shard = _target_shard(ckpt, layer)
            kept = _verify_copy(layer, tensors, shard, settings_variants, options.platform)
            if kept is not None:
                tensors = []
                if layer.name in default_layers:
                    default_layers.remove(layer.name)
                warnings.append(
                    _warning(
                        "kept-as-is",
                        f"the copy keeps this layer's tensors as they are: {kept}",
                        layer.name,
                    )
                )
        if reasons:
            problems = [_error(code, msg, layer.name) for code, msg in reasons]
            if options.force:
                warnings.extend(
                    _warning("layer-skipped", f"left as it is (--force): {p.message}", layer.name)
                    for p in problems
                )
                plans.append(
                    LayerPlan(
                        layer.name,
                        layer.rule.value,
                        {},
                        sources,
                        layer.shadowed,
                        skipped="; ".join(msg for _, msg in reasons),
                    )
                )
            else:
                blocking.extend(problems)
            continue
        device = {kind: layer.value(kind) for kind in KINDS}
        plans.append(
            LayerPlan(
                layer.name,
                layer.rule.value,
                {k: v for k, v in device.items() if v is not None},
                sources,
                layer.shadowed,
                checkpoint_tensors=tuple(tensors),
                shard=_target_shard(ckpt, layer) if tensors else None,
                kept=kept,
            )
        )

    if default_layers and write_scales:
        shown = ", ".join(default_layers[:3]) + (
            f" and {len(default_layers) - 3} more" if len(default_layers) > 3 else ""
        )
        if options.platform == "ocp":
            warnings.append(
                _warning(
                    "default-made-explicit",
                    f"{len(default_layers)} layers have no k/v scales ({shown}); the copy holds an "
                    "explicit 1.0, which equals the engine's default on OCP but is doubled on fnuz "
                    "(ROCm), where the original loads 1.0 and the copy 2.0; run with --platform "
                    "fnuz for a ROCm copy",
                )
            )
        else:
            warnings.append(
                _warning(
                    "fnuz-specific-copy",
                    f"{len(default_layers)} layers have no k/v scales ({shown}); the copy holds an "
                    "explicit 0.5, which fnuz doubles to the engine's default 1.0; this copy is "
                    "fnuz-specific (on OCP it loads 0.5)",
                )
            )

    fingerprint = dict(report.fingerprint)
    fingerprint["scales_sha256"] = _scales_fingerprint(ckpt, report.layers)

    layers = tuple(plans)
    device_tensors = [
        _device_tensor(f"{layer.name}.{kind}", layer.device[kind])
        for layer in layers
        if not layer.skipped
        for kind in KINDS
    ]
    scales_blob = _scales_safetensors(device_tensors, kv_dtype, options.platform)
    jobs: list[FileJob] = [FileJob(SCALES_FILE, "generated", len(scales_blob), data=scales_blob)]
    removed: list[tuple[str, str]] = []
    added: list[tuple[str, str]] = []
    skipped_files: list[tuple[str, str]] = []
    if options.checkpoint:
        shard_jobs, removed, added, index_job, problems = _plan_checkpoint(
            ckpt, layers, write_scales
        )
        blocking.extend(problems)
        jobs.extend(shard_jobs)
        exclude = set(ckpt.files)
        if index_job is not None:
            exclude.add(INDEX_NAME)
            jobs.append(index_job)
        others, skipped_files = _other_files(ckpt, exclude)
        for rel, src in others:
            try:
                size = os.stat(src).st_size
            except OSError as exc:
                raise InputError(src, f"cannot read: {exc.strerror}") from None
            jobs.append(FileJob(f"{CHECKPOINT_DIR}/{rel}", "copied", size, source=src))
        for rel, why in skipped_files:
            warnings.append(_warning("file-not-copied", f"{rel} is not copied: {why}"))

    plan = NormalizePlan(
        checkpoint=ckpt.given,
        out=out_path,
        options=options,
        report=report,
        values_report=values_report,
        kv_cache_dtype=kv_dtype,
        layers=layers,
        files=(),
        removed=tuple(removed),
        added=tuple(added),
        warnings=tuple(warnings),
        blocking=tuple(blocking),
        skipped_files=tuple(skipped_files),
        fingerprint=fingerprint,
    )
    document = json.dumps(scales_document(plan), indent=2, ensure_ascii=True, allow_nan=False)
    json_blob = (document + "\n").encode()
    jobs.insert(1, FileJob(SCALES_JSON, "generated", len(json_blob), data=json_blob))
    return _replace_files(plan, tuple(jobs))


def _replace_files(plan: NormalizePlan, files: tuple[FileJob, ...]) -> NormalizePlan:
    return replace(plan, files=files)


def _scales_safetensors(tensors: Sequence[NewTensor], kv_dtype: str, platform: str) -> bytes:
    metadata = {
        "format": "pt",
        "kvscale.schema": SCALES_SCHEMA,
        "kv_cache_dtype": kv_dtype,
        "platform": platform,
    }
    layout = plan_layout((), tensors, metadata)
    return layout.header + b"".join(p.data or b"" for p in layout.pieces)


def _plan_checkpoint(
    ckpt: Checkpoint, layers: Sequence[LayerPlan], write_scales: bool
) -> tuple[
    list[FileJob], list[tuple[str, str]], list[tuple[str, str]], FileJob | None, list[Problem]
]:
    """Shards (rewritten where their scales change, else copied whole) and the index."""
    remove: dict[str, set[str]] = {name: set() for name in ckpt.files}
    add: dict[str, list[NewTensor]] = {name: [] for name in ckpt.files}
    problems: list[Problem] = []
    if write_scales:
        for layer in layers:
            if layer.skipped or not layer.checkpoint_tensors:
                continue  # left as it is: its source tensors stay
            for src in [*layer.sources.values(), *layer.shadowed]:
                # Zero points stay: the compressed-tensors path creates parameters for them (and
                # ignores their values); removing them changes nothing, keeping them is harmless.
                if src.kind in KINDS:
                    remove[src.file].add(src.tensor)
            if layer.shard is not None:
                add[layer.shard].extend(t for _, t in layer.checkpoint_tensors)

    kept_names: set[str] = set()
    for name in ckpt.files:
        kept_names.update(n for n in ckpt.headers[name].tensors if n not in remove[name])
    new_names: set[str] = set()
    for shard in ckpt.files:
        for tensor in add[shard]:
            if tensor.name in kept_names or tensor.name in new_names:
                problems.append(
                    _error(
                        "name-collision",
                        f"{tensor.name} would be written to {shard}, but a tensor of that name "
                        "is kept in the checkpoint",
                    )
                )
            new_names.add(tensor.name)

    jobs: list[FileJob] = []
    removed: list[tuple[str, str]] = []
    added: list[tuple[str, str]] = []
    shard_sizes: dict[str, int] = {}
    rewritten = False
    for shard in ckpt.files:
        header = ckpt.headers[shard]
        source = ckpt.path_of(shard)
        rel = f"{CHECKPOINT_DIR}/{shard}"
        if remove[shard] or add[shard]:
            keep = [info for n, info in header.tensors.items() if n not in remove[shard]]
            layout = plan_layout(keep, add[shard], header.metadata)
            jobs.append(FileJob(rel, "rewritten", layout.size, source=source, layout=layout))
            shard_sizes[shard] = sum(size for *_, size in layout.tensors)
            removed.extend((shard, n) for n in sorted(remove[shard]))
            added.extend((shard, t.name) for t in sorted(add[shard], key=lambda t: t.name))
            rewritten = True
        else:
            jobs.append(FileJob(rel, "copied", header.file_size, source=source))
            shard_sizes[shard] = sum(info.nbytes for info in header.tensors.values())

    index_job = None
    if ckpt.index is not None and rewritten:
        index = json.loads(json.dumps(ckpt.index))  # a deep copy of plain JSON
        weight_map = index["weight_map"]
        for shard, name in removed:
            if weight_map.get(name) == shard:
                del weight_map[name]
        for shard, name in added:
            weight_map[name] = shard
        metadata = index.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
            index["metadata"] = metadata
        indexed = set(weight_map.values())
        metadata["total_size"] = sum(
            size for shard, size in shard_sizes.items() if shard in indexed
        )
        # transformers' save_pretrained format: indent 2, sorted keys, trailing newline.
        blob = (json.dumps(index, indent=2, sort_keys=True) + "\n").encode()
        index_job = FileJob(f"{CHECKPOINT_DIR}/{INDEX_NAME}", "generated", len(blob), data=blob)
    return jobs, removed, added, index_job, problems


# --- the kvscale.scales/1 document ---------------------------------------------------------------


def scales_document(plan: NormalizePlan) -> dict[str, Any]:
    """``kv_scales.json``: host scales (each equal to its device tensor), rule, provenance."""
    report = plan.report
    layers: dict[str, Any] = {}
    for layer in plan.layers:
        entry: dict[str, Any]
        if layer.skipped:
            entry = dict.fromkeys(KINDS)
            entry["rule"] = layer.rule
            entry["skipped"] = layer.skipped
        else:
            entry = {kind: encode_json_value(layer.host(kind)) for kind in KINDS}
            entry["rule"] = layer.rule
            per_head = {
                kind: encode_json_value(layer.device[kind])
                for kind in KINDS
                if isinstance(layer.device[kind], tuple)
            }
            if per_head:
                entry["per_head"] = per_head
            if layer.kept:
                entry["checkpoint_kept"] = layer.kept
            if layer.checkpoint_tensors:
                entry["checkpoint_tensors"] = {
                    kind: tensor.name for kind, tensor in layer.checkpoint_tensors
                }
        entry["sources"] = {kind: src.to_json() for kind, src in layer.sources.items()}
        if layer.shadowed:
            entry["shadowed"] = [src.to_json() for src in layer.shadowed]
        layers[layer.name] = entry
    return {
        "schema": SCALES_SCHEMA,
        "checkpoint": plan.checkpoint,
        "kv_cache_dtype": plan.kv_cache_dtype,
        "platform": plan.options.platform,
        "engine_path": report.engine_path.value,
        "quant_method": report.quant_method,
        "model_dtype": report.model_dtype,
        "kv_cache_dtype_requested": report.kv_cache_dtype_requested,
        "kv_cache_dtype_effective": report.kv_cache_dtype,
        "kvscale_version": __version__,
        "device_scales": {"file": SCALES_FILE, "dtype": "float32"},
        # The attention shape, so that `kvscale verify` sizes its samples like the model's K/V.
        "num_kv_heads": report.shape.kv_heads,
        "head_size": report.shape.head_size,
        "source_fingerprint": dict(plan.fingerprint),
        "layers": layers,
        "warnings": [p.to_json() for p in plan.warnings],
    }


# --- writing ------------------------------------------------------------------------------------


class _Aborted(Exception):
    pass


_libc: Any = None


def _renameat2(src: Path, dst: Path, flags: int) -> bool:
    """Linux renameat2 (RENAME_NOREPLACE=1, RENAME_EXCHANGE=2); False if not supported."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        func = _libc.renameat2
    except (OSError, AttributeError):
        return False
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd = -100
    rc = func(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(dst))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(out: Path) -> list[Path]:
    """Remove staging/old directories left next to ``out`` by runs that were killed."""
    removed: list[Path] = []
    pattern = re.compile(
        rf"^\.{re.escape(out.name)}(?:{re.escape(STAGING_MARK)}|{re.escape(OLD_MARK)})"
        r"(\d+)-[^/]*$"
    )
    try:
        with os.scandir(out.parent) as it:
            entries = list(it)
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        if _pid_alive(int(match.group(1))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _describe_os_error(exc: OSError, what: str, out: Path) -> str:
    code = exc.errno
    reason = exc.strerror or str(exc)
    if code == errno.ENOSPC:
        why = "no space left on the output filesystem"
    elif code == errno.EDQUOT:
        why = "disk quota exceeded on the output filesystem"
    elif code == errno.EROFS:
        why = "the output filesystem is read-only"
    elif code in (errno.EACCES, errno.EPERM):
        why = f"permission denied ({reason})"
    elif code == errno.ENOENT:
        why = "the output directory vanished while kvscale was writing it"
    else:
        why = reason
    return f"{what}: {why}; nothing was written to {out}"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        buffer = bytearray(8 << 20)
        view = memoryview(buffer)
        while True:
            n = fh.readinto(buffer)
            if not n:
                break
            digest.update(view[:n])
    return digest.hexdigest()


def write_plan(plan: NormalizePlan, progress: ProgressFn | None = None) -> NormalizeResult:
    """Write a validated plan: stage everything next to ``--out``, fsync, rename into place.

    Raises ``RefusedError`` (exit 1) when the plan has blocking problems and ``--force`` was not
    given; ``OutputError`` (exit 2) when writing fails (the staging directory is removed, and
    ``--out`` is unchanged).
    """
    unforceable = [p for p in plan.blocking if p.code == "name-collision"]
    if unforceable or (plan.blocking and not plan.options.force):
        first = plan.blocking[0]
        more = f" (and {len(plan.blocking) - 1} more)" if len(plan.blocking) > 1 else ""
        where = f"{first.layer}: " if first.layer else ""
        raise RefusedError(
            f"nothing written: {where}{first.message}{more}",
            hint="fix the checkpoint, or pass --force to leave such layers as they are",
        )
    out = plan.out
    options = plan.options
    exists = check_out(out, options.force)
    clean_stale(out)
    parent = out.parent
    try:
        staging = Path(
            tempfile.mkdtemp(prefix=f".{out.name}{STAGING_MARK}{os.getpid()}-", dir=parent)
        )
    except OSError as exc:
        raise OutputError(
            _describe_os_error(exc, f"cannot create a directory in {parent}", out)
        ) from None
    umask = os.umask(0)
    os.umask(umask)
    results: dict[str, WrittenFile] = {}
    committed = False
    try:
        os.chmod(staging, 0o777 & ~umask)
        results = _write_files(plan, staging, progress)
        if options.fsync:
            _fsync_tree(staging)
        _commit(staging, out, exists)
        committed = True
    except OSError as exc:
        what = f"writing {exc.filename}" if exc.filename else "writing the output"
        raise OutputError(_describe_os_error(exc, what, out)) from None
    except SourceChangedError as exc:
        raise InputError(plan.checkpoint, f"a file changed while it was copied ({exc})") from None
    finally:
        if not committed:
            shutil.rmtree(staging, ignore_errors=True)
    files = tuple(results[job.path] for job in plan.files)
    return NormalizeResult(plan, out, files, exists)


def _write_files(
    plan: NormalizePlan, staging: Path, progress: ProgressFn | None
) -> dict[str, WrittenFile]:
    options = plan.options
    total = plan.total_bytes
    files_total = len(plan.files)
    lock = threading.Lock()
    abort = threading.Event()
    state = {"done": 0, "files": 0}
    results: dict[str, WrittenFile] = {}

    def report(label: str) -> None:
        if progress is not None:
            progress(
                ProgressUpdate("writing", state["done"], total, state["files"], files_total, label)
            )

    def on_bytes_for(label: str) -> Callable[[int], None]:
        def on_bytes(n: int) -> None:
            if abort.is_set():
                raise _Aborted()
            with lock:
                state["done"] += n
                report(label)

        return on_bytes

    # Directories first (sorted, so creation order is deterministic).
    dirs = sorted({str(Path(job.path).parent) for job in plan.files} - {"."})
    for d in dirs:
        (staging / d).mkdir(parents=True, exist_ok=True)

    def run(job: FileJob) -> WrittenFile:
        try:
            return run_one(job)
        except OSError as exc:
            # Name the output file (relative to --out), not the hidden staging path.
            raise OSError(exc.errno, exc.strerror or str(exc), job.path) from exc

    def run_one(job: FileJob) -> WrittenFile:
        dst = _inside(staging, job.path)
        label = job.path
        on_bytes = on_bytes_for(label)
        digest: str | None = None
        if job.data is not None:
            write_bytes(dst, job.data, fsync=options.fsync)
            on_bytes(len(job.data))
            digest = hashlib.sha256(job.data).hexdigest()
            method = "written"
        elif job.layout is not None:
            method = write_layout(job.layout, job.source, dst, on_bytes, fsync=options.fsync)
        else:
            assert job.source is not None
            size, method = copy_file(job.source, dst, on_bytes, fsync=options.fsync)
            if size != job.size:
                raise SourceChangedError(f"{job.source} is {size} bytes, was {job.size}")
        if digest is None and options.digests:
            digest = _sha256_file(dst)
        with lock:
            state["files"] += 1
            report(label)
        return WrittenFile(job.path, job.action, job.size, digest, method)

    # Copies spend their time in the kernel and waiting for the disk, not in Python: a few
    # threads keep both the CPU (page-cache copies) and the disk queue (writeback, fsync) busy
    # even on small machines.
    workers = options.workers or DEFAULT_WORKERS
    # Largest first, so that one big shard does not start last.
    order = sorted(plan.files, key=lambda j: (-j.size, j.path))
    if workers <= 1:
        for job in order:
            results[job.path] = run(job)
        return results
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kvscale-copy") as pool:
        futures = {pool.submit(run, job): job for job in order}
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in done if f.exception() is not None]
            if failed:
                abort.set()
                for f in futures:
                    f.cancel()
                wait(futures)
                errors = [f.exception() for f in futures if not f.cancelled() and f.exception()]
                real = [e for e in errors if not isinstance(e, _Aborted)]
                raise (real or errors)[0]  # type: ignore[misc]
        except BaseException:
            abort.set()
            for f in futures:
                f.cancel()
            raise
        for future, job in futures.items():
            results[job.path] = future.result()
    return results


def _inside(root: Path, rel: str) -> Path:
    """``root/rel`` for a relative path that cannot leave ``root``."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") or "\0" in p for p in parts) or os.path.isabs(rel):
        raise OutputError(f"refusing to write outside the output directory: {rel!r}")
    return root.joinpath(*parts)


def _fsync_tree(root: Path) -> None:
    for dirpath, _, _ in sorted(os.walk(root), key=lambda t: -len(t[0])):
        fsync_dir(Path(dirpath))


def _commit(staging: Path, out: Path, exists: bool) -> None:
    """Make the staged output visible under ``out`` in one step."""
    parent = out.parent
    if exists:
        # RENAME_EXCHANGE swaps both names atomically: a crash leaves the old or the new output.
        if _renameat2(staging, out, 2):
            fsync_dir(parent)
            shutil.rmtree(staging, ignore_errors=True)
            return
        # Filesystems without RENAME_EXCHANGE: move the old output aside first. A crash between
        # the two renames leaves both complete outputs under hidden names, none under ``out``.
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}{OLD_MARK}{os.getpid()}-", dir=parent))
        os.rmdir(old)
        os.rename(out, old)
        os.rename(staging, out)
        fsync_dir(parent)
        shutil.rmtree(old, ignore_errors=True)
        return
    if not _renameat2(staging, out, 1):  # RENAME_NOREPLACE
        if os.path.lexists(out):
            raise FileExistsError(errno.EEXIST, "appeared while kvscale was writing", str(out))
        os.rename(staging, out)
    fsync_dir(parent)


def normalize_checkpoint(
    checkpoint: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: NormalizeOptions | None = None,
    progress: ProgressFn | None = None,
) -> NormalizeResult:
    """Plan, validate and write in one call (library use)."""
    plan = plan_normalize(checkpoint, out, options, progress)
    return write_plan(plan, progress)


__all__ = [
    "FileJob",
    "LayerPlan",
    "NormalizeOptions",
    "NormalizePlan",
    "NormalizeResult",
    "ProgressUpdate",
    "WrittenFile",
    "check_out",
    "checkpoint_name",
    "clean_stale",
    "normalize_checkpoint",
    "plan_normalize",
    "safe_tensor_name",
    "scales_document",
    "write_plan",
]
