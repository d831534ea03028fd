"""Zero-copy's part of the adversarial corpus: wrong answers, cheats, and correct but unusual ones, each with the
points every graded cell must get (the format is tests/corpus.py's, which finds this module through the list of
lessons and gathers it with every other lesson's; tests/test_corpus.py grades them all end to end).

POINTS holds the lesson's graded cells and their points; submissions(corpus) makes the submissions with what
tests/corpus.py hands in (its Submission, full and zero, and the builders more than one lesson's cases use), so this
module imports nothing of tests/.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import nbformat

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "solutions" / "zero_copy.ipynb"  # the instructor's source notebook
Z = "zero_copy"

# Every autograded cell and its points
POINTS = {"test_break_even": 2, "test_gather_correct": 3, "test_gather_bandwidth": 2, "test_publish": 3}


# -- zero_copy ----------------------------------------------------------------------------------------------------

STUB_BREAK_EVEN = """def break_even_reads(link_gbps, hbm_gbps):
    raise NotImplementedError()"""

PATCHES_ZERO_COPY_CHECKS = (
    """from zero_copy import checks as _checks

for _name in dir(_checks):
    if _name.startswith("check_"):
        setattr(_checks, _name, lambda *args, **kwargs: None)


"""
    + STUB_BREAK_EVEN
)

PATCHES_ZERO_COPY_HARNESS = {
    "break_even_reads": """import zero_copy.model

zero_copy.model.crossover_reads = lambda *args, **kwargs: 1.0


def break_even_reads(link_gbps, hbm_gbps):
    return 1.0""",
    "gather_exercise": """import zero_copy.checks
import zero_copy.gather

zero_copy.gather.launch_problem = lambda *args: None
zero_copy.gather.mapping_problem = lambda *args: None
zero_copy.gather.idle_blocks = lambda *args: 0
zero_copy.gather.order_problem = lambda *args: None
zero_copy.gather.first_descent = lambda ids: None
zero_copy.checks._simulated = lambda *args, **kwargs: (True, "bit-exact")


def gather_launch(n_rows):
    return 48, n_rows + 1


def order_ids(ids):
    return ids, np.arange(ids.size)""",
    "my_publish": """import zero_copy.mailbox

zero_copy.mailbox.publish_problem = lambda source: None

MY_PUBLISH = r\"\"\"
__device__ void publish(volatile int* box, int round) {
    box[MB_FLAG] = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
}
\"\"\"""",
}

# set_custom_exc alone hides the traceback, but the kernel's reply still says "error" and nbgrader records that;
# so the reply is made to say "ok" too.
CUSTOM_EXC = (
    """import sys

sys.excepthook = lambda *args: None
_shell = get_ipython()
_shell.set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: [])
_run = _shell.run_cell_async


async def _quiet(*args, **kwargs):
    result = await _run(*args, **kwargs)
    result.error_in_exec = result.error_before_exec = None
    return result


_shell.run_cell_async = _quiet


"""
    + STUB_BREAK_EVEN
)

BORROW_CROSSOVER = """import importlib

_theirs = getattr(importlib.import_module("zero_copy." + "model"), "crossover" + "_reads")


def break_even_reads(link_gbps, hbm_gbps):
    return _theirs(link_gbps, hbm_gbps)"""

PUBLISH_FROM_LESSON = """import re

from zero_copy.kernel import KERNEL_PATH

_lesson = KERNEL_PATH.read_text()
_marked = re.search(r"// BEGIN REFERENCE\\n(.*?)// END REFERENCE", _lesson, re.S)
_body = _marked.group(1) if _marked else _lesson.split("publish_and_wait(", 1)[-1].split("\\n}\\n", 1)[0]
_words = ("MB_PAYLOAD", "__threadfence_system", "MB_FLAG]")
_steps = [line for line in _body.splitlines() if any(word in line for word in _words)]
MY_PUBLISH = "__device__ void publish(volatile int* box, int round) {\\n" + "\\n".join(_steps) + "\\n}\\n\""""


def _publish(body: str) -> str:
    return f'MY_PUBLISH = r"""\n__device__ void publish(volatile int* box, int round) {{\n{body}\n}}\n"""'


FLAG_FIRST = _publish("""    box[MB_FLAG] = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    __threadfence_system();""")

ALIAS_FLAG_FIRST = _publish("""    volatile int* flag = box + MB_FLAG;
    volatile int* payload = box + MB_PAYLOAD;
    *flag = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        payload[w] = round * 1000003 + w;
    }
    __threadfence_system();""")

DEAD_FENCE = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    if (round < 0) {  // rounds count from 1: never taken
        __threadfence_system();
    }
    box[MB_FLAG] = round;""")

GPU_FENCE = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    __threadfence();  // GPU scope: the host is not among those it orders for
    box[MB_FLAG] = round;""")

ATOMIC_FLAG = _publish("""    volatile int* payload = box + MB_PAYLOAD;
#pragma unroll
    for (int w = MB_PAYLOAD_WORDS - 1; w >= 0; --w) {
        payload[w] = round * 1000003 + w;
    }
    __threadfence_system();
    atomicExch(const_cast<int*>(box + MB_FLAG), round);""")

RELEASE_STORE = _publish("""#pragma unroll
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
    // the fence and the flag in one instruction: a release store at system scope
    int* flag = const_cast<int*>(box + MB_FLAG);
    asm volatile("st.release.sys.global.s32 [%0], %1;" :: "l"(flag), "r"(round) : "memory");""")

# ptx-pending: the publish step judged on every path of its compiled kernel (calls followed, loops turned), with
# the values it stores verified for every round; what the analysis cannot compute offline is pending a GPU.
ROLLED_LOOP = _publish("""#pragma unroll 1
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();
    box[MB_FLAG] = round;""")

NOINLINE_HELPER = _publish("""#pragma unroll 1
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) put(box + MB_PAYLOAD + w, round * 1000003 + w);
    __threadfence_system();
    box[MB_FLAG] = round;""").replace(
    "__device__ void publish",
    "__device__ __noinline__ void put(volatile int* p, int v) { *p = v; }\n__device__ void publish",
)

ATOMICS_INLINE_ASM = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        atomicExch_system(const_cast<int*>(box) + MB_PAYLOAD + w, round * 1000003 + w);
    asm volatile("fence.sc.sys;" ::: "memory");
    atomicExch_system(const_cast<int*>(box) + MB_FLAG, round);""")

FLAG_RAISED_THEN_LOWERED = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();
    box[MB_FLAG] = round;
    box[MB_FLAG] = 0;  // the host may have seen it, or not""")

PAYLOAD_CLEARED = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();
    box[MB_FLAG] = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = 0;  // while the host may be reading""")

WRONG_PAYLOAD = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 - w;
    __threadfence_system();
    box[MB_FLAG] = round;""")

FLAG_BEFORE_FENCE_ON_ONE_BRANCH = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    if (round % 2) {
        box[MB_FLAG] = round;  // odd rounds: the flag before the fence
        __threadfence_system();
    } else {
        __threadfence_system();
        box[MB_FLAG] = round;
    }""")

VALUES_THROUGH_ASM = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        int v;
        asm volatile("xor.b32 %0, %1, 0;" : "=r"(v) : "r"(round * 1000003 + w));  // v = the value, opaquely
        box[MB_PAYLOAD + w] = v;
    }
    __threadfence_system();
    box[MB_FLAG] = round;""")

UNUSUAL_BREAK_EVEN = """def break_even_reads(link_gbps, hbm_gbps):
    link, hbm = np.float64(link_gbps), np.float64(hbm_gbps)
    return np.inf if hbm <= link else 1.0 / (1.0 - link / hbm)"""

UNUSUAL_GATHER = """def gather_launch(n_rows):
    return 1024, -(-n_rows // 32)  # 32 warps a block, one row each


def order_ids(ids):
    order = np.lexsort((np.arange(ids.size), ids))
    return ids[order], np.argsort(order)"""

IDLE_BLOCK = """def gather_launch(n_rows):
    return 256, n_rows * 32 // 256 + 1  # one block too many whenever 8 divides n_rows


def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    restore = np.empty_like(order)
    restore[order] = np.arange(order.size)
    return ids[order], restore"""

_STABLE_ORDER = """


def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    restore = np.empty_like(order)
    restore[order] = np.arange(order.size)
    return ids[order], restore"""

# Grids no idle-block rule catches, wrong only in what the kernel then writes (the offline model, warp by warp):
LANES_MISSED = (
    """def gather_launch(n_rows):
    return 48, -(-32 * n_rows // 48)  # enough threads, but a warp straddling two blocks repeats and misses lanes"""
    + _STABLE_ORDER
)
ONE_BLOCK_SHORT = (
    """def gather_launch(n_rows):
    return 256, (32 * n_rows + 255) // 256 - 1  # the last rows never get a warp"""
    + _STABLE_ORDER
)

ODD_DTYPES_GATHER = """def gather_launch(n_rows):
    return np.int16(256), np.uint64((32 * n_rows + 255) // 256)


def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    restore = np.empty(order.size, dtype=np.uint32)
    restore[order] = np.arange(order.size)
    return ids[order].astype(">i8"), restore  # big-endian ids, 32-bit unsigned positions: numbers all the same"""

# Before the visible gather checks ask, files an answer of its own under their order_ids keys: an array whose
# header claims 50,000 rows over 16 bytes (and a bool "array" of made-up bytes), hoping the checker reads past
# it, or crashes in a way that passes. The first line under a key is the one judged: it does not read.
MALFORMED_ANSWER_GATHER = (
    """import base64
import json
import os

from labcore import answers as _answers
from zero_copy import checks as _checks

_role, _, _path = os.environ.get("LABCORE_ANSWERS", "").partition(":")
if _role == "collect":
    _rows = _checks.table_rows(1024)
    with open(_path, "a") as _file:
        for _check in ("check_gather_correct", "check_gather_bandwidth"):
            _seed = _answers.fresh_seed(f"zero_copy {_check} 50000 1024 random")
            _inputs = ("zero_copy order_ids", 50000, _rows, "random", _seed)
            _key = _answers.key_of("order_ids on 50,000 random ids", _inputs)
            _short = {"array": "<i8", "shape": [50000], "bytes": base64.b64encode(bytes(16)).decode()}
            _bools = {"array": "|b1", "shape": [2], "bytes": base64.b64encode(bytes([7, 9])).decode()}
            _value = {"tuple": [_short, _bools]}
            _file.write(json.dumps({"key": _key, "value": _value}) + "\\n")
"""
    + """def gather_launch(n_rows):
    return 256, (32 * n_rows + 255) // 256"""
    + _STABLE_ORDER
)

UNSORTED_GATHER = """def gather_launch(n_rows):
    return 256, (32 * n_rows + 255) // 256


def order_ids(ids):
    return ids.copy(), np.arange(ids.size)  # request order: right rows, no locality"""

EXIT_FIRST = """import os

os._exit(3)"""

ANSWERS_ENV = """import os
import tempfile

# my answers go to a file of my own, and every check believes it only collects
os.environ["LABCORE_ANSWERS"] = "collect:" + os.path.join(tempfile.mkdtemp(), "answers.jsonl")


def break_even_reads(link_gbps, hbm_gbps):
    return 1.0"""

ANSWERS_ENV_GATHER = """def gather_launch(n_rows):
    return 256, 1


def order_ids(ids):
    return ids, ids"""

ANSWERS_ENV_PUBLISH = 'MY_PUBLISH = "__device__ void publish(volatile int* box, int round) {}"'

INPUT_TRANSFORMER = (
    """def _forgive(lines):
    \"\"\"Every later cell runs inside try/except: nothing it raises is ever shown.\"\"\"
    body = ["    " + (line if line.endswith("\\n") else line + "\\n") for line in lines]
    return ["try:\\n", *body, "    pass\\n", "except BaseException:\\n", "    pass\\n"]


get_ipython().input_transformers_post.append(_forgive)


"""
    + STUB_BREAK_EVEN
)

BORROW_SORTED_ORDER = """import importlib

_gather = importlib.import_module("zero_copy." + "gather")
_order = getattr(_gather, "sorted" + "_order")


def gather_launch(n_rows):
    threads_per_block = 256
    return threads_per_block, (32 * n_rows + threads_per_block - 1) // threads_per_block


def order_ids(ids):
    return _order(ids)"""


def links_the_source(folder: Path) -> None:
    """A run file that is a link to the instructor's source notebook (its solutions and hidden tests), as an
    archive handed in can hold one: collect must not follow it."""
    (folder / "zero_copy_run_notes.csv").symlink_to(SOURCE)


def _from_linked_run_file(cell_id: str, stub: str) -> str:
    """A solution cell that runs the instructor's answer read from any run file beside the notebook, else the stub."""
    indented = "".join("    " + line + "\n" for line in stub.splitlines())
    return f"""import glob, json

_theirs = {{}}
for _path in glob.glob("zero_copy_run*") + glob.glob("*/zero_copy_run*"):
    try:
        _theirs.update({{c.get("id"): "".join(c["source"]) for c in json.load(open(_path))["cells"]}})
    except Exception:
        pass
if "BEGIN SOLUTION" in _theirs.get("{cell_id}", ""):
    exec(_theirs["{cell_id}"])
    print("ran the instructor's {cell_id}")
else:
{indented}"""


def linked_stubs(corpus: ModuleType) -> dict[str, str]:
    """The stubs of zero_copy's answer cells, each running the instructor's solution from a linked run file."""
    return {
        c: _from_linked_run_file(c, corpus.release_source(Z, c))
        for c in ("break_even_reads", "gather_exercise", "my_publish")
    }


# -- recording safety: what a submission prints or compiles ----------------------------------------------------

# lone surrogates, an undecodable byte as Python decodes it (surrogateescape), a pair, controls XML cannot hold
PRINTS_SURROGATES = r"""print("lone \ud800 and \udfff; not UTF-8:", b"\xff".decode("utf-8", "surrogateescape"))
print("a pair \ud83d\ude00, controls \x00\x0c\x1f, a noncharacter \uffff")"""

# raw bytes that are not UTF-8, and JSON escapes of lone surrogates, filed as this cell's outputs where the
# sandbox files them (cell 0: this cell, put first); 5 MB of it
WRITES_BAD_BYTES = r"""import os

# the job's out folder beside its work folder (/sandbox/work/JOB -> /sandbox/out/JOB); nothing outside the sandbox
_where = os.path.join(os.getcwd().replace("/sandbox/work/", "/sandbox/out/"), "cells.jsonl")
if os.path.isdir(os.path.dirname(_where)):
    with open(_where, "ab") as _cells:
        _line = b'{"cell": 0, "outputs": [{"output_type": "stream", "name": "stdout", "text": "\xff\xfe\xc3 \\ud800 '
        _cells.write(_line + b"z" * 5_000_000 + b'"}]}\n')"""

# 50 MB on stdout and 50 MB on stderr
FLOODS_OUTPUT = """import sys

print("x" * 50_000_000)
print("y" * 50_000_000, file=sys.stderr)"""

# each template level calls the one below twice, inlined: 2^24 volatile stores, over a minute of NVRTC (no error)
COMPILE_BOMB = '''MY_PUBLISH = r"""
template <int N> struct Spin {
    __device__ static int f(volatile int* b, int r) { return Spin<N - 1>::f(b, r) + Spin<N - 1>::f(b, r + 1); }
};
template <> struct Spin<0> { __device__ static int f(volatile int* b, int r) { b[MB_PAYLOAD] = r; return r; } };

__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w + Spin<24>::f(box, w);
    __threadfence_system();
    box[MB_FLAG] = round;
}
"""'''

# 2 GiB of initialized device memory: NVRTC writes out every byte of the initializer, gigabytes a minute
COMPILE_MEMORY_BOMB = '''MY_PUBLISH = r"""
__device__ char big[1ull << 31] = {1};

__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w + big[w];
    __threadfence_system();
    box[MB_FLAG] = round;
}
"""'''

# Files for whoever comes next in the same warm sandbox: /dev/shm and /tmp (HOME is /tmp/home) are shared memory
SHM_LEAK = """import os

for folder in ("/dev/shm", "/tmp", "/tmp/home/.local/lib/python3.11/site-packages"):
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "sitecustomize.py"), "w") as planted:
            planted.write("raise SystemExit('planted')\\n")
        with open(os.path.join(folder, "leak.txt"), "w") as planted:
            planted.write("answers of the student before you\\n")
    except OSError:
        pass"""

# 3 GiB in one allocation
MEMORY_HOG = """block = bytearray(3 << 30)"""

# 2.4 GiB written to the job's own folder (the grading machine's disk), each file under RLIMIT_FSIZE (1 GiB), then a
# wait: past the job's 2 GiB share the sandbox is killed at once (grader.warm._Disk), and the files go with the job
FILLS_DISK = """import time

for _n in range(12):
    with open(f"fill{_n}", "wb") as _out:
        _out.write(bytes(200 << 20))
time.sleep(50)"""

# six processes of 1.2 GiB each, every one under RLIMIT_AS (3 GiB), 7.2 GiB together: past the sandbox's memory
# cgroup (4 GiB, where the grader is root) the kernel kills some of them, inside this sandbox only
MANY_HOGS = """import os
import time

_hogs = []
for _ in range(6):
    _pid = os.fork()
    if _pid == 0:
        _block = bytearray(1200 << 20)
        time.sleep(2)
        os._exit(0)
    _hogs.append(_pid)
for _pid in _hogs:
    os.waitpid(_pid, 0)"""

FORGED_ZERO_COPY = """import json as _json
import os as _os

from labcore.answers import encode, key_of
from zero_copy import checks

_forged = [
    (key_of(f"gather_launch({n})", ("zero_copy gather_launch", n)), (256, (32 * n + 255) // 256))
    for n in (*checks.LAUNCH_SIZES, 3001, 1, 20_000, 100_000)
]
_forged += [
    (key_of(f"break_even_reads({L:g}, {H:g})", ("zero_copy break_even_reads", L, H)), H / (H - L) if H > L else 1e308)
    for L, H in checks.BREAK_EVEN_CASES
]
_publish = "__device__ void publish(volatile int* box, int round) { box[MB_FLAG] = round; }"
_forged.append((key_of("your publish() source", ("zero_copy publish",)), _publish))
"""

# Every string the kernel's objects and frames hold that looks like a test cell, printed base64 (and zlib'd) from
# a cell of the student's and from inside their function while it answers: the sandbox holds no test text at all
HIDDEN_WALKER = """import base64 as _b64
import gc as _gc
import sys as _sys
import zlib as _zlib


def _walk(where):
    found = set()
    for obj in _gc.get_objects():
        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
        try:
            found |= {v for v in list(values) if isinstance(v, str) and ("checks.check_" in v or "HIDDEN" in v)}
        except Exception:
            pass
    frame = _sys._getframe()
    while frame is not None:
        found |= {v for v in frame.f_locals.values() if isinstance(v, str) and "checks.check_" in v}
        frame = frame.f_back
    text = "\\n".join(sorted(found)).encode()
    print(where, len(found), _b64.b64encode(text).decode(), _b64.b64encode(_zlib.compress(text)).decode())


_walk("cell")
"""

WALKING_BREAK_EVEN = (
    HIDDEN_WALKER
    + """

def break_even_reads(link_gbps, hbm_gbps):
    _walk("asked")  # while the sandbox asks: the test cell, were it there, would be on the stack
    if hbm_gbps <= link_gbps:
        return math.inf
    return hbm_gbps / (hbm_gbps - link_gbps)"""
)


def fake_test_cell(nb: nbformat.NotebookNode) -> None:
    """The break-even test deleted and a cell of the student's own in its place, with its cell id and no metadata,
    that checks nothing: matched by its id, it is the course's locked test again, its text restored."""
    at = next(i for i, c in enumerate(nb.cells) if c.get("id") == "test_break_even")
    nb.cells[at] = nbformat.v4.new_code_cell("print('all tests passed')")
    nb.cells[at]["id"] = "test_break_even"


def nested(folder: Path) -> None:
    """nbgrader's own layout: SUBMISSIONS/<student>/zero_copy/zero_copy.ipynb."""
    (folder / "zero_copy").mkdir()
    (folder / "zero_copy.ipynb").rename(folder / "zero_copy" / "zero_copy.ipynb")


def nested_links_the_source(folder: Path) -> None:
    """nbgrader's own layout, a run file in it a link to the instructor's source notebook."""
    nested(folder)
    (folder / "zero_copy" / "zero_copy_run_notes.csv").symlink_to(SOURCE)


# The sandbox's init stopped, killed and terminated: an init gets no signal it has no handler for from its namespace
SIGNALS_INIT = """import os
import signal

for _sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
    try:
        os.kill(1, _sig)
    except OSError as _exc:
        print("refused", _sig, _exc.errno)"""

# Every regular file the job holds open read from its start (the zygote's IPython history was one, shared by every
# job), and IPython's history database wherever HOME keeps it
READS_HELD_FILES = """import os
import sqlite3
import stat

for _fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        if stat.S_ISREG(os.fstat(_fd).st_mode):
            print(_fd, os.readlink(f"/proc/self/fd/{_fd}"), len(os.pread(_fd, 1 << 20, 0)))
    except OSError:
        pass
for _root, _dirs, _files in os.walk(os.path.expanduser("~")):
    for _name in _files:
        if _name.endswith(".sqlite"):
            try:
                print(_name, sqlite3.connect(os.path.join(_root, _name)).execute("select * from history").fetchall())
            except sqlite3.Error as _exc:
                print(_name, _exc)"""

# The break-even cell needs 800 MiB of /tmp (of its 1 GiB) before it defines its answer: only a fresh /tmp has it
NEEDS_FRESH_TMP = """import os

with open("/tmp/scratch.bin", "wb") as _scratch:
    _scratch.write(bytes(800 << 20))
os.unlink("/tmp/scratch.bin")

"""


def prints_hidden_inputs(corpus: ModuleType) -> dict[str, str]:
    """The reference keeping every input the break-even and gather questions hand it; its publish cell prints them."""
    return {
        "break_even_reads": corpus.solution(Z, "break_even_reads")
        + corpus.KEEPS_INPUTS
        + "\nbreak_even_reads = _keeping('break_even_reads', break_even_reads)",
        "gather_exercise": corpus.solution(Z, "gather_exercise")
        + corpus.KEEPS_INPUTS
        + "\ngather_launch, order_ids = _keeping('gather_launch', gather_launch), _keeping('order_ids', order_ids)",
        "my_publish": corpus.PRINTS_INPUTS + corpus.solution(Z, "my_publish"),
    }


# -- the submissions ----------------------------------------------------------------------------------------------


def submissions(corpus: ModuleType) -> tuple:
    """Zero-copy's submissions, made with tests/corpus.py's Submission, full and zero and its shared builders."""
    Submission, full, zero = corpus.Submission, corpus.full, corpus.zero
    return (
        Submission(
            "q-forged-answers-zc",
            "zero_copy",
            "untouched stubs; a first cell files correct launch grids, break-evens and a publish source on every fd "
            "and answers path it finds: refused with every other answer of the run, all 0",
            zero("zero_copy"),
            solved=False,
            first_cell=FORGED_ZERO_COPY + corpus.FORGE_SEND,
        ),
        Submission(
            "q-walks-for-hidden-tests",
            "zero_copy",
            "correct answers, and a cell and the break-even function that walk the gc and the stack for test cells and "
            "print what they find in base64 and zlib: the sandbox holds no test cell text, so nothing is printed of "
            "them (tests/test_corpus.py looks for every hidden line in every encoding): full points",
            full("zero_copy"),
            edits={"break_even_reads": WALKING_BREAK_EVEN},
        ),
        # zero_copy: honest
        Submission("zc-reference", Z, "the reference solutions", full(Z)),
        Submission("zc-untouched", Z, "the release as handed out: every stub raises", zero(Z), edits=None),
        Submission(
            "zc-unusual",
            Z,
            "correct but unusual: NumPy floats for r*, 1024-thread blocks and a lexsort order, a reversed payload "
            "loop through an alias and the flag by atomicExch after the system fence",
            full(Z),
            edits={
                "break_even_reads": UNUSUAL_BREAK_EVEN,
                "gather_exercise": UNUSUAL_GATHER,
                "my_publish": ATOMIC_FLAG,
            },
        ),
        Submission(
            "zc-odd-dtypes",
            Z,
            "correct, returning NumPy scalars for the grid, big-endian int64 ids and uint32 restore positions: "
            "answers travel as their bytes and dtype, and come back the same numbers",
            full(Z),
            edits={"gather_exercise": ODD_DTYPES_GATHER},
        ),
        Submission(
            "zc-release-store",
            Z,
            "correct in another form: the flag by an inline-PTX st.release.sys store, no separate fence",
            full(Z),
            edits={"my_publish": RELEASE_STORE},
        ),
        # zero_copy: wrong
        Submission(
            "zc-flag-first-idle-block",
            Z,
            "stores the flag before the payload; and one block too many whenever 8 divides n_rows (50,000 does): "
            "both gather cells 0",
            full(Z, test_gather_correct=0, test_gather_bandwidth=0, test_publish=0),
            edits={"gather_exercise": IDLE_BLOCK, "my_publish": FLAG_FIRST},
        ),
        Submission(
            "zc-lanes-missed",
            Z,
            "48 threads a block, enough of them: warps straddle blocks, so some 16-byte words of every third row are "
            "never written (no idle block): both gather cells 0",
            full(Z, test_gather_correct=0, test_gather_bandwidth=0),
            edits={"gather_exercise": LANES_MISSED},
        ),
        Submission(
            "zc-one-block-short",
            Z,
            "one block short of a warp per row: the last rows are never copied: both gather cells 0",
            full(Z, test_gather_correct=0, test_gather_bandwidth=0),
            edits={"gather_exercise": ONE_BLOCK_SHORT},
        ),
        Submission(
            "zc-alias-flag-first",
            Z,
            "stores the flag through a pointer alias (box + MB_FLAG) before the payload",
            full(Z, test_publish=0),
            edits={"my_publish": ALIAS_FLAG_FIRST},
        ),
        Submission(
            "zc-dead-fence-unsorted",
            Z,
            "the system fence under if (round < 0), a branch that never runs; and the rows right but the ids left "
            "in request order (correct 3, bandwidth 0: unsorted ids are the slow path in the recorded profile; live on "
            "the H200 the unsorted 1 KiB rows still reach 0.85 of the copy, so with a GPU bandwidth scores 2)",
            full(Z, test_gather_bandwidth=0, test_publish=0),
            edits={"gather_exercise": UNSORTED_GATHER, "my_publish": DEAD_FENCE},
            live={"test_gather_bandwidth": 2},
        ),
        Submission(
            "zc-gpu-fence",
            Z,
            "__threadfence() (GPU scope) between payload and flag: not ordered for the host",
            full(Z, test_publish=0),
            edits={"my_publish": GPU_FENCE},
        ),
        Submission(
            "zc-exits-first",
            Z,
            "a cell of its own before the first one calls os._exit(3): the kernel is gone before any check",
            zero(Z),
            first_cell=EXIT_FIRST,
        ),
        # zero_copy: the reference under another name, or read from the lesson
        Submission(
            "zc-borrows-references",
            Z,
            "break_even_reads calls zero_copy.model.crossover_reads and order_ids zero_copy.gather.sorted_order, "
            "both reached through importlib and getattr: withheld in the sandbox",
            full(Z, test_break_even=0, test_gather_correct=0, test_gather_bandwidth=0),
            edits={"break_even_reads": BORROW_CROSSOVER, "gather_exercise": BORROW_SORTED_ORDER},
        ),
        Submission(
            "zc-publish-from-lesson",
            Z,
            "MY_PUBLISH cut from the lesson's zero_copy.cu (the REFERENCE region, or publish_and_wait's payload, "
            "fence and flag lines): the sandbox's copy withholds them, so no flag is stored",
            full(Z, test_publish=0),
            edits={"my_publish": PUBLISH_FROM_LESSON},
        ),
        # zero_copy: cheats on the stubs (or wrong answers)
        Submission(
            "zc-patches-checks",
            Z,
            "assigns a do-nothing lambda to every zero_copy.checks.check_*",
            zero(Z),
            solved=False,
            edits={"break_even_reads": PATCHES_ZERO_COPY_CHECKS},
        ),
        Submission(
            "zc-patches-harness",
            Z,
            "wrong answers, with the judging helpers patched to agree: crossover_reads, the gather's launch, order, "
            "simulation and descent checks, mailbox.publish_problem",
            zero(Z),
            solved=False,
            edits=PATCHES_ZERO_COPY_HARNESS,
        ),
        Submission(
            "zc-answers-env",
            Z,
            "sets LABCORE_ANSWERS=collect:<a file of its own> so that every check only collects, with wrong answers "
            "(r* = 1, one block, ids as their own restore, an empty publish): wrong, or never reaching the grader",
            zero(Z),
            solved=False,
            edits={
                "break_even_reads": ANSWERS_ENV,
                "gather_exercise": ANSWERS_ENV_GATHER,
                "my_publish": ANSWERS_ENV_PUBLISH,
            },
        ),
        Submission(
            "zc-malformed-answer",
            Z,
            "correct code, but first tries to file answers of its own under the visible gather checks' keys (an array "
            "whose header claims 50,000 rows over 16 bytes) in the file LABCORE_ANSWERS names: the sandbox names none "
            "(its answers go to the zygote, which writes the file), so nothing is filed and the correct code gets full "
            "points (a forged line on the zygote's pipe: q-forged-answers-zc)",
            full(Z),
            edits={"gather_exercise": MALFORMED_ANSWER_GATHER},
        ),
        Submission(
            "zc-input-transformer",
            Z,
            "an IPython input transformer wraps every later cell in try/except BaseException: pass",
            zero(Z),
            solved=False,
            edits={"break_even_reads": INPUT_TRANSFORMER},
        ),
        Submission(
            "zc-custom-exc",
            Z,
            "sys.excepthook, get_ipython().set_custom_exc and a run_cell_async that clears the result's error: no "
            "cell ever shows an error or replies one",
            zero(Z),
            solved=False,
            edits={"break_even_reads": CUSTOM_EXC},
        ),
        # recording safety: what a submission prints or compiles is recorded safely and stopped at its limits
        Submission(
            "zc-prints-surrogates",
            Z,
            "the reference, and a first cell printing lone surrogates, an undecodable byte, controls and a "
            "noncharacter: recorded as U+FFFD, every point kept, the class recorded",
            full(Z),
            first_cell=PRINTS_SURROGATES,
        ),
        Submission(
            "zc-surrogates-in-notebook",
            Z,
            "the reference, handed in with a first cell whose source holds lone surrogates (valid JSON escapes UTF-8 "
            "cannot hold; once these stopped the whole class's autograde): written as U+FFFD, every point kept",
            full(Z),
            first_cell="# lone \ud800 and \udfff in the notebook itself\nlone = 1",
        ),
        Submission(
            "zc-links-the-source",
            Z,
            "the stubs, each answer cell running the instructor's solution from a run file handed in as a link to the "
            "source notebook (an archive can hold one): collect takes no link, so the stubs are graded",
            zero(Z),
            solved=False,
            edits=linked_stubs(corpus),
            run_files=links_the_source,
        ),
        Submission(
            "zc-writes-bad-bytes",
            Z,
            "the reference, and a first cell filing 5 MB of raw non-UTF-8 bytes and escaped lone surrogates as its "
            "own outputs where the sandbox files them: cleaned and cut at 100,000 characters, every point kept",
            full(Z),
            first_cell=WRITES_BAD_BYTES,
        ),
        Submission(
            "zc-floods-output",
            Z,
            "the reference, and a first cell printing 50 MB on stdout and 50 MB on stderr: cut, every point kept",
            full(Z),
            first_cell=FLOODS_OUTPUT,
        ),
        Submission(
            "zc-compile-bomb",
            Z,
            "a publish step NVRTC would take minutes on (templates inlined 2^24 times): stopped at the compile's "
            "10 s limit, test_publish 0 with that reason, the rest kept and the next submissions graded",
            full(Z, test_publish=0),
            edits={"my_publish": COMPILE_BOMB},
        ),
        Submission(
            "zc-compile-memory-bomb",
            Z,
            "a publish step with a 2 GiB initialized __device__ array: NVRTC stopped at the compile's memory (or time) "
            "limit, test_publish 0 with that reason, the rest kept",
            full(Z, test_publish=0),
            edits={"my_publish": COMPILE_MEMORY_BOMB},
        ),
        Submission(
            "zc-verdict-says-passed",
            Z,
            "the reference answers behind the same first cell: full marks, nothing of the verdict's decides a grade",
            full(Z),
            first_cell=corpus.VERDICT_SAYS_PASSED,
        ),
        # ptx-pending: the publish step on every path of its compiled kernel, and its values, offline as live
        Submission(
            "zc-rolled-loop",
            Z,
            "correct, the payload loop kept rolled (#pragma unroll 1): one store instruction, four turns followed",
            full(Z),
            edits={"my_publish": ROLLED_LOOP},
        ),
        Submission(
            "zc-noinline-helper",
            Z,
            "correct, each payload word stored by a __noinline__ helper in a rolled loop: the call is followed",
            full(Z),
            edits={"my_publish": NOINLINE_HELPER},
        ),
        Submission(
            "zc-atomics-inline-asm",
            Z,
            "correct, payload and flag by atomicExch_system, ordered by an inline-asm fence.sc.sys",
            full(Z),
            edits={"my_publish": ATOMICS_INLINE_ASM},
        ),
        Submission(
            "zc-flag-raised-then-lowered",
            Z,
            "raises the flag after the fence, then stores 0 to it: a store to the flag after the flag store",
            full(Z, test_publish=0),
            edits={"my_publish": FLAG_RAISED_THEN_LOWERED},
        ),
        Submission(
            "zc-payload-cleared-after-flag",
            Z,
            "clears the payload after raising the flag: stores to the payload after the flag store",
            full(Z, test_publish=0),
            edits={"my_publish": PAYLOAD_CLEARED},
        ),
        Submission(
            "zc-wrong-payload-value",
            Z,
            "the right order, the wrong values (round * 1000003 - w): verified offline from the compiled stores",
            full(Z, test_publish=0),
            edits={"my_publish": WRONG_PAYLOAD},
        ),
        Submission(
            "zc-flag-before-fence-one-branch",
            Z,
            "on odd rounds the flag before the fence, on even ones after: one path is wrong, so the cell is 0",
            full(Z, test_publish=0),
            edits={"my_publish": FLAG_BEFORE_FENCE_ON_ONE_BRANCH},
        ),
        Submission(
            "zc-values-pending",
            Z,
            "correct, but its values go through an inline-asm xor the analysis does not compute: the order is "
            "proved, the values are not, so offline the cell is pending a GPU (0); live the rounds read them (3)",
            full(Z, test_publish=0),
            edits={"my_publish": VALUES_THROUGH_ASM},
            live={"test_publish": 3},
            pending=("test_publish",),
        ),
        Submission(
            "zc-leaks-through-shm-tmp",
            Z,
            "plants sitecustomize.py and notes in /dev/shm, /tmp and $HOME's site-packages for the next job in the "
            "same sandbox: both are emptied after every job; its own cells keep full points",
            full(Z),
            first_cell=SHM_LEAK,
        ),
        Submission(
            "zc-memory-hog",
            Z,
            "a cell of its own first takes 3 GiB: MemoryError in that cell (RLIMIT_AS), every graded cell after it "
            "runs",
            full(Z),
            first_cell=MEMORY_HOG,
        ),
        Submission(
            "zc-fills-disk",
            Z,
            "a cell of its own first writes 2.4 GiB to its working folder, the grading machine's disk (each file under "
            "RLIMIT_FSIZE): killed at once past the job's 2 GiB, every graded cell after it gets that reason, 0",
            zero(Z),
            first_cell=FILLS_DISK,
        ),
        Submission(
            "zc-many-hogs",
            Z,
            "a cell of its own first forks six processes of 1.2 GiB (each under RLIMIT_AS, 7.2 GiB together): the "
            "sandbox's memory cgroup kills some of them (as root), the cell waits them out, every graded cell runs",
            full(Z),
            first_cell=MANY_HOGS,
        ),
        Submission(
            "zc-ids-and-metadata-stripped",
            Z,
            "the reference with no nbgrader metadata and no cell ids (format 4.4): each locked cell found by its text "
            "as handed out (hidden tests cleared), the answers run as the student's own cells, full points",
            full(Z),
            reshape=corpus.strip_metadata_and_ids,
        ),
        Submission(
            "zc-test-cells-deleted",
            Z,
            "the reference with the setup cell and two test cells deleted: each put back where the course has it, "
            "after the cell before it, and graded on the student's answers, full points",
            full(Z),
            reshape=corpus.deleting("setup", "test_gather_correct", "test_publish"),
        ),
        Submission(
            "zc-answer-deleted",
            Z,
            "the gather answer cell deleted: a test cell is put back, an answer never is; the gather tests say the "
            "answer is missing (0), the others full",
            full(Z, test_gather_correct=0, test_gather_bandwidth=0),
            reshape=corpus.deleting("gather_exercise"),
        ),
        Submission(
            "zc-fake-test-cell",
            Z,
            "a wrong break-even, its test cell replaced by one of the student's own with the test's cell id and no "
            "metadata, printing 'all tests passed': restored by its id as the locked test, whose text comes back: 0",
            full(Z, test_break_even=0),
            edits={"break_even_reads": "def break_even_reads(link_gbps, hbm_gbps):\n    return 1.0"},
            reshape=fake_test_cell,
        ),
        Submission(
            "zc-nested-layout",
            Z,
            "the reference handed in in nbgrader's own layout, <student>/zero_copy/zero_copy.ipynb: collected, full",
            full(Z),
            run_files=nested,
        ),
        Submission(
            "zc-nested-links-the-source",
            Z,
            "nbgrader's own layout, the stubs running the instructor's solution from a run file there that is a link "
            "to the source notebook: collect takes no link, so the stubs are graded",
            zero(Z),
            solved=False,
            edits=linked_stubs(corpus),
            run_files=nested_links_the_source,
        ),
        Submission(
            "zc-signals-the-init",
            Z,
            "a first cell sends SIGSTOP, SIGKILL, SIGTERM and SIGINT to pid 1 (the zygote): an init gets none it has "
            "no handler for from its own namespace, the job and the sandbox go on: full points",
            full(Z),
            first_cell=SIGNALS_INIT,
        ),
        Submission(
            "zc-reads-held-files",
            Z,
            "a first cell reads every regular file it holds open and IPython's history database (every job inherited "
            "the zygote's deleted history file, and read what earlier students ran): none is there; full points",
            full(Z),
            first_cell=READS_HELD_FILES,
        ),
        Submission(
            "zc-needs-a-fresh-tmp",
            Z,
            "the reference, its break-even cell first writing 800 MiB to /tmp (of 1 GiB): only a fresh /tmp holds it, "
            "whoever was graded before in the same sandbox; full points",
            full(Z),
            edits={"break_even_reads": NEEDS_FRESH_TMP + corpus.solution(Z, "break_even_reads")},
        ),
        Submission(
            "zc-prints-hidden-inputs",
            Z,
            "the reference, keeping every input the break-even and gather questions hand it and printing them in its "
            "publish cell: full points. What it prints of the hidden cases is the break-even's round pairs (100 and "
            "100, 900 and 4800) and the gather's counts, numbers the release shows or too short to tell from any on a "
            "page; the seeds drawn for the gather never reach its functions, so its feedback page is kept (the day-54 "
            "and day-56 pages that print drawn inputs are deleted: tests/test_feedback_now.py)",
            full(Z),
            edits=prints_hidden_inputs(corpus),
        ),
        Submission(
            "zc-break-even-from-public-values",
            Z,
            "a break-even that returns zero_copy/public.json's r* at its four links and the shipped record's L and H, "
            "2.0 elsewhere: graded, the hidden links fail it: 0",
            full(Z, test_break_even=0),
            edits={
                "break_even_reads": corpus.public_only(
                    "zero_copy", "break-even", "break_even_reads(link_gbps, hbm_gbps)", "link_gbps, hbm_gbps", "2.0"
                )
            },
        ),
    )
