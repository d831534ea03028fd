"""The untouched student release, Run All as JupyterLab does it (stopping at the first error of a cell not tagged
`raises-exception`), on this machine: live where there is a GPU.

    python benchmarks/release_live.py [NOTEBOOK ...]     (default: every course/<lesson>/<lesson>.ipynb)

Prints per notebook: the mode line, how many code cells ran of how many, the graded cells that failed on their
stubs, the seconds, and the last code cell's output (its first lines). Exit 1 if a notebook stopped early.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
SHOWN_LINES = 25


def _text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            data = out.get("data", {})
            parts.append(data.get("text/plain", "") + (" [image/png]" if "image/png" in data else ""))
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
    return "\n".join(p.rstrip("\n") for p in parts)


def run(path: Path) -> bool:
    with tempfile.TemporaryDirectory(prefix="release-live-") as tmp:
        folder = Path(tmp) / path.parent.name
        shutil.copytree(path.parent, folder)
        nb = nbformat.read(folder / path.name, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
        started = time.perf_counter()
        stopped = None
        try:
            client.execute()
        except CellExecutionError as exc:
            stopped = str(exc).splitlines()[-1][:200]
        took = time.perf_counter() - started
    code = [c for c in nb.cells if c.cell_type == "code"]
    ran = [c for c in code if c.execution_count is not None]
    lines = [line for c in code for line in _text(c).splitlines()]
    mode = next((line for line in lines if " live on " in line or "replay of" in line), "")
    failed = [c.get("id") for c in code if any(o.output_type == "error" for o in c.get("outputs", []))]
    print(f"== {path.relative_to(ROOT)}: {len(ran)} of {len(code)} code cells ran in {took:.1f} s")
    print(f"   mode: {mode.strip()}")
    print(f"   cells that failed (their stubs): {', '.join(failed) or 'none'}")
    if stopped:
        print(f"   STOPPED EARLY: {stopped}")
    print(f"   the last code cell ({code[-1].get('id')}) printed:")
    for line in _text(code[-1]).splitlines()[:SHOWN_LINES]:
        print(f"   | {line}")
    return stopped is None and len(ran) == len(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(p for p in (ROOT / "course").glob("*/*.ipynb") if p.stem == p.parent.name)
    ok = [run(p.resolve()) for p in paths]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
