/* Lookups in a suffix array (marose/index_study/suffix_array.py): the suffixes that begin with
 * each query q-gram, or with one of its neighbors (neighbors.cl), by binary search with Manber
 * and Myers' mlr bound: the bases that the suffixes at both ends of the interval share with the
 * key are shared by every suffix between them, so comparisons start after them. The genome is
 * packed 16 bases a word, first base highest, with two words of padding. Defines: Q, SEED, LN
 * (Q = SEED + LN), E: with E = 0 one search of the whole q-gram; else the seed's interval
 * first, and each neighbor searched within it. */

/* count (1..32) bases of the genome from pos, the last lowest. */
inline ulong genome_bases(__global const uint *genome, uint pos, uint count)
{
    uint w = pos >> 4, off = pos & 15u;
    ulong bases = (((ulong)genome[w] << 32) | genome[w + 1]) << (2u * off);
    if (off)
        bases |= (ulong)(genome[w + 2] >> (32u - 2u * off));
    return bases >> (64u - 2u * count);
}

/* The bases that key (q bases) shares with the suffix at pos, which shares its first `known`;
 * *smaller tells whether the suffix's q bases are smaller than key. */
inline uint compare(__global const uint *genome, uint pos, ulong key, uint q, uint known,
                    bool *smaller)
{
    *smaller = false;
    if (known >= q)
        return q;
    uint rest = q - known;
    ulong text = genome_bases(genome, pos + known, rest);
    ulong mine = rest == 32u ? key : key & ((1UL << (2u * rest)) - 1UL);
    ulong diff = text ^ mine;
    if (!diff)
        return q;
    *smaller = text < mine;
    return known + ((uint)clz(diff) - (64u - 2u * rest)) / 2u;
}

/* The first suffix of [lo, hi) whose q bases are >= key (> key when after), where all of them
 * share their first `known` bases with key. */
inline uint bound(__global const uint *sa, __global const uint *genome, ulong key, uint q, uint lo,
                  uint hi, uint known, bool after)
{
    uint left = known, right = known; /* shared with the suffixes just outside [lo, hi) */
    while (lo < hi) {
        uint mid = lo + ((hi - lo) >> 1);
        bool smaller;
        uint shared = compare(genome, sa[mid], key, q, min(left, right), &smaller);
        if (smaller || (after && shared == q)) {
            lo = mid + 1u;
            left = shared;
        } else {
            hi = mid;
            right = shared;
        }
    }
    return lo;
}

__kernel void sa_lookup(__global const uint *sa, uint n_sa, __global const uint *genome,
                        __global const ulong *queries, uint n, __global const uint *offsets,
                        __global uint *out, uint emit)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint written = emit ? offsets[i] : 0u;
    ulong query = queries[i];
    uint lo = 0u, hi = n_sa, known = 0u;
    if (E > 0) {
        ulong seed = query >> (2u * LN);
        lo = bound(sa, genome, seed, SEED, 0u, n_sa, 0u, false);
        hi = bound(sa, genome, seed, SEED, lo, n_sa, 0u, true);
        known = SEED;
    }
    if (lo < hi)
        FOR_EACH_VARIANT(query, LN, key, {
            uint first = bound(sa, genome, key, Q, lo, hi, known, false);
            uint last = bound(sa, genome, key, Q, first, hi, known, true);
            REPORT_RUN(sa, first, last)
        });
    if (!emit)
        out[i] = written;
}
