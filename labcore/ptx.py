"""PTX, the code NVRTC compiles CUDA C++ to: compile it, split a kernel into basic blocks, follow its addresses.

Memory-ordering answers are judged on the compiled code, not on the source text: what the compiler kept,
removed, merged or put on a branch is what runs (solutions/zero_copy/zero_copy.ipynb, section 8, through
zero_copy/mailbox.py). This module knows PTX and no lesson:

- `compile_ptx`: CUDA source to PTX with NVIDIA's NVRTC through cuda-bindings; no GPU and no CuPy needed.
- `parse_function`: one `.entry`/`.func` as basic blocks with their successors; `@%p` guards kept.
- `pointer_values`, `memory_accesses` and `escapes`: which registers hold a pointer parameter plus a constant
  number of bytes, so the byte range each load and store touches relative to that pointer (or that it cannot be
  told), and where the pointer itself is stored away beyond tracking (a call's parameters, local memory).
- `forward`: a forward dataflow over the control-flow graph, for facts that hold on every (or some) path.
- `ordering`: the semantics and scope by which a fence, `membar` or release store orders earlier accesses.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, TypeVar

from labcore.errors import UsageError

DEFAULT_ARCH = "compute_90"  # the H200 the course records on; used when the options name no -arch
INSTALL = (
    "pip install 'cuda-bindings>=13.0,<14' 'cuda-toolkit[nvrtc]==13.*' (CUDA 12: 'cuda-bindings>=12.8,<13' "
    "'cuda-toolkit[nvrtc]==12.*'); the course's test, cuda13 and cuda12 extras include them"
)
SCOPES = ("cta", "cluster", "gpu", "sys")  # narrowest first
RELEASING = frozenset({"sc", "acq_rel", "release"})  # semantics that order earlier accesses before later ones


class PtxError(ValueError):
    """PTX this module cannot read (an indirect branch, a missing label, an unknown function)."""


class PtxCompileError(ValueError):
    """NVRTC rejected the source; `errors` holds the log's error lines, `log` the whole log."""

    def __init__(self, log: str) -> None:
        self.log = log
        self.errors = [line.strip() for line in log.splitlines() if re.search(r"\berror:", line)]
        first = log.strip().splitlines()[0] if log.strip() else "NVRTC gave no log"
        super().__init__("; ".join(self.errors[:3]) or first)


# -- NVRTC ---------------------------------------------------------------------------------------------------------


@functools.cache
def _nvrtc() -> Any:
    """cuda.bindings.nvrtc with its library loaded; a one-line UsageError naming the install if either is missing."""
    try:
        from cuda.bindings import nvrtc  # optional: only judging compiled code needs it, not the lessons' runs

        err, _major, _minor = nvrtc.nvrtcVersion()  # loads libnvrtc (cuda-pathfinder finds NVIDIA's wheel)
    except Exception as exc:  # not installed, or no libnvrtc: ImportError, RuntimeError, pathfinder's own errors
        lines = str(exc).strip().splitlines()
        reason = (lines[0] if lines else type(exc).__name__)[:160]
        raise UsageError(f"NVRTC through cuda-bindings is not available ({reason}): {INSTALL}") from None
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise UsageError(f"NVRTC does not answer ({err.name}): {INSTALL}")
    return nvrtc


def nvrtc_version() -> str:
    """'NVRTC 13.5': the compiler `compile_ptx` uses."""
    _err, major, minor = _nvrtc().nvrtcVersion()
    return f"NVRTC {major}.{minor}"


def compile_ptx(source: str, options: Sequence[str] = (), *, name: str = "kernel.cu") -> str:
    """PTX of `source` compiled by NVRTC with `options` (for compute_90 unless they name an architecture)."""
    opts = tuple(options)
    if not any(o.startswith(("-arch", "--gpu-architecture")) for o in opts):
        opts += (f"--gpu-architecture={DEFAULT_ARCH}",)
    return _compile(source, opts, name)


@functools.lru_cache(maxsize=64)
def _compile(source: str, options: tuple[str, ...], name: str) -> str:
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"nvrtcCreateProgram: {err.name}")
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _err, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise PtxCompileError(log.rstrip(b"\x00").decode(errors="replace"))
        _err, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.rstrip(b"\x00").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


# -- parsing -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    """One PTX instruction: `@guard opcode operands;`, with the source line NVRTC's `.loc` gave it (-lineinfo)."""

    opcode: str
    operands: tuple[str, ...] = ()
    guard: str | None = None  # "%p1" or "!%p1": the instruction may not execute
    source: tuple[str, int] | None = None  # (file name without directories, line)

    @property
    def parts(self) -> tuple[str, ...]:
        """'st.release.sys.global.u32' -> ('st', 'release', 'sys', 'global', 'u32')."""
        return tuple(self.opcode.split("."))

    @property
    def text(self) -> str:
        guard = f"@{self.guard} " if self.guard else ""
        return f"{guard}{self.opcode} {', '.join(self.operands)}".strip()


@dataclass
class Block:
    """A basic block: entered only at its first instruction, left only after its last."""

    labels: tuple[str, ...]
    instructions: list[Instruction]
    successors: list[int]


@dataclass
class Function:
    """One `.entry` or `.func`: its parameters in order and its control-flow graph (block 0 is the entry)."""

    name: str
    params: tuple[str, ...]
    blocks: list[Block]

    def positions(self) -> Iterator[tuple[tuple[int, int], Instruction]]:
        """((block, index), instruction) in text order."""
        for b, block in enumerate(self.blocks):
            for i, instruction in enumerate(block.instructions):
                yield (b, i), instruction


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_FILE = re.compile(r"^\s*\.file\s+(\d+)\s+\"([^\"]*)\"", re.M)
_HEADER = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)\s*(\()?")
_LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)\b")
_LABEL = re.compile(r"([A-Za-z_$%][\w$]*)\s*:(?!:)")
_GUARD = re.compile(r"@(!?%[\w$]+)\s+")
_TERMINATORS = frozenset({"bra", "ret", "exit", "trap", "brx"})


def source_files(ptx: str) -> dict[int, str]:
    """The `.file` table: number -> file name without directories (NVRTC prefixes its working directory)."""
    return {int(n): PurePosixPath(path).name for n, path in _FILE.findall(ptx)}


def function_names(ptx: str) -> list[str]:
    """Names of the functions defined (not only declared) in the PTX, in order."""
    text = _COMMENTS.sub("", ptx)
    return [m.group(1) for m in _HEADER.finditer(text) if _body_start(text, m) is not None]


def parse_function(ptx: str, name: str) -> Function:
    """The function `name` of the PTX module as a control-flow graph."""
    text = _COMMENTS.sub("", ptx)
    for match in _HEADER.finditer(text):
        if match.group(1) != name:
            continue
        start = _body_start(text, match)
        if start is None:
            continue  # a declaration (.extern .func ...;)
        params = _params(text[match.end() : text.index(")", match.end())] if match.group(2) else "")
        end = _matching_brace(text, start)
        return Function(name, params, _blocks(_statements(text[start + 1 : end], source_files(ptx))))
    raise PtxError(f"no function {name} in the PTX; it defines {', '.join(function_names(ptx)) or 'none'}")


def _body_start(text: str, header: re.Match[str]) -> int | None:
    """Index of the '{' that opens the function's body, or None for a declaration."""
    pos = text.index(")", header.end()) + 1 if header.group(2) else header.end()
    brace, semicolon = text.find("{", pos), text.find(";", pos)
    return brace if brace != -1 and (semicolon == -1 or brace < semicolon) else None


def _matching_brace(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise PtxError("a function body that never closes")


def _params(text: str) -> tuple[str, ...]:
    names = []
    for item in text.split(","):
        found = re.search(r"([A-Za-z_$][\w$]*)\s*(?:\[\d*\])?\s*$", item.strip())
        if found:
            names.append(found.group(1))
    return tuple(names)


def split_operands(text: str) -> tuple[str, ...]:
    """'[%rd1+4], {%r1, %r2}' -> ('[%rd1+4]', '{%r1, %r2}'): commas inside [], {} and () do not split."""
    operands, depth, current = [], 0, []
    for char in text:
        depth += {"[": 1, "{": 1, "(": 1, "]": -1, "}": -1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            operands.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    last = "".join(current).strip()
    return (*operands, last) if last else tuple(operands)


def _statements(body: str, files: dict[int, str]) -> list[Instruction | str]:
    """Instructions and label names in order; `.loc` sets each instruction's source, other directives vanish."""
    out: list[Instruction | str] = []
    source: tuple[str, int] | None = None
    pos, n = 0, len(body)
    while pos < n:
        char = body[pos]
        if char.isspace() or char in "{}":  # scopes of inline asm: registers they declare need no tracking
            pos += 1
            continue
        loc = _LOC.match(body, pos)
        if loc:  # `.loc file line column[, inlined_at ...]` ends at the line's end, not at a ';'
            source = (files.get(int(loc.group(1)), loc.group(1)), int(loc.group(2)))
            end = body.find("\n", pos)
            pos = n if end == -1 else end
            continue
        label = _LABEL.match(body, pos)
        if label:
            out.append(label.group(1))
            pos = label.end()
            continue
        end = body.find(";", pos)
        end = n if end == -1 else end
        statement = " ".join(body[pos:end].split())
        pos = end + 1
        if statement.startswith("."):
            continue  # .reg, .local, .pragma ...: declarations, not instructions
        guard = _GUARD.match(statement)
        if guard:
            statement = statement[guard.end() :]
        opcode, _, rest = statement.partition(" ")
        out.append(Instruction(opcode, split_operands(rest), guard.group(1) if guard else None, source))
    return out


def _blocks(statements: list[Instruction | str]) -> list[Block]:
    blocks: list[Block] = [Block((), [], [])]
    for item in statements:
        if isinstance(item, str):
            if blocks[-1].instructions:
                blocks.append(Block((), [], []))
            blocks[-1].labels += (item,)
            continue
        blocks[-1].instructions.append(item)
        if item.parts[0] in _TERMINATORS:
            blocks.append(Block((), [], []))
    if len(blocks) > 1 and not blocks[-1].instructions and not blocks[-1].labels:
        blocks.pop()
    where = {label: b for b, block in enumerate(blocks) for label in block.labels}
    for b, block in enumerate(blocks):
        last = block.instructions[-1] if block.instructions else None
        after = [b + 1] if b + 1 < len(blocks) else []
        if last is None or last.parts[0] not in _TERMINATORS:
            block.successors = after
        elif last.parts[0] == "brx":
            raise PtxError(f"an indirect branch ({last.text}) this analysis cannot follow")
        elif last.parts[0] == "bra":
            target = last.operands[0] if last.operands else ""
            if target not in where:
                raise PtxError(f"a branch to {target!r}, a label the function does not define")
            block.successors = [where[target]] + (after if last.guard else [])
        else:  # ret, exit, trap: the path ends, unless a guard may skip it
            block.successors = after if last.guard else []
    return blocks


# -- dataflow ------------------------------------------------------------------------------------------------------

S = TypeVar("S")


def forward(
    function: Function, entry: S, transfer: Callable[[Instruction, S], S], meet: Callable[[S, S], S]
) -> dict[tuple[int, int], S]:
    """The state before each reachable instruction, met over every path from the entry; a guarded instruction's
    effect may not happen, so the state after it is the meet of before and after."""
    before: dict[tuple[int, int], S] = {}
    block_in: dict[int, S] = {0: entry}
    work = [0]
    while work:
        b = work.pop()
        state = block_in[b]
        for i, instruction in enumerate(function.blocks[b].instructions):
            before[(b, i)] = state
            after = transfer(instruction, state)
            state = meet(state, after) if instruction.guard else after
        for succ in function.blocks[b].successors:
            merged = state if succ not in block_in else meet(block_in[succ], state)
            if succ not in block_in or merged != block_in[succ]:
                block_in[succ] = merged
                work.append(succ)
    return before


# -- values and addresses ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """What a register holds: a constant, or (based) the pointer parameter plus a constant number of bytes."""

    based: bool
    number: int


_NO_DESTINATION = frozenset({"st", "red", "bra", "call", "ret", "exit", "trap", "nanosleep", "bar", "barrier"})
_KEEPS_ADDRESS = {("cvta", "to", "global"), ("cvta", "global")}  # generic <-> global: the same bytes
_IMMEDIATE = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)U?")


_PENDING: Any = object()  # not written yet in this pass (a register, or its operand): decided in a later pass


def immediate(text: str) -> int | None:
    """A PTX integer literal (decimal, hex 0x, octal 0) as an int; None if `text` is not one."""
    if not _IMMEDIATE.fullmatch(text):
        return None
    digits = text.rstrip("U")
    sign, digits = (-1, digits[1:]) if digits.startswith("-") else (1, digits)
    if digits.lower().startswith("0x"):
        return sign * int(digits, 16)
    return sign * int(digits, 8 if digits.startswith("0") and len(digits) > 1 else 10)


def destinations(instruction: Instruction) -> tuple[str, ...]:
    """The registers an instruction writes: its first operand when that is a register or a vector of them."""
    if not instruction.operands or instruction.parts[0] in _NO_DESTINATION:
        return ()
    first = instruction.operands[0]
    if first.startswith("{"):
        first = first.strip("{}")
    return tuple(r for r in re.split(r"[\s,|]+", first) if r.startswith("%"))


def pointer_values(function: Function, param: str) -> dict[str, Value | None]:
    """Every register written in the function -> its Value, or None when it cannot be told (written with
    different values on different paths or iterations, or by anything but ld.param, mov, cvta to/from global,
    add, sub, mul, mad, shl, cvt and neg of known values). Flow-insensitive: a register is known only if every
    instruction that writes it writes the same value, which holds for the SSA-like PTX that NVRTC emits."""
    instructions = [ins for _pos, ins in function.positions()]
    values: dict[str, Value | None] = {}
    changed = True
    while changed:  # values only fall (unset -> known -> None), so this ends
        changed = False
        for instruction in instructions:
            targets = destinations(instruction)
            value = _evaluate(instruction, values, param) if len(targets) == 1 else None
            if not targets or value is _PENDING:
                continue
            for target in targets:
                old = values.get(target, _PENDING)
                new = value if old is _PENDING or old == value else None
                if old is _PENDING or new != old:
                    values[target] = new
                    changed = True
    return values


def _evaluate(instruction: Instruction, values: dict[str, Value | None], param: str) -> Value | None:
    parts, ops = instruction.parts, instruction.operands
    base = parts[0]
    if base == "ld" and "param" in parts and len(ops) == 2:
        address = parse_address(ops[1])
        return Value(True, 0) if address == (param, 0) else None
    sources = []
    for operand in ops[1:]:
        if operand in values:
            sources.append(values[operand])
        elif operand.startswith("%") and not _is_special(operand):
            return _PENDING  # a register whose writer comes later in the text (a loop): next pass
        else:
            number = immediate(operand)
            sources.append(None if number is None else Value(False, number))
    if any(s is None for s in sources):
        return None
    if base == "mov" and len(sources) == 1:
        return sources[0]
    if base == "cvta" and len(sources) == 1:
        return sources[0] if tuple(parts[:3]) in _KEEPS_ADDRESS or tuple(parts[:2]) in _KEEPS_ADDRESS else None
    if base == "cvt" and len(sources) == 1 and not sources[0].based:
        return sources[0]
    if base == "neg" and len(sources) == 1 and not sources[0].based:
        return Value(False, -sources[0].number)
    if len(sources) == 2:
        a, b = sources
        if base == "add" and not (a.based and b.based):
            return Value(a.based or b.based, a.number + b.number)
        if base == "sub" and not b.based:
            return Value(a.based, a.number - b.number)
        if base == "sub" and a.based and b.based:
            return Value(False, a.number - b.number)
        if base == "mul" and "hi" not in parts and not (a.based or b.based):
            return Value(False, a.number * b.number)
        if base == "shl" and not (a.based or b.based):
            return Value(False, a.number << b.number)
    if base == "mad" and len(sources) == 3 and "hi" not in parts:
        a, b, c = sources
        if not (a.based or b.based):
            return Value(c.based, a.number * b.number + c.number)
    return None


def _is_special(register: str) -> bool:
    """%tid.x, %ctaid.x, %globaltimer...: special registers, never written by an instruction."""
    return "." in register or register in {"%laneid", "%warpid", "%clock", "%clock64", "%globaltimer", "%smid"}


def parse_address(operand: str) -> tuple[str, int] | None:
    """'[%rd2+16]' -> ('%rd2', 16); '[name]' -> ('name', 0); None if `operand` is not such an address."""
    match = re.fullmatch(r"\[\s*([%\w$]+)\s*(?:([+-])\s*(\S+?))?\s*\]", operand)
    if not match:
        return None
    offset = 0
    if match.group(3) is not None:
        number = immediate(match.group(3))
        if number is None:
            return None
        offset = number if match.group(2) == "+" else -number
    return match.group(1), offset


# -- memory accesses and ordering ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """A load or write of global memory and the bytes it touches relative to the pointer parameter.

    `start` is None when the address cannot be told: a register of unknown value, or a constant address."""

    position: tuple[int, int]
    instruction: Instruction
    writes: bool
    start: int | None
    nbytes: int

    def words(self, word_bytes: int) -> range:
        """The `word_bytes`-sized words the access touches (empty when its start cannot be told)."""
        if self.start is None:
            return range(0)
        return range(self.start // word_bytes, (self.start + self.nbytes - 1) // word_bytes + 1)


_OTHER_SPACES = frozenset({"local", "shared", "param", "const", "tex"})
_TYPE = re.compile(r"[bsuf](8|16|32|64|128)")


def access_bytes(instruction: Instruction) -> int:
    """Bytes an access moves: its type's width times its vector length (.v2, .v4, .v8)."""
    width = 4
    lanes = 1
    for part in instruction.parts[1:]:
        if _TYPE.fullmatch(part):
            width = int(part[1:]) // 8
        elif re.fullmatch(r"v[248]", part):
            lanes = int(part[1:])
    return width * lanes


def memory_accesses(function: Function, values: dict[str, Value | None]) -> list[Access]:
    """Every ld, st, atom and red of global memory (state space .global or generic) with an address in a
    register; accesses through a symbol (a __device__ variable) and of local, shared, param or const space are
    not the pointer parameter's memory and are left out."""
    found = []
    for position, instruction in function.positions():
        parts = instruction.parts
        if parts[0] not in {"ld", "st", "atom", "red"} or _OTHER_SPACES & {p.split("::")[0] for p in parts}:
            continue
        address = next((a for a in map(parse_address, instruction.operands) if a), None)
        if address is None or not address[0].startswith("%"):
            continue
        value = values.get(address[0])
        start = value.number + address[1] if value is not None and value.based else None
        writes = parts[0] != "ld"
        found.append(Access(position, instruction, writes, start, access_bytes(instruction)))
    return found


def escapes(function: Function, values: dict[str, Value | None]) -> list[Instruction]:
    """Stores whose VALUE is the pointer (plus a constant): into a call's parameters, local memory or anywhere,
    the pointer goes where `memory_accesses` cannot follow it."""
    found = []
    for _pos, instruction in function.positions():
        if instruction.parts[0] not in {"st", "atom", "red"}:
            continue
        stored = instruction.operands[1:] if instruction.parts[0] != "atom" else instruction.operands[2:]
        for operand in stored:
            value = values.get(operand)
            if value is not None and value.based:
                found.append(instruction)
                break
    return found


@dataclass(frozen=True)
class Order:
    """How an instruction orders this thread's earlier memory accesses before its later ones."""

    semantics: str  # sc, acq_rel, release, acquire, relaxed
    scope: str  # cta, cluster, gpu, sys

    @property
    def releases(self) -> bool:
        """Earlier accesses are ordered before later ones (or, for a release store, before the store itself)."""
        return self.semantics in RELEASING

    def reaches(self, scope: str) -> bool:
        """The ordering holds for observers at `scope` (a 'sys' observer: the host, other GPUs)."""
        return SCOPES.index(self.scope) >= SCOPES.index(scope)


_MEMBAR_SCOPES = {"cta": "cta", "gl": "gpu", "sys": "sys"}


def ordering(instruction: Instruction) -> Order | None:
    """The Order of a fence (membar.sys, fence.sc.sys, fence.acq_rel.gpu...) or of a store, atom or red that
    names semantics (st.release.sys, atom.acq_rel.gpu...); None for everything else. Proxy fences and the
    restricted fence forms order no ordinary accesses and are None too."""
    parts = instruction.parts
    words = set(parts[1:])
    if parts[0] == "membar":
        scope = _MEMBAR_SCOPES.get(parts[1]) if len(parts) == 2 else None
        return Order("sc", scope) if scope else None
    if parts[0] == "fence":
        if words & {"proxy", "op_restrict", "mbarrier_init"} or any("sync_restrict" in p for p in parts):
            return None
        scope = next((s for s in SCOPES if s in words), None)
        semantics = next((s for s in ("sc", "acq_rel", "acquire", "release") if s in words), "acq_rel")
        return Order(semantics, scope) if scope else None
    if parts[0] in {"st", "atom", "red", "ld"}:
        semantics = next((s for s in ("release", "acq_rel", "acquire", "relaxed") if s in words), None)
        if semantics is None:
            return None
        return Order(semantics, next((s for s in SCOPES if s in words), "gpu"))
    return None
