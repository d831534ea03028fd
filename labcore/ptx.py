"""PTX, the code NVRTC compiles CUDA C++ to: compile it, split a kernel into basic blocks, follow every path.

Memory-ordering answers are judged on the compiled code, not on the source text: what the compiler kept,
removed, merged or put on a branch is what runs (zero_copy/solutions/zero_copy.ipynb, section 8, through
zero_copy/mailbox.py). This module knows PTX and no lesson:

- `compile_ptx`: CUDA source to PTX with NVIDIA's NVRTC through cuda-bindings; no GPU and no CuPy needed.
- `parse_function`: one `.entry`/`.func` as basic blocks with their successors; `@%p` guards kept.
- `explore`: every path through a kernel, calls of the functions the PTX defines followed into them. Registers
  hold `Sym`s, affine forms of named inputs (the mailbox pointer, the round) modulo 2**bits, so an address is the
  pointer plus a number and a stored value is, say, round * 1000003 + 2, for every round at once. A branch whose
  predicate the constants decide takes its one way (a loop with constant bounds runs turn by turn, rolled or
  not); one they do not takes both. Each path's loads, stores (with the value each word holds after), fences and
  end go to the caller's `step` in order; states already followed are not followed again, and a loop that keeps
  making new states has what changes made unknown (a fixed point), so every exploration ends.
- `ordering`: the semantics and scope by which a fence, `membar` or release store orders earlier accesses.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Generic, NamedTuple, TypeVar

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
    return nvrtc_output(source, options, name).rstrip(b"\x00").decode()


def nvrtc_output(source: str, options: Sequence[str], name: str, *, output: str = "ptx") -> bytes:
    """What NVRTC makes of `source` with `options`: its PTX, or with output="cubin" its cubin (the options then
    name an sm_ architecture); PtxCompileError with NVRTC's log when it does not compile. The one place the course
    runs NVRTC on a source (labcore.nvrtc's compile children call it too)."""
    nvrtc = _nvrtc()
    size_of, get = {
        "ptx": (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX),
        "cubin": (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN),
    }[output]
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
        _err, size = size_of(prog)
        data = b" " * size
        get(prog, data)
        return data
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
    returns: tuple[str, ...] = ()  # a .func's return parameters (func_retval0 ...)

    def positions(self) -> Iterator[tuple[tuple[int, int], Instruction]]:
        """((block, index), instruction) in text order."""
        for b, block in enumerate(self.blocks):
            for i, instruction in enumerate(block.instructions):
                yield (b, i), instruction


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_FILE = re.compile(r"^\s*\.file\s+(\d+)\s+\"([^\"]*)\"", re.M)
_HEADER = re.compile(r"\.(?:entry|func)\s+(?:\(([^)]*)\)\s*)?([\w$]+)\s*(\()?")
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
    return [m.group(2) for m in _HEADER.finditer(text) if _body_start(text, m) is not None]


def parse_function(ptx: str, name: str) -> Function:
    """The function `name` of the PTX module as a control-flow graph."""
    text = _COMMENTS.sub("", ptx)
    for match in _HEADER.finditer(text):
        if match.group(2) != name:
            continue
        start = _body_start(text, match)
        if start is None:
            continue  # a declaration (.extern .func ...;)
        params = _params(text[match.end() : text.index(")", match.end())] if match.group(3) else "")
        end = _matching_brace(text, start)
        statements = _statements(text[start + 1 : end], source_files(ptx))
        return Function(name, params, _blocks(statements), _params(match.group(1) or ""))
    raise PtxError(f"no function {name} in the PTX; it defines {', '.join(function_names(ptx)) or 'none'}")


def _body_start(text: str, header: re.Match[str]) -> int | None:
    """Index of the '{' that opens the function's body, or None for a declaration."""
    pos = text.index(")", header.end()) + 1 if header.group(3) else header.end()
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
    named: set[str] = set()
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
        if statement.startswith(".reg "):
            named.update(_plain_registers(statement))
        if statement.startswith("."):
            continue  # .reg, .local, .pragma ...: declarations, not instructions
        if named:  # registers inline asm declares without a %: named as the others are, so they are followed
            statement = re.sub(rf"(?<![\w$%.])({'|'.join(map(re.escape, named))})(?![\w$])", r"%\1", statement)
        guard = _GUARD.match(statement)
        if guard:
            statement = statement[guard.end() :]
        opcode, _, rest = statement.partition(" ")
        out.append(Instruction(opcode, split_operands(rest), guard.group(1) if guard else None, source))
    return out


def _plain_registers(declaration: str) -> set[str]:
    """'.reg .b32 t, u;' -> {'t', 'u'}: the names a .reg declares without a leading %."""
    names = declaration.split(None, 2)[2] if len(declaration.split(None, 2)) == 3 else ""
    return {n.strip() for n in names.split(",") if re.fullmatch(r"[A-Za-z_$][\w$]*", n.strip())}


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


# -- operands ------------------------------------------------------------------------------------------------------

_NO_DESTINATION = frozenset({"st", "red", "bra", "call", "ret", "exit", "trap", "nanosleep", "bar", "barrier"})
_IMMEDIATE = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)U?")
_OTHER_SPACES = frozenset({"local", "shared", "param", "const", "tex"})
_TYPE = re.compile(r"[bsuf](8|16|32|64|128)")


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


# -- ordering ------------------------------------------------------------------------------------------------------


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


# -- values ---------------------------------------------------------------------------------------------------------


class Sym(NamedTuple):
    """An integer as an affine form of named inputs modulo 2**bits: const + the sum of coefficient * input.

    An input is a kernel parameter (the mailbox pointer, the round) or the address of a PTX symbol (a __device__
    variable, the local stack); a constant has no terms. Only the low `bits` bits are known. Build with `affine`.
    (A named tuple: states of many registers are hashed at every join of paths.)"""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0
    bits: int = 64

    @property
    def constant(self) -> bool:
        return not self.terms

    def signed(self) -> int:
        """The constant part read as a two's-complement number of `bits` bits."""
        return _signed(self.const, self.bits)

    def __str__(self) -> str:
        parts = [name if c == 1 else f"{name} * {_signed(c, self.bits)}" for name, c in self.terms]
        const = self.signed()
        if const or not parts:
            parts.append(str(abs(const)) if parts else str(const))
            if parts[:-1] and const < 0:
                return " + ".join(parts[:-1]) + f" - {abs(const)}"
        return " + ".join(parts)


Value = Sym | bool | None  # a register: an integer form, a predicate, or None when it cannot be known


def affine(terms: Iterable[tuple[str, int]], const: int, bits: int = 64) -> Sym:
    """The Sym of these terms and constant, reduced modulo 2**bits."""
    mask = (1 << bits) - 1
    summed: dict[str, int] = {}
    for name, coefficient in terms:
        summed[name] = summed.get(name, 0) + coefficient
    return Sym(tuple(sorted((n, c & mask) for n, c in summed.items() if c & mask)), const & mask, bits)


def known(number: int, bits: int = 64) -> Sym:
    return affine((), number, bits)


def symbol(name: str, bits: int = 64) -> Sym:
    return affine(((name, 1),), 0, bits)


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _add(a: Value, b: Value, bits: int) -> Value:
    if not (isinstance(a, Sym) and isinstance(b, Sym)):
        return None
    return affine((*a.terms, *b.terms), a.const + b.const, min(a.bits, b.bits, bits))


def _scale(a: Value, k: int, bits: int) -> Value:
    if not isinstance(a, Sym):
        return None
    return affine(((n, c * k) for n, c in a.terms), a.const * k, min(a.bits, bits))


def _mul(a: Value, b: Value, bits: int) -> Value:
    if isinstance(a, Sym) and a.constant and a.bits >= bits:
        return _scale(b, a.const, bits)
    if isinstance(b, Sym) and b.constant and b.bits >= bits:
        return _scale(a, b.const, bits)
    return None


def _low(a: Value, bits: int) -> Value:
    """The low `bits` bits of a value (truncation, or what is known of an extension)."""
    return affine(a.terms, a.const, min(a.bits, bits)) if isinstance(a, Sym) else None


def _extend(a: Value, source_bits: int, bits: int, sign: bool) -> Value:
    """A constant zero- or sign-extended from source_bits to bits; of a form only its low source_bits are known."""
    if not isinstance(a, Sym):
        return None
    if a.constant and a.bits >= source_bits:
        number = _signed(a.const, source_bits) if sign else a.const & ((1 << source_bits) - 1)
        return known(number, bits)
    return _low(a, source_bits)


def _number(a: Value, bits: int) -> int | None:
    """A constant's value of `bits` bits (unsigned), or None when it is not fully known."""
    if isinstance(a, Sym) and a.constant and a.bits >= bits:
        return a.const & ((1 << bits) - 1)
    return None


# -- one instruction's value ---------------------------------------------------------------------------------------

_TYPED = re.compile(r"([bsuf])(8|16|32|64|128)")
_ORDERED = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}
_FLOAT_LITERAL = re.compile(r"0([fFdD])([0-9a-fA-F]+)")


def _types(instruction: Instruction) -> list[tuple[str, int]]:
    """('s', 32), ... for each type part of the opcode, in order ('pred' as ('p', 1))."""
    found = []
    for part in instruction.parts[1:]:
        typed = _TYPED.fullmatch(part)
        if typed:
            found.append((typed.group(1), int(typed.group(2))))
        elif part == "pred":
            found.append(("p", 1))
    return found


def _compare(op: str, a: Value, b: Value, kind: str, bits: int) -> bool | None:
    if kind == "f" or not (isinstance(a, Sym) and isinstance(b, Sym)):
        return None
    if op in {"eq", "ne"}:
        diff = _add(a, _scale(b, -1, bits), bits)
        if not isinstance(diff, Sym) or not diff.constant:
            return None
        if diff.const:  # differs in the bits that are known: differs
            return op == "ne"
        return (op == "eq") if diff.bits >= bits else None
    x, y = _number(a, bits), _number(b, bits)
    if x is None or y is None or op not in _ORDERED:
        return None
    if kind == "s" and op in {"lt", "le", "gt", "ge"}:
        x, y = _signed(x, bits), _signed(y, bits)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[_ORDERED[op]]


def _logic(op: str, a: Value, b: Value) -> Value:
    """Three-valued and, or, xor of predicates."""
    if op == "and":
        return False if a is False or b is False else (True if a is True and b is True else None)
    if op == "or":
        return True if a is True or b is True else (False if a is False and b is False else None)
    if op == "xor" and isinstance(a, bool) and isinstance(b, bool):
        return a != b
    return None


def _not(a: Value) -> Value:
    return (not a) if isinstance(a, bool) else None


def _truth(a: Value) -> bool | None:
    """A predicate's value: a bool, or a constant moved into a predicate register (mov.pred %p, 1)."""
    if isinstance(a, Sym):
        return bool(a.const) if a.constant else None
    return a


def _bitwise(op: str, a: Value, b: Value, bits: int, kind: str) -> Value:
    """and, or, xor, shr, min, max, div, rem of constants (None for anything else)."""
    x, y = _number(a, bits), _number(b, 32 if op in {"shr", "shl"} else bits)
    if x is None or y is None:
        return None
    sx, sy = (_signed(x, bits), _signed(y, bits)) if kind == "s" else (x, y)
    if op in {"div", "rem"} and y == 0:
        return None
    result = {
        "and": lambda: x & y,
        "or": lambda: x | y,
        "xor": lambda: x ^ y,
        "shr": lambda: (sx >> min(y, bits)) if kind == "s" else (x >> min(y, bits)),
        "min": lambda: min(sx, sy),
        "max": lambda: max(sx, sy),
        "div": lambda: _quotient(sx, sy),
        "rem": lambda: sx - _quotient(sx, sy) * sy,
    }.get(op)
    return known(result(), bits) if result else None


def _quotient(x: int, y: int) -> int:
    """x / y rounded toward zero, as PTX's div does (exact for 64-bit operands, unlike a float division)."""
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _value_of(instruction: Instruction, get: Callable[[str, int], Value]) -> dict[str, Value]:
    """The registers an arithmetic, logic, compare or move instruction writes and their values."""
    targets = destinations(instruction)
    if not targets:
        return {}
    parts, ops = instruction.parts, instruction.operands
    base = parts[0]
    types = _types(instruction)
    kind, bits = types[-1] if types else ("b", 64)
    unknown = dict.fromkeys(targets)
    if base == "setp" and len(types) == 1:
        return _setp(instruction, get, kind, bits, targets) or unknown
    if base in {"and", "or", "xor", "not"} and kind == "p":
        srcs = [get(o, 1) for o in ops[1:]]
        return {targets[0]: _not(srcs[0]) if base == "not" else _logic(base, *srcs[:2])}
    if len(targets) != 1 or kind == "f":
        return unknown if not (base == "mov" and len(ops) == 2) else {targets[0]: get(ops[1], bits)}
    target = targets[0]
    if base == "cvt" and len(types) == 2:
        (_dk, dest_bits), (source_kind, source_bits) = types
        if source_kind == "f":
            return unknown
        value = get(ops[1], source_bits)
        if dest_bits <= source_bits:
            return {target: _low(value, dest_bits)}
        return {target: _extend(value, source_bits, dest_bits, source_kind == "s")}
    if base == "selp":
        choice = get(ops[3], 1) if len(ops) == 4 else None
        return {target: None if choice is None else get(ops[1] if choice else ops[2], bits)}
    wide = "wide" in parts
    srcs = [get(o, bits) for o in ops[1:]]
    if wide:
        srcs = [_extend(s, bits, 2 * bits, kind == "s") for s in srcs]
        bits *= 2
    if "hi" in parts:
        return unknown
    return {target: _arithmetic(base, srcs, bits, kind)}


def _arithmetic(base: str, srcs: list[Value], bits: int, kind: str) -> Value:
    if base in {"mov", "cvta"} and len(srcs) == 1:
        return srcs[0]
    if base == "neg" and len(srcs) == 1:
        return _scale(srcs[0], -1, bits)
    if base == "not" and len(srcs) == 1:
        return _add(_scale(srcs[0], -1, bits), known(-1, bits), bits)
    if len(srcs) == 2:
        a, b = srcs
        if base == "add":
            return _add(a, b, bits)
        if base == "sub":
            return _add(a, _scale(b, -1, bits), bits)
        if base == "mul":
            return _mul(a, b, bits)
        if base == "shl":
            shift = _number(b, 32)
            return None if shift is None else (_scale(a, 1 << shift, bits) if shift < bits else known(0, bits))
        return _bitwise(base, a, b, bits, kind)
    if base == "mad" and len(srcs) == 3:
        return _add(_mul(srcs[0], srcs[1], bits), srcs[2], bits)
    return None


def _setp(
    instruction: Instruction, get: Callable[[str, int], Value], kind: str, bits: int, targets: tuple[str, ...]
) -> dict[str, Value] | None:
    """setp.cmp[.bool].type p[|q], a, b[, c]."""
    parts, ops = instruction.parts, instruction.operands
    compare = _compare(parts[1], get(ops[1], bits), get(ops[2], bits), kind, bits)
    combine = next((p for p in parts[2:] if p in {"and", "or", "xor"}), None)
    if combine and len(ops) == 4:
        other = get(ops[3], 1)
        first, second = _logic(combine, compare, other), _logic(combine, _not(compare), other)
    else:
        first, second = compare, _not(compare)
    return dict(zip(targets, (first, second), strict=False))


# -- paths: every path through a kernel, the calls it makes followed ------------------------------------------------


@dataclass(frozen=True)
class Event:
    """What a path does, in order: a store, a load, a fence, or its end. A store or load of the base pointer's
    memory has `start` (bytes from the base) or None when its address cannot be told; `values` holds each word's
    value after a store (None: not known)."""

    kind: str  # "store", "load", "fence", "end", "loop" (a loop came back to a state it had: it may not end)
    instruction: Instruction
    start: int | None = None
    nbytes: int = 0
    values: tuple[Value, ...] = ()
    order: Order | None = None

    def words(self, word_bytes: int) -> range:
        """The `word_bytes`-sized words the access touches (empty when its start cannot be told)."""
        if self.start is None:
            return range(0)
        return range(self.start // word_bytes, (self.start + self.nbytes - 1) // word_bytes + 1)


class _Stopped(Exception):
    """`step` returned None: the path stops there (it has shown what it had to)."""


class Unfollowed(PtxError):
    """A path the analysis cannot follow: a call of an unknown function with the pointer, too many steps..."""


MAX_STEPS = 200_000  # instructions over all paths; the lesson's kernel with a publish step takes a few hundred
MAX_DEPTH = 32  # calls nested deeper than this are taken for recursion
WIDEN_AFTER = 256  # turns of a loop on one path before what changes from turn to turn becomes unknown
F = TypeVar("F")


@dataclass
class _Frame:
    function: Function
    block: int
    index: int
    regs: dict[str, Value]
    params: dict[tuple[str, int], Value]  # its own parameters, by (name, byte offset)
    staged: dict[tuple[str, int], Value] = dataclasses.field(default_factory=dict)  # st.param for a call; returns
    results: tuple[str, ...] = ()  # the caller's names for this call's return values
    returned: dict[tuple[str, int], Value] = dataclasses.field(default_factory=dict)

    def copy(self) -> _Frame:
        return _Frame(
            self.function, self.block, self.index, dict(self.regs), dict(self.params), dict(self.staged),
            self.results, dict(self.returned),
        )  # fmt: skip

    def key(self) -> tuple:
        return (
            self.function.name, self.block, self.index, frozenset(self.regs.items()),
            frozenset(self.params.items()), frozenset(self.staged.items()), frozenset(self.returned.items()),
        )  # fmt: skip


@dataclass
class _Path(Generic[F]):
    frames: list[_Frame]
    memory: dict[tuple[str, int], Value]  # (object, word index): the words this path stored
    facts: F
    escaped: bool = False  # the base pointer was stored into memory the analysis does not follow
    trail: frozenset[tuple] = frozenset()  # the states this path had at loop heads: a repeat is a cycle
    clobbered: bool = False  # a store whose address cannot be told: the initial values are no longer known
    turns: dict[tuple, int] = dataclasses.field(default_factory=dict)  # how often it passed each loop head
    widened: dict[tuple, tuple[dict[str, Value], dict[tuple[str, int], Value]]] = dataclasses.field(
        default_factory=dict
    )

    def copy(self) -> _Path[F]:
        return _Path(
            [f.copy() for f in self.frames],
            dict(self.memory),
            self.facts,
            self.escaped,
            self.trail,
            self.clobbered,
            dict(self.turns),
            dict(self.widened),
        )

    def key(self) -> tuple:
        memory = frozenset(self.memory.items())
        return (tuple(f.key() for f in self.frames), memory, self.facts, self.escaped, self.clobbered)


@dataclass(frozen=True)
class Machine:
    """What the paths start from: the kernel's parameters (by position), the thread's special registers, and
    what a load of the base pointer's word w reads before this thread stores it."""

    base: str  # the input whose memory the events describe
    inputs: tuple[Value, ...]
    specials: dict[str, Value]
    initial: Callable[[int], Value]
    word_bytes: int = 4
    max_steps: int = MAX_STEPS


def explore(text: str, entry: str, machine: Machine, facts: F, step: Callable[[F, Event], F]) -> int:
    """Follow every path through `entry` (calls of functions the PTX defines followed into them), calling
    `step` with each memory event of the base pointer in the path's order (it returns the path's new facts, or
    None to stop following that path); returns how many paths ended.

    A branch or guard whose predicate is known from constants takes its one way, one that is not known takes
    both. Paths that reach the same instruction in the same state are followed once, so loops whose condition
    cannot be known end; a loop that keeps making new states has what changes made unknown after WIDEN_AFTER
    turns (a fixed point), and a loop that comes back to a state it had is a "loop" event. Raises Unfollowed for
    what cannot be followed soundly."""
    return _Explorer(text, entry, machine, step).run(facts)


class _Explorer(Generic[F]):
    def __init__(self, text: str, entry: str, machine: Machine, step: Callable[[F, Event], F]) -> None:
        self.text, self.entry, self.machine, self.step = text, entry, machine, step
        self.functions: dict[str, Function] = {}
        self.labels: dict[str, dict[str, int]] = {}
        self.heads: dict[str, set[int]] = {}  # loop heads: blocks a later (or the same) block branches back to
        self.joins: dict[str, set[int]] = {}  # blocks more than one block leads to
        self.defined = set(function_names(text))
        self.seen: set[tuple] = set()
        self.steps = 0

    def function(self, name: str) -> Function:
        if name not in self.functions:
            function = parse_function(self.text, name)
            self.functions[name] = function
            self.labels[name] = {label: b for b, block in enumerate(function.blocks) for label in block.labels}
            self.heads[name] = {t for b, block in enumerate(function.blocks) for t in block.successors if t <= b}
            ways = collections.Counter(t for block in function.blocks for t in block.successors)
            self.joins[name] = {b for b, n in ways.items() if n > 1}
        return self.functions[name]

    def run(self, facts: F) -> int:
        kernel = self.function(self.entry)
        params = {(name, 0): value for name, value in zip(kernel.params, self.machine.inputs, strict=False)}
        work = [_Path([_Frame(kernel, 0, 0, {}, params)], {}, facts)]
        ended = 0
        while work:
            try:
                ended += self.follow(work.pop(), work)
            except _Stopped:
                ended += 1
        return ended

    def emit(self, path: _Path[F], event: Event) -> None:
        facts = self.step(path.facts, event)
        if facts is None:
            raise _Stopped
        path.facts = facts

    def follow(self, path: _Path[F], work: list[_Path[F]]) -> int:
        """Run one path until it ends (1), meets a state already followed (0), or forks (the other way onto work)."""
        while True:
            frame = path.frames[-1]
            if frame.index == 0 and not self.first_visit(path):
                return self.again(path)
            if frame.index >= len(frame.function.blocks[frame.block].instructions):  # fell off the block's end
                if self.fall_through(path):
                    return 1
                continue
            instruction = frame.function.blocks[frame.block].instructions[frame.index]
            self.count_step()
            if instruction.guard and not self.guard_holds(path, instruction.guard, work):
                frame.index += 1
                continue
            if instruction.parts[0] == "selp" and len(instruction.operands) == 4:
                self.choose(path, instruction.operands[3], work)
            if self.execute(path, instruction):
                return 1

    def fall_through(self, path: _Path[F]) -> bool:
        """Past a block's last instruction: on into the next block, or, past the function's last, a return without
        a ret; whether the path ended."""
        frame = path.frames[-1]
        if frame.block + 1 >= len(frame.function.blocks):
            return self.leave(path, Instruction("ret"))
        frame.block, frame.index = frame.block + 1, 0
        return False

    def count_step(self) -> None:
        self.steps += 1
        if self.steps > self.machine.max_steps:
            raise Unfollowed(
                f"more than {self.machine.max_steps:,} instructions on the paths of {self.entry}: too many "
                f"paths (branches on values the analysis cannot know), or loops too long to follow"
            )

    def guard_holds(self, path: _Path[F], guard: str, work: list[_Path[F]]) -> bool:
        """Whether the guarded instruction runs on this path: its predicate known, or not known and then both ways,
        each knowing its predicate from here on (the way on which the guard is false onto work, skipping it)."""
        frame = path.frames[-1]
        negate, register = guard.startswith("!"), guard.lstrip("!")
        truth = _truth(frame.regs.get(register))
        truth = _not(truth) if negate else truth
        if truth is None:
            other = path.copy()
            other.frames[-1].index += 1
            other.frames[-1].regs[register] = negate
            work.append(other)
            frame.regs[register] = not negate
        return truth is not False

    def choose(self, path: _Path[F], chooser: str, work: list[_Path[F]]) -> None:
        """A selp whose chooser is a register not known: both ways (false onto work)."""
        frame = path.frames[-1]
        if chooser.startswith("%") and _truth(frame.regs.get(chooser)) is None:
            other = path.copy()
            other.frames[-1].regs[chooser] = False
            work.append(other)
            frame.regs[chooser] = True

    def first_visit(self, path: _Path[F]) -> bool:
        """Whether this state at this block's start is new (asked where paths join and at loop heads); a path's
        loop widens after WIDEN_AFTER turns."""
        frame = path.frames[-1]
        name = frame.function.name
        head = frame.block in self.heads[name]
        if not head and frame.block not in self.joins[name]:
            return True  # one way in: a state here repeats only if it did where that way came from
        if head:
            point = tuple((f.function.name, f.block, f.index) for f in path.frames)
            path.turns[point] = path.turns.get(point, 0) + 1
            if path.turns[point] > WIDEN_AFTER:
                self.widen(point, path)
        key = path.key()
        if key in self.seen:
            return False
        self.seen.add(key)
        if head:
            path.trail = path.trail | {key}
        return True

    def again(self, path: _Path[F]) -> int:
        """A state already followed: joined from another path (nothing new), or this path's own loop come round
        to the same state (an event: with nothing changed the loop can run for ever)."""
        frame = path.frames[-1]
        if frame.block in self.heads[frame.function.name] and path.key() in path.trail:
            first = frame.function.blocks[frame.block].instructions
            self.emit(path, Event("loop", first[0] if first else Instruction("bra")))
        return 0

    def widen(self, point: tuple, path: _Path[F]) -> None:
        """Registers and words that changed since the path's first turn past WIDEN_AFTER become unknown."""
        frame = path.frames[-1]
        if point not in path.widened:
            path.widened[point] = (dict(frame.regs), dict(path.memory))
            return
        regs, memory = path.widened[point]
        frame.regs = {r: v if r in regs and regs[r] == v else None for r, v in frame.regs.items()}
        path.memory = {
            k: self.word(path, k) if k in memory and self.word(path, k) == memory[k] else None
            for k in set(memory) | set(path.memory)
        }
        path.widened[point] = (dict(frame.regs), dict(path.memory))

    def leave(self, path: _Path[F], instruction: Instruction) -> bool:
        """Return from the current function; True when that ends the kernel (and the path)."""
        done = path.frames.pop()
        if not path.frames:
            self.emit(path, Event("end", instruction))
            return True
        caller = path.frames[-1]
        for name, own in zip(done.results, done.function.returns, strict=False):
            for (n, offset), value in done.returned.items():
                if n == own:
                    caller.staged[(name, offset)] = value
        caller.index += 1
        return False

    def execute(self, path: _Path[F], instruction: Instruction) -> bool:
        """Run one instruction whose guard holds; True when the path ends."""
        frame = path.frames[-1]
        base = instruction.parts[0]
        if base == "bra":
            target = instruction.operands[0] if instruction.operands else ""
            frame.block, frame.index = self.labels[frame.function.name][target], 0
            return False
        if base == "ret":
            return self.leave(path, instruction)
        if base in {"exit", "trap"}:
            self.emit(path, Event("end", instruction))
            return True
        if base == "call":
            self.call(path, instruction)
            return False
        if base in {"membar", "fence"}:
            self.emit(path, Event("fence", instruction, order=ordering(instruction)))
        elif base in {"ld", "st", "atom", "red"}:
            self.memory(path, instruction)
        elif any(o.startswith("[") for o in instruction.operands) and base not in {"prefetch", "prefetchu"}:
            if not _OTHER_SPACES & set(instruction.parts):
                raise Unfollowed(f"an instruction this analysis does not model reaches memory ({instruction.text})")
            frame.regs.update(dict.fromkeys(destinations(instruction)))
        else:
            frame.regs.update(_value_of(instruction, lambda operand, bits: self.get(frame, operand, bits)))
        frame.index += 1
        return False

    def get(self, frame: _Frame, operand: str, bits: int) -> Value:
        """An operand's value: a register, a special register, an immediate, a float's bits, a symbol's address."""
        if operand.startswith("!"):
            return _not(self.get(frame, operand[1:], bits))
        if operand.startswith("%"):
            if operand in frame.regs:
                return frame.regs[operand]
            return self.machine.specials.get(operand) if _is_special(operand) else None
        number = immediate(operand)
        if number is not None:
            return known(number, bits)
        literal = _FLOAT_LITERAL.fullmatch(operand)
        if literal:
            return known(int(literal.group(2), 16), 32 if literal.group(1) in "fF" else 64)
        if re.fullmatch(r"[A-Za-z_$][\w$]*", operand):
            return symbol(operand)  # the address of a variable or of the local stack: its own memory
        return None

    def call(self, path: _Path[F], instruction: Instruction) -> None:
        frame = path.frames[-1]
        ops = instruction.operands
        named = [i for i, o in enumerate(ops) if not o.startswith("(")]
        if not named or ops[named[0]].startswith("%"):
            raise Unfollowed(f"an indirect call ({instruction.text}) this analysis cannot follow")
        at = named[0]
        name = ops[at]
        results = tuple(_names(ops[at - 1])) if at > 0 else ()
        args = tuple(_names(ops[at + 1])) if at + 1 < len(ops) and ops[at + 1].startswith("(") else ()
        passed = {key: v for key, v in frame.staged.items() if key[0] in args}
        if name not in self.defined:
            if path.escaped or any(self.based(v) for v in passed.values()):
                raise Unfollowed(
                    f"the {self.machine.base} pointer reaches {name}, a function the PTX does not define "
                    f"({instruction.text}): what it does with the pointer cannot be followed"
                )
            frame.staged.update({(r, 0): None for r in results})
            frame.index += 1
            return
        if len(path.frames) >= MAX_DEPTH:
            raise Unfollowed(f"calls nested deeper than {MAX_DEPTH} ({name}: recursion?)")
        callee = self.function(name)
        if len(args) != len(callee.params):
            raise Unfollowed(f"{instruction.text} passes {len(args)} parameters to {name}, of {len(callee.params)}")
        params = {}
        for own, arg in zip(callee.params, args, strict=True):
            params.update({(own, offset): v for (n, offset), v in passed.items() if n == arg})
        path.frames.append(_Frame(callee, 0, 0, {}, params, results=results))

    def based(self, value: Value) -> bool:
        return isinstance(value, Sym) and any(name == self.machine.base for name, _c in value.terms)

    def memory(self, path: _Path[F], instruction: Instruction) -> None:
        """ld, st, atom, red: parameters; the words of every object whose address is known (the base's, the
        stack's, a variable's); an event for each access of the base's memory."""
        frame = path.frames[-1]
        parts, ops = instruction.parts, instruction.operands
        targets = destinations(instruction)
        spaces = set(parts) & (_OTHER_SPACES | {"global"})
        where = next((i for i, o in enumerate(ops) if o.startswith("[")), None)
        address = parse_address(ops[where]) if where is not None else None
        stored = [] if where is None else [self.get(frame, o, 64) for o in _elements(ops[where + 1 :])]
        if "param" in spaces:
            self.param(frame, instruction, address, targets, stored)
            return
        if parts[0] != "ld" and any(self.based(v) for v in stored):
            path.escaped = True  # the pointer itself kept in memory: whoever loads it back is not followed
        place = self.locate(frame, address)
        other_space = bool(spaces - {"global"})  # local, shared, const: never the base's memory
        if other_space and place is not None and place[0] == self.machine.base:
            place = None
        base = place is not None and place[0] == self.machine.base
        nbytes = access_bytes(instruction)
        if parts[0] == "ld":
            frame.regs.update(self.load(path, instruction, place, nbytes, targets))
            if base or (place is None and not other_space):
                self.emit(path, Event("load", instruction, place[1] if place else None, nbytes))
            return
        values, old = self.stored_words(path, instruction, place, nbytes, stored)
        if parts[0] == "atom" and targets:
            frame.regs[targets[0]] = old
        if place is None and other_space:  # any local or shared word: none of those is known from here on
            path.memory = {k: v for k, v in path.memory.items() if k[0] == self.machine.base}
        elif place is None:  # any word at all, the base's too
            path.memory = {k: None for k in path.memory if k[0] == self.machine.base}
            path.clobbered = True
        else:
            size = self.machine.word_bytes
            for w, v in zip(range(place[1] // size, 1 << 62), values, strict=False):
                path.memory[(place[0], w)] = v
        if base or (place is None and not other_space):
            start = place[1] if place else None
            self.emit(path, Event("store", instruction, start, nbytes, tuple(values), ordering(instruction)))

    def locate(self, frame: _Frame, address: tuple[str, int] | None) -> tuple[str, int] | None:
        """(object, bytes from its start) of an address: the base pointer's, or a symbol's (a variable, the local
        stack) plus a number; None when it cannot be told."""
        if address is None:
            return None
        value = self.get(frame, address[0], 64)
        if not isinstance(value, Sym) or len(value.terms) != 1 or value.terms[0][1] != 1 or value.bits < 64:
            return None
        return value.terms[0][0], value.signed() + address[1]

    def param(self, frame, instruction, address, targets, stored) -> None:
        """ld.param and st.param: a function's own parameters, a call's arguments and return values."""
        if address is None:
            frame.regs.update(dict.fromkeys(targets))
            return
        if instruction.parts[0] == "ld":
            value = frame.params.get(address, frame.staged.get(address))
            frame.regs.update({t: value if len(targets) == 1 else None for t in targets})
        elif address[0] in frame.function.returns:
            frame.returned[address] = stored[0] if len(stored) == 1 else None
        else:
            frame.staged[address] = stored[0] if len(stored) == 1 else None

    def word(self, path: _Path[F], place: tuple[str, int]) -> Value:
        """What word `place` (object, word index) holds on this path."""
        if place in path.memory:
            return path.memory[place]
        if place[0] != self.machine.base or path.clobbered:
            return None  # another object's words are not known before this path stores them
        return self.machine.initial(place[1])

    def load(self, path, instruction, place, nbytes, targets) -> dict[str, Value]:
        """What a load reads: this path's own stores (or the base's initial value) of whole words; unknown for a
        non-coherent (.nc) load, one that is not word-aligned, or one whose address cannot be told."""
        size = self.machine.word_bytes
        if place is None or "nc" in instruction.parts or place[1] % size or len(targets) == 0:
            return dict.fromkeys(targets)
        name, first = place[0], place[1] // size
        each = nbytes // len(targets)
        if each == size:
            return {t: self.word(path, (name, first + i)) for i, t in enumerate(targets)}
        if each == 2 * size and len(targets) == 1:
            lo, hi = (_number(self.word(path, (name, first + i)), 8 * size) for i in range(2))
            return {targets[0]: None if lo is None or hi is None else known(lo | hi << (8 * size))}
        return dict.fromkeys(targets)

    def stored_words(self, path, instruction, place, nbytes, stored) -> tuple[list[Value], Value]:
        """Each touched word's value after a st, atom or red, and (atom) the value the word held before."""
        size, bits = self.machine.word_bytes, 8 * self.machine.word_bytes
        if place is None:
            return [], None
        count = (place[1] % size + nbytes + size - 1) // size
        if place[1] % size:
            return [None] * count, None
        old = self.word(path, (place[0], place[1] // size))
        base = instruction.parts[0]
        if base in {"atom", "red"}:
            if nbytes != size:
                return [None] * count, None
            op = next((p for p in instruction.parts if p in _ATOMIC_OPS), None)
            operands = stored[-2:] if op == "cas" else stored[-1:]
            return [_atomic(op, old, operands, bits)], old
        lanes = len(stored) or 1
        each = nbytes // lanes
        if each == size:
            return [_low(v, bits) for v in stored], old
        if each == 2 * size:
            words: list[Value] = []
            for v in stored:
                high = _number(v, 2 * bits)
                words += [_low(v, bits), None if high is None else known(high >> bits, bits)]
            return words, old
        return [None] * count, old


_ATOMIC_OPS = frozenset({"exch", "add", "cas", "inc", "dec", "and", "or", "xor", "min", "max"})


def _atomic(op: str | None, old: Value, operands: list[Value], bits: int) -> Value:
    """The value an atomic leaves in its word: exch, add and cas of what can be told; anything else unknown."""
    if op == "exch" and operands:
        return _low(operands[0], bits)
    if op == "add" and operands:
        return _add(old, operands[0], bits)
    if op == "cas" and len(operands) == 2:
        same = _compare("eq", old, operands[0], "b", bits)
        return None if same is None else (_low(operands[1], bits) if same else old)
    return None


def _elements(operands: Sequence[str]) -> list[str]:
    """'{%r1, %r2}' and plain operands as one list of operands."""
    found = []
    for operand in operands:
        found += [p.strip() for p in operand.strip("{}").split(",")] if operand.startswith("{") else [operand]
    return found


def _names(operand: str) -> list[str]:
    """'(param0, param1)' -> ['param0', 'param1']."""
    return [p.strip() for p in operand.strip("()").split(",") if p.strip()]
