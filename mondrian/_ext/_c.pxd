# Declarations of the C core (c/*.h); no code.
from libc.stdint cimport int32_t, int64_t, uint64_t, uint32_t

cdef extern from "numpy/random/bitgen.h":
    ctypedef struct bitgen_t:
        void *state
        uint64_t (*next_uint64)(void *st) noexcept nogil
        uint32_t (*next_uint32)(void *st) noexcept nogil
        double (*next_double)(void *st) noexcept nogil
        uint64_t (*next_raw)(void *st) noexcept nogil

cdef extern from "c/common.h":
    ctypedef int64_t mt_index
    enum:
        MT_OK
        MT_ERR_NOMEM
        MT_ERR_ARG
        MT_ERR_OVERFLOW
        MT_ERR_STATE
    mt_index MT_NONE

cdef extern from "c/tree.h" nogil:
    ctypedef struct mt_tree:
        size_t n_features
        size_t n_nodes
        size_t capacity
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
        mt_index *perm
        double lifetime

    void mt_tree_init(mt_tree *tree, size_t n_features)
    void mt_tree_free(mt_tree *tree)
    int mt_tree_reserve(mt_tree *tree, size_t capacity)
    int mt_tree_reserve_points(mt_tree *tree, size_t n_points)
    int mt_tree_check(const mt_tree *tree)
    int mt_forest_grow(mt_tree **trees, bitgen_t **rngs, size_t n_trees,
                       const double *X, size_t n, size_t d, double lifetime,
                       int extend, int n_threads)

cdef extern from "c/lookup.h" nogil:
    double mt_box_gap(const double *x, const double *lo, const double *hi, size_t d)
    mt_index mt_tree_active_columns(const mt_tree *tree, double lam,
                                    mt_index *col_of_node)

cdef extern from "c/features.h" nogil:
    int mt_forest_columns(mt_tree **trees, size_t n_trees, double lam,
                          const mt_index *node_offset, mt_index *col_of_node,
                          mt_index *col_offset)
    int mt_forest_features(mt_tree **trees, size_t n_trees,
                           const double *X, size_t n, size_t d, double lam,
                           const mt_index *node_offset, const mt_index *col_of_node,
                           const mt_index *col_offset, double scale,
                           int32_t *indices32, mt_index *indices64, double *data,
                           int n_threads)
    int mt_forest_features_fitted(mt_tree **trees, size_t n_trees, double lam,
                                  const mt_index *node_offset,
                                  const mt_index *col_of_node,
                                  const mt_index *col_offset, double scale,
                                  int32_t *indices32, mt_index *indices64,
                                  double *data, int n_threads)
    int mt_forest_gram(mt_tree **trees, size_t n_trees, double lam,
                       const mt_index *node_offset, const mt_index *col_of_node,
                       const mt_index *col_offset, double *gram, int n_threads)
