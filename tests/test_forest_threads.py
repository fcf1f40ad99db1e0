"""The OpenMP policy of the compiled core (mondrian/_ext/__init__.py,
c/threads.h): importing the package leaves the environment alone, and no
worker thread of ours outlives the operation that started it."""
import os

import numpy as np
import pytest

from mondrian import MondrianFeatures
from mondrian.path import CGRidgePath, split_events


def test_import_does_not_touch_the_environment(run_python):
    code = ("import os\n"
            "before = dict(os.environ)\n"
            "import mondrian, mondrian._ext._forest, mondrian._ext._path\n"
            "from mondrian import MondrianFeatures\n"
            "import numpy as np\n"
            "MondrianFeatures(n_trees=3, lifetime=1.0, n_jobs=2).fit(np.eye(4))\n"
            "changed = {k for k in set(before) | set(os.environ)\n"
            "           if before.get(k) != os.environ.get(k)}\n"
            "print(sorted(changed))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    assert run_python(code, env=env, timeout=120).strip() == "[]"


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_worker_threads_are_released_after_each_operation(rng):
    # libgomp keeps a per-caller pool whose idle threads spin between
    # regions; ours is freed when an operation returns, so nothing of ours
    # competes with the BLAS or other code that runs next.
    def n_threads():
        return len(os.listdir("/proc/self/task"))

    X = rng.random((500, 3))
    y = X[:, 0] - X[:, 0].mean()
    base = n_threads()
    mf = MondrianFeatures(n_trees=8, lifetime=3.0, random_state=0, n_jobs=2).fit(X)
    assert n_threads() == base
    mf.transform(rng.random((50, 3)))
    assert n_threads() == base
    mf.gram()
    assert n_threads() == base
    path = CGRidgePath(split_events(mf), y, [0.1], n_jobs=2)
    path.solve_at(1.0)
    path.predict_points(np.arange(10))
    assert n_threads() == base
