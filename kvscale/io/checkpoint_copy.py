"""A copy of a checkpoint with some scale tensors replaced: which files are rewritten, which are
copied byte for byte, and the index that goes with them.

Used by ``normalize --checkpoint`` and ``calibrate --checkpoint``. Plans only (``FileJob`` list
for ``kvscale.io.staging.write_output``); nothing is written here. What holds:

* shards are rewritten only where tensors are removed or added (``plan_layout`` keeps every
  other tensor's bytes, copied by the kernel); all other files are copied whole;
* the other files are ``kvscale.io.checkpoint.other_files``: a symbolic link whose target
  lies outside the checkpoint (a private key, another model) is never followed: it is skipped
  and reported; Hugging Face snapshots, whose files link into the repository's ``blobs/``,
  count the repository as the checkpoint;
* every copy keeps its source's permission bits at most (a 0600 file stays 0600);
* only regular files are copied (FIFOs, devices and sockets are skipped and reported).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kvscale.engine.base import KINDS, ResolvedLayer, ScaleValue
from kvscale.errors import InputError
from kvscale.io.checkpoint import INDEX_NAME, Checkpoint, other_files
from kvscale.io.safetensors_write import NewTensor, f32_tensor, plan_layout
from kvscale.io.staging import FileJob


@dataclass(frozen=True)
class ShardEdit:
    """What changes in one shard: tensors removed, tensors added, metadata entries set."""

    remove: frozenset[str] = frozenset()
    add: tuple[NewTensor, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CopyPlan:
    jobs: tuple[FileJob, ...]
    removed: tuple[tuple[str, str], ...]
    """(shard, tensor) removed."""
    added: tuple[tuple[str, str], ...]
    """(shard, tensor) added."""
    collisions: tuple[tuple[str, str], ...]
    """(shard, tensor) that would be added under a name the copy keeps elsewhere."""
    skipped: tuple[tuple[str, str], ...]
    """(relative path, why) of files that are not copied."""


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def plan_copy(
    ckpt: Checkpoint,
    edits: Mapping[str, ShardEdit],
    prefix: str,
    *,
    replaced: Mapping[str, bytes] | None = None,
) -> CopyPlan:
    """Jobs that write the checkpoint under ``prefix`` (e.g. ``checkpoint``) with ``edits``
    applied per shard; ``replaced``: other files (relative path -> new bytes, e.g. a new
    config.json) written instead of copied."""
    replaced = dict(replaced or {})
    kept_names: set[str] = set()
    for name in ckpt.files:
        remove = edits[name].remove if name in edits else frozenset()
        kept_names.update(n for n in ckpt.headers[name].tensors if n not in remove)
    collisions: list[tuple[str, str]] = []
    new_names: set[str] = set()
    for shard in ckpt.files:
        for tensor in edits[shard].add if shard in edits else ():
            if tensor.name in kept_names or tensor.name in new_names:
                collisions.append((shard, tensor.name))
            new_names.add(tensor.name)

    jobs: list[FileJob] = []
    removed: list[tuple[str, str]] = []
    added: list[tuple[str, str]] = []
    shard_sizes: dict[str, int] = {}
    rewritten = False
    for shard in ckpt.files:
        header = ckpt.headers[shard]
        source = ckpt.path_of(shard)
        rel = f"{prefix}/{shard}"
        edit = edits.get(shard)
        mode = _mode(source)
        if edit is not None and (edit.remove or edit.add or edit.metadata):
            keep = [info for n, info in header.tensors.items() if n not in edit.remove]
            metadata = dict(header.metadata or {})
            metadata.update(edit.metadata)
            layout = plan_layout(keep, edit.add, metadata if metadata or header.metadata else None)
            jobs.append(
                FileJob(rel, "rewritten", layout.size, source=source, layout=layout, mode=mode)
            )
            shard_sizes[shard] = sum(size for *_, size in layout.tensors)
            removed.extend((shard, n) for n in sorted(edit.remove & set(header.tensors)))
            added.extend((shard, t.name) for t in sorted(edit.add, key=lambda t: t.name))
            rewritten = rewritten or bool(edit.remove or edit.add)
        else:
            jobs.append(FileJob(rel, "copied", header.file_size, source=source, mode=mode))
            shard_sizes[shard] = sum(info.nbytes for info in header.tensors.values())

    exclude = set(ckpt.files)
    if ckpt.index is not None and rewritten:
        exclude.add(INDEX_NAME)
        blob = _index_bytes(ckpt.index, removed, added, shard_sizes)
        jobs.append(
            FileJob(
                f"{prefix}/{INDEX_NAME}",
                "generated",
                len(blob),
                data=blob,
                mode=_mode(ckpt.root / INDEX_NAME),
            )
        )
    for rel, data in sorted(replaced.items()):
        exclude.add(rel)
        jobs.append(
            FileJob(
                f"{prefix}/{rel}", "generated", len(data), data=data, mode=_mode(ckpt.root / rel)
            )
        )
    others, skipped = other_files(ckpt, exclude)
    for rel, src, mode in others:
        try:
            size = os.stat(src).st_size
        except OSError as exc:
            raise InputError(src, f"cannot read: {exc.strerror}") from None
        jobs.append(FileJob(f"{prefix}/{rel}", "copied", size, source=src, mode=mode))
    return CopyPlan(tuple(jobs), tuple(removed), tuple(added), tuple(collisions), tuple(skipped))


def _index_bytes(
    index: Mapping[str, object],
    removed: Sequence[tuple[str, str]],
    added: Sequence[tuple[str, str]],
    shard_sizes: Mapping[str, int],
) -> bytes:
    doc = json.loads(json.dumps(index))  # a deep copy of plain JSON
    weight_map = doc["weight_map"]
    for shard, name in removed:
        if weight_map.get(name) == shard:
            del weight_map[name]
    for shard, name in added:
        weight_map[name] = shard
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
        doc["metadata"] = metadata
    indexed = set(weight_map.values())
    metadata["total_size"] = sum(size for shard, size in shard_sizes.items() if shard in indexed)
    # transformers' save_pretrained format: indent 2, sorted keys, trailing newline.
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def scale_tensor(name: str, kind: str, value: ScaleValue, num_heads: int | None) -> NewTensor:
    """A checkpoint scale tensor, float32: ``[]`` per tensor, or the compressed-tensors
    ``attn_head`` layout ``[heads, 1, 1]`` per head."""
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


def scale_shards(ckpt: Checkpoint, layers: Sequence[ResolvedLayer]) -> dict[str, str]:
    """Per layer: the shard that held its scales, else its attention weights, else the first.

    One pass over the tensor names for all layers (not one per layer).
    """
    out: dict[str, str] = {}
    wanted: dict[str, str] = {}
    for layer in layers:
        for kind in (*KINDS, "k_zero_point", "v_zero_point", "q_zero_point"):
            src = layer.sources.get(kind)
            if src is not None:
                out[layer.name] = src.file
                break
        else:
            wanted[layer.checkpoint_prefix + "."] = layer.name
    if wanted:
        first: dict[str, tuple[int, str]] = {}
        for ref in ckpt.tensors.values():
            name = ref.name
            # The prefix of a weight name, at each '.', is a candidate layer prefix.
            for cut in range(len(name)):
                if name[cut] != ".":
                    continue
                layer_name = wanted.get(name[: cut + 1])
                if layer_name is not None:
                    best = first.get(layer_name)
                    if best is None or ref.load_order < best[0]:
                        first[layer_name] = (ref.load_order, ref.file)
        for layer_name in wanted.values():
            out[layer_name] = first[layer_name][1] if layer_name in first else ckpt.files[0]
    return out
