"""labcore.nvrtc on CPU: a fake CuPy in sys.modules stands in for the real one, a fake maps file for /proc."""

from __future__ import annotations

import builtins
import sys
import types
from pathlib import Path

import pytest

from labcore import nvrtc
from labcore.errors import UsageError, run_cli

MAPS = """\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234   /usr/bin/python3.11
7f1c00000000-7f1c00021000 rw-p 00000000 00:00 0
7f1c10000000-7f1c12000000 r-xp 00000000 08:01 2222   /venv/site-packages/nvidia/cu13/lib/libnvrtc-builtins.so.13.0
7f1c20000000-7f1c24000000 r-xp 00000000 08:01 3333   /venv/site-packages/nvidia/cu13/lib/libnvrtc.so.13
7f1c30000000-7f1c30200000 r-xp 00000000 08:01 4444   /usr/lib/x86_64-linux-gnu/libc.so.6
"""


def fake_cupy(monkeypatch: pytest.MonkeyPatch, get_version) -> None:
    """Install cupy, cupy.cuda and cupy.cuda.nvrtc modules whose getVersion is `get_version`."""
    cupy, cuda, module = (types.ModuleType(n) for n in ("cupy", "cupy.cuda", "cupy.cuda.nvrtc"))
    module.getVersion = get_version
    cuda.nvrtc, cupy.cuda = module, cuda
    for m in (cupy, cuda, module):
        monkeypatch.setitem(sys.modules, m.__name__, m)


@pytest.fixture
def maps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A /proc/self/maps stand-in holding MAPS."""
    path = tmp_path / "maps"
    path.write_text(MAPS)
    monkeypatch.setattr(nvrtc, "PROC_MAPS", path)
    return path


def test_found_names_version_and_the_library_file(monkeypatch, maps):
    """CuPy loads NVRTC 13.0: the description names the version and libnvrtc, not libnvrtc-builtins."""
    fake_cupy(monkeypatch, lambda: (13, 0))
    assert nvrtc.require_nvrtc() == "NVRTC 13.0 (/venv/site-packages/nvidia/cu13/lib/libnvrtc.so.13)"


def test_found_without_proc_says_the_file_is_unknown(monkeypatch, tmp_path):
    """No /proc to read (not Linux): the version still comes back, the file is 'unknown'."""
    fake_cupy(monkeypatch, lambda: (12, 9))
    monkeypatch.setattr(nvrtc, "PROC_MAPS", tmp_path / "absent")
    assert nvrtc.require_nvrtc() == "NVRTC 12.9 (library file unknown)"


def _missing_library():
    raise RuntimeError(
        "CuPy failed to load libnvrtc.so.13: OSError: libnvrtc.so.13: cannot open shared object "
        "file: No such file or directory\nsecond line of CuPy's message"
    )


def test_missing_library_is_one_line_naming_the_extra(monkeypatch, maps):
    """getVersion cannot load libnvrtc: one line with CuPy's reason and both ctk extras."""
    fake_cupy(monkeypatch, _missing_library)
    with pytest.raises(UsageError) as caught:
        nvrtc.require_nvrtc()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("NVRTC (CUDA's run-time compiler) not found (CuPy failed to load libnvrtc.so.13: ")
    assert "second line" not in message
    assert "'cuda-toolkit[nvrtc,cudart]==13.*'" in message and "'cuda-toolkit[nvrtc,cudart]==12.*'" in message


def test_long_reason_is_cut_to_fit_one_line(monkeypatch, maps):
    """A 1000-character reason is cut to 160 characters ending in '...'."""

    def long_error():
        raise OSError("x" * 1000)

    fake_cupy(monkeypatch, long_error)
    with pytest.raises(UsageError) as caught:
        nvrtc.require_nvrtc()
    assert f"({'x' * 157}...)" in str(caught.value)


def test_broken_cupy_import_is_an_nvrtc_error(monkeypatch):
    """cupy imports but cupy.cuda does not (a broken CUDA install): the NVRTC message, not 'CuPy is not installed'."""
    fake_cupy(monkeypatch, lambda: (13, 0))
    monkeypatch.setitem(sys.modules, "cupy.cuda", None)
    with pytest.raises(UsageError, match=r"^NVRTC \(CUDA's run-time compiler\) not found \(") as caught:
        nvrtc.require_nvrtc()
    assert "\n" not in str(caught.value)


def test_no_cupy_says_so_and_names_the_extra(monkeypatch):
    """CuPy not installed at all (the import fails as Python fails it): one line saying so, with the install command."""
    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name.split(".")[0] == "cupy":
            raise ModuleNotFoundError("No module named 'cupy'", name="cupy")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    with pytest.raises(UsageError) as caught:
        nvrtc.require_nvrtc()
    message = str(caught.value)
    assert message.startswith("CuPy is not installed") and "\n" not in message
    assert "'cuda-toolkit[nvrtc,cudart]==13.*'" in message


def test_command_exits_2_with_one_line(monkeypatch, capsys):
    """Through run_cli, a missing NVRTC is exit status 2 and exactly one line on stderr, no traceback."""
    fake_cupy(monkeypatch, _missing_library)

    def main(argv):
        nvrtc.require_nvrtc()
        return 0

    assert run_cli(main, []) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: NVRTC (CUDA's run-time compiler) not found")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_loaded_library_reads_this_process_real_maps():
    """The real /proc/self/maps of this Python names the libc it runs on, and no library called 'libnosuch'."""
    found = nvrtc.loaded_library("libc.so") or nvrtc.loaded_library("libc-")
    assert found is not None and Path(found).name.startswith("libc")
    assert nvrtc.loaded_library("libnosuch") is None


# -- a student's source compiled in a child under limits (real NVRTC, no GPU) ------------------------------------

ptx = pytest.importorskip("labcore.ptx")
pytest.importorskip("cuda.bindings", reason="NVRTC through cuda-bindings (the test extra) is not installed")

HONEST = (
    'extern "C" __global__ void publish(volatile int* box, int round) {\n'
    "    box[1] = round; __threadfence_system(); box[0] = round;\n}\n"
)
# each level calls the one below twice, inlined: 2^24 calls, over a minute of NVRTC here (no error, no end)
EXPONENTIAL = """
template <int N> struct T {
    __device__ static int f(volatile int* b, int r) { return T<N - 1>::f(b, r) + T<N - 1>::f(b, r + 1); }
};
template <> struct T<0> { __device__ static int f(volatile int* b, int r) { b[1] = r; return r; } };
extern "C" __global__ void publish(volatile int* box, int round) { box[2] = T<24>::f(box, round); box[0] = round; }
"""
# 2 GiB of initialized device memory: NVRTC writes out every byte of its initializer (8 GiB in a minute here)
HUGE_ARRAY = """
__device__ char big[1ull << 31] = {1};
extern "C" __global__ void publish(volatile int* box, int round) { box[1] = big[round]; box[0] = round; }
"""


def test_a_compile_past_the_time_limit_is_stopped_and_the_next_source_compiles():
    """Over a minute of NVRTC stopped at 2 s, one line saying so; then an honest source compiles to exactly the PTX
    that NVRTC in this process makes, through the same server."""
    with pytest.raises(
        nvrtc.CompileStopped, match=r"^your source took over 2 s to compile \(NVRTC was stopped there\)$"
    ):
        nvrtc.compile_ptx_limited(EXPONENTIAL, limit_s=2)
    server = nvrtc._SERVER._child
    assert nvrtc.compile_ptx_limited(HONEST + "// after the stopped one\n") == ptx.compile_ptx(
        HONEST + "// after the stopped one\n"
    )
    assert nvrtc._SERVER._child is server and server.poll() is None  # the same server, still running


def test_a_compile_past_the_memory_limit_is_stopped():
    """The huge initializer stops at 512 MiB of address space, saying so; an honest source compiles within it."""
    with pytest.raises(nvrtc.CompileStopped, match=r"^compiling your source needed over 512MiB of memory"):
        nvrtc.compile_ptx_limited(HUGE_ARRAY, limit_s=60, memory_bytes=512 << 20)
    assert ".entry publish" in nvrtc.compile_ptx_limited(HONEST + "// small\n", memory_bytes=512 << 20)


def test_a_source_cannot_include_the_grading_machines_files(tmp_path):
    """#include of a file beside the grader: NVRTC in this process reads it, the child cannot open it."""
    secret = tmp_path / "secret.cuh"
    secret.write_text("__device__ int instructor_secret_7f3a = 42;\n")
    source = f'#include "{secret}"\n' + HONEST
    assert "instructor_secret_7f3a" in ptx.compile_ptx(source)
    with pytest.raises(ptx.PtxCompileError, match="cannot open source file"):
        nvrtc.compile_ptx_limited(source)


def test_a_rejected_source_says_what_nvrtc_says():
    """The child's compile errors are NVRTC's, as in this process; a source UTF-8 cannot hold is one of them."""
    wrong = HONEST.replace("box[1] = round;", "box[1] = roudn;")
    with pytest.raises(ptx.PtxCompileError) as here:
        ptx.compile_ptx(wrong, name="mine.cu")
    with pytest.raises(ptx.PtxCompileError) as child:
        nvrtc.compile_ptx_limited(wrong, name="mine.cu")
    assert str(child.value) == str(here.value) and 'identifier "roudn" is undefined' in str(child.value)
    with pytest.raises(ptx.PtxCompileError, match="which UTF-8 cannot encode"):
        nvrtc.compile_ptx_limited(HONEST + "// \ud800\n")


def test_a_cubin_compiles_in_the_child():
    """The live check's cubin for an sm_ architecture: an ELF image."""
    assert nvrtc.compile_cubin_limited(HONEST, arch="sm_90")[:4] == b"\x7fELF"
