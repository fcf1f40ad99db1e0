"""The documentation builds with warnings as errors, gallery included.

``sphinx-build -W -b html`` runs on a copy of ``doc/`` and ``examples/`` in
a temporary directory, so nothing is cached between runs (a stale
autosummary page or gallery image cannot hide a failure) and nothing is
written into the checkout.  Sphinx imports the *installed* ``mondrian``
(the build runs with the temporary directory as its working directory),
and every gallery script is executed: one that raises fails the build.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MISSING = [name for name in ("sphinx", "numpydoc", "sphinx_gallery", "matplotlib")
           if importlib.util.find_spec(name) is None]


@pytest.fixture(scope="module")
def built_docs(tmp_path_factory):
    if MISSING:
        pytest.skip(f"the docs toolchain is not installed ({', '.join(MISSING)}); "
                    "pip install '.[test]' (or '.[doc]') installs it")
    if not (ROOT / "doc" / "conf.py").is_file():
        pytest.skip("no doc/ beside the tests: not a source checkout")
    work = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "doc", work / "doc",
                    ignore=shutil.ignore_patterns("_build", "generated", "auto_examples"))
    shutil.copytree(ROOT / "examples", work / "examples")
    out = work / "html"
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         str(work / "doc"), str(out)],
        cwd=work, env=env, capture_output=True, text=True)
    return proc, work, out


def test_docs_build_without_warnings(built_docs):
    proc, _, out = built_docs
    assert proc.returncode == 0, f"sphinx-build -W failed:\n{proc.stderr[-6000:]}"
    assert proc.stderr.strip() == "", proc.stderr
    for page in ("index.html", "api.html", "choosing.html", "auto_examples/index.html"):
        assert (out / page).is_file(), page


def test_every_example_runs_and_draws(built_docs):
    proc, work, out = built_docs
    assert proc.returncode == 0, proc.stderr[-2000:]
    examples = sorted(p.stem for p in (ROOT / "examples").glob("plot_*.py"))
    assert len(examples) >= 5
    images = work / "doc" / "auto_examples" / "images"
    for name in examples:
        assert (out / "auto_examples" / f"{name}.html").is_file(), name
        assert list(images.glob(f"sphx_glr_{name}_*.png")), f"{name} drew no figure"
