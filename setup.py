"""The build step pyproject.toml cannot state: the unit templates, whose one home is the
repository's top level (systemd/, launchd/), ship in the wheel as memoryd/service/templates/,
where `memoryd service install` reads them, and in the sdist as they lie (a wheel built from
it ships them too). An editable install reads them from the top level itself (render.py).

And the one compiled part, optional: index/_compiled*.c (the index's inner loops: the BM25
top, line scores, fusion, snippet windows and the hits' maps) against CPython's limited
API, so one wheel per platform serves Python 3.11 and later. When it cannot be built (no
compiler), the install goes on without it and its users run their Python versions, which
give the same results."""

from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
UNIT_FOLDERS = ("systemd", "launchd")
PACKAGED = ("memoryd", "service", "templates")


def unit_files() -> list[Path]:
    return sorted(
        f.relative_to(ROOT) for d in UNIT_FOLDERS for f in (ROOT / d).iterdir() if f.is_file()
    )


class BuildWithUnits(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib, *PACKAGED)
        self.mkpath(str(target))
        for unit in unit_files():
            self.copy_file(str(ROOT / unit), str(target / unit.name))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        target = Path(self.build_lib, *PACKAGED)
        return [
            *super().get_outputs(include_bytecode),
            *(str(target / u.name) for u in unit_files()),
        ]


class SdistWithUnits(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, [*files, *(str(unit) for unit in unit_files())])


COMPILED = Path("daemon", "memoryd", "index")  # _compiled.c, its header, one file a concern


def extensions() -> list[Extension]:
    return [
        Extension(
            "memoryd.index._compiled",
            sorted(str(c) for c in COMPILED.glob("_compiled*.c")),
            depends=[str(COMPILED / "_compiled.h")],  # and so in the sdist
            define_macros=[("Py_LIMITED_API", "0x030B0000")],
            py_limited_api=True,
            # A fused multiply-add rounds differently from Python's multiply, then add.
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,  # no compiler: the Python versions serve
        )
    ]


setup(
    cmdclass={"build_py": BuildWithUnits, "sdist": SdistWithUnits},
    ext_modules=extensions(),
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
