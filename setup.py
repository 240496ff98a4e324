"""The package list (everything else is in pyproject.toml): the code packages, with or without an
__init__.py (a page folder such as app/web/pages/curate/ ships its code, templates and scripts either
way), plus the checkout's static/, configs/ and assets/ folders installed as the data packages
mvp_files.* (mapped in pyproject's package-dir), which setuptools' automatic discovery cannot add.
A data folder's subfolders (configs/verl/) are listed as packages too: setuptools warns about, and
may one day drop, an importable-looking folder that no package names."""
from pathlib import Path

from setuptools import find_namespace_packages, setup

_DATA = {"static": "mvp_files.static", "configs": "mvp_files.configs", "assets": "mvp_files.assets"}


def _data_packages() -> list[str]:
    here = Path(__file__).resolve().parent
    out = []
    for folder, package in _DATA.items():
        out.append(package)
        for sub in sorted(p for p in (here / folder).rglob("*") if p.is_dir() and p.name != "__pycache__"):
            out.append(".".join([package, *sub.relative_to(here / folder).parts]))
    return out


setup(packages=find_namespace_packages(include=["app*", "mvp_core*", "db*"], exclude=["*__pycache__*"])
      + _data_packages())
