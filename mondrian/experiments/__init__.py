"""Reproductions of the papers' figures and tables.

One module per figure, run as ``python -m mondrian experiment <name>``.  A
module defines ``DESCRIPTION`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``; it writes a CSV of its numbers and a PNG into
``args.out``.  Modules are discovered by name, so adding a file (and listing
it in ``meson.build``) registers it.  The output helpers of ``_common``
(``pyplot_or_none``, ``save_figure``) are exported here for the ``path``
command's plot.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from ._common import pyplot_or_none, save_figure

__all__ = ["available_experiments", "pyplot_or_none", "save_figure"]


def available_experiments() -> dict[str, ModuleType]:
    """Experiment name -> module, for every public module of this package."""
    out = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        out[info.name.replace("_", "-")] = module
    return out
