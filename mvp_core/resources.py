"""Where the files the code reads at run time live: static/ (the web app's CSS and JS), configs/ (the
shipped training configs) and assets/ (the SFT warm start). They are top-level folders of the checkout
and are installed as the data packages mvp_files.static/.configs/.assets (pyproject.toml), so an
installed copy finds them through its package, not through the checkout's layout."""
from __future__ import annotations

import importlib.util
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def folder(name: str) -> Path:
    """The folder `static`, `configs` or `assets`: the installed data package's, else the checkout's."""
    if name not in ("static", "configs", "assets"):
        raise ValueError(f"unknown resource folder {name!r}")
    try:
        spec = importlib.util.find_spec(f"mvp_files.{name}")
    except ModuleNotFoundError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        found = Path(next(iter(spec.submodule_search_locations)))
        if found.is_dir():
            return found
    return _CHECKOUT / name


def config(name: str) -> Path:
    """A shipped training config, e.g. config("web.yaml")."""
    return folder("configs") / name


def shipped_configs() -> list[str]:
    """The shipped configs' short names: their paths under configs/ without ".yaml" ("tiny", "verl/...")."""
    root = folder("configs")
    return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.yaml"))


def resolve_config(given: str) -> Path:
    """A config as named on the command line: an existing file as it is; otherwise a shipped config by its
    short name with or without ".yaml" (`mvp train tiny` from any folder, the installed package's copy);
    otherwise the path as given, for the loader to report as missing."""
    path = Path(given)
    try:
        if path.exists():
            return path
    except OSError:                      # a name longer than a file name can be (ENAMETOOLONG) is no file
        return path
    name = given.removesuffix(".yaml")
    if name in shipped_configs():        # only a listed name: "../x" cannot reach outside configs/
        return config(f"{name}.yaml")
    return path


def warm_start() -> Path:
    """The shipped SFT warm start (assets/clock-sft, its MODEL_CARD.md)."""
    return folder("assets") / "clock-sft"
