"""Sphinx configuration for the mondrian documentation.

Built with warnings as errors by the test suite (``tests/test_docs.py``):
``sphinx-build -W -b html doc <out>``.  The gallery's scripts in
``examples/`` are executed at every build (sphinx-gallery); a script that
raises fails the build.
"""
import re

import mondrian

project = "mondrian"
author = "The mondrian developers"
release = mondrian.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
# mondrian.river subclasses river's base classes; river is optional.
try:
    import river  # noqa: F401
except ImportError:
    autodoc_mock_imports = ["river"]
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
templates_path = []
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = ["_static"]

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # bench_*.py measure (minutes); they are run by hand, not in the gallery.
    "ignore_pattern": r"__init__\.py|(^|[\\/])bench_",
    # A failing example fails the build, at once (nothing cached hides it).
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "image_scrapers": ("matplotlib",),
    "min_reported_time": 1,
    "download_all_examples": False,
    "reset_modules": ("matplotlib",),
}

# Methods inherited from scikit-learn (``score``) carry references to labels
# of scikit-learn's own documentation (``r2_score``, ``accuracy_score``),
# which do not exist here.  In docstrings of objects defined by scikit-learn,
# a ``:ref:`text <label>``` becomes its text.
_SKLEARN_REF = re.compile(r":ref:`([^`<]*?)\s*<[^`>]+>`")


def _plain_sklearn_refs(app, what, name, obj, options, lines):
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] != "sklearn":
        return
    lines[:] = [_SKLEARN_REF.sub(r"\1", line) for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _plain_sklearn_refs)
