#!/usr/bin/env python
"""Default fits of two builds side by side: alternating fresh processes.

    python asv_bench/compare_builds.py --before /path/to/venv/bin/python \\
        [--after python] [--cases syn600,concrete,ccpp1000,syn5000,cpu,syn100000] \\
        [--rounds 3]

A shared machine's speed drifts during a session (by 20-40 % over hours on
the 2-core machine of the notes), so a figure measured at one time and
compared with one measured at another says little.  This script runs
``MondrianKernelRidgeCV(random_state=0).fit`` at its defaults, one case
after another, each in a fresh process (the first fit of a process, as a
user's), with the ``--before`` interpreter then the ``--after`` one, for
``--rounds`` rounds, and prints every fit's time and test error and then,
per case, the range of each build's times.  Install the two builds in two
environments (e.g. a virtualenv with ``pip install .`` at the older commit).

Cases: ``synN`` (the scaling section's synthetic set with N training rows),
``cpu`` (the CPU data, raw, the paper's split; error in percent as the
paper), or a set of ``defaults_check.py`` (``concrete``, ``ccpp1000``, ...;
RMSE in standardised units).  Only ``fit`` is timed.
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

ONE_FIT = r"""
import sys, time
import numpy as np
sys.path.insert(0, {here!r})
import defaults_check as dc
from mondrian import MondrianKernelRidgeCV
name = {name!r}
if name.startswith("syn"):
    sp = dc.synthetic(int(float(name[3:])), 0)
    Xtr, ytr, Xte, yte = sp.X_train, sp.y_train, sp.X_test, sp.y_test
elif name == "cpu":
    from mondrian.datasets import load_cpu
    d = load_cpu()
    Xtr, ytr, Xte, yte = d.X_train, d.y_train, d.X_test, d.y_test
else:
    sp = dc.split_set(name, 0, dc.data_home(None))
    Xtr, ytr, Xte, yte = sp.X_train, sp.y_train, sp.X_test, sp.y_test
model = MondrianKernelRidgeCV(random_state=0)
t0 = time.perf_counter()
model.fit(Xtr, ytr)
seconds = time.perf_counter() - t0
pred = model.predict(Xte)
if name == "cpu":
    error = 100.0 * np.linalg.norm(pred - yte) / np.linalg.norm(yte)
else:
    error = float(np.sqrt(np.mean((pred - yte) ** 2)))
print(f"{{seconds:.3f}} {{error:.4f}}")
"""


def one_fit(python: str, name: str) -> tuple[float, float]:
    """(fit seconds, test error) of one default fit in a fresh process."""
    code = ONE_FIT.format(here=str(HERE), name=name)
    # From a neutral directory, so that a source tree cannot shadow the build.
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd="/",
                         check=True, env=dict(os.environ))
    seconds, error = out.stdout.split()[-2:]
    return float(seconds), float(error)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="Python interpreter of the older build")
    ap.add_argument("--after", default=sys.executable,
                    help="Python interpreter of the newer build (default: this one)")
    ap.add_argument("--cases", default="syn600,concrete,ccpp1000,syn5000,cpu,syn100000")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    if args.rounds < 1 or not cases:
        ap.error("need at least one round and one case")
    times = {(c, b): [] for c in cases for b in ("before", "after")}
    errors = {}
    for r in range(args.rounds):
        for case in cases:
            for build, python in (("before", args.before), ("after", args.after)):
                seconds, error = one_fit(python, case)
                times[case, build].append(seconds)
                errors[case, build] = error
                load = os.getloadavg()[0]
                print(f"round {r + 1} {case:10s} {build:6s} fit {seconds:8.3f} s  "
                      f"error {error:.4f}  load {load:.2f}", flush=True)
    print(f"\n{'case':10s} {'before [s]':>16s} {'after [s]':>16s}  error before -> after")
    for case in cases:
        b, a = times[case, "before"], times[case, "after"]
        print(f"{case:10s} {min(b):7.3f}-{max(b):<8.3f} {min(a):7.3f}-{max(a):<8.3f}  "
              f"{errors[case, 'before']:.4f} -> {errors[case, 'after']:.4f}")


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t:.0f} s in all)")
