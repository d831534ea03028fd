"""NVRTC, CUDA's run-time compiler: found the way CuPy finds it, and run on a student's source in a child it can kill.

The lessons' kernels are CUDA source compiled at run time (CuPy `RawKernel`, `RawModule`). A lab
machine with only the NVIDIA driver has no NVRTC unless CuPy's CUDA-toolkit extra brought it;
this package's `cuda12`/`cuda13` extras bring it as NVIDIA's wheels (`cuda-toolkit[nvrtc,cudart]`).

A student's CUDA source is compiled by `compile_ptx_limited` and `compile_cubin_limited`, never in the process
that asks: a few lines can hold NVRTC for minutes (templates that instantiate each other exponentially) or make it
allocate gigabytes (a huge initialized `__device__` array). The asking process keeps one compile server,
`python -m labcore.nvrtc` (NVRTC loaded once), which forks a child per compile under limits:

- COMPILE_LIMIT_S of wall time, then SIGKILL; COMPILE_MEMORY_BYTES of address space (RLIMIT_AS); no core file;
- no file it may open (RLIMIT_NOFILE at its three standard streams): `#include "/any/file"` cannot read the
  grading machine's files into the compiler's messages;
- what comes back is data: the PTX or cubin, NVRTC's log, or why it stopped.

A source past a limit raises CompileStopped ("your source took over 10 s to compile"); the server, and the
process that asked, carry on with the next source. The course's own kernels compile in-process, as before.
"""

from __future__ import annotations

import base64
import ctypes
import functools
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labcore import ptx
from labcore.errors import UsageError
from labcore.sizes import format_size

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


# -- a student's source, compiled in a child under limits ---------------------------------------------------------

COMPILE_LIMIT_S = 10.0  # wall seconds a compile may take; an honest publish step takes about 0.1 s
COMPILE_MEMORY_BYTES = 2 << 30  # the child's address space, NVRTC's ~0.3 GiB of libraries included
MAX_COMPILED_BYTES = 64 << 20  # PTX or cubin larger than this is not taken back (the course's: about 25 KB)
SERVER_GRACE_S = 30.0  # beyond the limit, how long the asking process waits for the server's answer
PR_SET_PDEATHSIG = 1
WARM_UP = "__global__ void warm_up(int* x) { *x = 1; }"  # compiled once at the server's start: NVRTC's builtins


class CompileStopped(Exception):
    """NVRTC did not finish compiling a source: past the time or memory limit, or it died; the message says which."""


def compile_ptx_limited(
    source: str,
    options: Sequence[str] = (),
    *,
    name: str = "kernel.cu",
    limit_s: float | None = None,
    memory_bytes: int | None = None,
) -> str:
    """labcore.ptx.compile_ptx's PTX of `source`, compiled in a child under limits (default COMPILE_LIMIT_S and
    COMPILE_MEMORY_BYTES); ptx.PtxCompileError as there when NVRTC rejects it, CompileStopped past a limit."""
    return _compiled(source, tuple(options), name, "ptx", *_limits(limit_s, memory_bytes))


def compile_cubin_limited(
    source: str,
    options: Sequence[str] = (),
    *,
    arch: str,
    name: str = "kernel.cu",
    limit_s: float | None = None,
    memory_bytes: int | None = None,
) -> bytes:
    """The cubin of `source` for `arch` ('sm_90'), compiled in a child under limits, errors as compile_ptx_limited."""
    options = (*options, f"--gpu-architecture={arch}")
    return _compiled(source, options, name, "cubin", *_limits(limit_s, memory_bytes))


def _limits(limit_s: float | None, memory_bytes: int | None) -> tuple[float, int]:
    """The limits asked for, or this module's (read at each call: a test may lower them)."""
    return limit_s or COMPILE_LIMIT_S, memory_bytes or COMPILE_MEMORY_BYTES


@functools.lru_cache(maxsize=64)  # identical sources (a class of reference copies) compile once; failures again
def _compiled(source: str, options: tuple[str, ...], name: str, output: str, limit_s: float, memory: int) -> Any:
    try:
        source.encode()
    except UnicodeEncodeError as exc:
        raise ptx.PtxCompileError(f"the source holds {source[exc.start]!r}, which UTF-8 cannot encode") from None
    request = {"source": source, "options": list(options), "name": name, "output": output}
    reply = _SERVER.ask({**request, "limit_s": limit_s, "memory_bytes": memory}, limit_s + SERVER_GRACE_S)
    if "log" in reply:
        raise ptx.PtxCompileError(reply["log"])
    if "stopped" in reply:
        raise CompileStopped(_stopped(reply, limit_s, memory))
    return reply["ptx"] if output == "ptx" else base64.b64decode(reply["cubin"])


def _stopped(reply: dict[str, Any], limit_s: float, memory: int) -> str:
    why = reply["stopped"]
    if why == "time":
        return f"your source took over {limit_s:g} s to compile (NVRTC was stopped there)"
    if why == "memory":
        return f"compiling your source needed over {format_size(memory)} of memory (NVRTC was stopped there)"
    if why == "size":
        return f"your source compiled to over {format_size(MAX_COMPILED_BYTES)} of code (NVRTC was stopped there)"
    return f"NVRTC died compiling your source ({reply.get('detail', why)})"


class _Server:
    """The asking process's compile server (`python -m labcore.nvrtc`), started on the first compile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        # where this labcore is, and what this process imports from; never its working directory (a student's files)
        home = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([home, *(p for p in sys.path if p)])}
        return subprocess.Popen(
            [sys.executable, "-m", "labcore.nvrtc"],
            cwd=home,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )

    def ask(self, request: dict[str, Any], wait_s: float) -> dict[str, Any]:
        """The server's answer to one request; a server that does not answer in wait_s is killed (and restarted
        by the next request), a compile it could not finish then said stopped."""
        with self._lock:
            for _attempt in range(2):  # a server found dead is started again, once
                if self._child is None or self._child.poll() is not None:
                    self._child = self._start()
                assert self._child.stdin is not None and self._child.stdout is not None
                try:
                    self._child.stdin.write(json.dumps(request).encode() + b"\n")
                    self._child.stdin.flush()
                except BrokenPipeError:
                    self._child = None
                    continue
                ready, _, _ = select.select([self._child.stdout], [], [], wait_s)
                line = self._child.stdout.readline() if ready else b""
                if line:
                    return json.loads(line)
                self.stop()
                if not ready:
                    return {"stopped": "time"}
            return {"stopped": "died", "detail": "the compile server ended"}

    def stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.wait()
            self._child = None


_SERVER = _Server()


# -- the server and its children ----------------------------------------------------------------------------------


def _compile(request: dict[str, Any]) -> dict[str, Any]:
    """In the child: the compile the request asks for, as a reply."""
    source, options, name = request["source"], request["options"], request["name"]
    if request["output"] == "ptx":
        return {"ptx": ptx.compile_ptx(source, options, name=name)}
    return {"cubin": base64.b64encode(ptx.nvrtc_output(source, options, name, output="cubin")).decode()}


def _child(request: dict[str, Any], out_fd: int, err_fd: int) -> None:
    """In the forked child: limits, the compile, its reply on out_fd. Never returns."""
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)  # where LLVM says "out of memory" before it aborts
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # no compile outlives its server
        memory, cpu = int(request["memory_bytes"]), int(request["limit_s"]) + 2  # CPU: in case the server dies
        for limit, value in (
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NOFILE, 3),  # no file to open: an #include of the grading machine's files fails
        ):
            resource.setrlimit(limit, (value, value))
        try:
            reply = _compile(request)
        except ptx.PtxCompileError as exc:
            reply = {"log": exc.log}
        except MemoryError:
            reply = {"stopped": "memory"}
        data = json.dumps(reply).encode() + b"\n"
        while data:
            data = data[os.write(1, data) :]
    finally:
        os._exit(0)


def _read_child(pid: int, out_fd: int, err_fd: int, limit_s: float) -> tuple[bytes, bytes, str]:
    """(what the child wrote, its stderr, '' or why it was stopped: 'time', 'size')."""
    out, err, why = b"", b"", ""
    deadline = time.monotonic() + limit_s
    streams = {out_fd, err_fd}
    while streams:
        ready, _, _ = select.select(list(streams), [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            why = "time"
            break
        for fd in ready:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                streams.discard(fd)
            elif fd == out_fd:
                out += chunk
            else:
                err = (err + chunk)[-4096:]
        if len(out) > 2 * MAX_COMPILED_BYTES:  # base64 of the cubin, and JSON, are larger than the code
            why = "size"
            break
    if why:
        os.kill(pid, signal.SIGKILL)
    return out, err, why


def serve_one(request: dict[str, Any]) -> dict[str, Any]:
    """Fork a child that compiles under the request's limits; its reply, or why it was stopped."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        os.close(err_r)
        _child(request, out_w, err_w)
    os.close(out_w)
    os.close(err_w)
    try:
        out, err, why = _read_child(pid, out_r, err_r, float(request["limit_s"]))
    finally:
        os.close(out_r)
        os.close(err_r)
        _, status = os.waitpid(pid, 0)
    if why:
        return {"stopped": why}
    try:
        return json.loads(out)
    except ValueError:
        pass
    if b"out of memory" in err or b"bad_alloc" in err or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9):
        return {"stopped": "memory"}  # LLVM aborts when an allocation fails; SIGKILL: the kernel's OOM killer
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return {"stopped": "time"}
    how = f"killed by {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status) else "no reply"
    return {"stopped": "died", "detail": how}


def main() -> int:
    """`python -m labcore.nvrtc`: the compile server; one JSON request a line in, one JSON reply a line out."""
    ptx.compile_ptx(WARM_UP)  # NVRTC and its builtins loaded here once, not in each child
    for line in sys.stdin.buffer:
        sys.stdout.buffer.write(json.dumps(serve_one(json.loads(line))).encode() + b"\n")
        sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
