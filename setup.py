"""The package list (everything else is in pyproject.toml): the code packages plus the checkout's static/,
configs/ and assets/ folders installed as the data packages mvp_files.* (mapped in pyproject's package-dir),
which setuptools' automatic discovery cannot add."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["app*", "mvp_core*", "db*"])
      + ["mvp_files.static", "mvp_files.configs", "mvp_files.assets"])
