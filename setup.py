"""The package list (everything else is in pyproject.toml): the code packages, with or without an
__init__.py (a page folder such as app/web/pages/curate/ ships its code, templates and scripts either
way), plus the checkout's static/, configs/ and assets/ folders installed as the data packages
mvp_files.* (mapped in pyproject's package-dir), which setuptools' automatic discovery cannot add."""
from setuptools import find_namespace_packages, setup

setup(packages=find_namespace_packages(include=["app*", "mvp_core*", "db*"], exclude=["*__pycache__*"])
      + ["mvp_files.static", "mvp_files.configs", "mvp_files.assets"])
