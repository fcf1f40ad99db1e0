/*
 * grow.c -- the Mondrian sampler (see grow.h).
 *
 * A node holding points P with data box [l, u] has linear dimension
 * L = sum_d (u_d - l_d).  Started at time t0 (its parent's split time), it
 * splits at t0 + Exp(L) if that is within the lifetime, in dimension d with
 * probability (u_d - l_d) / L, at a cut a ~ U(l_d, u_d); points with
 * x_d <= a go left.  By projectivity (Sec. 2.3) the children's boxes are the
 * boxes of their own points.  A node with L = 0 never splits.
 *
 * Thinning: the split is drawn from a BOUND of the box, not the box.  A
 * child's data box lies inside its parent's box cut at a, but computing it
 * exactly takes a pass over all D coordinates of the child's points -- at
 * every node, D values per point per level of the tree, most of the growth.
 * Instead each node keeps a box B' containing its data box B (its parent's,
 * cut at a), and the Mondrian process on B' is run restricted to B, which is
 * the Mondrian process on B (projectivity again): candidate cuts arrive at
 * rate L(B'), in dimension d with probability (u'_d - l'_d) / L(B'), at a
 * uniform on [l'_d, u'_d); a candidate separates the points iff
 * l_d <= a < u_d, which has probability (u_d - l_d) / (u'_d - l'_d), so the
 * cuts that separate arrive at rate sum_d (u_d - l_d) = L(B) and fall
 * uniformly in [l_d, u_d): exactly the split of the node.  A candidate that
 * does not separate changes nothing (by memorylessness the clock goes on
 * from its time).  Checking one takes the points' extent in ITS dimension
 * only, one coordinate per point, after which that side of B' is exact
 * (flagged, so it is never scanned again at the node); the extent of the
 * node's first MT_PROBE points, inside it, settles most candidates of a
 * large node at once, and a node of at most MT_SMALL_NODE points takes
 * its exact box when it is reached (a loose bound would draw candidates
 * that miss, up to D of them, on every small node).  The children of a
 * split are exact in the split dimension (the partition finds the largest
 * left and smallest right coordinate); every other side is inherited.  A
 * candidate beyond the lifetime ends the node without any scan, so most
 * leaves cost nothing.  The data boxes are set once the tree is grown:
 * every leaf's from its points (one pass over all D coordinates of each
 * point, once per tree instead of once per level), every internal node's as
 * the union of its children's, bottom-up.  The trees have the law of the
 * exact sampler; the random draws differ (the candidates that miss).
 *
 * Each tree grows in its thread's one-tree forest (the scratch: node
 * storage from forest.c, ids local to the tree, reused from tree to tree),
 * permuting the tree's own row of the forest's permutation in place.  An
 * extension splits old leaves only, so it permutes each old leaf's slice of
 * the row within itself: should it fail, the old trees still hold the same
 * points at every node (grow.h).  Packing each extended tree's permutation
 * with its nodes and storing it back had the extension copy every row
 * three times (load, pack, store) -- on the CPU data's 2000-tree ladder
 * forest of the default kernel ridge, 105 MB each time, the permutations
 * outweighing the nodes of shallow trees.
 *
 * In a fit, a grown tree is copied from the scratch straight into the
 * forest where its place is known: every tree at m times the first tree's
 * size when the first tree split as far as its points allow (no tree can
 * be larger; the smaller ones are moved down into place at the end), else
 * the trees the first thread takes from the front (0, 1, ...), whose
 * offsets it knows as it goes (see grow_forest).  An extension stores the
 * first thread's trees the same way into fresh node arrays, which replace
 * the forest's once every tree is in them (the old trees are read from the
 * forest's until then).  Every other grown tree is kept at its exact size
 * (packed) until every tree is grown, then copied into the forest at its
 * node offset, the packed trees' memory released chunk by chunk as the
 * forest fills (struct chunk), so that the nodes are held about once at
 * the peak, not twice.  Extending every tree by packing them all took
 * 0.07-0.10 s for 8000 shallow trees on 250 points (the 250-row default
 * kernel ridge's second forest, lifetime 0.12 -> 0.24), 0.06 s with the
 * first thread's trees stored directly; 2000 trees on the raw CPU data
 * (79 000 -> 206 000 -> 558 000 nodes) 0.11-0.13 and 0.17-0.19 s per
 * octave, 0.10-0.12 and 0.15-0.18 s (warm processes, the build before
 * alternating).
 * Scratches per tree instead, each with room to spare, held 675 MiB at the
 * peak of a 231-row fit with 31 000 trees; packed trees, 429 MiB.
 *
 * Memory written for the first time costs more than the growth itself
 * here: the kernel zeroes every fresh page in a page fault (and on a
 * virtual machine the host may first have to back it).  The CPU data's 50
 * trees grown to their leaves (6554 x 21, 655 000 nodes, 270 MB of node
 * records) spent 40-50 % of a fit in the kernel.  Two changes (measured
 * against the build before them, fresh processes alternating, three fits
 * each): the packed trees' chunks are whole, aligned huge pages
 * (mt_alloc_large: 36 000 page faults a fit -> 7 300), and the trees are
 * stored without packing where their place is known (above).  Those 50
 * trees, two threads: 0.16-0.19 s (0.37-0.51 s the first fit of a
 * process) -> 0.11-0.14 s (0.16-0.21 s); one thread 0.25 s (0.54-0.97 s)
 * -> 0.16-0.21 s (0.19-0.29 s).  100 trees on 10^5 x 8 points to their
 * leaves (two threads): 3.4-4.1 s (4.6-8.9 s first) -> 2.0-2.9 s
 * (4.0-4.4 s); 12 809 shallow trees on 600 x 8 (the 600-row default
 * fit's forest; only the first thread's trees skip the packing):
 * 0.27-0.42 s -> 0.23-0.31 s on one thread, the same within noise on two.
 *
 * Points of up to MT_GATHER_BYTES are not moved: the partition moves perm
 * alone and coordinates are read through it.  Above, the growing thread
 * keeps the points' rows in the permutation's order (rows[i] = X[perm[i]])
 * and swaps them along with perm, so that a node's points are contiguous.
 * Both make the same swaps, so the trees do not depend on it.
 *
 * Measured (two threads, same seeds; the growth alone, old = exact boxes
 * computed for every node during its parent's partition): the CPU data
 * (6554 x 21, 50 trees at 1e-5) 44-49 ms -> 28-36 ms; 200 trees on it
 * standardised 0.27-0.33 -> 0.21-0.31 s; 1200 x 100, 1000 trees
 * 1.59-1.78 -> 1.39-1.50 s; 600 x 8 and 5000 x 8 (many trees) and 10^5 and
 * 10^6 x 8 (deep trees) unchanged within the machine's noise (+-10 %).
 */
#include "grow.h"

#include <math.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    mt_forest tree;       /* one tree, local ids                             */
    mt_index *perm;       /* its point permutation: the tree's row of the forest */
    unsigned char *exact; /* node j's side k of its box is exact: [j * D + k] */
    size_t exact_nodes;   /* nodes `exact` has room for                      */
} scratch;

/* A grown tree kept until every tree is grown and the forest's layout is
 * known: its node arrays (local ids) at their exact size, in one region of
 * its thread's arena.  `block` is the arena chunk the tree opened (freed
 * once every tree is stored), or NULL. */
typedef struct {
    size_t n_nodes;
    size_t at;           /* stored directly: its first node in f, else SIZE_MAX */
    void *block;
    struct chunk *chunk; /* the arena chunk holding the tree */
    mt_index *parent, *left, *right, *feature, *start, *end;
    double *threshold, *tau, *lower, *upper;
} packed;

/* A thread's packed trees, one after the other in chunks of at least
 * MT_ARENA_CHUNK bytes, large enough for huge pages (mt_alloc_large): a
 * block per tree (a few hundred KB each on the CPU data) was committed 4 KB
 * at a time.  The chunks and the advice together took a fit of 50 trees
 * from 5.4 to 2.1-2.5 thousand page faults; the chunks alone, without the
 * advice, changed nothing. */
typedef struct {
    char *base;
    size_t used, size;
} arena;

/* The head of an arena chunk: its size and how many of its trees are still
 * to be copied into the forest.  The copy of the chunk's last tree frees it
 * (mt_free_large), so the packed trees' memory goes back to the system as
 * the forest's fills, and a fit holds the forest's nodes about once instead
 * of twice (10 000 rows of a9a, 123 features, 100 trees: the peak went
 * from 5.7 GiB to about 3 GiB for 2.7 GiB of nodes). */
struct chunk {
    size_t bytes;
    size_t trees;
};

/* Room for the head at the start of a chunk, keeping the trees' regions
 * aligned to 64 bytes. */
#define MT_CHUNK_HEAD ((size_t)64)

/* The chunks' pages are returned to the system as they are freed
 * (mt_free_large) when they hold at least this much; below, a plain free
 * lets the allocator keep them for the next allocations, which then need
 * no fresh pages: growing 50 trees on the CPU data (0.2 GB of chunks) took
 * 0.12-0.13 s instead of 0.14-0.15 s when fits repeat in a process, its
 * peak holding those 0.2 GB twice. */
#define MT_RELEASE_BYTES ((size_t)256 << 20)

#define MT_ARENA_CHUNK ((size_t)4 << 20)

/* Nodes a thread's scratch reserves at first (it grows to the largest tree
 * the thread meets): a tree grown to about the scale of the data (the
 * path's λ₀) has some 17 leaves, 33 nodes. */
#define MT_SCRATCH_NODES 64

#define MT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MT_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Merge four rows into the box [lo, hi]: they are reduced together before
 * they meet the running box (updating lo/hi row by row makes every row's
 * update wait on the previous row's store to the same place). */
static inline void merge4(const double *restrict r0, const double *restrict r1,
                          const double *restrict r2, const double *restrict r3, size_t d,
                          double *restrict lo, double *restrict hi)
{
    for (size_t k = 0; k < d; ++k) {
        double a = MT_MIN(r0[k], r1[k]), b = MT_MIN(r2[k], r3[k]);
        double p = MT_MAX(r0[k], r1[k]), q = MT_MAX(r2[k], r3[k]);
        double m = MT_MIN(a, b), x = MT_MAX(p, q);
        lo[k] = MT_MIN(m, lo[k]);
        hi[k] = MT_MAX(x, hi[k]);
    }
}

static inline void merge1(const double *restrict row, size_t d, double *restrict lo,
                          double *restrict hi)
{
    for (size_t k = 0; k < d; ++k) {
        lo[k] = MT_MIN(row[k], lo[k]);
        hi[k] = MT_MAX(row[k], hi[k]);
    }
}

/* Row i of a node's points: rows[perm[i]] with `gather` (the rows in their
 * own order), else rows[i] (the rows in perm's order). */
static inline const double *row_at(const double *rows, const mt_index *perm, size_t d,
                                   size_t i, int gather)
{
    return rows + (gather ? (size_t)perm[i] : i) * d;
}

/* Bounding box [lo, hi] of a node's points, positions start..end-1
 * (end > start), four rows at a time. */
static void node_box(const double *restrict rows, const mt_index *restrict perm, size_t d,
                     size_t start, size_t end, int gather, double *restrict lo,
                     double *restrict hi)
{
    const double *row = row_at(rows, perm, d, start, gather);
    size_t i = start + 1;
    for (size_t k = 0; k < d; ++k) {
        lo[k] = row[k];
        hi[k] = row[k];
    }
    for (; i + 4 <= end; i += 4) {
        merge4(row_at(rows, perm, d, i, gather), row_at(rows, perm, d, i + 1, gather),
               row_at(rows, perm, d, i + 2, gather), row_at(rows, perm, d, i + 3, gather), d,
               lo, hi);
    }
    for (; i < end; ++i) {
        merge1(row_at(rows, perm, d, i, gather), d, lo, hi);
    }
}

/*
 * Points of at most this many bytes stay where they are and only perm
 * moves; coordinates are read through perm -- cheap while the points sit
 * in the caches, and no copy of the points per tree.  Above, the rows
 * travel with perm.  With thinning, a node's pass reads one coordinate per
 * point, so reading through perm pays on more points than when every
 * node's box was merged from whole rows (the bound was 512 KB then).
 * Measured (two threads): the CPU data (1.1 MB) 36-39 ms moving rows,
 * 28-36 ms not; 20000 x 8 (1.3 MB) 0.39 vs 0.37 s; 10^5 x 8 (6.4 MB)
 * 0.81-1.03 s moving, 1.11-1.13 s not.
 */
#define MT_GATHER_BYTES (2 * 1024 * 1024)

/* Points whose extent is tried before all of a node's (see grow_stack). */
#define MT_PROBE 8

/* Nodes of at most this many points get their exact box when they are
 * reached (see grow_stack). */
#define MT_SMALL_NODE 16

/* The coordinate k of position i of a node's points. */
static inline double coord(const double *restrict rows, const mt_index *restrict perm, size_t d,
                           size_t i, size_t k, int gather)
{
    return row_at(rows, perm, d, i, gather)[k];
}

/* [*lo, *hi] = the extent of coordinate k over positions st..e-1 (e > st),
 * in four running extremes (one min/max chain through every point waits
 * on each step's latency). */
static void extent(const double *restrict rows, const mt_index *restrict perm, size_t d,
                   size_t st, size_t e, size_t k, int gather, double *lo, double *hi)
{
    double l[4], u[4];
    size_t i = st + 1;
    l[0] = u[0] = coord(rows, perm, d, st, k, gather);
    for (int q = 1; q < 4; ++q) {
        l[q] = l[0];
        u[q] = u[0];
    }
    for (; i + 4 <= e; i += 4) {
        for (int q = 0; q < 4; ++q) {
            double v = coord(rows, perm, d, i + (size_t)q, k, gather);
            l[q] = MT_MIN(v, l[q]);
            u[q] = MT_MAX(v, u[q]);
        }
    }
    for (; i < e; ++i) {
        double v = coord(rows, perm, d, i, k, gather);
        l[0] = MT_MIN(v, l[0]);
        u[0] = MT_MAX(v, u[0]);
    }
    *lo = MT_MIN(MT_MIN(l[0], l[1]), MT_MIN(l[2], l[3]));
    *hi = MT_MAX(MT_MAX(u[0], u[1]), MT_MAX(u[2], u[3]));
}

/*
 * Partition positions st..e-1 on x_dim <= a (those first; perm, and the
 * rows unless `gather`, are permuted), returning the first position of the
 * right side, with the largest coordinate dim on the left (*lmax) and the
 * smallest on the right (*rmin); both sides are non-empty.  The classic
 * two-pointer swaps: each point is compared once, and the swaps do not
 * depend on `gather`.  (A stable partition without branches, every index
 * written to both sides' next places and only the counts depending on the
 * comparison, was 25 % slower on the CPU data than these swaps, although
 * their branch is a coin flip at a random cut.)
 */
static size_t partition(double *restrict rows, mt_index *restrict perm, size_t d, size_t st,
                        size_t e, size_t dim, double a, int gather, double *lmax, double *rmin)
{
    size_t i = st, last = e;
    double lm = -INFINITY, rm = INFINITY;
    while (i < last) {
        double v = coord(rows, perm, d, i, dim, gather);
        if (v <= a) {
            lm = MT_MAX(v, lm);
            ++i;
            continue;
        }
        rm = MT_MIN(v, rm);
        --last;
        mt_index tmp = perm[i];
        perm[i] = perm[last];
        perm[last] = tmp;
        if (!gather) {
            double *row = rows + i * d, *other = rows + last * d;
            for (size_t k = 0; k < d; ++k) {
                double x = row[k];
                row[k] = other[k];
                other[k] = x;
            }
        }
    }
    *lmax = lm;
    *rmin = rm;
    return i;
}

/* Uniform on the open interval (0, 1), from 53 random bits. */
static inline double open_uniform(bitgen_t *rng)
{
    return ((double)(rng->next_uint64(rng->state) >> 11) + 0.5) * 0x1.0p-53;
}

/* Room in s->exact for the scratch tree's node capacity. */
static int reserve_exact(scratch *s)
{
    const size_t cap = s->tree.node_capacity, d = s->tree.n_features;
    if (cap <= s->exact_nodes) {
        return MT_OK;
    }
    if (d > 0 && cap > SIZE_MAX / d) {
        return MT_ERR_OVERFLOW;
    }
    unsigned char *p = realloc(s->exact, cap * d > 0 ? cap * d : 1);
    if (p == NULL) {
        return MT_ERR_NOMEM;
    }
    s->exact = p;
    s->exact_nodes = cap;
    return MT_OK;
}

/*
 * Split-or-stop for every node on the stack and, recursively, its children
 * (thinning, see above; node boxes hold bounds, s->exact says which sides
 * are exact).  A node's clock starts at max(parent's split time, t_resume).
 * Unless `gather`, `rows` holds the points in perm's order
 * (rows[i] = X[perm[i]]) and is permuted with it; with `gather` it holds
 * them in their own order (rows[k] = X[k]) and stays as it is.
 */
static int grow_stack(scratch *s, double *restrict rows, size_t d,
                      double lifetime, double t_resume, bitgen_t *rng,
                      mt_index *stack, size_t n_stack, int gather)
{
    mt_forest *t = &s->tree;
    while (n_stack > 0) {
        mt_index j = stack[--n_stack];
        double *lo = t->lower + (size_t)j * d;
        double *hi = t->upper + (size_t)j * d;
        unsigned char *ex = s->exact + (size_t)j * d;
        const size_t st = (size_t)t->start[j], e = (size_t)t->end[j];
        mt_index p = t->parent[j];
        double time = p == MT_NONE ? 0.0 : t->tau[p];
        size_t dim = d;
        double a = 0.0;
        time = time > t_resume ? time : t_resume;
        if (e - st <= MT_SMALL_NODE) {
            /* A few points: their box outright (a bound would draw
             * candidates that miss, and scans, up to D of them). */
            node_box(rows, s->perm, d, st, e, gather, lo, hi);
            memset(ex, 1, d);
        }
        for (;;) {
            double linear = 0.0;
            for (size_t k = 0; k < d; ++k) {
                linear += hi[k] - lo[k];
            }
            if (!(linear > 0.0)) {
                break; /* all points coincide: the node never splits */
            }
            time -= log(open_uniform(rng)) / linear;
            if (!(time <= lifetime)) {
                break; /* still a leaf at the lifetime: tau stays +inf */
            }
            /* Dimension with probability proportional to its extent. */
            double r = rng->next_double(rng->state) * linear, acc = 0.0;
            dim = d;
            for (size_t k = 0; k < d; ++k) {
                double ext = hi[k] - lo[k];
                acc += ext;
                if (ext > 0.0) {
                    dim = k;
                    if (r < acc) {
                        break;
                    }
                }
            }
            double l = lo[dim], u = hi[dim];
            a = l + rng->next_double(rng->state) * (u - l);
            if (ex[dim]) {
                /* Exact: a draw that rounds up to u is redrawn, so that both
                 * children are non-empty. */
                while (!(a < u)) {
                    a = l + rng->next_double(rng->state) * (u - l);
                }
                break;
            }
            /* A cut between two of the node's points separates them: the
             * first few points' extent settles most candidates of a large
             * node without a pass over all of them. */
            extent(rows, s->perm, d, st, st + MT_MIN(e - st, MT_PROBE), dim, gather, &l, &u);
            if (l <= a && a < u) {
                break;
            }
            extent(rows, s->perm, d, st, e, dim, gather, &l, &u);
            lo[dim] = l;
            hi[dim] = u;
            ex[dim] = 1;
            if (l <= a && a < u) {
                break; /* the candidate separates the points */
            }
            dim = d; /* it does not: the clock goes on from `time` */
        }
        if (dim == d) {
            continue; /* no separating cut before the lifetime */
        }

        /* Partition perm[start:end] (and the rows with it) in place:
         * x_dim <= a first.  Both sides are non-empty (l <= a < u).  The
         * children are appended first (the node arrays may move). */
        mt_index left, right;
        int status;
        if ((status = mt_forest_append_node(t, 0, j, (mt_index)st, (mt_index)st, &left)) != MT_OK ||
            (status = mt_forest_append_node(t, 0, j, (mt_index)st, (mt_index)e, &right)) !=
                MT_OK ||
            (status = reserve_exact(s)) != MT_OK) {
            return status;
        }
        double lmax, rmin;
        size_t i = partition(rows, s->perm, d, st, e, dim, a, gather, &lmax, &rmin);
        /* The children's bounds: the node's, cut at the points' extremes on
         * either side of a; exact in the split dimension if the node's is
         * (the outer sides are the node's: a cut taken on the first points'
         * extent leaves them bounds), in no other. */
        double *plo = t->lower + (size_t)j * d, *phi = t->upper + (size_t)j * d;
        double *llo = t->lower + (size_t)left * d, *lhi = t->upper + (size_t)left * d;
        double *rlo = t->lower + (size_t)right * d, *rhi = t->upper + (size_t)right * d;
        memcpy(llo, plo, d * sizeof(double));
        memcpy(lhi, phi, d * sizeof(double));
        memcpy(rlo, plo, d * sizeof(double));
        memcpy(rhi, phi, d * sizeof(double));
        lhi[dim] = lmax;
        rlo[dim] = rmin;
        unsigned char *lex = s->exact + (size_t)left * d, *rex = s->exact + (size_t)right * d;
        const unsigned char split_exact = s->exact[(size_t)j * d + dim];
        memset(lex, 0, d);
        memset(rex, 0, d);
        lex[dim] = split_exact;
        rex[dim] = split_exact;
        t->end[left] = (mt_index)i;
        t->start[right] = (mt_index)i;
        t->left[j] = left;
        t->right[j] = right;
        t->feature[j] = (mt_index)dim;
        t->threshold[j] = a;
        t->tau[j] = time;
        stack[n_stack++] = right;
        stack[n_stack++] = left;
    }
    return MT_OK;
}

/* Replace every bound by the data box: a leaf's from its points (unless
 * every side is exact), an internal node's as the union of its children's
 * (children have larger ids, so a reverse sweep finishes them first). */
static void finish_boxes(scratch *s, const double *restrict rows, size_t d, int gather)
{
    mt_forest *t = &s->tree;
    for (size_t j = t->n_nodes; j-- > 0;) {
        double *lo = t->lower + j * d, *hi = t->upper + j * d;
        mt_index l = t->left[j], r = t->right[j];
        if (l != MT_NONE) {
            const double *llo = t->lower + (size_t)l * d, *lhi = t->upper + (size_t)l * d;
            const double *rlo = t->lower + (size_t)r * d, *rhi = t->upper + (size_t)r * d;
            for (size_t k = 0; k < d; ++k) {
                lo[k] = MT_MIN(llo[k], rlo[k]);
                hi[k] = MT_MAX(lhi[k], rhi[k]);
            }
            continue;
        }
        const unsigned char *ex = s->exact + j * d;
        size_t k = 0;
        while (k < d && ex[k]) {
            ++k;
        }
        if (k == d) {
            continue;
        }
        node_box(rows, s->perm, d, (size_t)t->start[j], (size_t)t->end[j], gather, lo, hi);
    }
}

/* Initialise a thread's scratch (nodes reserved later); perm is pointed at
 * each tree's row of the forest in turn. */
static int scratch_init(scratch *s, size_t d)
{
    s->perm = NULL;
    s->exact = NULL;
    s->exact_nodes = 0;
    return mt_forest_init(&s->tree, 1, d);
}

static void scratch_free(scratch *s)
{
    mt_forest_free(&s->tree);
    free(s->exact);
    s->perm = NULL;
    s->exact = NULL;
    s->exact_nodes = 0;
}

/* Grow a tree from its root on all n points, whose rows are `rows` (in
 * their order: perm starts as the identity; with `gather` they stay so). */
static int scratch_fit(scratch *s, double *rows, size_t n, size_t d,
                       double lifetime, bitgen_t *rng, mt_index *stack, int gather)
{
    mt_index root;
    int status;
    if ((status = mt_forest_reserve_nodes(&s->tree, MT_SCRATCH_NODES)) != MT_OK ||
        (status = mt_forest_append_node(&s->tree, 0, MT_NONE, 0, (mt_index)n, &root)) != MT_OK ||
        (status = reserve_exact(s)) != MT_OK) {
        return status;
    }
    for (size_t i = 0; i < n; ++i) {
        s->perm[i] = (mt_index)i;
    }
    node_box(rows, s->perm, d, 0, n, gather, s->tree.lower, s->tree.upper);
    memset(s->exact, 1, d);
    stack[0] = root;
    if ((status = grow_stack(s, rows, d, lifetime, 0.0, rng, stack, 1, gather)) != MT_OK) {
        return status;
    }
    finish_boxes(s, rows, d, gather);
    return MT_OK;
}

/* Copy tree m of f into the scratch, in local ids (every box exact); its
 * permutation is the forest's row (s->perm), permuted in place. */
static int scratch_load(scratch *s, const mt_forest *f, size_t m)
{
    const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
    const size_t n = (size_t)(hi - lo), d = f->n_features;
    mt_forest *t = &s->tree;
    int status = mt_forest_reserve_nodes(t, n < MT_SCRATCH_NODES / 2 ? MT_SCRATCH_NODES : 2 * n);
    if (status != MT_OK || (status = reserve_exact(s)) != MT_OK) {
        return status;
    }
    for (size_t j = 0; j < n; ++j) {
        size_t g = (size_t)lo + j;
        t->tree_of[j] = 0;
        t->parent[j] = f->parent[g] == MT_NONE ? MT_NONE : f->parent[g] - lo;
        t->left[j] = f->left[g] == MT_NONE ? MT_NONE : f->left[g] - lo;
        t->right[j] = f->right[g] == MT_NONE ? MT_NONE : f->right[g] - lo;
    }
    memcpy(t->feature, f->feature + lo, n * sizeof(mt_index));
    memcpy(t->start, f->start + lo, n * sizeof(mt_index));
    memcpy(t->end, f->end + lo, n * sizeof(mt_index));
    memcpy(t->threshold, f->threshold + lo, n * sizeof(double));
    memcpy(t->tau, f->tau + lo, n * sizeof(double));
    memcpy(t->lower, f->lower + (size_t)lo * d, n * d * sizeof(double));
    memcpy(t->upper, f->upper + (size_t)lo * d, n * d * sizeof(double));
    memset(s->exact, 1, n * d);
    t->n_nodes = n;
    t->node_offset[1] = (mt_index)n;
    return MT_OK;
}

/* Continue a loaded tree from `from` to `lifetime`; `rows` (n x d) is
 * scratch, filled here with X's rows in the tree's permutation order
 * (with `gather`, X itself is read through perm and rows is not used). */
static int scratch_extend(scratch *s, const double *X, size_t n, size_t d, double from,
                          double lifetime, bitgen_t *rng, mt_index *stack, double *rows,
                          int gather)
{
    size_t n_stack = 0;
    int status;
    if (gather) {
        rows = (double *)X; /* read only: the gathering partition moves perm alone */
    } else {
        for (size_t i = 0; i < n; ++i) {
            memcpy(rows + i * d, X + (size_t)s->perm[i] * d, d * sizeof(double));
        }
    }
    /* Push the leaves in reverse id order so that they are popped in order. */
    for (size_t j = s->tree.n_nodes; j-- > 0;) {
        if (s->tree.left[j] == MT_NONE) {
            stack[n_stack++] = (mt_index)j;
        }
    }
    if ((status = grow_stack(s, rows, d, lifetime, from, rng, stack, n_stack, gather)) !=
        MT_OK) {
        return status;
    }
    finish_boxes(s, rows, d, gather);
    return MT_OK;
}

/* Keep the tree grown in the scratch: its nodes at their exact size.  The
 * scratch is then free for the thread's next tree, so a forest of M trees
 * holds M exact trees while it grows, not M scratches with room to spare. */
static int pack(const scratch *s, packed *p, arena *a, size_t d)
{
    const mt_forest *t = &s->tree;
    const size_t k = t->n_nodes;
    /* fits: the forest will hold as much; rounded up to 64 bytes, so that
     * the next tree's region starts aligned */
    const size_t bytes =
        (k * (6 * sizeof(mt_index) + 2 * sizeof(double) + 2 * d * sizeof(double)) + 63) &
        ~(size_t)63;
    p->block = NULL;
    if (a->size - a->used < bytes) {
        /* fits: bytes is below what the forest will hold.  Whole huge
         * pages (mt_alloc_large aligns the chunk to one), so that every
         * page of the chunk can be a huge page. */
        if (bytes > SIZE_MAX - MT_HUGE_PAGE - MT_CHUNK_HEAD) {
            return MT_ERR_OVERFLOW;
        }
        const size_t want = MT_CHUNK_HEAD + bytes > MT_ARENA_CHUNK ? MT_CHUNK_HEAD + bytes
                                                                   : MT_ARENA_CHUNK;
        const size_t size = (want + MT_HUGE_PAGE - 1) & ~(MT_HUGE_PAGE - 1);
        char *chunk = mt_alloc_large(size);
        if (chunk == NULL) {
            return MT_ERR_NOMEM;
        }
        ((struct chunk *)(void *)chunk)->bytes = size;
        ((struct chunk *)(void *)chunk)->trees = 0;
        a->base = chunk;
        a->used = MT_CHUNK_HEAD;
        a->size = size;
        p->block = chunk;
    }
    char *at = a->base + a->used;
    a->used += bytes;
    p->n_nodes = k;
    p->chunk = (struct chunk *)(void *)a->base;
    p->chunk->trees += 1;
#define MT_TAKE(field, type, count)                                                        \
    do {                                                                                   \
        p->field = (type *)(void *)at;                                                     \
        memcpy(at, t->field, (count) * sizeof(type));                                      \
        at += (count) * sizeof(type);                                                      \
    } while (0)
    /* doubles first: every array stays aligned for its type */
    MT_TAKE(threshold, double, k);
    MT_TAKE(tau, double, k);
    MT_TAKE(lower, double, k * d);
    MT_TAKE(upper, double, k * d);
    MT_TAKE(parent, mt_index, k);
    MT_TAKE(left, mt_index, k);
    MT_TAKE(right, mt_index, k);
    MT_TAKE(feature, mt_index, k);
    MT_TAKE(start, mt_index, k);
    MT_TAKE(end, mt_index, k);
#undef MT_TAKE
    return MT_OK;
}

/* Copy tree m's n nodes (local ids, in the given arrays) into f from
 * global id lo on (room reserved). */
static void store_nodes(mt_forest *f, size_t m, mt_index lo, size_t n, const mt_index *parent,
                        const mt_index *left, const mt_index *right, const mt_index *feature,
                        const mt_index *start, const mt_index *end, const double *threshold,
                        const double *tau, const double *lower, const double *upper)
{
    const size_t d = f->n_features;
    for (size_t j = 0; j < n; ++j) {
        size_t g = (size_t)lo + j;
        f->tree_of[g] = (mt_index)m;
        f->parent[g] = parent[j] == MT_NONE ? MT_NONE : parent[j] + lo;
        f->left[g] = left[j] == MT_NONE ? MT_NONE : left[j] + lo;
        f->right[g] = right[j] == MT_NONE ? MT_NONE : right[j] + lo;
    }
    memcpy(f->feature + lo, feature, n * sizeof(mt_index));
    memcpy(f->start + lo, start, n * sizeof(mt_index));
    memcpy(f->end + lo, end, n * sizeof(mt_index));
    memcpy(f->threshold + lo, threshold, n * sizeof(double));
    memcpy(f->tau + lo, tau, n * sizeof(double));
    memcpy(f->lower + (size_t)lo * d, lower, n * d * sizeof(double));
    memcpy(f->upper + (size_t)lo * d, upper, n * d * sizeof(double));
}

/* Copy packed tree m into dst from global id lo on (room reserved). */
static void packed_store(const packed *p, mt_forest *dst, size_t m, mt_index lo)
{
    store_nodes(dst, m, lo, p->n_nodes, p->parent, p->left, p->right, p->feature, p->start,
                p->end, p->threshold, p->tau, p->lower, p->upper);
}

/* Copy the tree grown in the scratch into f as tree m, its nodes from
 * global id lo on (room reserved); the tree's permutation is f's own row
 * already (a fit). */
static void scratch_store(const scratch *s, mt_forest *f, size_t m, mt_index lo)
{
    const mt_forest *t = &s->tree;
    store_nodes(f, m, lo, t->n_nodes, t->parent, t->left, t->right, t->feature, t->start,
                t->end, t->threshold, t->tau, t->lower, t->upper);
}

/* Whether every leaf of the scratch's tree holds one point, or points that
 * coincide: the tree has split as far as its points allow, and no tree on
 * those points has more nodes (every split separates points). */
static int fully_split(const scratch *s)
{
    const mt_forest *t = &s->tree;
    const size_t d = t->n_features;
    for (size_t j = 0; j < t->n_nodes; ++j) {
        if (t->left[j] != MT_NONE || t->end[j] - t->start[j] <= 1) {
            continue;
        }
        for (size_t k = 0; k < d; ++k) {
            if (t->upper[j * d + k] > t->lower[j * d + k]) {
                return 0;
            }
        }
    }
    return 1;
}

/* Move tree m's k nodes, stored from global id `from`, down to `to`
 * (to < from; ranges may overlap), its links renumbered. */
static void move_tree_down(mt_forest *f, size_t k, size_t from, size_t to)
{
    const size_t d = f->n_features;
    const mt_index shift = (mt_index)(from - to);
    for (size_t j = 0; j < k; ++j) { /* ascending: each read precedes its overwrite */
        const mt_index p = f->parent[from + j], l = f->left[from + j], r = f->right[from + j];
        f->tree_of[to + j] = f->tree_of[from + j];
        f->parent[to + j] = p == MT_NONE ? MT_NONE : p - shift;
        f->left[to + j] = l == MT_NONE ? MT_NONE : l - shift;
        f->right[to + j] = r == MT_NONE ? MT_NONE : r - shift;
    }
    memmove(f->feature + to, f->feature + from, k * sizeof(mt_index));
    memmove(f->start + to, f->start + from, k * sizeof(mt_index));
    memmove(f->end + to, f->end + from, k * sizeof(mt_index));
    memmove(f->threshold + to, f->threshold + from, k * sizeof(double));
    memmove(f->tau + to, f->tau + from, k * sizeof(double));
    memmove(f->lower + to * d, f->lower + from * d, k * d * sizeof(double));
    memmove(f->upper + to * d, f->upper + from * d, k * d * sizeof(double));
}

/* Room in `into` for the first thread's direct stores of M trees on n
 * points (see grow_forest), from an estimate of a tree's nodes (a fit: tree
 * 0's size; an extension: the mean tree's size times tree 0's growth):
 * twice as many a tree, at least MT_SCRATCH_NODES and at most the 2n - 1
 * nodes a tree on n points can have (every split separates points).
 * Returns whether the room is there (false if it overflows or cannot be
 * allocated: the trees are then packed). */
static int reserve_room(mt_forest *into, double per_tree, size_t M, size_t n)
{
    double per = 2.0 * per_tree;
    size_t total;
    per = per > (double)MT_SCRATCH_NODES ? per : (double)MT_SCRATCH_NODES;
    per = per < (double)(2 * n - 1) ? per : (double)(2 * n - 1); /* the forest holds n */
    return mt_mul_size((size_t)per, M, &total) == MT_OK &&
           mt_forest_reserve_nodes(into, total) == MT_OK;
}

/* Exchange the node arrays (and their capacity) of a and b. */
static void swap_nodes(mt_forest *a, mt_forest *b)
{
    mt_index **links[] = {&a->tree_of, &b->tree_of, &a->parent, &b->parent, &a->left,
                          &b->left, &a->right, &b->right, &a->feature, &b->feature,
                          &a->start, &b->start, &a->end, &b->end};
    double **values[] = {&a->threshold, &b->threshold, &a->tau, &b->tau,
                         &a->lower, &b->lower, &a->upper, &b->upper};
    for (size_t q = 0; q < sizeof(links) / sizeof(links[0]); q += 2) {
        mt_index *t = *links[q];
        *links[q] = *links[q + 1];
        *links[q + 1] = t;
    }
    for (size_t q = 0; q < sizeof(values) / sizeof(values[0]); q += 2) {
        double *t = *values[q];
        *values[q] = *values[q + 1];
        *values[q + 1] = t;
    }
    const size_t c = a->node_capacity;
    a->node_capacity = b->node_capacity;
    b->node_capacity = c;
}

/* How a fit stores its trees (see grow_forest). */
enum { MT_STORE_UNDECIDED, MT_STORE_BOUND, MT_STORE_FRONT };

/* Fit (extend == 0) or extend every tree, then store them in f. */
static int grow_forest(mt_forest *f, double lifetime, bitgen_t *const *rngs,
                       int n_threads, int extend, size_t spare)
{
    const size_t M = f->n_trees, n = f->n_points, d = f->n_features;
    const ptrdiff_t count = (ptrdiff_t)M;
    const int nt = n_threads > 0 ? n_threads : 1;
    packed *trees = NULL;
    mt_forest room; /* an extension's new node arrays (see below) */
    size_t total = 0;
    int status = MT_OK;
    memset(&room, 0, sizeof(room));
    if (n == 0 || f->X == NULL || !(lifetime >= 0.0) || isinf(lifetime) ||
        (extend && (f->n_nodes == 0 || lifetime < f->lifetime))) {
        return MT_ERR_ARG;
    }
    trees = calloc(M, sizeof(packed)); /* M * sizeof fits: node_offset has M + 1 */
    /* A forest with a scale and no rotations: every tree sees the same
     * points X / l, divided once here (n * d doubles, as the forest's X)
     * rather than once per tree (on the CPU data's 6554 x 21 points, 350
     * trees: 20 % of the fit). */
    const int rotated = f->rotation != NULL;
    double *shared = !rotated && f->scale != NULL ? malloc(n * d * sizeof(double)) : NULL;
    if (trees == NULL || (!rotated && f->scale != NULL && shared == NULL)) {
        free(trees);
        free(shared);
        return MT_ERR_NOMEM;
    }
    if (shared != NULL) {
        mt_forest_transform(f, 0, f->X, n, shared);
    }
    double *const points = shared != NULL ? shared : f->X;
    if (!extend) {
        /* A fit replaces the trees (and permutes the forest's perm rows as
         * it goes): they are discarded now, so that a fit that fails leaves
         * a forest without trees rather than stale ones. */
        mt_forest_clear_nodes(f);
    }
    (void)nt;
    /* Points in the L2 cache: partition indices and gather (see above). */
    const int gather = n * d * sizeof(double) <= MT_GATHER_BYTES;
    /* Each thread's scratch, allocated once per thread, not per tree: the
     * tree it grows (node storage reused from tree to tree), a stack (at
     * most one entry per leaf, and a tree has at most n leaves), the
     * points' rows in the order of the tree it grows and, for a rotated
     * forest that is extended, the points in the coordinates of the tree
     * (n * d doubles fit: the forest's X holds as many). */
    /* Trees are taken in two directions: the first thread takes them from
     * the front (0, 1, 2, ...), the others from the back, and in a fit the
     * grown trees are copied from the scratches straight into f's node
     * arrays where their place is known (f has no nodes during a fit:
     * mt_forest_clear_nodes), the others packed, to be stored at their offsets
     * once every tree is grown.  The first thread decides how after its
     * first tree, tree 0, of k0 nodes:
     *  - tree 0 split as far as its points allow (fully_split): no tree has
     *    more than k0 nodes, so every thread stores tree m from node m * k0
     *    on (room for M * k0 nodes); trees of fewer nodes are moved down
     *    into place at the end (move_tree_down), which trees grown to
     *    their leaves seldom need;
     *  - else the first thread's trees, a prefix of the forest whose
     *    offsets it knows as it goes, while they have room (reserved from
     *    k0, reserve_room); the other threads pack theirs.
     * Trees grown before the decision are packed.  Each tree draws from
     * its own stream, so the trees do not depend on who grows them (see
     * the top of the file for what this saves).
     * An extension reads every old tree from f while it grows, so its
     * first thread stores its trees (a prefix again) into fresh node
     * arrays, `room`, reserved after tree 0 from its growth
     * (reserve_room); they become f's once every tree is stored, and
     * f's old arrays are freed.  Until then f's nodes are untouched: an
     * extension that fails leaves its trees as they were. */
    const size_t capacity_before = f->node_capacity;
    const int room_ok = extend && mt_forest_init(&room, M, d) == MT_OK;
    size_t front_next = 0, back_next = M, used = 0;
    mt_index front_nodes = 0;
    int mode = MT_STORE_UNDECIDED, front_direct = 0;
    size_t per_tree = 0;
    for (size_t m = 0; m < M; ++m) {
        trees[m].at = SIZE_MAX;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(min : status)
#endif
    {
        scratch work;
        arena packs = {NULL, 0, 0};
        int front = 1;
#ifdef _OPENMP
        front = omp_get_thread_num() == 0;
#endif
        int ok = scratch_init(&work, d) == MT_OK;
        mt_index *stack = malloc((n + 1) * sizeof(mt_index));
        double *rows = malloc(n * d * sizeof(double));
        double *Z = rotated && extend ? malloc(n * d * sizeof(double)) : NULL;
        ok = ok && stack != NULL && rows != NULL && (!rotated || !extend || Z != NULL);
        for (;;) {
            ptrdiff_t m = -1;
#ifdef _OPENMP
#pragma omp critical(mt_grow_take)
#endif
            {
                if (front_next < back_next) {
                    m = (ptrdiff_t)(front ? front_next++ : --back_next);
                }
            }
            if (m < 0) {
                break;
            }
            const double *X = points;
            int s = ok ? MT_OK : MT_ERR_NOMEM;
            work.tree.n_nodes = 0;
            work.tree.node_offset[1] = 0;
            /* A fit and an extension permute the tree's own row of f's perm
             * in place (see grow.h for what that means when one fails). */
            work.perm = mt_forest_perm(f, (size_t)m);
            if (s == MT_OK && !extend) {
                /* the rows in their own order (perm starts as the identity),
                 * in the tree's coordinates for a rotated forest; gathered
                 * from the (scaled) points themselves when they are small
                 * and not rotated */
                double *src = rows;
                if (rotated) {
                    mt_forest_transform(f, (size_t)m, f->X, n, rows);
                } else if (gather) {
                    src = points;
                } else {
                    memcpy(rows, points, n * d * sizeof(double));
                }
                s = scratch_fit(&work, src, n, d, lifetime, rngs[m], stack, gather);
            } else if (s == MT_OK) {
                if (Z != NULL) {
                    mt_forest_transform(f, (size_t)m, f->X, n, Z);
                    X = Z;
                }
                s = scratch_load(&work, f, (size_t)m);
                if (s == MT_OK) {
                    s = scratch_extend(&work, X, n, d, f->lifetime, lifetime, rngs[m], stack,
                                       rows, gather);
                }
            }
            const size_t k = work.tree.n_nodes;
            if (s == MT_OK && front && m == 0) {
                /* The decision.  The arrays are reserved before it is
                 * published, and never again until every tree is grown. */
                int bound = 0;
                if (extend) {
                    /* tree 0 had at least its root */
                    const double grew =
                        (double)k / (double)(f->node_offset[1] - f->node_offset[0]);
                    front_direct =
                        room_ok && reserve_room(&room, (double)f->n_nodes / (double)M * grew,
                                                M, n);
                } else {
                    size_t all;
                    bound = fully_split(&work) && mt_mul_size(k, M, &all) == MT_OK &&
                            mt_forest_reserve_nodes(f, all) == MT_OK;
                    if (bound) {
                        per_tree = k;
                    } else {
                        front_direct = reserve_room(f, (double)k, M, n);
                    }
                }
#ifdef _OPENMP
#pragma omp atomic write seq_cst
#endif
                mode = bound ? MT_STORE_BOUND : MT_STORE_FRONT;
            }
            int now;
#ifdef _OPENMP
#pragma omp atomic read seq_cst
#endif
            now = mode;
            if (s == MT_OK && now == MT_STORE_BOUND && k <= per_tree) {
                /* k > per_tree cannot happen on axis-aligned trees (see
                 * fully_split), but a rotation may round two points of
                 * tree 0 to the same coordinates and not in another tree:
                 * such a tree is packed.  m * per_tree < M * per_tree. */
                trees[m].at = (size_t)m * per_tree;
                trees[m].n_nodes = k;
                scratch_store(&work, f, (size_t)m, (mt_index)trees[m].at);
                continue;
            }
            if (s == MT_OK && now == MT_STORE_FRONT && front && front_direct) {
                /* the front's trees are m = 0, 1, ... in turn: this one
                 * follows the last stored, if there is room for it */
                mt_forest *into = extend ? &room : f;
                front_direct = k <= into->node_capacity - (size_t)front_nodes;
                if (front_direct) {
                    trees[m].at = (size_t)front_nodes;
                    trees[m].n_nodes = k;
                    scratch_store(&work, into, (size_t)m, front_nodes);
                    front_nodes += (mt_index)k;
                    continue;
                }
            }
            if (s == MT_OK) {
                s = pack(&work, &trees[m], &packs, d);
            }
            status = s < status ? s : status;
        }
        free(Z);
        free(rows);
        free(stack);
        scratch_free(&work);
    }
    if (status != MT_OK) {
        goto cleanup;
    }
    /* The arrays the trees go to: f's, or an extension's room if any tree
     * is stored there already. */
    mt_forest *dst = f;
    for (size_t m = 0; m < M; ++m) {
        total += trees[m].n_nodes;
        dst = extend && trees[m].at != SIZE_MAX ? &room : dst;
    }
    /* The offsets, and the trees stored directly moved into place (in
     * order: a tree moves down past room that earlier trees no longer
     * need and later ones do not use yet).  f's node_offset is written
     * once nothing can fail: an extension that fails leaves f's trees as
     * they were (grow.h). */
    for (size_t m = 0, lo = 0; m < M; lo += trees[m].n_nodes, ++m) {
        if (trees[m].at != SIZE_MAX) {
            if (trees[m].at != lo) {
                move_tree_down(dst, trees[m].n_nodes, trees[m].at, lo);
            }
            used = lo + trees[m].n_nodes;
        }
    }
    /* The only fallible step on f's visible content (a fit's trees stored
     * directly sit past its n_nodes = 0 until the end, an extension's in
     * the room).  The node arrays
     * end with room for total + spare nodes, or their capacity before the
     * fit if that was more: the room the direct stores reserved beyond is
     * cut (never written, so never committed), and before the arrays grow
     * they are cut to what is written, so that growing copies no untouched
     * room.  The spare room is a convenience (untouched, it is never
     * committed): without room for it, the exact size. */
    {
        const size_t want = spare <= SIZE_MAX - total ? total + spare : total;
        const size_t keep = MT_MAX(capacity_before, want);
        /* f's arrays, grown only, end with room for `want` nodes or their
         * capacity before; an extension's room, which replaces them, with
         * as much (`keep`) */
        const size_t need = dst == f ? want : keep;
        if (dst->node_capacity > keep) {
            mt_forest_shrink_nodes(dst, keep);
        } else if (dst->node_capacity < need) {
            mt_forest_shrink_nodes(dst, MT_MAX(dst == f ? capacity_before : 0, used));
        }
        status = mt_forest_reserve_nodes(dst, need);
        if (status == MT_ERR_NOMEM || status == MT_ERR_OVERFLOW) {
            status = mt_forest_reserve_nodes(dst, total);
        }
    }
    if (status != MT_OK) {
        goto cleanup;
    }
    f->node_offset[0] = 0;
    for (size_t m = 0; m < M; ++m) {
        f->node_offset[m + 1] = f->node_offset[m] + (mt_index)trees[m].n_nodes;
    }
    size_t held = 0;
    for (size_t m = 0; m < M; ++m) {
        held += trees[m].block != NULL ? trees[m].chunk->bytes : 0;
    }
    const int release = held >= MT_RELEASE_BYTES;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        if (trees[m].at != SIZE_MAX) {
            continue;
        }
        struct chunk *c = trees[m].chunk;
        size_t left;
        packed_store(&trees[m], dst, (size_t)m, f->node_offset[m]);
#ifdef _OPENMP
#pragma omp atomic capture
#endif
        left = --c->trees;
        if (left == 0) {
            if (release) {
                mt_free_large(c, c->bytes);
            } else {
                free(c);
            }
        }
    }
    /* every chunk was freed with its last tree */
    for (size_t m = 0; m < M; ++m) {
        trees[m].block = NULL;
    }
    if (dst != f) {
        swap_nodes(f, &room); /* the old arrays are freed with the room */
    }
    f->n_nodes = total;
    f->lifetime = lifetime;
    /* The trees are renumbered: columns follow global ids again. */
    free(f->key);
    f->key = NULL;
cleanup:
    for (size_t m = 0; m < M; ++m) {
        free(trees[m].block);
    }
    free(trees);
    free(shared);
    mt_forest_free(&room);
    return status;
}

/* A standard normal pair (Box-Muller) from two uniforms. */
static void normal_pair(bitgen_t *rng, double *z0, double *z1)
{
    const double two_pi = 6.283185307179586;
    double r = sqrt(-2.0 * log(open_uniform(rng)));
    double t = two_pi * rng->next_double(rng->state);
    *z0 = r * cos(t);
    *z1 = r * sin(t);
}

/* Sign of det(A) for A (d x d, row-major, overwritten) by Gaussian
 * elimination with partial pivoting: +1, -1, or 0 if singular. */
static int det_sign(double *A, size_t d)
{
    int sign = 1;
    for (size_t k = 0; k < d; ++k) {
        size_t p = k;
        for (size_t i = k + 1; i < d; ++i) {
            if (fabs(A[i * d + k]) > fabs(A[p * d + k])) {
                p = i;
            }
        }
        if (A[p * d + k] == 0.0) {
            return 0;
        }
        if (p != k) {
            for (size_t j = k; j < d; ++j) {
                double t = A[k * d + j];
                A[k * d + j] = A[p * d + j];
                A[p * d + j] = t;
            }
            sign = -sign;
        }
        if (A[k * d + k] < 0.0) {
            sign = -sign;
        }
        for (size_t i = k + 1; i < d; ++i) {
            double l = A[i * d + k] / A[k * d + k];
            for (size_t j = k + 1; j < d; ++j) {
                A[i * d + j] -= l * A[k * d + j];
            }
        }
    }
    return sign;
}

/*
 * One Haar rotation of SO(d) into Q (d x d, row-major), from rng; G is
 * scratch of d * d doubles.  The rows of V = G hold d Gaussian vectors
 * g_0..g_{d-1}; Gram-Schmidt (each vector orthogonalised twice against
 * the previous ones: "twice is enough", orthogonal to rounding) turns them
 * into q_0..q_{d-1}, the columns of the Q factor of [g_0 ... g_{d-1}] with
 * R's diagonal positive.  Q[b][a] = q_a[b].  A draw whose vectors are
 * numerically dependent (probability 0 in exact arithmetic) is redrawn.
 */
static int draw_rotation(bitgen_t *rng, size_t d, double *Q, double *G)
{
    for (;;) {
        size_t total = d * d, k = 0;
        for (; k + 1 < total; k += 2) {
            normal_pair(rng, &G[k], &G[k + 1]);
        }
        if (k < total) {
            double unused;
            normal_pair(rng, &G[k], &unused);
        }
        int ok = 1;
        for (size_t a = 0; a < d && ok; ++a) {
            double *v = G + a * d, norm0 = 0.0, norm = 0.0;
            for (size_t i = 0; i < d; ++i) {
                norm0 += v[i] * v[i];
            }
            for (int pass = 0; pass < 2; ++pass) {
                for (size_t b = 0; b < a; ++b) {
                    const double *u = G + b * d;
                    double dot = 0.0;
                    for (size_t i = 0; i < d; ++i) {
                        dot += u[i] * v[i];
                    }
                    for (size_t i = 0; i < d; ++i) {
                        v[i] -= dot * u[i];
                    }
                }
            }
            for (size_t i = 0; i < d; ++i) {
                norm += v[i] * v[i];
            }
            /* a vector nearly in the span of the previous ones: redraw */
            ok = norm > 1e-20 * norm0 && norm0 > 0.0;
            double inv = 1.0 / sqrt(norm);
            for (size_t i = 0; i < d && ok; ++i) {
                v[i] *= inv;
            }
        }
        if (!ok) {
            continue;
        }
        /* The sign of det[q_0 ... q_{d-1}], that of det[g_0 ... g_{d-1}]
         * (R's diagonal is positive), read off the orthonormal vectors,
         * where elimination is well conditioned; Q is the scratch. */
        memcpy(Q, G, total * sizeof(double));
        int sign = det_sign(Q, d);
        if (sign == 0) {
            continue;
        }
        if (sign < 0) {
            for (size_t i = 0; i < d; ++i) {
                G[(d - 1) * d + i] = -G[(d - 1) * d + i];
            }
        }
        for (size_t a = 0; a < d; ++a) {
            for (size_t b = 0; b < d; ++b) {
                Q[b * d + a] = G[a * d + b];
            }
        }
        return MT_OK;
    }
}

int mt_forest_draw_rotations(mt_forest *f, const double *center, bitgen_t *const *rngs,
                             int n_threads)
{
    const size_t M = f->n_trees, d = f->n_features;
    const ptrdiff_t count = (ptrdiff_t)M;
    size_t total;
    double *rotation, *c;
    int status = MT_OK;
    if (center == NULL) {
        return MT_ERR_ARG;
    }
    for (size_t k = 0; k < d; ++k) {
        if (!isfinite(center[k])) {
            return MT_ERR_ARG;
        }
    }
    if (mt_mul_size(d, d, &total) != MT_OK || mt_mul_size(total, M, &total) != MT_OK ||
        mt_mul_size(total, sizeof(double), &total) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    rotation = malloc(total > 0 ? total : 1);
    c = malloc(d * sizeof(double)); /* d * 8 fits: total does */
    if (rotation == NULL || c == NULL) {
        free(rotation);
        free(c);
        return MT_ERR_NOMEM;
    }
    memcpy(c, center, d * sizeof(double));
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1) reduction(min : status)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        double *G = malloc(d * d * sizeof(double));
        double *P = rotation + (size_t)m * d * d;
        int s = G == NULL ? MT_ERR_NOMEM : draw_rotation(rngs[m], d, P, G);
        free(G);
        /* the forest's scale folded in: P_m[b, a] = Q_m[b, a] / l_b */
        for (size_t b = 0; s == MT_OK && f->scale != NULL && b < d; ++b) {
            for (size_t a = 0; a < d; ++a) {
                P[b * d + a] /= f->scale[b];
            }
        }
        status = s < status ? s : status;
    }
    if (status != MT_OK) {
        free(rotation);
        free(c);
        return status;
    }
    mt_forest_drop_transform(f);
    f->rotation = rotation;
    f->center = c;
    return MT_OK;
}

int mt_forest_fit(mt_forest *f, double lifetime, bitgen_t *const *rngs, int n_threads,
                  size_t spare_nodes)
{
    return grow_forest(f, lifetime, rngs, n_threads, 0, spare_nodes);
}

int mt_forest_extend(mt_forest *f, double lifetime, bitgen_t *const *rngs, int n_threads)
{
    return grow_forest(f, lifetime, rngs, n_threads, 1, 0);
}
