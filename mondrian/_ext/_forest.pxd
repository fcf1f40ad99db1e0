# The Forest extension type (_forest.pyx), for the modules that cimport it
# and read its C arrays directly (_path.pyx).
cimport numpy as cnp

from ._c cimport bitgen_t, mt_forest, mt_index, mt_pcg64


cdef class Forest:
    # The C forest (c/forest.h): trees in one global numbering, its own copy
    # of the points, per-tree permutations, a per-feature scale and per-tree rotations (or
    # none).
    cdef mt_forest f
    # One numpy BitGenerator per tree (tree m draws only from the m-th), or
    # none when the streams are numpy's PCG64 held in C: M states (c/pcg64.h)
    # and the bitgen_t of each (else both NULL).
    cdef tuple _bit_generators
    cdef mt_pcg64 *_pcg
    cdef bitgen_t *_pcg_gens
    # Weak references to the objects that read the C arrays (numpy views,
    # split events, path learners): growth in place refuses while any lives.
    cdef list _pins
    cdef Py_ssize_t _prune_at
    # Kernels running without the GIL on the arrays, and a growth under way.
    cdef Py_ssize_t _readers
    cdef bint _growing
    # split_events() of the current trees (None until asked; reset by growth).
    cdef tuple _events
    # (lifetime, col_of_node, col_offset) of the last active_columns(), read
    # only (None until asked; reset by growth).
    cdef tuple _columns

    cpdef pin(self, object obj)
    cdef int _begin_read(self) except -1
    cdef void _end_read(self) noexcept
    cdef int _begin_growth(self) except -1
    cdef object _view(self, void *data, int typenum, int nd, cnp.npy_intp *shape,
                      cnp.npy_intp *strides)
    cdef object _index_view(self, mt_index *data, size_t n)
    cdef object _double_view(self, double *data, size_t n, size_t d)
    cdef bitgen_t **_lock_streams(self, list locks) except NULL
    cdef int _set_streams(self, streams) except -1
    cdef int _set_pcg(self, const cnp.uint64_t[:, ::1] rows, bint seed) except -1
    cdef void _free_pcg(self) noexcept
    cdef _grow(self, double lifetime, int n_threads, bint extend, center=*,
               size_t spare_nodes=*)
    cdef int _check_lifetime(self, double lifetime) except -1
    cdef int _require_points(self, str what) except -1
    cdef tuple _split_events(self)
    cdef _load(self, dict arrays, size_t n_nodes, size_t n_points, double lifetime,
               rotation, center, scale)
