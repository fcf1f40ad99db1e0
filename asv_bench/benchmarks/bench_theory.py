"""Spectral distance ‖K − K′‖₂ between two feature-map kernels at large n.

With both sides given as feature maps the Lanczos path only multiplies by
Φ and Φᵀ: at n = 10⁵ a dense n×n matrix would take 80 GB, while
``peakmem_feature_maps`` stays at the size of the feature matrices (the
Mondrian Φ with n·M stored entries, the Fourier Ψ with n·2m dense entries)
plus ARPACK's Lanczos vectors.  ``track_distance`` records the value, so a
change of accuracy shows next to a change of speed.
"""
import numpy as np

try:
    from mondrian import MondrianFeatures, RandomFourierFeatures
    from mondrian.theory import FeatureKernel, spectral_distance
except ImportError:  # older commits
    spectral_distance = None


class SpectralDistanceFeatureMaps:
    params = ([10_000, 100_000],)
    param_names = ["n"]
    timeout = 300

    def setup(self, n):
        if spectral_distance is None:
            raise NotImplementedError("mondrian.theory is not available in this commit")
        X = np.random.default_rng(0).random((n, 3))
        self.Phi = MondrianFeatures(n_trees=50, lifetime=2.0, random_state=0,
                                    n_jobs=1).fit_transform(X)
        self.Psi = RandomFourierFeatures(lifetime=2.0, n_components=100,
                                         random_state=0).fit_transform(X)

    def _distance(self):
        return spectral_distance(FeatureKernel(self.Phi), FeatureKernel(self.Psi),
                                 method="lanczos", tol=1e-8, random_state=0)

    def time_feature_maps(self, n):
        self._distance()

    def peakmem_feature_maps(self, n):
        self._distance()

    def track_distance(self, n):
        return self._distance()
