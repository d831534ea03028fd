"""Tables, ratios and the lesson's predictions, computed only from a results record (live or replayed)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from day56 import model
from day56.config import PassKey
from labcore.answers import ReferenceWithheld
from labcore.errors import UsageError
from labcore.kit.verdicts import Verdict, checks_text, held
from labcore.record import Record
from labcore.sizes import format_size

HOST = "host"  # record.extra[HOST][str(n)]: the host-side times at n chunks (day56.live)
PITFALLS = "pitfalls"
TRACE_REPEAT = "trace_repeat"  # record.extra: {pass key: the timed repeat its trace is}; absent: an extra traced run
# The bars of the lesson's claims, set from the H200 run of 2026-12-03 (day56/profiles/h200) with margin:
HOST_RATIO_BAR = 3.0  # 1: a graph launch costs the host this many times less than the loop (measured 4.5-4.7x)
GPU_BAND = 0.05  # 2: the graph's GPU time within 5% of the streams' (measured 0.961-0.992, repeats of 5)
FLOOR_BAND = (1.0, 1.15)  # 3: the pipeline, either way, at 1.00-1.15x the duplex floor (measured 1.04-1.10x)
BREAK_EVEN_BAR = 20  # prediction 5: the one-off cost pays back within this many launches at every chunk count


def chunk_counts(record: Record) -> list[int]:
    """The chunk counts measured both ways in this record, fewest first."""
    both = {p.params["n_chunks"] for p in record.passes if p.name == "streams"}
    return sorted(both & {p.params["n_chunks"] for p in record.passes if p.name == "graph"})


def main_chunks(record: Record) -> int:
    """The chunk count of the duplex floor and the timelines: the record's own."""
    duplex = [p.params["n_chunks"] for p in record.passes if p.name == "duplex"]
    have = chunk_counts(record)
    if not have:
        raise UsageError(f"the record from {record.source} has no pass measured both stream by stream and as a graph")
    return duplex[0] if duplex else have[0]


def gpu_ms(record: Record, name: str, n: int) -> float:
    """A pass's median GPU time (events, or a profile's range start to last GPU end)."""
    return record.pass_times(PassKey(name, n)).median_ms


def floor_ms(record: Record) -> float | None:
    """The duplex probe's median: the least time the link moves 1 GiB in while 1 GiB comes out."""
    duplex = [p for p in record.passes if p.name == "duplex"]
    return duplex[0].median_ms if duplex else None


def host(record: Record, n: int) -> dict[str, Any]:
    """The host-side times at n chunks ({} when the record has none: a profile replayed without its results.json
    and without host ranges)."""
    return dict(record.extra.get(HOST, {}).get(str(n), {}))


def _median(values: Any) -> float | None:
    return statistics.median(values) if values else None


def enqueue_ms(record: Record, n: int) -> float | None:
    """The median host time of the pipeline's enqueue loop, stream by stream (the host clock, no synchronize)."""
    return _median(host(record, n).get("enqueue_ms"))


def launch_ms(record: Record, n: int) -> float | None:
    """The median host time of one graph launch (the host clock around cudaGraphLaunch)."""
    return _median(host(record, n).get("launch_ms"))


def one_off_ms(record: Record, n: int) -> float | None:
    """What the graph costs once: its capture and its instantiate (host clock)."""
    facts = host(record, n)
    if facts.get("capture_ms") is None or facts.get("instantiate_ms") is None:
        return None
    return facts["capture_ms"] + facts["instantiate_ms"]


def break_even(record: Record, n: int, formula: Any = None) -> float | None:
    """Launches until the one-off cost is paid back (`formula`: a break_even_launches of the same arguments, the
    model's by default; None where the record lacks a number or the model's is withheld here)."""
    values = (one_off_ms(record, n), enqueue_ms(record, n), launch_ms(record, n))
    if None in values:
        return None
    try:
        return (formula or model.break_even_launches)(*values)
    except ReferenceWithheld:
        return None


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else ("inf" if math.isinf(value) else format(value, spec))


def gpu_table(record: Record) -> str:
    """GPU time stream by stream and as a graph at every chunk count, and each over the duplex floor."""
    floor = floor_ms(record)
    total = record.config.get("total_bytes", 1 << 30)
    head = f"{'Chunks':>7}{'Window':>9}{'Streams ms':>12}{'Graph ms':>10}{'Graph/streams':>15}{'Streams/floor':>15}"
    head += f"{'Graph/floor':>13}"
    lines = [
        f"GPU time (CUDA events; median of the repeats), {format_size(total)} each way; duplex floor "
        + (f"{floor:.3f} ms" if floor else "not measured"),
        head,
        "-" * len(head),
    ]
    for n in chunk_counts(record):
        streams, graphed = gpu_ms(record, "streams", n), gpu_ms(record, "graph", n)
        lines.append(
            f"{n:>7}{format_size(total // n):>9}{streams:>12.3f}{graphed:>10.3f}{graphed / streams:>15.3f}"
            f"{_fmt(streams / floor if floor else None):>15}{_fmt(graphed / floor if floor else None):>13}"
        )
    return "\n".join(lines)


def host_table(record: Record) -> str:
    """What the host pays per pass: the enqueue loop against one launch, per chunk, and the graph's one-off cost."""
    head = (
        f"{'Chunks':>7}{'Enqueue ms':>12}{'Launch ms':>11}{'Enqueue us/chunk':>18}{'Launch us/chunk':>17}"
        f"{'Capture ms':>12}{'Instantiate ms':>16}{'Break-even':>12}"
    )
    lines = ["Host time (time.perf_counter; medians of the repeats)", head, "-" * len(head)]
    for n in chunk_counts(record):
        enq, lau, facts = enqueue_ms(record, n), launch_ms(record, n), host(record, n)
        lines.append(
            f"{n:>7}{_fmt(enq):>12}{_fmt(lau):>11}"
            f"{_fmt(None if enq is None else model.per_chunk_us(enq, n), '.2f'):>18}"
            f"{_fmt(None if lau is None else model.per_chunk_us(lau, n), '.2f'):>17}"
            f"{_fmt(facts.get('capture_ms')):>12}{_fmt(facts.get('instantiate_ms')):>16}"
            f"{_fmt(break_even(record, n), '.0f'):>12}"
        )
    lines.append(
        "break-even: launches after which the saving per launch (enqueue - launch) has paid capture + instantiate"
    )
    return "\n".join(lines)


def update_table(record: Record) -> str:
    """A new input without a new graph: the capture again, cuGraphExecUpdate, against instantiating again."""
    head = f"{'Chunks':>7}{'Recapture ms':>14}{'Update ms':>11}{'Instantiate ms':>16}{'Update/instantiate':>20}"
    lines = ["New input, new pointers: update the executable graph or instantiate again", head, "-" * len(head)]
    for n in chunk_counts(record):
        facts = host(record, n)
        update, again = facts.get("update_ms"), facts.get("reinstantiate_ms")
        ratio = update / again if update is not None and again else None
        lines.append(f"{n:>7}{_fmt(facts.get('recapture_ms')):>14}{_fmt(update):>11}{_fmt(again):>16}{_fmt(ratio):>20}")
    return "\n".join(lines)


def pitfalls_text(record: Record) -> str | None:
    """What each capture pitfall did on this run."""
    found = record.extra.get(PITFALLS)
    if not found:
        return None
    lines = [f"Pitfalls of capture at {main_chunks(record)} chunks (as this GPU answered)"]
    for name in ("sync-in-capture", "wait-at-the-end"):
        item = found.get(name)
        if item is None:
            continue
        if item["refused"]:
            lines.append(f"  {name}: the call inside the capture raised {item['error']}; ending it: {item['ended']}")
        else:
            lines.append(f"  {name}: the capture was NOT refused on this run (no error)")
    read = found.get("host-read-in-capture")
    if read:
        lines.append(
            f"  host-read-in-capture: output[0] read inside the capture was {read['inside']}; after the launch "
            f"{read['after_launch']} (naive's: {read['expected']})"
        )
    stale = found.get("stale-pointers")
    if stale:
        lines.append(
            f"  stale-pointers: the graph updated for the new input, launched again: {stale['unwritten_chunks']} of "
            f"{stale['n_chunks']} chunks of the first input's output left unwritten (the graph writes where it points)"
        )
    return "\n".join(lines)


def _host_claim(record: Record, counts: list[int]) -> Verdict | None:
    per_chunk = {
        n: (enqueue_ms(record, n), launch_ms(record, n))
        for n in counts
        if None not in (enqueue_ms(record, n), launch_ms(record, n))
    }
    if not per_chunk:
        return None
    ratios = {n: enq / lau for n, (enq, lau) in per_chunk.items()}
    worst = min(ratios, key=ratios.__getitem__)
    return Verdict(
        1,
        f"per pass, one graph launch costs the host at least {HOST_RATIO_BAR:.0f}x less than the enqueue loop",
        held(ratios[worst] >= HOST_RATIO_BAR),
        ", ".join(f"{n} chunks: {ratios[n]:.1f}x" for n in per_chunk) + f"; least at {worst} chunks",
    )


def _gpu_claim(record: Record, counts: list[int]) -> Verdict:
    gaps = {n: gpu_ms(record, "graph", n) / gpu_ms(record, "streams", n) for n in counts}
    far = max(gaps, key=lambda n: abs(gaps[n] - 1))
    return Verdict(
        2,
        f"the GPU time barely moves: the graph within {GPU_BAND:.0%} of the streams at every chunk count",
        held(abs(gaps[far] - 1) <= GPU_BAND),
        ", ".join(f"{n} chunks: graph/streams {gaps[n]:.3f}" for n in counts),
    )


def _floor_claim(record: Record) -> Verdict | None:
    floor, main = floor_ms(record), main_chunks(record)
    if not floor:
        return None
    both = {name: gpu_ms(record, name, main) / floor for name in ("streams", "graph")}
    low, high = FLOOR_BAND
    return Verdict(
        3,
        f"at {main} chunks both sit near the duplex floor ({low:.2f}-{high:.2f}x): the link binds",
        held(all(low <= r <= high for r in both.values())),
        f"streams {both['streams']:.3f}x, graph {both['graph']:.3f}x the floor ({floor:.3f} ms)",
    )


def _update_claim(record: Record, counts: list[int]) -> Verdict | None:
    updates = {n: host(record, n) for n in counts}
    updates = {n: f for n, f in updates.items() if f.get("update_ms") is not None and f.get("reinstantiate_ms")}
    if not updates:
        return None
    return Verdict(
        4,
        "updating the executable graph for new pointers costs less than instantiating it again",
        held(all(f["update_ms"] < f["reinstantiate_ms"] for f in updates.values())),
        ", ".join(
            f"{n} chunks: update {f['update_ms']:.3f} ms, instantiate {f['reinstantiate_ms']:.3f} ms"
            for n, f in updates.items()
        ),
    )


def _break_even_claim(record: Record, counts: list[int]) -> Verdict | None:
    evens = {n: break_even(record, n) for n in counts}
    evens = {n: v for n, v in evens.items() if v is not None}
    if not evens:
        return None
    return Verdict(
        5,
        f"the graph's one-off cost pays back within {BREAK_EVEN_BAR} launches at every chunk count",
        held(all(v <= BREAK_EVEN_BAR for v in evens.values())),
        ", ".join(f"{n} chunks: {_fmt(v, '.0f')} launches" for n, v in evens.items()),
    )


def predictions(record: Record) -> list[Verdict]:
    """The lesson's five claims, each judged on this record's numbers (one the record cannot judge is left out)."""
    counts = chunk_counts(record)
    judged = [
        _host_claim(record, counts),
        _gpu_claim(record, counts),
        _floor_claim(record),
        _update_claim(record, counts),
        _break_even_claim(record, counts),
    ]
    return [v for v in judged if v is not None]


def render(record: Record) -> str:
    """Everything `python -m day56` prints after its mode line."""
    parts = [checks_text(record), gpu_table(record), host_table(record), update_table(record)]
    if (text := pitfalls_text(record)) is not None:
        parts.append(text)
    parts += [
        "Predictions (the lesson's five, on this run's numbers)",
        "\n".join(v.line() for v in predictions(record)),
    ]
    return "\n\n".join(parts)
