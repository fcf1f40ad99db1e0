# Declarations of the C core (c/*.h); no code.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t, uint32_t

cdef extern from "numpy/random/bitgen.h":
    ctypedef struct bitgen_t:
        void *state
        uint64_t (*next_uint64)(void *st) noexcept nogil
        uint32_t (*next_uint32)(void *st) noexcept nogil
        double (*next_double)(void *st) noexcept nogil
        uint64_t (*next_raw)(void *st) noexcept nogil

cdef extern from "c/pcg64.h" nogil:
    ctypedef struct mt_pcg64:
        uint64_t state_hi
        uint64_t state_lo
        uint64_t inc_hi
        uint64_t inc_lo
        uint64_t has_uint32
        uint64_t uinteger
    void mt_pcg64_seed(mt_pcg64 *s, const uint64_t *w)
    void mt_pcg64_bitgen(mt_pcg64 *s, bitgen_t *g)
    uint64_t mt_pcg64_next64(mt_pcg64 *s)

cdef extern from "c/common.h":
    ctypedef int64_t mt_index
    enum:
        MT_OK
        MT_ERR_NOMEM
        MT_ERR_ARG
        MT_ERR_OVERFLOW
        MT_ERR_STATE
    mt_index MT_NONE

cdef extern from "c/forest.h" nogil:
    ctypedef struct mt_forest:
        size_t n_trees
        size_t n_features
        double lifetime
        size_t n_nodes
        size_t node_capacity
        mt_index *node_offset
        mt_index *tree_of
        mt_index *parent
        mt_index *left
        mt_index *right
        mt_index *feature
        mt_index *start
        mt_index *end
        double *threshold
        double *tau
        double *lower
        double *upper
        size_t n_points
        size_t point_capacity
        double *X
        mt_index *perm
        double *rotation
        double *center
        double *scale
        mt_index *key

    int mt_forest_init(mt_forest *f, size_t n_trees, size_t n_features)
    void mt_forest_free(mt_forest *f)
    int mt_forest_reserve_nodes(mt_forest *f, size_t capacity)
    int mt_forest_reserve_points(mt_forest *f, size_t capacity)
    int mt_forest_append_points(mt_forest *f, const double *X, size_t n)
    void mt_forest_clear(mt_forest *f)
    void mt_forest_drop_points(mt_forest *f)
    int mt_forest_copy(mt_forest *dst, const mt_forest *src)
    int mt_forest_check(const mt_forest *f)
    void mt_forest_drop_transform(mt_forest *f)
    int mt_forest_set_scale(mt_forest *f, const double *scale)
    void mt_forest_transform(const mt_forest *f, size_t m, const double *X, size_t n,
                             double *out)

cdef extern from "c/grow.h" nogil:
    int mt_forest_draw_rotations(mt_forest *f, const double *center, bitgen_t **rngs,
                                 int n_threads)
    int mt_forest_fit(mt_forest *f, double lifetime, bitgen_t **rngs, int n_threads,
                      size_t spare_nodes)
    int mt_forest_extend(mt_forest *f, double lifetime, bitgen_t **rngs, int n_threads)

cdef extern from "c/insert.h" nogil:
    int mt_forest_insert(mt_forest *f, const double *X, size_t n, size_t max_nodes,
                         bitgen_t **rngs, int n_threads)

cdef extern from "c/lookup.h" nogil:
    int mt_forest_active_columns(const mt_forest *f, double lam, mt_index *col_of_node,
                                 mt_index *col_offset)

cdef extern from "c/features.h" nogil:
    int mt_forest_features(const mt_forest *f, const double *X, size_t n, size_t d,
                           double lam, const mt_index *col_of_node,
                           const mt_index *col_offset, double scale,
                           int32_t *indices32, mt_index *indices64, double *data,
                           int n_threads)
    int mt_forest_features_dot(const mt_forest *f, const double *X, size_t n, size_t d,
                               double lam, const mt_index *col_of_node, double scale,
                               const double *coef, size_t k, double *out, int n_threads)
    int mt_forest_features_fitted(const mt_forest *f, double lam,
                                  const mt_index *col_of_node, const mt_index *col_offset,
                                  double scale, int32_t *indices32, mt_index *indices64,
                                  double *data, int n_threads)
    int mt_forest_gram(const mt_forest *f, double lam, const mt_index *col_of_node,
                       const mt_index *col_offset, double *gram, int n_threads)
    int mt_forest_gram_points(const mt_forest *f, const double *X, size_t n, size_t d,
                              double lam, const mt_index *col_of_node,
                              const mt_index *col_offset, const double *y, size_t k,
                              double *gram, double *Pty, double *Pt1, int n_threads)

cdef extern from "c/events.h" nogil:
    size_t mt_forest_n_events(const mt_forest *f)
    int mt_forest_events(const mt_forest *f, mt_index *nodes, double *times,
                         mt_index *left, mt_index *right, mt_index *tree)
    int mt_forest_node_sums(const mt_forest *f, const double *values, double *out)
    int mt_forest_train_slices(const mt_forest *f, const uint8_t *is_train, size_t n_train,
                               int32_t *ptrain, mt_index *tstart, mt_index *tend)

cdef extern from "c/threads.h" nogil:
    void mt_threads_release()

cdef extern from "c/nodestats.h" nogil:
    int mt_node_stats_regression(const mt_forest *f, const double *y, int n_threads,
                                 double *count, double *sum, double *sumsq)
    int mt_node_stats_classes(const mt_forest *f, const mt_index *labels, size_t n_classes,
                              int n_threads, double *counts)

cdef extern from "c/entries.h" nogil:
    ctypedef struct mt_entries:
        pass
    void mt_entries_gather(const mt_entries *entries, size_t l, size_t n_trees,
                           const int64_t *offset, mt_index *node, double *value,
                           int n_threads)
    void mt_entries_free(mt_entries *entries)

cdef extern from "c/mforest.h" nogil:
    int mt_forest_gauss_posterior(const mt_forest *f, double lam, const double *count,
                                  const double *sum, double prior_mean, double prior_var,
                                  double time_scale, double noise_var, int n_threads,
                                  double *mean, double *var, double *cov, double *work,
                                  int reuse)
    int mt_forest_gauss_loo(const mt_forest *f, double lam, const double *count,
                            const double *sum, const double *y, double prior_mean,
                            double prior_var, size_t n_candidates, const double *time_scale,
                            const double *noise_var, int n_threads, double *out)
    int mt_forest_gauss_mixture(const mt_forest *f, const double *X, size_t n, double lam,
                                const double *mean, const double *var, const double *cov,
                                double prior_mean, double prior_var, double time_scale,
                                double noise_var, int n_threads, double *out)
    int mt_forest_paths_walk(const mt_forest *f, const double *X, size_t n, int n_threads,
                             mt_index *offset, mt_entries **walk)
    int mt_forest_gauss_mixture_paths(const mt_forest *f, const mt_index *offset,
                                      const mt_index *node, const double *gap, size_t n,
                                      double lam, const double *mean, const double *var,
                                      const double *cov, double prior_mean, double prior_var,
                                      double time_scale, double noise_var, int n_threads,
                                      double *out)
    int mt_forest_mixture_paths(const mt_forest *f, const mt_index *offset,
                                const mt_index *node, const double *gap, size_t n, double lam,
                                size_t K, const double *leaf, const double *branch,
                                const double *branch0, int n_threads, double *out)
    int mt_forest_class_posterior(const mt_forest *f, double lam, const double *counts,
                                  size_t n_classes, const double *base, double rate,
                                  int n_threads, double *prob, double *work)
    int mt_forest_mixture(const mt_forest *f, const double *X, size_t n, double lam,
                          size_t K, const double *leaf, const double *branch,
                          const double *branch0, int n_threads, double *out)
