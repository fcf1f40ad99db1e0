"""Sphinx configuration for the mondrian documentation."""
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
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
templates_path = []
exclude_patterns = ["_build"]
html_theme = "alabaster"
