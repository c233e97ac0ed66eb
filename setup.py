"""Build step: the stack catalogue (``manifest.yaml`` and ``stacks/``) goes into the wheel.

The repository keeps them at the top level, where people edit them and Renovate bumps them;
a wheel carries a copy under ``pytest_stacks/catalogue/`` so that ``pip install pytest-stacks``
is enough to run ``pytest --stack=NAME`` in any project. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
CATALOGUE = ("manifest.yaml", "stacks")


class BuildWithCatalogue(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install reads the catalogue where it is
        target = Path(self.build_lib) / "pytest_stacks" / "catalogue"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in CATALOGUE:
            source = HERE / name
            if source.is_dir():
                shutil.copytree(source, target / name,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildWithCatalogue})
