"""Comparing float32 tensors bit for bit (torch imported: kernel and model tests only)."""

from __future__ import annotations

import torch


def same_float32_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shape, dtype and float32 bits, a NaN equal to a NaN of any sign or payload (a NaN
    byte reads back as a NaN whose sign no value depends on)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(((a.view(torch.int32) == b.view(torch.int32)) | (a.isnan() & b.isnan())).all())
