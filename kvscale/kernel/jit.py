"""One Triton kernel, built on first use: a JITFunction for the GPU or an InterpretedFunction for
Triton's CPU interpreter (the interpreter tests). The kernel modules (``triton_cache``,
``triton_mla``, ``triton_nvfp4``) each hold their kernels as :class:`LazyKernel`.

Built on first use rather than decorated at import, so that one process can hold both (the
interpreter tests and the GPU tests in one pytest run) whatever TRITON_INTERPRET said when the
module was imported; and ``JITFunction`` directly, not ``triton.jit``: the latter returns an
interpreter object whenever TRITON_INTERPRET=1 is set, which cannot compile for CUDA tensors.
"""

from __future__ import annotations

import threading
from typing import Any

from kvscale.errors import EnvironmentMissingError

__all__ = ["LazyKernel", "TritonUnavailableError", "require_triton"]


class TritonUnavailableError(EnvironmentMissingError, RuntimeError):
    """Triton (or a CUDA device for it) is not available for a GPU cache write."""


def require_triton(what: str) -> None:
    """Raise :class:`TritonUnavailableError` naming ``what`` needs it, unless Triton imports."""
    try:
        import triton  # type: ignore[import-untyped,unused-ignore]  # noqa: F401
    except ImportError:
        raise TritonUnavailableError(
            f"{what} needs Triton; install it with `pip install 'kvscale[gpu]'` "
            "(or `pip install triton`)"
        ) from None


class LazyKernel:
    """``fn`` (a plain Python function written in Triton) as a compiled or interpreted kernel.

    ``what`` names it in the error raised without Triton; ``options`` are JITFunction's
    (``do_not_specialize``, ...), the same for both builds.
    """

    def __init__(self, fn: Any, what: str, **options: Any) -> None:
        self._fn = fn
        self._what = what
        self._options = options
        self._lock = threading.Lock()
        self._built: dict[bool, Any] = {}

    def get(self, interpret: bool) -> Any:
        require_triton(self._what)
        with self._lock:
            kernel = self._built.get(interpret)
            if kernel is None:
                if interpret:
                    from triton.runtime.interpreter import (  # type: ignore[import-untyped,unused-ignore]
                        InterpretedFunction,
                    )

                    kernel = InterpretedFunction(self._fn, **self._options)
                else:
                    from triton.runtime.jit import (  # type: ignore[import-untyped,unused-ignore]
                        JITFunction,
                    )

                    kernel = JITFunction(self._fn, **self._options)
                self._built[interpret] = kernel
            return kernel
