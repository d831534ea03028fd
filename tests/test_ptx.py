"""labcore.ptx: the parser and its control-flow graph on hand-written PTX, then real CUDA compiled by NVRTC (no GPU)."""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from labcore import ptx
from labcore.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]

# A kernel with a guarded early exit, a loop, a guarded store, inline asm with its own register scope, a vector
# store and a call; `.loc` lines name the source as NVRTC's -lineinfo does.
BRANCHY = """
.version 9.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;

.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<9>;
	.loc	1 3 0
	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r1, [k_param_1];
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_4;
	.loc	2 7 5, function_name $L__info_string0, inlined_at 1 4 5
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, 3;
	mul.wide.s32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.volatile.global.u32 	[%rd4+4], %r1;  // word 4
	mov.u64 	%rd5, %rd2;
$L__BB0_2:
	st.global.u32 	[%rd5], %r1;  // a pointer that moves on each iteration
	add.s64 	%rd5, %rd5, 4;
	setp.lt.s32 	%p2, %r1, 8;
	@!%p2 bra 	$L__BB0_2;
	shl.b64 	%rd6, %rd3, 1;
	add.s64 	%rd7, %rd2, %rd6;
	@%p2 st.global.v4.u32 	[%rd7+-8], {%r1, %r1, %r1, %r1};
	// begin inline asm
	{ .reg .b32 t; mov.b32 t, %r1; st.release.sys.global.u32 [%rd2], t; }
	// end inline asm
	membar.sys;
$L__BB0_4:
$L__BB0_5:
	ret;
}
	.file	1 "/tmp/work/kernel.cu"
	.file	2 "/tmp/work/your_code"
"""


@pytest.fixture(scope="module")
def branchy() -> ptx.Function:
    return ptx.parse_function(BRANCHY, "k")


def test_blocks_split_at_labels_and_branches(branchy):
    """Entry, straight line, loop, tail, and the two labels of one exit block; each block's successors."""
    assert [b.labels for b in branchy.blocks] == [(), (), ("$L__BB0_2",), (), ("$L__BB0_4", "$L__BB0_5")]
    assert [b.successors for b in branchy.blocks] == [[4, 1], [2], [2, 3], [4], []]
    assert branchy.params == ("k_param_0", "k_param_1")
    assert [i.opcode for i in branchy.blocks[4].instructions] == ["ret"]


def test_instructions_keep_guards_operands_and_source_lines(branchy):
    """@!%p2 kept; a vector operand stays one operand; .loc gives (file name without directories, line)."""
    entry, straight, loop, tail, _exit = branchy.blocks
    assert loop.instructions[-1].guard == "!%p2" and loop.instructions[-1].operands == ("$L__BB0_2",)
    vector_store = tail.instructions[2]
    assert vector_store.guard == "%p2"
    assert vector_store.operands == ("[%rd7+-8]", "{%r1, %r1, %r1, %r1}")
    assert entry.instructions[0].source == ("kernel.cu", 3)
    assert straight.instructions[0].source == ("your_code", 7)  # the inlined line, not the caller's


def test_inline_asm_scope_braces_vanish_and_its_statements_are_instructions(branchy):
    tail = branchy.blocks[3]
    assert [i.opcode for i in tail.instructions] == [
        "shl.b64",
        "add.s64",
        "st.global.v4.u32",
        "mov.b32",
        "st.release.sys.global.u32",
        "membar.sys",
    ]


def test_declarations_are_not_functions():
    """vprintf is only declared (.extern ... ;): the module defines k alone, and asking for vprintf says so."""
    assert ptx.function_names(BRANCHY) == ["k"]
    with pytest.raises(ptx.PtxError, match=r"no function vprintf in the PTX; it defines k"):
        ptx.parse_function(BRANCHY, "vprintf")


BOX, N = ptx.symbol("box"), ptx.symbol("n", 32)


def paths_of(text, name, inputs, *, initial=lambda w: None, **machine):
    """(paths ended, [each ended path's events as (kind, start, values as text)]) of ptx.explore."""
    ended = []

    def step(facts, event):
        facts = (*facts, (event.kind, event.start, tuple(str(v) for v in event.values)))
        if event.kind == "end":
            ended.append(facts)
        return facts

    count = ptx.explore(text, name, ptx.Machine("box", inputs, {}, initial, **machine), (), step)
    return count, ended


def test_known_branches_take_their_one_way_and_every_event_comes_in_order():
    """n = 3: the early exit is not taken, the loop runs once (3 < 8), the guarded vector store runs."""
    count, ended = paths_of(BRANCHY, "k", (BOX, ptx.known(3, 32)))
    assert count == 1
    assert ended == [
        (
            ("store", 16, ("3",)),
            ("store", 0, ("3",)),
            ("store", 16, ("3", "3", "3", "3")),
            ("store", 0, ("3",)),  # st.release.sys in inline asm: its own register scope, the value kept
            ("fence", None, ()),
            ("end", None, ()),
        )
    ]


def test_unknown_branches_take_both_ways_and_a_loop_that_moves_its_pointer_widens():
    """n unknown: the early exit; the loop left after one turn (its guard then known: the vector store runs);
    the loop kept going, its pointer advancing by 4 until widening makes it unknown (a store it cannot place)."""
    events = []

    def step(facts, event):
        events.append((event.kind, event.start))
        return facts

    ptx.explore(BRANCHY, "k", ptx.Machine("box", (BOX, N), {}, lambda w: None), (), step)
    stores = [start for kind, start in events if kind == "store"]
    assert stores[:2] == [16, 0]
    assert set(range(0, 4 * ptx.WIDEN_AFTER, 4)) <= set(stores)
    assert None in stores  # the widened pointer
    assert ("loop", None) in events  # the widened loop came back to a state it had
    assert events.count(("end", None)) >= 2  # the early exit, and the way out of the loop


LOOPS = r"""
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ __noinline__ void put(volatile int* p, int v) { *p = v; }
extern "C" __global__ void k(volatile int* box, int n) {
#pragma unroll 1
    for (int w = 0; w < 4; ++w) box[w] = n * 1000003 + w;
#pragma unroll 1
    for (int w = 7; w >= 5; --w) put(box + w, twice(n) - w);
}
"""


def test_a_rolled_loop_runs_turn_by_turn_and_calls_are_followed_with_their_return_values():
    """NVRTC keeps both loops rolled and both helpers out of line; each store's word and value is known."""
    text = ptx.compile_ptx(LOOPS)
    assert '.pragma "nounroll"' in text and "call.uni" in text
    count, ended = paths_of(text, "k", (BOX, N))
    assert count == 1
    stores = [(start, values) for kind, start, values in ended[0] if kind == "store"]
    assert stores == [
        (0, ("n * 1000003",)),
        (4, ("n * 1000003 + 1",)),
        (8, ("n * 1000003 + 2",)),
        (12, ("n * 1000003 + 3",)),
        (28, ("n * 2 - 7",)),
        (24, ("n * 2 - 6",)),
        (20, ("n * 2 - 5",)),
    ]


MEMORY = """
.visible .entry k(.param .u64 k_param_0)
{
	ld.param.u64 %rd1, [k_param_0];
	mov.u32 %r1, 5;
	st.global.u32 [%rd1], %r1;
	ld.global.u32 %r2, [%rd1];
	st.global.u32 [%rd1+4], %r2;
	mov.pred %p1, 0;
	@%p1 st.global.u32 [%rd1+8], %r1;
	ld.global.u32 %r3, [%rd1+12];
	ld.global.nc.u32 %r5, [%rd1+12];
	st.global.v2.u32 [%rd1+16], {%r3, %r5};
	mov.u64 %SPL, __local_depot0;
	st.local.u32 [%SPL+8], %r1;
	ld.local.u32 %r6, [%SPL+8];
	st.global.u32 [%rd1+28], %r6;
	st.global.u32 [%rd9], %r1;
	ld.global.u32 %r4, [%rd1+12];
	st.global.u32 [%rd1+24], %r4;
	ld.local.u32 %r7, [%SPL+8];
	st.global.u32 [%rd1+32], %r7;
	ret;
}
"""


def test_loads_read_the_paths_own_stores_until_a_store_it_cannot_place():
    """A load reads what this path stored there (the mailbox's words or the local stack's), or the initial value; not
    through .nc; a constant predicate decides its guard; after a store to an unknown address no word is known."""
    count, ended = paths_of(MEMORY, "k", (BOX,), initial=lambda w: ptx.known(7, 32))
    assert count == 1
    assert [(start, values) for kind, start, values in ended[0] if kind == "store"] == [
        (0, ("5",)),
        (4, ("5",)),
        (16, ("7", "None")),
        (28, ("5",)),  # through the local stack
        (None, ()),
        (24, ("None",)),
        (32, ("None",)),  # the unknown store may have hit the stack too
    ]


def test_affine_forms_wrap_at_their_width():
    big = ptx.affine((("r", 1000003),), 5, 32)
    assert str(big) == "r * 1000003 + 5"
    assert ptx.affine((("r", -1),), -2, 32) == ptx.affine((("r", 2**32 - 1),), 2**32 - 2, 32)
    assert str(ptx.affine((("r", -1),), -2, 32)) == "r * -1 - 2"
    assert ptx.affine((("r", 1), ("r", -1)), 7) == ptx.known(7)


@pytest.mark.parametrize(
    ("instruction", "message"),
    [
        ("call.uni (retval0), mystery, (param0);", r"the box pointer reaches mystery, a function the PTX does not"),
        ("call %rd1, (param0);", r"an indirect call \(call %rd1, \(param0\)\)"),
        ("discard.global.L2 [%rd1], 128;", r"does not model reaches memory \(discard\.global\.L2 \[%rd1\], 128\)"),
    ],
)
def test_what_cannot_be_followed_is_an_error(instruction, message):
    """The pointer handed to a function the PTX only declares, an indirect call, memory the analysis cannot model."""
    text = (
        ".extern .func (.param .b32 func_retval0) mystery(.param .b64 p);\n"
        ".visible .entry k(.param .u64 k_param_0)\n{\n\tld.param.u64 %rd1, [k_param_0];\n"
        f"\tst.param.b64 [param0+0], %rd1;\n\t{instruction}\n\tret;\n}}\n"
    )
    with pytest.raises(ptx.Unfollowed, match=message):
        paths_of(text, "k", (BOX,))


def test_a_step_limit_ends_what_cannot_be_decided():
    with pytest.raises(ptx.Unfollowed, match=r"more than 50 instructions on the paths of k: too many paths"):
        paths_of(BRANCHY, "k", (BOX, N), max_steps=50)


def test_ordering_of_fences_and_release_stores():
    """Scope and semantics as the PTX ISA defines them; proxy fences order no ordinary accesses."""

    def order(opcode):
        found = ptx.ordering(ptx.Instruction(opcode, ("[%rd1]", "%r1") if opcode[:2] in {"st", "at"} else ()))
        return found and (found.semantics, found.scope, found.releases, found.reaches("sys"))

    assert order("membar.sys") == ("sc", "sys", True, True)
    assert order("membar.gl") == ("sc", "gpu", True, False)
    assert order("membar.cta") == ("sc", "cta", True, False)
    assert order("fence.sc.sys") == ("sc", "sys", True, True)
    assert order("fence.acq_rel.sys") == ("acq_rel", "sys", True, True)
    assert order("fence.sys") == ("acq_rel", "sys", True, True)  # .acq_rel when no .sem is named
    assert order("fence.release.sys") == ("release", "sys", True, True)
    assert order("fence.acquire.sys") == ("acquire", "sys", False, True)  # orders later loads, not earlier stores
    assert order("fence.sc.gpu") == ("sc", "gpu", True, False)
    assert order("st.release.sys.global.u32") == ("release", "sys", True, True)
    assert order("atom.exch.release.sys.b32") == ("release", "sys", True, True)
    assert order("atom.acq_rel.global.add.u32") == ("acq_rel", "gpu", True, False)  # .gpu when no scope is named
    assert order("st.relaxed.sys.b32") == ("relaxed", "sys", False, True)
    assert order("fence.proxy.alias") is None
    assert order("st.volatile.global.u32") is None
    assert order("atom.global.sys.exch.b32") is None  # relaxed: no ordering
    assert order("add.s32") is None


@pytest.mark.parametrize(
    ("text", "value"),
    [("16", 16), ("-4", -4), ("0x10", 16), ("0X1f", 31), ("010", 8), ("0", 0), ("7U", 7), ("%r1", None), ("1.5", None)],
)
def test_immediates(text, value):
    assert ptx.immediate(text) == value


@pytest.mark.parametrize(
    ("operand", "address"),
    [("[%rd2+16]", ("%rd2", 16)), ("[%rd2+-4]", ("%rd2", -4)), ("[%rd2]", ("%rd2", 0)), ("[g_var+8]", ("g_var", 8))],
)
def test_addresses(operand, address):
    assert ptx.parse_address(operand) == address


def test_an_indirect_branch_or_an_unknown_label_is_an_error():
    body = ".visible .entry k(.param .u64 k_param_0)\n{\n\t{instr}\n\tret;\n}\n"
    with pytest.raises(ptx.PtxError, match=r"indirect branch \(brx\.idx %r1, \$T\)"):
        ptx.parse_function(body.replace("{instr}", "brx.idx %r1, $T;"), "k")
    with pytest.raises(ptx.PtxError, match=r"a branch to '\$L__nowhere'"):
        ptx.parse_function(body.replace("{instr}", "bra.uni $L__nowhere;"), "k")


# -- NVRTC: real CUDA, compiled without a GPU -------------------------------------------------------------------

PUBLISH = r"""
extern "C" __global__ void publish(volatile int* box, int value, int n) {
    box[4] = value;
    if (n > 7) __threadfence_system();
    else __threadfence();
    box[0] = value;
}
"""


def test_nvrtc_compiles_for_sm_90_and_names_its_fences():
    """What NVRTC emits for the fences of the lesson: membar.sys, membar.gl; stores at their byte offsets."""
    text = ptx.compile_ptx(PUBLISH)
    assert ".target sm_90" in text
    function = ptx.parse_function(text, "publish")
    opcodes = [i.opcode for _pos, i in function.positions()]
    assert "membar.sys" in opcodes and "membar.gl" in opcodes
    count, ended = paths_of(text, "publish", (BOX, N, ptx.symbol("m", 32)))
    assert count == 2
    assert [[start for kind, start, _v in path if kind in {"store", "fence"}] for path in ended] == [[16, None, 0]] * 2
    assert ptx.nvrtc_version().startswith("NVRTC ")


def test_lineinfo_adds_source_lines_and_changes_no_instruction():
    """-lineinfo only adds .loc lines: the judged instructions are the ones that run."""
    plain = ptx.parse_function(ptx.compile_ptx(PUBLISH), "publish")
    lined = ptx.parse_function(ptx.compile_ptx(PUBLISH, ["-lineinfo"]), "publish")
    assert [(i.opcode, i.operands, i.guard) for _p, i in plain.positions()] == [
        (i.opcode, i.operands, i.guard) for _p, i in lined.positions()
    ]
    assert {i.source for _p, i in plain.positions()} == {None}
    stores = [i for _p, i in lined.positions() if i.opcode.startswith("st.")]
    assert [i.source for i in stores] == [("kernel.cu", 3), ("kernel.cu", 6)]


def test_an_option_naming_the_architecture_is_kept():
    assert ".target sm_80" in ptx.compile_ptx(PUBLISH, ["--gpu-architecture=compute_80"])


def test_compile_errors_carry_the_error_lines():
    with pytest.raises(ptx.PtxCompileError) as caught:
        ptx.compile_ptx(PUBLISH.replace("box[0] = value;", "box[0] = valeu;"), name="mine.cu")
    assert str(caught.value) == 'mine.cu(6): error: identifier "valeu" is undefined'
    assert "1 error detected" in caught.value.log


def test_analysis_takes_milliseconds():
    """Following every path of a kernel of the lesson's size: well under 50 ms (the compile itself takes ~0.2 s)."""
    text = ptx.compile_ptx(PUBLISH, ["-lineinfo"])
    start = time.perf_counter()
    for _ in range(10):
        paths_of(text, "publish", (BOX, N, N))
    assert (time.perf_counter() - start) / 10 < 0.05


def test_missing_cuda_bindings_is_one_line_naming_the_install(monkeypatch):
    """No cuda.bindings (an install without the extras): a UsageError with the pip line, not a traceback."""
    ptx._nvrtc.cache_clear()
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    try:
        with pytest.raises(UsageError, match=r"^NVRTC through cuda-bindings is not available \(.*pip install"):
            ptx.compile_ptx(PUBLISH + "// another source, not cached")
    finally:
        ptx._nvrtc.cache_clear()


def test_the_test_extra_brings_nvrtc_for_either_cuda_extra():
    """CI's `.[test]` compiles offline: cuda-bindings and NVRTC's wheel, in ranges that admit both CUDA extras."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    test = {Requirement(r).name: Requirement(r) for r in extras["test"]}
    assert test["cuda-toolkit"].extras == {"nvrtc"}
    for major in ("12", "13"):
        cuda = {Requirement(r).name: Requirement(r) for r in extras[f"cuda{major}"]}
        for name in ("cuda-bindings", "cuda-toolkit"):
            version = f"{major}.9.0"
            assert cuda[name].specifier.contains(version) and test[name].specifier.contains(version), (name, major)
