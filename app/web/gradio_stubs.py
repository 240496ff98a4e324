"""Gradio re-writes its components' `.pyi` type stubs on every import: for each of ~80 component classes,
`gradio.component_meta.create_or_modify_pyi` reads the class's source, parses it with `ast` and compares
it with the stub beside it. That is over a third of `import gradio` (3.4 -> 2.1 s of CPU here,
bench/gradio_import.py, docs/BENCHMARKS.md) and serves only type checkers, never the running app.

Hand-written because Gradio has no switch for it: an import hook that, when `gradio.component_meta` is
loaded, replaces that one function with a no-op before any component class is made. If a Gradio release
moves or renames the function, the hook finds nothing to replace and Gradio behaves as shipped."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

MODULE = "gradio.component_meta"
FUNCTION = "create_or_modify_pyi"


def _no_stubs(*_args, **_kwargs) -> None:
    return None


class _SkipStubWriting(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            if callable(getattr(module, FUNCTION, None)):
                setattr(module, FUNCTION, _no_stubs)
        loader.exec_module = exec_module
        return spec


def install() -> None:
    """Skip the stub writing in this process from now on (before Gradio's first import; idempotent)."""
    if MODULE not in sys.modules and not any(isinstance(f, _SkipStubWriting) for f in sys.meta_path):
        sys.meta_path.insert(0, _SkipStubWriting())
