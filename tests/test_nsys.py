"""labcore.nsys: reading nsys stats CSV exports (shipped real samples plus variants written here)."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from labcore import nsys
from labcore.errors import UsageError, run_cli
from labcore.nsys import NsysFormatError, find_exports, read_exports, read_report

DATA = Path(__file__).parent / "data" / "nsys"
MiB = 1 << 20

NEW_TRACE_HEADER = (
    "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),"
    "Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name"
)
OLD_TRACE_HEADER = (
    "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),"
    "Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name"
)
SUM_HEADER = "Time (%),Total Time (ns),{count},Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),{tail}"
PUSHPOP_TRACE_HEADER = (
    "Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild,"
    "RangeId,ParentId,RangeStack,NameTree"
)


def write(directory: Path, name: str, *lines: str) -> Path:
    """Write an export file (one line per argument) and return its path."""
    path = directory / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def sum_header(count: str, tail: str) -> str:
    """A *_sum header with the given count and trailing columns."""
    return SUM_HEADER.format(count=count, tail=tail)


# --- the shipped real exports (nsys 2025.3.1, H200) -------------------------------------------------------


def test_sample_nvtx_sum_strips_the_default_domain_colon():
    df = read_report(DATA / "tinystats_nvtx_sum.csv")
    assert list(df["range"]) == ["tiny-range-0", "tiny-range-1", "tiny-range-2"]
    assert df["domain"].isna().all() and df["domain"].iloc[0] is None
    assert list(df["style"]) == ["PushPop"] * 3
    assert df["instances"].tolist() == [1, 1, 1]
    assert df["total_ns"].tolist() == [302_507_129, 18_772_468, 18_592_121]
    assert df["stddev_ns"].tolist() == [0, 0, 0]
    assert df.attrs["report"] == "nvtx_sum"


def test_sample_mem_time_sum_canonical_operation():
    df = read_report(DATA / "tinystats_cuda_gpu_mem_time_sum.csv")
    row = df.iloc[0]
    assert (row["operation"], row["label"], row["count"]) == ("d2h", "[CUDA memcpy Device-to-Host]", 3)
    assert (row["total_ns"], row["avg_ns"], row["med_ns"]) == (51_303_588, 17_101_196, 17_015_586)
    assert (row["min_ns"], row["max_ns"], row["stddev_ns"]) == (17_002_179, 17_285_823, 160_032)


def test_sample_api_sum_rounds_half_ns_away_from_zero():
    df = read_report(DATA / "tinystats_cuda_api_sum.csv").set_index("name")
    assert len(df) == 9
    assert df.loc["cudaMalloc", "calls"] == 2
    assert df.loc["cudaMalloc", "total_ns"] == 118_628_081
    assert df.loc["cudaMalloc", "avg_ns"] == 59_314_041  # 59314040.5
    assert df.loc["cudaMalloc", "stddev_ns"] == 83_547_490  # 83547489.7
    assert df.loc["cuLaunchKernel", "calls"] == 4
    assert df.loc["cudaMemcpyAsync", "max_ns"] == 18_286_086


def test_sample_kern_sum_without_grid_block():
    df = read_report(DATA / "tinystats_cuda_gpu_kern_sum.csv")
    assert list(df.columns) == ["name", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"]
    assert df["name"].tolist() == ["cupy_multiply__float32_float_float32", "cupy_fill"]
    assert df["instances"].tolist() == [3, 1]
    assert df["total_ns"].tolist() == [241_629, 79_999]
    assert df["stddev_ns"].tolist() == [85, 0]


def test_sample_trace_copies_and_kernels():
    df = read_report(DATA / "tinystats_cuda_gpu_trace.csv")
    assert len(df) == 7
    copies = df[df["kind"] == "d2h"]
    assert len(copies) == 3
    assert copies["bytes"].tolist() == [67_109_000] * 3
    assert all(abs(b - 64 * MiB) <= 500 for b in copies["bytes"])
    assert copies["stream"].tolist() == [7, 7, 7]
    assert copies["duration_ns"].tolist() == [17_002_179, 17_015_586, 17_285_823]
    assert copies["corr_id"].tolist() == [162, 175, 188]
    assert copies["throughput_bps"].tolist() == [3_892_314_000.0, 3_892_314_000.0, 3_825_205_000.0]
    assert set(copies["src_kind"]) == {"Device"} and set(copies["dst_kind"]) == {"Pageable"}
    kernels = df[df["kind"] == "kernel"]
    assert kernels["name"].tolist() == ["cupy_fill"] + ["cupy_multiply__float32_float_float32"] * 3
    assert kernels["bytes"].tolist() == [0, 0, 0, 0]
    assert kernels["throughput_bps"].isna().all()
    assert kernels["grid_x"].tolist() == [131_072] * 4 and kernels["block_x"].tolist() == [128] * 4
    assert copies["grid_x"].isna().all()
    assert (df["end_ns"] == df["start_ns"] + df["duration_ns"]).all()
    assert df["start_ns"].iloc[0] == 1_073_220_722
    assert set(df["device"]) == {0} and set(df["device_name"]) == {"NVIDIA H200"} and set(df["context"]) == {1}
    assert df["green_context"].isna().all()
    assert df["start_ns"].dtype == "int64" and df["bytes"].dtype == "int64"


def test_sample_directory_read_exports_default_reports():
    found = find_exports(DATA)
    assert set(found) == set(nsys.REPORTS_NEEDED_DEFAULT)
    assert found["cuda_gpu_trace"].name == "tinystats_cuda_gpu_trace.csv"
    frames = read_exports(DATA)
    assert list(frames) == list(nsys.REPORTS_NEEDED_DEFAULT)
    assert frames["cuda_gpu_trace"]["bytes"].sum() == 3 * 67_109_000


def test_report_inferred_from_header_when_the_name_says_nothing(tmp_path):
    path = shutil.copy(DATA / "tinystats_cuda_gpu_kern_sum.csv", tmp_path / "kernels.csv")
    df = read_report(path)
    assert df.attrs["report"] == "cuda_gpu_kern_sum"
    assert df["total_ns"].sum() == 241_629 + 79_999


# --- 2022.4 report names and header shapes ----------------------------------------------------------------


@pytest.fixture
def old_dir(tmp_path: Path) -> Path:
    """A directory of exports named and shaped like nsys 2022.4 writes them."""
    write(
        tmp_path,
        "run_nvtxsum.csv",
        sum_header("Instances", "Style,Range"),
        "90.0,44178299,1,44178299.0,44178299.0,44178299,44178299,0.0,PushPop,cuBLAS:cublasCreate_v2",
        "10.0,4910172,11,446379.3,6634.0,6058,4838977,1456860.6,PushPop,step",
    )
    write(
        tmp_path,
        "run_nvtxppsum.csv",
        sum_header("Instances", "Range"),
        "100.0,4910172,11,446379.3,6634.0,6058,4838977,1456860.6,step",
    )
    write(
        tmp_path,
        "run_nvtxpptrace.csv",
        PUSHPOP_TRACE_HEADER,
        "100,900,800,300,500,step,41,42,0,1,1,,:1,step",
        "200,500,300,0,300,cuBLAS:gemm,41,42,1,0,2,1,:1:2,--cuBLAS:gemm",
    )
    write(
        tmp_path,
        "run_gpumemtimesum.csv",
        sum_header("Count", "Operation"),
        "72.4,43904,8,5488.0,5488.0,5184,5856,208.1,[CUDA memcpy HtoD]",
        "27.6,16767,4,4191.8,4128.0,3904,4607,335.2,[CUDA memcpy DtoH]",
    )
    write(
        tmp_path,
        "run_cudaapisum.csv",
        sum_header("Num Calls", "Name"),
        "86.4,278369923,8,34796240.4,1259.0,613,278362164,98415495.0,cudaEventCreate",
    )
    write(
        tmp_path,
        "run_gpukernsum.csv",
        sum_header("Instances", "GridXYZ,BlockXYZ,Name"),
        "65.3,114495,11,10408.6,10336.0,10336,11008,202.4,   4    4    1, 128    1    1,ampere_sgemm_32x32",
        '34.7,41439,1,41439.0,41439.0,41439,41439,0.0, 896    1    1,  32   32    1,"mm(float *, int)"',
    )
    write(
        tmp_path,
        "run_gputrace.csv",
        OLD_TRACE_HEADER,
        "1000,5000,101,,,,,,,,,,8.389,1677.800,Pageable,Device,NVIDIA A100-SXM4-80GB (0),1,7,[CUDA memcpy HtoD]",
        '7000,41439,102,896,1,1,32,32,1,64,0.001,0.000,,,,,NVIDIA A100-SXM4-80GB (0),1,7,"mm(float *, int)"',
        "50000,2000,103,,,,,,,,,,8.389,4194.500,Device,Pageable,NVIDIA A100-SXM4-80GB (0),1,7,[CUDA memcpy DtoH]",
        "60000,1000,104,,,,,,,,,,0.004,4.000,Device,,NVIDIA A100-SXM4-80GB (1),2,13,[CUDA memset]",
    )
    return tmp_path


def test_old_names_are_found_under_canonical_keys(old_dir):
    found = find_exports(old_dir)
    assert set(found) == set(nsys.REPORTS)
    assert found["cuda_gpu_trace"].name == "run_gputrace.csv"
    assert found["nvtx_pushpop_sum"].name == "run_nvtxppsum.csv"


def test_old_exports_read_like_new_ones(old_dir):
    frames = read_exports(old_dir, nsys.REPORTS)
    nvtx = frames["nvtx_sum"]
    assert nvtx["domain"].tolist() == ["cuBLAS", None]
    assert nvtx["range"].tolist() == ["cublasCreate_v2", "step"]
    assert nvtx["avg_ns"].tolist() == [44_178_299, 446_379]
    pushpop = frames["nvtx_pushpop_sum"]
    assert "style" not in pushpop.columns and pushpop["instances"].tolist() == [11]
    assert frames["cuda_gpu_mem_time_sum"]["operation"].tolist() == ["h2d", "d2h"]
    assert frames["cuda_api_sum"]["avg_ns"].tolist() == [34_796_240]
    assert frames["cuda_api_sum"]["calls"].tolist() == [8]


def test_old_kern_sum_grid_and_block_columns(old_dir):
    df = read_report(old_dir / "run_gpukernsum.csv")
    assert df[["grid_x", "grid_y", "grid_z"]].values.tolist() == [[4, 4, 1], [896, 1, 1]]
    assert df[["block_x", "block_y", "block_z"]].values.tolist() == [[128, 1, 1], [32, 32, 1]]
    assert df["name"].tolist() == ["ampere_sgemm_32x32", "mm(float *, int)"]
    assert df["grid_x"].dtype == "int64"


def test_old_trace_header_and_labels(old_dir):
    df = read_report(old_dir / "run_gputrace.csv")
    assert df["kind"].tolist() == ["h2d", "kernel", "d2h", "memset"]
    assert df["bytes"].tolist() == [8_389_000, 0, 8_389_000, 4_000]
    assert df["throughput_bps"].iloc[0] == 1_677_800_000.0
    assert df["stream"].tolist() == [7, 7, 7, 13]
    assert df["device"].tolist() == [0, 0, 0, 1] and df["context"].tolist() == [1, 1, 1, 2]
    assert df["src_kind"].tolist() == ["Pageable", None, "Device", "Device"]
    assert df["dst_kind"].tolist() == ["Device", None, "Pageable", None]
    assert df["grid_x"].iloc[1] == 896 and pd.isna(df["grid_x"].iloc[0])
    assert "green_context" not in df.columns


def test_old_pushpop_trace(old_dir):
    df = read_report(old_dir / "run_nvtxpptrace.csv")
    assert df["domain"].tolist() == [None, "cuBLAS"]
    assert df["range"].tolist() == ["step", "gemm"]
    assert df["start_ns"].tolist() == [100, 200] and df["end_ns"].tolist() == [900, 500]
    assert df["duration_ns"].tolist() == [800, 300] and df["dur_non_child_ns"].tolist() == [500, 300]
    assert df["lvl"].tolist() == [0, 1] and df["num_child"].tolist() == [1, 0]
    assert pd.isna(df["parent_id"].iloc[0]) and df["parent_id"].iloc[1] == 1
    assert df["pid"].tolist() == [41, 41] and df["tid"].tolist() == [42, 42]
    assert df["range_stack"].tolist() == [":1", ":1:2"]


def test_explicit_report_accepts_the_old_name(old_dir):
    df = read_report(old_dir / "run_gputrace.csv", report="gputrace")
    assert df.attrs["report"] == "cuda_gpu_trace"
    with pytest.raises(ValueError, match="unknown nsys report 'gpu_stuff'"):
        read_report(old_dir / "run_gputrace.csv", report="gpu_stuff")


# --- labels, domains, preambles, units ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "operation"),
    [
        ("[CUDA memcpy HtoD]", "h2d"),
        ("[CUDA memcpy Host-to-Device]", "h2d"),
        ("[CUDA memcpy DtoH]", "d2h"),
        ("[CUDA memcpy Device-to-Host]", "d2h"),
        ("[CUDA memcpy DtoD]", "d2d"),
        ("[CUDA memcpy Device-to-Device]", "d2d"),
        ("[CUDA memset]", "memset"),
        ("[CUDA memcpy PtoP]", "[CUDA memcpy PtoP]"),
    ],
)
def test_memop_labels_both_generations(tmp_path, label, operation):
    path = write(
        tmp_path,
        "x_cuda_gpu_mem_time_sum.csv",
        sum_header("Count", "Operation"),
        f"100.0,3000,3,1000.0,1000.0,900,1100,100.0,{label}",
    )
    df = read_report(path)
    assert (df["operation"].iloc[0], df["label"].iloc[0], df["total_ns"].iloc[0]) == (operation, label, 3000)


def test_trace_kind_for_host_to_device_copy(tmp_path):
    path = write(
        tmp_path,
        "x_cuda_gpu_trace.csv",
        NEW_TRACE_HEADER,
        "10,20,1,,,,,,,,,,1.000,50000.000,Pinned,Device,GPU (3),1,,9,[CUDA memcpy Host-to-Device]",
    )
    df = read_report(path)
    assert (df["kind"].iloc[0], df["bytes"].iloc[0], df["device"].iloc[0]) == ("h2d", 1_000_000, 3)
    assert df["throughput_bps"].iloc[0] == 5e10 and df["end_ns"].iloc[0] == 30


def test_domain_prefixed_ranges(tmp_path):
    path = write(
        tmp_path,
        "x_nvtx_sum.csv",
        sum_header("Instances", "Style,Range"),
        "40.0,400,1,400.0,400.0,400,400,0.0,PushPop,:copy_in",
        "30.0,300,1,300.0,300.0,300,300,0.0,StartEnd,lab:kernel",
        "20.0,200,1,200.0,200.0,200,200,0.0,PushPop,bare",
        "10.0,100,1,100.0,100.0,100,100,0.0,PushPop,lab:phase:1",
    )
    df = read_report(path)
    assert df["domain"].tolist() == [None, "lab", None, "lab"]
    assert df["range"].tolist() == ["copy_in", "kernel", "bare", "phase:1"]
    assert df["style"].tolist() == ["PushPop", "StartEnd", "PushPop", "PushPop"]


def test_new_pushpop_trace_with_default_domain(tmp_path):
    path = write(
        tmp_path,
        "x_nvtx_pushpop_trace.csv",
        PUSHPOP_TRACE_HEADER,
        "1137544193,1485711471,348167278,0,348167278,:NvtxAnnotation.G1,53,53,0,0,1,,:1,:NvtxAnnotation.G1",
        "1496163242,1498711076,2547834,0,2547834,:copy_in,53,53,0,0,2,,:2,:copy_in",
    )
    df = read_report(path)
    assert df["domain"].isna().all()
    assert df["range"].tolist() == ["NvtxAnnotation.G1", "copy_in"]
    assert df["duration_ns"].tolist() == [348_167_278, 2_547_834]
    assert df["parent_id"].isna().all() and df["range_id"].tolist() == [1, 2]


def test_preamble_lines_are_skipped(tmp_path):
    body = (DATA / "tinystats_cuda_gpu_trace.csv").read_text()
    path = tmp_path / "tiny_cuda_gpu_trace.csv"
    path.write_text(
        "Generating SQLite file tiny.sqlite from tiny.nsys-rep\n"
        "Processing [tiny.sqlite] with [/opt/nsys/2025.3.1/reports/cuda_gpu_trace.py]... \n"
        "\n ** CUDA GPU Trace (cuda_gpu_trace):\n\n" + body
    )
    df = read_report(path)
    expected = read_report(DATA / "tinystats_cuda_gpu_trace.csv")
    df.attrs.clear()
    expected.attrs.clear()
    pd.testing.assert_frame_equal(df, expected)
    assert len(df) == 7


def _in_unit(value: str, factor: int) -> str:
    """A time cell rewritten in a coarser unit, exactly."""
    return format(Decimal(value) / factor, "f")


@pytest.mark.parametrize(("unit", "factor"), [("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)])
def test_time_units_convert_to_the_same_ns(tmp_path, unit, factor):
    ns = read_report(DATA / "tinystats_cuda_gpu_kern_sum.csv")
    lines = (DATA / "tinystats_cuda_gpu_kern_sum.csv").read_text().splitlines()
    rows = []
    for line in lines[1:]:
        cells = line.split(",")
        cells[1:2] = [_in_unit(cells[1], factor)]
        cells[3:8] = [_in_unit(c, factor) for c in cells[3:8]]
        rows.append(",".join(cells))
    header = lines[0].replace("(ns)", f"({unit})")
    df = read_report(write(tmp_path, f"k_cuda_gpu_kern_sum_{unit}.csv", header, *rows), "cuda_gpu_kern_sum")
    df.attrs.clear()
    ns.attrs.clear()
    pd.testing.assert_frame_equal(df, ns, check_exact=True)
    assert df["total_ns"].iloc[0] == 241_629


@pytest.mark.parametrize(
    ("unit", "start"), [("ns", "1358290060"), ("us", "1358290.060"), ("ms", "1358.29006"), ("s", "1.35829006")]
)
def test_trace_start_in_each_unit(tmp_path, unit, start):
    header = NEW_TRACE_HEADER.replace("(ns)", f"({unit})")
    duration = _in_unit("17002179", {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[unit])
    path = write(
        tmp_path,
        "x_cuda_gpu_trace.csv",
        header,
        f"{start},{duration},162,,,,,,,,,,67.109,3892.314,Device,Pageable,NVIDIA H200 (0),1,,7,"
        "[CUDA memcpy Device-to-Host]",
    )
    df = read_report(path)
    assert (df["start_ns"].iloc[0], df["duration_ns"].iloc[0]) == (1_358_290_060, 17_002_179)


def test_mbps_and_mb_per_s_give_the_same_throughput(tmp_path):
    row = "5,10,1,,,,,,,,,,2.000,3892.314,Device,Pinned,GPU (0),1,{green}7,[CUDA memcpy DtoH]"
    old = read_report(write(tmp_path, "a_gputrace.csv", OLD_TRACE_HEADER, row.format(green="")))
    new = read_report(write(tmp_path, "b_cuda_gpu_trace.csv", NEW_TRACE_HEADER, row.format(green=",")))
    assert old["throughput_bps"].iloc[0] == new["throughput_bps"].iloc[0] == 3_892_314_000.0
    assert old["bytes"].iloc[0] == new["bytes"].iloc[0] == 2_000_000


def test_kern_sum_with_grid_block_in_new_name(tmp_path):
    path = write(
        tmp_path,
        "x_cuda_gpu_kern_sum.csv",
        sum_header("Instances", "GridXYZ,BlockXYZ,Name"),
        "100.0,241629,3,80543.0,80511.0,80479,80639,84.7,131072    1    1, 128    1    1,cupy_multiply",
    )
    df = read_report(path)
    assert df.iloc[0][["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]].tolist() == [
        131072,
        1,
        1,
        128,
        1,
        1,
    ]
    assert df["stddev_ns"].iloc[0] == 85


@pytest.mark.parametrize(
    ("name", "header", "columns"),
    [
        (
            "e_cuda_gpu_trace.csv",
            NEW_TRACE_HEADER,
            [
                "start_ns",
                "duration_ns",
                "end_ns",
                "corr_id",
                "kind",
                "name",
                "bytes",
                "throughput_bps",
                "src_kind",
                "dst_kind",
                "device",
                "device_name",
                "context",
                "green_context",
                "stream",
                "grid_x",
                "grid_y",
                "grid_z",
                "block_x",
                "block_y",
                "block_z",
            ],
        ),
        (
            "e_nvtx_sum.csv",
            sum_header("Instances", "Style,Range"),
            ["domain", "range", "style", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"],
        ),
        (
            "e_gpukernsum.csv",
            sum_header("Instances", "GridXYZ,BlockXYZ,Name"),
            [
                "name",
                "instances",
                "total_ns",
                "avg_ns",
                "med_ns",
                "min_ns",
                "max_ns",
                "stddev_ns",
                "grid_x",
                "grid_y",
                "grid_z",
                "block_x",
                "block_y",
                "block_z",
            ],
        ),
        (
            "e_cuda_gpu_mem_time_sum.csv",
            sum_header("Count", "Operation"),
            ["operation", "label", "count", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"],
        ),
    ],
)
def test_empty_report_has_the_normalised_columns(tmp_path, name, header, columns):
    df = read_report(write(tmp_path, name, "Processing [e.sqlite] with [report.py]... ", header))
    assert len(df) == 0
    assert list(df.columns) == columns
    assert df["total_ns" if "total_ns" in columns else "start_ns"].dtype == "int64"


# --- what is rejected, and how it is reported ---------------------------------------------------------------


def test_truncated_row_names_file_line_and_field_count(tmp_path):
    lines = (DATA / "tinystats_cuda_gpu_trace.csv").read_text().splitlines()
    lines[3] = lines[3][:40]
    path = write(tmp_path, "t_cuda_gpu_trace.csv", *lines)
    with pytest.raises(NsysFormatError) as info:
        read_report(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line 4: ")
    assert "row has 14 fields, expected 21 (truncated or corrupt row?)" in message
    assert info.value.line == 4 and info.value.path == path


def test_truncated_quoted_name_is_malformed_csv(tmp_path):
    path = write(
        tmp_path,
        "q_cuda_gpu_kern_sum.csv",
        sum_header("Instances", "Name"),
        '100.0,5,1,5.0,5.0,5,5,0.0,"mm(float *, in',
    )
    with pytest.raises(NsysFormatError, match=r"q_cuda_gpu_kern_sum\.csv: line 2: malformed CSV"):
        read_report(path)


def test_unknown_header_names_the_line_and_the_expected_shape(tmp_path):
    path = write(tmp_path, "u_cuda_api_sum.csv", "Generating SQLite file u.sqlite from u.nsys-rep", "Name,Calls,Total")
    with pytest.raises(NsysFormatError) as info:
        read_report(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line 2: unrecognised header 'Name,Calls,Total'")
    assert "expected a cuda_api_sum header like 'Time,Total Time,Num Calls," in message


def test_header_of_another_report_is_rejected(tmp_path):
    path = shutil.copy(DATA / "tinystats_nvtx_sum.csv", tmp_path / "x_cuda_gpu_trace.csv")
    with pytest.raises(NsysFormatError, match=r"line 1: unrecognised header 'Time \(%\),.*cuda_gpu_trace header"):
        read_report(path)


def test_file_with_only_preamble_has_no_header(tmp_path):
    path = write(
        tmp_path,
        "p_nvtx_sum.csv",
        "Generating SQLite file p.sqlite from p.nsys-rep",
        "SKIPPED: p.sqlite does not contain NV Tools Extension (NVTX) data.",
    )
    with pytest.raises(NsysFormatError, match=r"p_nvtx_sum\.csv: line 2: no CSV header found"):
        read_report(path)


def test_non_numeric_cell(tmp_path):
    lines = (DATA / "tinystats_cuda_gpu_trace.csv").read_text().splitlines()
    lines[6] = lines[6].replace(",80479,", ",abc,", 1)
    path = write(tmp_path, "n_cuda_gpu_trace.csv", *lines)
    with pytest.raises(NsysFormatError) as info:
        read_report(path)
    assert str(info.value) == f"{path}: line 7: column 'Duration (ns)' is 'abc', expected a number"


@pytest.mark.parametrize(("cell", "expected"), [("1.5", "an integer"), ("nan", "a number"), ("", "a number")])
def test_bad_count_cells(tmp_path, cell, expected):
    path = write(
        tmp_path, "c_cuda_api_sum.csv", sum_header("Num Calls", "Name"), f"100.0,5,{cell},5.0,5.0,5,5,0.0,cuInit"
    )
    with pytest.raises(NsysFormatError, match=rf"line 2: column 'Num Calls' is '{cell}', expected {expected}$"):
        read_report(path)


def test_bad_device_and_missing_bytes(tmp_path):
    bad_device = write(
        tmp_path, "d_cuda_gpu_trace.csv", NEW_TRACE_HEADER, "1,2,3,1,1,1,1,1,1,8,0.000,0.000,,,,,H200,1,,7,k"
    )
    with pytest.raises(NsysFormatError, match=r"line 2: column 'Device' is 'H200', expected '<GPU name> \(<device"):
        read_report(bad_device)
    no_bytes = write(
        tmp_path,
        "b_cuda_gpu_trace.csv",
        NEW_TRACE_HEADER,
        "1,2,3,,,,,,,,,,,,Device,Pageable,GPU (0),1,,7,[CUDA memcpy DtoH]",
    )
    with pytest.raises(NsysFormatError, match=r"line 2: column 'Bytes \(MB\)' is '', expected a size"):
        read_report(no_bytes)


def test_bad_grid_cell(tmp_path):
    path = write(
        tmp_path,
        "g_gpukernsum.csv",
        sum_header("Instances", "GridXYZ,BlockXYZ,Name"),
        "100.0,5,1,5.0,5.0,5,5,0.0,4 4,128 1 1,k",
    )
    with pytest.raises(NsysFormatError, match=r"line 2: column 'GridXYZ' is '4 4', expected three integers"):
        read_report(path)


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (
            sum_header("Instances", "Name").replace("Total Time (ns)", "Total Time (min)"),
            "column 'Total Time (min)' has unknown time unit (min), expected one of (ns), (us), (ms), (s)",
        ),
        (
            sum_header("Instances", "Name").replace("Avg (ns)", "Avg"),
            "column 'Avg' has no time unit, expected one of (ns), (us), (ms), (s)",
        ),
        (
            NEW_TRACE_HEADER.replace("(MB/s)", "(GB/s)"),
            "column 'Throughput (GB/s)' has unknown throughput unit (GB/s), expected one of (MBps), (MB/s)",
        ),
        (
            NEW_TRACE_HEADER.replace("Bytes (MB)", "Bytes (KB)"),
            "column 'Bytes (KB)' has unknown size unit (KB), expected one of (MB)",
        ),
    ],
)
def test_unknown_units_name_file_line_and_column(tmp_path, header, problem):
    path = write(tmp_path, "units.csv", "Processing [u.sqlite] with [r.py]... ", header)
    with pytest.raises(NsysFormatError) as info:
        read_report(path)
    assert str(info.value) == f"{path}: line 2: {problem}"


def test_missing_file_and_missing_report(tmp_path):
    with pytest.raises(NsysFormatError, match=r"nope_nvtx_sum\.csv: no such file, expected an nsys stats CSV"):
        read_report(tmp_path / "nope_nvtx_sum.csv")
    for name in ("nvtx_sum", "cuda_gpu_mem_time_sum", "cuda_api_sum", "cuda_gpu_kern_sum"):
        shutil.copy(DATA / f"tinystats_{name}.csv", tmp_path)
    with pytest.raises(NsysFormatError) as info:
        read_exports(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path}: missing the cuda_gpu_trace report")
    assert "<prefix>_cuda_gpu_trace.csv" in message and "<prefix>_gputrace.csv" in message
    frames = read_exports(tmp_path, reports=("nvtx_sum", "cudaapisum"))
    assert list(frames) == ["nvtx_sum", "cuda_api_sum"]


def test_two_prefixes_need_a_choice(tmp_path):
    shutil.copy(DATA / "tinystats_nvtx_sum.csv", tmp_path / "a_nvtx_sum.csv")
    shutil.copy(DATA / "tinystats_nvtx_sum.csv", tmp_path / "b_nvtxsum.csv")
    with pytest.raises(NsysFormatError, match=r"several prefixes \('a', 'b'\); expected one, or pass prefix="):
        find_exports(tmp_path)
    assert find_exports(tmp_path, prefix="b") == {"nvtx_sum": tmp_path / "b_nvtxsum.csv"}
    assert find_exports(tmp_path, prefix="c") == {}
    assert read_exports(tmp_path, ("nvtx_sum",), prefix="a")["nvtx_sum"]["total_ns"].iloc[0] == 302_507_129


def test_both_generations_under_one_prefix_are_ambiguous(tmp_path):
    shutil.copy(DATA / "tinystats_nvtx_sum.csv", tmp_path / "run_nvtx_sum.csv")
    shutil.copy(DATA / "tinystats_nvtx_sum.csv", tmp_path / "run_nvtxsum.csv")
    (tmp_path / "notes.txt").write_text("not an export")
    with pytest.raises(NsysFormatError, match=r"holds 2 nvtx_sum exports \(run_nvtx_sum\.csv, run_nvtxsum\.csv\)"):
        find_exports(tmp_path)


def test_not_a_directory(tmp_path):
    with pytest.raises(NsysFormatError, match="not a directory"):
        find_exports(tmp_path / "absent")


def test_report_from_filename_and_split_range():
    assert nsys.report_from_filename("run_nvtx_pushpop_sum.csv") == ("nvtx_pushpop_sum", "run")
    assert nsys.report_from_filename("a_b_gpumemtimesum.csv") == ("cuda_gpu_mem_time_sum", "a_b")
    assert nsys.report_from_filename("cuda_gpu_trace.csv") == ("cuda_gpu_trace", "")
    assert nsys.report_from_filename("run_cuda_gpu_kern_gb_sum.csv") is None
    assert nsys.report_from_filename("run_nvtx_sum.txt") is None
    assert nsys.split_range(":x") == (None, "x") and nsys.split_range("d:x:y") == ("d", "x:y")


def test_format_error_is_a_one_line_usage_error(tmp_path, capsys):
    def main(argv):
        read_report(tmp_path / "gone_cuda_gpu_trace.csv")
        return 0

    assert issubclass(NsysFormatError, UsageError)
    assert run_cli(main, []) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gone_cuda_gpu_trace.csv: no such file" in err


# -- cuda_gpu_trace read a column at a time (nsys._fast_trace) against the row reader -----------------------------

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_TRACES = sorted(p for p in ROOT.glob("*/profiles/*/*_cuda_gpu_trace.csv"))


def _by_rows(path: Path, monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame | NsysFormatError:
    """The row reader's frame (or its error) for a trace: the column reader turned off."""
    with monkeypatch.context() as patch:
        patch.setattr(nsys, "_fast_trace", lambda lines, header: None)
        try:
            return read_report(path, "cuda_gpu_trace")
        except NsysFormatError as exc:
            return exc


def test_every_shipped_trace_reads_column_by_column_to_the_row_readers_frame(monkeypatch):
    assert len(SHIPPED_TRACES) >= 4  # one a lesson
    for path in [*SHIPPED_TRACES, DATA / "tinystats_cuda_gpu_trace.csv"]:
        lines = nsys._read_lines(path)
        fast = nsys._fast_trace(lines, nsys._find_header(path, lines, ("cuda_gpu_trace",)))
        assert fast is not None, f"{path.name}: an nsys export should take the column reader"
        pd.testing.assert_frame_equal(fast, _by_rows(path, monkeypatch), check_exact=True)


# one cell of the sample's second memcpy row (line 4) changed, as a hand or a tool might: each reads the same or
# fails the same either way (most of these the column reader leaves to the row reader)
TRACE_EDITS = [
    ("Start (ns)", "1358290060.0"),
    ("Start (ns)", " 1358290060"),
    ("Start (ns)", "1.3e9"),
    ("Start (ns)", "-5"),
    ("Start (ns)", "x"),
    ("Duration (ns)", ""),
    ("CorrId", "162.5"),
    ("GrdX", " "),
    ("GrdX", "7"),
    ("Bytes (MB)", ""),
    ("Bytes (MB)", "67.1089999"),
    ("Bytes (MB)", "67.1"),
    ("Bytes (MB)", "67"),
    ("Bytes (MB)", "-1"),
    ("Bytes (MB)", "nan"),
    ("Bytes (MB)", ".5"),
    ("Throughput (MB/s)", ""),
    ("Throughput (MB/s)", "3892.3141234567"),
    ("Throughput (MB/s)", "inf"),
    ("SrcMemKd", ""),
    ("Device", "NVIDIA H200"),
    ("Device", "NVIDIA H200 (x)"),
    ("Strm", ""),
    ("Name", "[CUDA memcpy Host-to-Device]"),
    ("Name", "a kernel, quoted"),
]


@pytest.mark.parametrize(("column", "value"), TRACE_EDITS)
def test_an_edited_trace_reads_the_same_by_columns_and_by_rows(tmp_path, monkeypatch, column, value):
    import csv as csv_module
    import io

    lines = (DATA / "tinystats_cuda_gpu_trace.csv").read_text().splitlines()
    rows = list(csv_module.reader(lines))
    rows[3][rows[0].index(column)] = value
    text = io.StringIO()
    csv_module.writer(text, lineterminator="\n").writerows(rows)
    path = tmp_path / "edited_cuda_gpu_trace.csv"
    path.write_text(text.getvalue())
    by_rows = _by_rows(path, monkeypatch)
    try:
        both = read_report(path, "cuda_gpu_trace")
    except NsysFormatError as exc:
        assert isinstance(by_rows, NsysFormatError), f"only the column reader refused it: {exc}"
        assert str(exc) == str(by_rows)
        return
    assert not isinstance(by_rows, NsysFormatError), f"only the row reader refused it: {by_rows}"
    pd.testing.assert_frame_equal(both, by_rows, check_exact=True)
