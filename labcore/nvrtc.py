"""NVRTC, CUDA's run-time compiler, found the way CuPy finds it, before any kernel is compiled.

The lessons' kernels are CUDA source compiled at run time (CuPy `RawKernel`, `RawModule`). A lab
machine with only the NVIDIA driver has no NVRTC unless CuPy's CUDA-toolkit extra brought it;
this package's `cuda12`/`cuda13` extras bring it as NVIDIA's wheels (`cuda-toolkit[nvrtc,cudart]`).
"""

from __future__ import annotations

from pathlib import Path

from labcore.errors import UsageError

INSTALL = (
    "pip install 'cuda-toolkit[nvrtc,cudart]==13.*' (CUDA 12 driver: 'cuda-toolkit[nvrtc,cudart]==12.*'); "
    "the course's [cuda13] and [cuda12] extras include it"
)
PROC_MAPS = Path("/proc/self/maps")  # where Linux lists the files mapped into this process


def require_nvrtc() -> str:
    """'NVRTC 13.0 (/path/libnvrtc.so.13)' once CuPy has loaded it; a one-line UsageError naming the fix if not."""
    try:
        from cupy.cuda import nvrtc  # CuPy is an optional extra: imported only when a kernel is about to compile

        major, minor = nvrtc.getVersion()  # CuPy loads libnvrtc here, wherever it will load it to compile
    except ModuleNotFoundError as exc:
        if exc.name == "cupy":
            raise UsageError(f"CuPy is not installed, nor NVRTC (CUDA's run-time compiler): {INSTALL}") from exc
        raise _not_found(exc) from exc
    except Exception as exc:  # a missing libnvrtc surfaces as ImportError, OSError, RuntimeError or a CuPy error
        raise _not_found(exc) from exc
    return f"NVRTC {major}.{minor} ({loaded_library('libnvrtc') or 'library file unknown'})"


def loaded_library(prefix: str) -> str | None:
    """Path of the first shared library mapped into this process whose file name starts with `prefix`."""
    try:
        lines = PROC_MAPS.read_text().splitlines()
    except OSError:  # not Linux: no /proc to ask
        return None
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6:
            continue  # an anonymous mapping
        name = Path(fields[5]).name
        if name.startswith(prefix) and ".so" in name and not name.startswith(f"{prefix}-builtins"):
            return fields[5]
    return None


def _not_found(exc: BaseException) -> UsageError:
    """The one-line error for an NVRTC that CuPy could not load, with CuPy's own first line as the reason."""
    lines = str(exc).strip().splitlines()
    reason = lines[0] if lines else type(exc).__name__
    if len(reason) > 160:
        reason = reason[:157] + "..."
    return UsageError(
        f"NVRTC (CUDA's run-time compiler) not found ({reason}): install CuPy's CUDA toolkit extra: {INSTALL}"
    )
