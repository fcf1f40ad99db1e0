"""The CPU data of the paper (6554 x 21 training, 819 test points, bundled
with the package), shared by the benchmark modules."""


def cpu_arrays():
    """(X_train, y_train, X_test, y_test) of the bundled CPU data."""
    from mondrian.datasets import load_cpu

    data = load_cpu()
    return data.X_train, data.y_train, data.X_test, data.y_test
