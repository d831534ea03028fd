"""The packages of the distribution: the shared ones and every lesson of lessons.txt, read here (labcore.lessons).

pyproject.toml holds the project's metadata; the package list is made here from the one list of lessons, so a
lesson is packaged by its line in lessons.txt. Each lesson ships its modules, its CUDA kernels and its recorded
profiles (<lesson>/profiles/<gpu>/), never its solutions/ or tests/. The wheel carries the list itself as
labcore/lessons.txt, where labcore.lessons finds it when no checkout is around it.
"""

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SHARED = ("labcore", "labcore.kit", "labcore.pipeline", "grader")
SHARED_DATA = {"labcore": ["pipeline/kernels/*.cu"]}
LESSON_DATA = ["kernels/*.cu", "profiles/**/*", "public.json"]  # its kernels, recorded profiles, public expectations


def options(root: Path = ROOT) -> dict:
    """setup()'s packages and package data for the checkout at root (grader.bundle derives the bundle's from them)."""
    sys.path.insert(0, str(root))
    try:
        from labcore.lessons import read_list
    finally:
        sys.path.remove(str(root))
    listed = read_list(root)
    return {
        "packages": [*SHARED, *listed],
        "package_data": {**SHARED_DATA, **{name: LESSON_DATA for name in listed}},
    }


if __name__ == "__main__":
    import warnings

    from setuptools import setup
    from setuptools.command.build_py import build_py

    # Package data lies in folders named like modules (a lesson's kernels/ and profiles/h200/, labcore's
    # pipeline/kernels/): setuptools warns that Python could import each as a namespace package. They are data.
    warnings.filterwarnings("ignore", message=r"Package '[\w.]+' is absent from the `packages` configuration")
    # An editable install's notice that folders of the working directory named like the packages may be imported
    # instead: here they are the packages (the checkout's own, which the editable install points at)
    warnings.filterwarnings("ignore", message=r"Editable installation\.")

    class BuildWithList(build_py):
        """build_py, and the list of lessons copied into the built labcore (labcore/lessons.txt); an editable install
        reads the checkout's own list."""

        def run(self) -> None:
            super().run()
            if getattr(self, "editable_mode", False):
                return
            target = Path(self.build_lib) / "labcore"
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / "lessons.txt", target / "lessons.txt")

    setup(**options(), cmdclass={"build_py": BuildWithList})
