/* insert.c -- insertion of new points into a grown forest (see insert.h). */
#include "insert.h"
#include "lookup.h"

#include <math.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Work below which a batch is inserted on one thread: every tree's node
 * and permutation entries copied, plus its walks (each point's gap to about
 * log2(nodes) boxes of D sides; mt_insert_work).  A unit costs some 40 ns
 * on one thread (one point into 50 trees of 13 000 nodes, 10^6 units: 43
 * ms), so this is about a millisecond.  It was 2^20 (40 ms): inserting one
 * point into those trees ran on one thread, 44 ms; on two, 36 ms. */
#define MT_INSERT_SERIAL ((size_t)1 << 15)

/* The work of inserting n points into the M trees of f (the units of
 * MT_INSERT_SERIAL), saturating at SIZE_MAX. */
static size_t mt_insert_work(const mt_forest *f, size_t n)
{
    const size_t M = f->n_trees, per_tree = f->n_nodes / M;
    size_t depth = 1, walks, copies = per_tree + f->n_points + n;
    while (depth < 64 && ((size_t)1 << depth) <= per_tree) {
        ++depth;
    }
    if (mt_mul_size(n, depth * (f->n_features + 1), &walks) != MT_OK ||
        walks > SIZE_MAX - copies || copies + walks > SIZE_MAX / M) {
        return SIZE_MAX;
    }
    return M * (copies + walks);
}

/* One tree during a batch: a one-tree forest in local ids (old nodes first,
 * in their old order, new nodes appended) without boxes, where the boxes
 * are (the old nodes' in the forest, the new nodes' here), and what the
 * renumbering needs. */
typedef struct {
    mt_forest t;             /* the tree, keys on (t.key), no boxes         */
    double *old_lower;       /* the old nodes' boxes: the forest's own,    */
    double *old_upper;       /* enlarged in place by the walk              */
    double *new_lower;       /* the new nodes' boxes, row j - n_old         */
    double *new_upper;
    mt_index root;           /* local id of the root (changes on insertion) */
    size_t n_old;            /* nodes before the batch                      */
    mt_index *leaf_of;       /* n: leaf (local id) each new point ended in  */
    unsigned char *created;  /* n: the point created a leaf                 */
    mt_index *perm;          /* n_points_old + n: the rebuilt permutation   */
    mt_index *new_id;        /* nodes: new local id of each local id        */
    mt_index *order;         /* nodes: local id of each new local id        */
    mt_index *bucket;        /* nodes + 1: new points per leaf (prefix)     */
    mt_index *joined;        /* n: new points sorted by leaf                */
    mt_index *stack;         /* nodes: the depth-first walk                 */
} iscratch;

/* Uniform on the open interval (0, 1), from 53 random bits (as grow.c). */
static inline double open_uniform(bitgen_t *rng)
{
    return ((double)(rng->next_uint64(rng->state) >> 11) + 0.5) * 0x1.0p-53;
}

static void iscratch_free(iscratch *s)
{
    mt_forest_free(&s->t);
    free(s->leaf_of);
    free(s->created);
    free(s->perm);
    free(s->new_id);
    free(s->order);
    free(s->bucket);
    free(s->joined);
    free(s->stack);
    free(s->new_lower);
    free(s->new_upper);
    memset(s, 0, sizeof(*s));
}

/* Room the batch can take in a tree of k nodes: two nodes per point, and
 * none beyond max_nodes (if > 0). */
static size_t tree_cap(size_t k, size_t n, size_t max_nodes)
{
    size_t cap = k + 2 * n;
    if (max_nodes > 0 && cap > max_nodes) {
        cap = k > max_nodes ? k : max_nodes;
    }
    return cap;
}

/* Copy tree m of f into the scratch, with room for the nodes the batch can
 * add (tree_cap), all but the boxes: the old nodes' boxes stay in f (the
 * walk enlarges them there; old_lower/old_upper are set once f's box
 * arrays have their final place), the new nodes' go to new_lower and
 * new_upper. */
static int iscratch_load(iscratch *s, const mt_forest *f, size_t m, size_t n,
                         size_t max_nodes)
{
    const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
    const size_t k = (size_t)(hi - lo), d = f->n_features, np = f->n_points;
    size_t cap = tree_cap(k, n, max_nodes);
    mt_forest *t = &s->t;
    int status;
    memset(s, 0, sizeof(*s));
    if ((status = mt_forest_init(t, 1, d)) != MT_OK) {
        return status;
    }
    t->key = calloc(1, sizeof(mt_index)); /* keys on: grown with the nodes */
    if (t->key == NULL || (status = mt_forest_reserve_links(t, cap)) != MT_OK) {
        return t->key == NULL ? MT_ERR_NOMEM : status;
    }
    s->leaf_of = malloc((n > 0 ? n : 1) * sizeof(mt_index));
    s->created = calloc(n > 0 ? n : 1, 1);
    s->joined = malloc((n > 0 ? n : 1) * sizeof(mt_index));
    s->perm = f->perm != NULL ? malloc((np + n) * sizeof(mt_index)) : NULL;
    s->new_id = malloc(cap * sizeof(mt_index));
    s->order = malloc(cap * sizeof(mt_index));
    s->bucket = malloc((cap + 1) * sizeof(mt_index));
    s->stack = malloc(cap * sizeof(mt_index));
    /* (cap - k) * d doubles fit: f's boxes will hold them */
    s->new_lower = malloc((cap > k ? (cap - k) * d : 1) * sizeof(double));
    s->new_upper = malloc((cap > k ? (cap - k) * d : 1) * sizeof(double));
    if (s->new_lower == NULL || s->new_upper == NULL || s->leaf_of == NULL ||
        s->created == NULL || s->joined == NULL || (f->perm != NULL && s->perm == NULL) ||
        s->new_id == NULL || s->order == NULL || s->bucket == NULL || s->stack == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t j = 0; j < k; ++j) {
        size_t g = (size_t)lo + j;
        t->tree_of[j] = 0;
        t->parent[j] = f->parent[g] == MT_NONE ? MT_NONE : f->parent[g] - lo;
        t->left[j] = f->left[g] == MT_NONE ? MT_NONE : f->left[g] - lo;
        t->right[j] = f->right[g] == MT_NONE ? MT_NONE : f->right[g] - lo;
        t->key[j] = f->key != NULL ? f->key[g] : (mt_index)g;
    }
    memcpy(t->feature, f->feature + lo, k * sizeof(mt_index));
    memcpy(t->start, f->start + lo, k * sizeof(mt_index));
    memcpy(t->end, f->end + lo, k * sizeof(mt_index));
    memcpy(t->threshold, f->threshold + lo, k * sizeof(double));
    memcpy(t->tau, f->tau + lo, k * sizeof(double));
    t->n_nodes = k;
    t->node_offset[1] = (mt_index)k;
    s->root = 0;
    s->n_old = k;
    return MT_OK;
}

/* The box of local node j: an old node's in f, a new node's in the scratch. */
static inline double *box_lower(const iscratch *s, mt_index j)
{
    const size_t d = s->t.n_features;
    return (size_t)j < s->n_old ? s->old_lower + (size_t)j * d
                                : s->new_lower + ((size_t)j - s->n_old) * d;
}

static inline double *box_upper(const iscratch *s, mt_index j)
{
    const size_t d = s->t.n_features;
    return (size_t)j < s->n_old ? s->old_upper + (size_t)j * d
                                : s->new_upper + ((size_t)j - s->n_old) * d;
}

/* A new node of the scratch (room was reserved): a leaf with no box yet. */
static mt_index new_node(mt_forest *t, mt_index parent)
{
    mt_index id = (mt_index)t->n_nodes;
    t->tree_of[id] = 0;
    t->parent[id] = parent;
    t->left[id] = MT_NONE;
    t->right[id] = MT_NONE;
    t->feature[id] = MT_NONE;
    t->start[id] = 0;
    t->end[id] = 0;
    t->threshold[id] = 0.0;
    t->tau[id] = INFINITY;
    t->n_nodes += 1;
    t->node_offset[1] = (mt_index)t->n_nodes;
    return id;
}

/* Whether x lies in the box of local node j (inside or on its sides). */
static inline int box_holds(const iscratch *s, const double *restrict x, mt_index j)
{
    return !(mt_box_excess(x, box_lower(s, j), box_upper(s, j), s->t.n_features) > 0.0);
}

/* Ask for the box of local node j (both sides, every line) ahead of use. */
static inline void box_prefetch(const iscratch *s, mt_index j)
{
    const char *lo = (const char *)box_lower(s, j), *hi = (const char *)box_upper(s, j);
    const size_t bytes = s->t.n_features * sizeof(double);
    for (size_t b = 0; b < bytes; b += 64) {
        MT_PREFETCH(lo + b, 1, 3);
        MT_PREFETCH(hi + b, 1, 3);
    }
    if (bytes > 0) { /* the last line of a row that straddles one more */
        MT_PREFETCH(lo + bytes - 1, 1, 3);
        MT_PREFETCH(hi + bytes - 1, 1, 3);
    }
}

/*
 * Insert x (the batch's point i) into the scratch's tree: the walk of
 * insert.h.  Draws from rng: one exponential per node whose box does not
 * contain x, and two uniforms (dimension, cut) per insertion of a parent.
 *
 * The walk's nodes are known before their boxes are read: until the walk
 * inserts a parent (and stops) it goes down by the cuts alone.  So the path
 * to the leaf is taken first, on the small link arrays (the scratch's, in
 * cache), and the boxes are read after: a child's box lies inside its
 * parent's, so the nodes whose box holds x -- where the walk only moves on,
 * drawing nothing -- are a prefix of the path, found by bisection in about
 * log2(depth) box tests; from the first node outside, every box is read in
 * path order with the next ones prefetched.  The draws, the boxes and the
 * tree are those of the walk node by node (insert.h), in fewer and
 * overlapping loads: the walk is bound by the latency of the boxes' lines.
 */
static void insert_point(iscratch *s, const double *restrict x, size_t i, double lifetime,
                         size_t max_nodes, bitgen_t *rng)
{
    mt_forest *t = &s->t;
    const size_t d = t->n_features;
    /* At the node cap the point only enlarges boxes and joins a leaf. */
    const int may_split = max_nodes == 0 || t->n_nodes + 2 <= max_nodes;
    /* The path by the cuts, root to leaf (at most every node: the stack has
     * room for the tree's capacity). */
    mt_index *path = s->stack;
    size_t depth = 0;
    for (mt_index j = s->root;; j = x[t->feature[j]] <= t->threshold[j] ? t->left[j] : t->right[j]) {
        path[depth++] = j;
        if (t->left[j] == MT_NONE) {
            break;
        }
    }
    /* First node outside: path[0 .. a) hold x, path[b ..) do not. */
    size_t a = 0, b = depth;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (box_holds(s, x, path[mid])) {
            a = mid + 1;
        } else {
            b = mid;
        }
    }
    if (a == depth) {
        s->leaf_of[i] = path[depth - 1]; /* x in the leaf's box: it joins */
        return;
    }
    for (size_t q = a + 1; q < depth && q < a + 3; ++q) {
        box_prefetch(s, path[q]);
    }
    double t0 = a > 0 ? t->tau[path[a - 1]] : 0.0;
    for (size_t q = a;; ++q) {
        const mt_index j = path[q];
        double *lo = box_lower(s, j), *hi = box_upper(s, j);
        if (q + 3 < depth) {
            box_prefetch(s, path[q + 3]);
        }
        const double gap = mt_box_gap(x, lo, hi, d); /* > 0: x is outside */
        double time = may_split ? t0 - log(open_uniform(rng)) / gap : INFINITY;
        if (time < t->tau[j] && time <= lifetime) {
            /* Dimension with probability proportional to its gap. */
            double r = rng->next_double(rng->state) * gap, acc = 0.0;
            size_t dim = d;
            for (size_t k = 0; k < d; ++k) {
                double below = lo[k] - x[k], above = x[k] - hi[k];
                double e = (below > 0.0 ? below : 0.0) + (above > 0.0 ? above : 0.0);
                acc += e;
                if (e > 0.0) {
                    dim = k;
                    if (r < acc) {
                        break;
                    }
                }
            }
            /* Cut uniform in the gap [a0, a1) between x and the box; a
             * draw that rounds up to a1 is redrawn, so that x and the box
             * are on opposite sides (x_d <= a goes left). */
            int x_below = x[dim] < lo[dim];
            double a0 = x_below ? x[dim] : hi[dim];
            double a1 = x_below ? lo[dim] : x[dim];
            double cut;
            do {
                cut = a0 + rng->next_double(rng->state) * (a1 - a0);
            } while (!(cut < a1));

            mt_index up = t->parent[j];
            mt_index p = new_node(t, up);
            mt_index leaf = new_node(t, p);
            /* new_node does not move the arrays (room was reserved) */
            double *plo = box_lower(s, p), *phi = box_upper(s, p);
            double *llo = box_lower(s, leaf), *lhi = box_upper(s, leaf);
            for (size_t k = 0; k < d; ++k) {
                plo[k] = lo[k] < x[k] ? lo[k] : x[k];
                phi[k] = hi[k] > x[k] ? hi[k] : x[k];
                llo[k] = x[k];
                lhi[k] = x[k];
            }
            if (up == MT_NONE) {
                s->root = p;
            } else if (t->left[up] == j) {
                t->left[up] = p;
            } else {
                t->right[up] = p;
            }
            t->parent[j] = p;
            t->left[p] = x_below ? leaf : j;
            t->right[p] = x_below ? j : leaf;
            t->feature[p] = (mt_index)dim;
            t->threshold[p] = cut;
            t->tau[p] = time;
            /* p is active exactly where j was: it takes j's column key;
             * the new leaf's key is fixed after the batch (-1 - i). */
            t->key[p] = t->key[j];
            t->key[leaf] = -1 - (mt_index)i;
            s->leaf_of[i] = leaf;
            s->created[i] = 1;
            return;
        }
        for (size_t k = 0; k < d; ++k) {
            lo[k] = lo[k] < x[k] ? lo[k] : x[k];
            hi[k] = hi[k] > x[k] ? hi[k] : x[k];
        }
        if (q + 1 == depth) {
            s->leaf_of[i] = j; /* x joins the leaf */
            return;
        }
        t0 = t->tau[j];
    }
}

/*
 * Renumber the scratch's tree (new local ids in grow.c's order) and rebuild
 * its point permutation: old_perm (n_old_points entries, the tree's row
 * before the batch), then new point i has id n_old_points + i.  Without
 * points (old_perm NULL) only the slices of the virtual permutation are
 * laid out, from the counts.
 */
static void renumber(iscratch *s, const mt_index *old_perm, size_t n_old_points, size_t n)
{
    mt_forest *t = &s->t;
    const size_t k = t->n_nodes;
    mt_index *stack = s->stack;
    size_t n_stack = 0, next = 1, pos = 0;

    /* New points bucketed by leaf, in batch order (a counting sort). */
    memset(s->bucket, 0, (k + 1) * sizeof(mt_index));
    for (size_t i = 0; i < n; ++i) {
        s->bucket[s->leaf_of[i] + 1] += 1;
    }
    for (size_t j = 0; j < k; ++j) {
        s->bucket[j + 1] += s->bucket[j];
    }
    for (size_t i = 0; i < n; ++i) {
        s->joined[s->bucket[s->leaf_of[i]]++] = (mt_index)i;
    }
    /* bucket[j] is now the end of leaf j's points; its start is bucket[j-1]
     * (0 for j = 0). */

    /* Depth-first, left first: children numbered in pairs when their parent
     * is reached, each leaf's points laid out when it is reached (its old
     * slice, read before its start/end are overwritten, then its new
     * points).  The stack holds at most one entry per leaf. */
    s->new_id[s->root] = 0;
    s->order[0] = s->root;
    stack[n_stack++] = s->root;
    while (n_stack > 0) {
        mt_index j = stack[--n_stack];
        mt_index l = t->left[j], r = t->right[j];
        if (l != MT_NONE) {
            s->new_id[l] = (mt_index)next;
            s->order[next] = l;
            s->new_id[r] = (mt_index)(next + 1);
            s->order[next + 1] = r;
            next += 2;
            stack[n_stack++] = r;
            stack[n_stack++] = l;
            continue;
        }
        mt_index old_start = t->start[j], old_end = t->end[j];
        mt_index new_start = j > 0 ? s->bucket[j - 1] : 0, new_end = s->bucket[j];
        t->start[j] = (mt_index)pos;
        if (old_perm == NULL) {
            pos += (size_t)(new_end - new_start);
            pos += (size_t)j < s->n_old ? (size_t)(old_end - old_start) : 0;
        } else {
            if ((size_t)j < s->n_old) {
                for (mt_index q = old_start; q < old_end; ++q) {
                    s->perm[pos++] = old_perm[q];
                }
            }
            for (mt_index q = new_start; q < new_end; ++q) {
                s->perm[pos++] = (mt_index)n_old_points + s->joined[q];
            }
        }
        t->end[j] = (mt_index)pos;
    }
    /* Internal nodes span their left child's start to their right child's
     * end; children have larger new ids, so a reverse sweep over the new
     * order finishes them first. */
    for (size_t q = k; q-- > 0;) {
        mt_index j = s->order[q];
        if (t->left[j] != MT_NONE) {
            t->start[j] = t->start[t->left[j]];
            t->end[j] = t->end[t->right[j]];
        }
    }
}

/* Copy the renumbered scratch of tree m into f at node_offset[m], all but
 * the boxes (store_boxes); new leaves' keys are base + rank[i] for the
 * point i that created them. */
static void istore(const iscratch *s, mt_forest *f, size_t m, const mt_index *rank,
                   mt_index base)
{
    const mt_forest *t = &s->t;
    const mt_index lo = f->node_offset[m];
    const size_t k = t->n_nodes;
    for (size_t q = 0; q < k; ++q) {
        mt_index j = s->order[q];
        size_t g = (size_t)lo + q;
        mt_index key = t->key[j];
        f->tree_of[g] = (mt_index)m;
        f->parent[g] = t->parent[j] == MT_NONE ? MT_NONE : s->new_id[t->parent[j]] + lo;
        f->left[g] = t->left[j] == MT_NONE ? MT_NONE : s->new_id[t->left[j]] + lo;
        f->right[g] = t->right[j] == MT_NONE ? MT_NONE : s->new_id[t->right[j]] + lo;
        f->feature[g] = t->feature[j];
        f->start[g] = t->start[j];
        f->end[g] = t->end[j];
        f->threshold[g] = t->threshold[j];
        f->tau[g] = t->tau[j];
        f->key[g] = key >= 0 ? key : base + rank[-1 - key];
    }
    if (f->perm != NULL) {
        memcpy(mt_forest_perm(f, m), s->perm, f->n_points * sizeof(mt_index));
    }
}

/*
 * The boxes of every renumbered tree into one of f's box arrays (box: lower
 * if upper == 0), in place.  Tree m's old rows start at old_offset[m], its
 * new rows at f->node_offset[m] >= old_offset[m] (trees only gain nodes), so
 * its new rows overlap no old row of an earlier tree: the trees are moved
 * last first.  Within a tree, the renumbering keeps the old nodes in their
 * old order with the new nodes between them, so each old node's new row is
 * at or after its old row: gathered from the last new row down, every old
 * row is read before a later row is written over it, and no copy is needed
 * (the copy of each tree's old rows that this replaced took a third of the
 * fixed cost of a batch).  A tree where that order does not hold (checked,
 * not assumed) has its old rows copied to tmp (room for the largest tree's)
 * first.
 */
static void store_boxes(const iscratch *trees, mt_forest *f, const mt_index *old_offset,
                        int upper, double *tmp)
{
    const size_t d = f->n_features;
    double *box = upper ? f->upper : f->lower;
    for (size_t m = f->n_trees; m-- > 0;) {
        const iscratch *s = &trees[m];
        const size_t k = s->t.n_nodes, n_old = s->n_old;
        const size_t shift = (size_t)(f->node_offset[m] - old_offset[m]);
        const double *fresh = upper ? s->new_upper : s->new_lower;
        const double *old = box + (size_t)old_offset[m] * d;
        double *out = box + (size_t)f->node_offset[m] * d;
        int in_place = 1;
        for (size_t q = 0; q < k && in_place; ++q) {
            size_t j = (size_t)s->order[q];
            in_place = j >= n_old || j <= q + shift;
        }
        if (!in_place) {
            memcpy(tmp, old, n_old * d * sizeof(double));
            old = tmp;
        }
        for (size_t q = k; q-- > 0;) {
            size_t j = (size_t)s->order[q];
            const double *src = j < n_old ? old + j * d : fresh + (j - n_old) * d;
            double *dst = out + q * d;
            /* rows of d doubles from the same array are equal or disjoint:
             * an element-wise copy, inlined (a call per row of 168 bytes
             * cost more than the copy) */
            if (dst != src) {
                for (size_t c = 0; c < d; ++c) {
                    dst[c] = src[c];
                }
            }
        }
    }
}

int mt_forest_insert(mt_forest *f, const double *X, size_t n, size_t max_nodes,
                     bitgen_t *const *rngs, int n_threads)
{
    const size_t M = f->n_trees, d = f->n_features, n_old_points = f->n_points;
    const ptrdiff_t count = (ptrdiff_t)M;
    /* A batch whose work (copying every tree's nodes and permutation,
     * walking its points down the trees) is below about a millisecond runs
     * on one thread: starting the team costs more than it saves (the result
     * does not depend on it).  Counting the copies alone had kept every
     * batch of an online pass over the CPU data (50 trees, batches of 1000)
     * on one thread, the walks three times slower. */
    const int nt = n_threads > 1 && M > 0 && mt_insert_work(f, n) >= MT_INSERT_SERIAL
                       ? n_threads : 1;
    iscratch *trees = NULL;
    mt_index *rank = NULL, *old_offset = NULL, base = 0;
    double *Zall = NULL, *tmp = NULL;
    size_t total = 0, worst = 0, largest = 0, need_points, xd;
    int status = MT_OK;
    if (f->n_nodes == 0 || (X == NULL && n > 0)) {
        return MT_ERR_ARG;
    }
    if (n == 0) {
        return MT_OK;
    }
    need_points = n_old_points + n;
    /* rank holds n * M indices; X holds n * d doubles */
    if (need_points < n || mt_mul_size(n, d, &xd) != MT_OK ||
        mt_mul_size(n, M, &total) != MT_OK || total >= SIZE_MAX / sizeof(mt_index)) {
        return MT_ERR_OVERFLOW;
    }
    for (size_t q = 0; q < xd; ++q) {
        if (!isfinite(X[q])) {
            return MT_ERR_ARG;
        }
    }
    /* New leaves' keys start above every existing key (the global ids when
     * the forest has no keys yet). */
    if (f->key == NULL) {
        base = (mt_index)f->n_nodes;
    } else {
        for (size_t j = 0; j < f->n_nodes; ++j) {
            base = f->key[j] >= base ? f->key[j] + 1 : base;
        }
    }
    /* Every fallible step comes first (1-2): the walk (3) enlarges the old
     * nodes' boxes in the forest itself, so nothing may fail after it. */
    trees = calloc(M, sizeof(iscratch)); /* M * sizeof fits: node_offset has M + 1 */
    rank = malloc(n * M * sizeof(mt_index));
    old_offset = malloc((M + 1) * sizeof(mt_index));
    /* The worst case (every scratch full, tree_cap) and the largest tree. */
    for (size_t m = 0; m < M; ++m) {
        size_t k = (size_t)(f->node_offset[m + 1] - f->node_offset[m]);
        worst += tree_cap(k, n, max_nodes);
        largest = k > largest ? k : largest;
    }
    /* a tree's old boxes (store_boxes), two with two threads: largest * d
     * doubles fit, f's boxes hold them */
    tmp = malloc(((largest > 0 ? largest : 1) * d * 2) * sizeof(double));
    /* The batch in the coordinates of the tree each thread walks; with a
     * scale alone every tree's, so one copy divided once. */
    const int rotated = f->rotation != NULL;
    if (mt_forest_transformed(f)) {
        const size_t copies = rotated ? (size_t)nt : 1;
        Zall = copies <= SIZE_MAX / sizeof(double) / (xd > 0 ? xd : 1)
                   ? malloc(copies * xd * sizeof(double)) : NULL;
    }
    if (trees == NULL || rank == NULL || old_offset == NULL || tmp == NULL ||
        (mt_forest_transformed(f) && Zall == NULL)) {
        status = MT_ERR_NOMEM;
        goto cleanup;
    }
    if (Zall != NULL && !rotated) {
        mt_forest_transform(f, 0, X, n, Zall);
    }
    memcpy(old_offset, f->node_offset, (M + 1) * sizeof(mt_index));
    /* 1. Every tree's scratch (reads f). */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(min : status)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        int st = iscratch_load(&trees[m], f, (size_t)m, n, max_nodes);
        status = st < status ? st : status;
    }
    if (status != MT_OK) {
        goto cleanup;
    }
    /* 2. The forest's room for the worst case: the nodes, the points (by
     * doubling), and the keys on the first insertion (the last fallible step:
     * a forest with keys is a forest that took insertions).  The nodes:
     * the worst case, with slack (mt_forest_extend_nodes), in fresh
     * blocks: their untouched part is never committed.  Growing the
     * arrays in place by realloc took 290-420 ms of the 0.6-0.75 s that
     * inserting 1311 held-out points into 100 trees of 10 000 nodes took
     * (CPU data; the arrays' huge pages split as realloc moved them), the
     * copy into fresh blocks 80-100 ms. */
    if ((status = mt_forest_extend_nodes(f, worst)) != MT_OK) {
        goto cleanup;
    }
    if (f->X != NULL && need_points > f->point_capacity) {
        size_t cap = 2 * f->point_capacity;
        if ((status = mt_forest_reserve_points(f, cap > need_points ? cap : need_points)) !=
            MT_OK) {
            goto cleanup;
        }
    }
    if (f->key == NULL) {
        f->key = calloc(f->node_capacity, sizeof(mt_index));
        if (f->key == NULL) {
            status = MT_ERR_NOMEM;
            goto cleanup;
        }
    }
    for (size_t m = 0; m < M; ++m) {
        trees[m].old_lower = f->lower + (size_t)old_offset[m] * d;
        trees[m].old_upper = f->upper + (size_t)old_offset[m] * d;
    }
    /* 3. Every tree on its own: insert the batch, renumber (cannot fail). */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        iscratch *s = &trees[m];
        const double *P = Zall != NULL ? Zall : X;
        if (rotated) {
#ifdef _OPENMP
            double *Z = Zall + (size_t)omp_get_thread_num() * xd;
#else
            double *Z = Zall;
#endif
            mt_forest_transform(f, (size_t)m, X, n, Z);
            P = Z;
        }
        for (size_t i = 0; i < n; ++i) {
            insert_point(s, P + i * d, i, f->lifetime, max_nodes, rngs[m]);
        }
        renumber(s, f->perm != NULL ? mt_forest_perm(f, (size_t)m) : NULL, n_old_points, n);
    }
    /* 4. Keys of the new leaves, point by point and tree by tree within a
     * point, from base; rank[m * n + i]. */
    {
        mt_index next = 0;
        for (size_t i = 0; i < n; ++i) {
            for (size_t m = 0; m < M; ++m) {
                rank[m * n + i] = trees[m].created[i] ? next++ : MT_NONE;
            }
        }
    }
    total = 0;
    for (size_t m = 0; m < M; ++m) {
        total += trees[m].t.n_nodes;
    }
    /* 5. Store: the points (if kept), then every tree at its new offset:
     * its boxes in place (lower and upper on two threads), the rest from
     * its scratch. */
    if (f->X != NULL) {
        memcpy(f->X + n_old_points * d, X, xd * sizeof(double));
    }
    f->n_points = need_points;
    f->node_offset[0] = 0;
    for (size_t m = 0; m < M; ++m) {
        f->node_offset[m + 1] = f->node_offset[m] + (mt_index)trees[m].t.n_nodes;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(nt > 1 ? 2 : 1)
#endif
    for (int b = 0; b < 2; ++b) {
        store_boxes(trees, f, old_offset, b, tmp + (size_t)b * (largest > 0 ? largest : 1) * d);
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        istore(&trees[m], f, (size_t)m, rank + (size_t)m * n, base);
    }
    f->n_nodes = total;
cleanup:
    for (size_t m = 0; trees != NULL && m < M; ++m) {
        iscratch_free(&trees[m]);
    }
    free(trees);
    free(rank);
    free(Zall);
    free(old_offset);
    free(tmp);
    return status;
}
