/* Pairing a batch's mapped mates, one work-item a pair, as marose/pairs.py defines it (its
 * pair_mates and pair_records are the twins): the primary pair, whether it is proper, its MAPQ,
 * and the paired records (pair_records.cl's PairRecord) with their XA loci. Needs sam_records.cl
 * (primary_mapq) and pair_records.cl (PairRecord, PairHit).
 *
 * The loci are the mapper's (extend.DeviceHits), read r's being [first[r], first[r + 1]), best
 * first: row (2 * read + strand), end (genome end, inclusive), dist, contig, and start (genome
 * start of the alignment); contig_start holds each contig's genome start. A pair's mates are
 * reads mate1[p] and mate2[p]; read_loci gives each read's loci within k (HN:i). mapq holds
 * MAPQ_UNIQUE, MAPQ_MAX_AMBIGUOUS, MAPQ_PER_EDIT and MAPQ_SECONDARY (marose/sam.py).
 *
 * The insert: a pair of loci is proper when on one contig, in orientation (0 FR, 1 RF, 2 FF),
 * their 5' ends low..high apart (no pair is proper when low > high). A pair whose mates' loci
 * make more than heavy combinations is left to pair_heavy, a work-group a pair (HEAVY in its
 * status), or beyond most combinations to the host; a pair that (with rescue) has no proper pair
 * while a mate has loci is left to the host too (HOST in its status): pair_table writes no
 * records for it. */

/* SAM's FLAG bits, as marose/pairs.py names them */
#define FLAG_PAIRED 1
#define FLAG_PROPER 2
#define FLAG_UNMAPPED 4
#define FLAG_MATE_UNMAPPED 8
#define FLAG_REVERSE 16
#define FLAG_MATE_REVERSE 32
#define FLAG_FIRST 64
#define FLAG_SECOND 128
#define FLAG_SECONDARY 256

/* a pair's status bits (marose/pairing.py's) */
#define STATUS_PROPER 1
#define STATUS_BOTH_MAPPED 2
#define STATUS_HOST 4
#define STATUS_HEAVY 8

#define RANK_BITS 24    /* a locus's rank among its mate's in pair_heavy's keys */

/* A locus's place on its contig. */
typedef struct {
    uint contig, strand;
    long pos, five;
} Place;

inline Place place_of(uint h, __global const uint *row, __global const uint *end, __global const uint *contig,
                      __global const uint *contig_start, __global const uint *start)
{
    Place p;
    p.contig = contig[h];
    p.strand = row[h] & 1u;
    long base = (long)contig_start[p.contig];
    p.pos = (long)start[h] - base;
    p.five = p.strand ? (long)end[h] - base + 1 : p.pos;
    return p;
}

/* marose/pairs.py's orientation of a mate-1 and a mate-2 locus on one contig. */
inline uint orientation_of(Place a, Place b)
{
    if (a.strand == b.strand)
        return 2u;
    uint leading = a.five <= b.five ? a.strand : b.strand;
    return leading == 0u ? 0u : 1u;
}

/* Whether loci x (mate 1) and y (mate 2) are a proper pair. */
inline bool proper_pair(Place x, Place y, uint orientation, int low, int high)
{
    long size = y.five > x.five ? y.five - x.five : x.five - y.five;
    return x.contig == y.contig && orientation_of(x, y) == orientation && size >= low && size <= high;
}

/* A pair's proper combinations seen so far: their number, the least score and its combination
 * (the first of least score in the mates' order: by score, then mate-1 rank, then mate-2 rank,
 * as key orders them) and the second score in order. */
typedef struct {
    uint combos, best, second;
    ulong key;
} Combos;

inline Combos no_combos(void)
{
    Combos c = {0u, UINT_MAX, UINT_MAX, ULONG_MAX};
    return c;
}

/* Adds the combination of mate-1 rank a and mate-2 rank b, of score (seen in the mates' order). */
inline void add_combo(Combos *c, uint score, uint a, uint b)
{
    ++c->combos;
    if (score < c->best) {
        c->second = c->best;
        c->best = score;
        c->key = ((ulong)score << (2 * RANK_BITS)) | ((ulong)a << RANK_BITS) | b;
    } else if (score < c->second) {
        c->second = score;
    }
}

/* The combinations of two parts of a pair's, as if seen together. */
inline Combos merged(Combos x, Combos y)
{
    Combos c;
    c.combos = x.combos + y.combos;
    c.key = min(x.key, y.key);
    c.best = min(x.best, y.best);
    c.second = min(min(x.second, y.second), max(x.best, y.best));
    return c;
}

/* Pair p's primary pair, MAPQ and layout (see pair_loci) from its proper combinations; host: left
 * to the host whatever they are, heavy: left to pair_heavy. */
inline void settle(uint p, uint n_pairs, uint f1, uint c1, uint f2, uint c2, Combos c, bool host, bool heavy,
                   uint rescue, uint max_hits, uint xa, __global const uint *mapq, __global int *primary1,
                   __global int *primary2, __global uint *pair_mapq, __global uint *layout)
{
    bool proper = c.combos > 0u;
    uint gap = c.combos >= 2u ? c.second - c.best : 0u;
    pair_mapq[p] = proper ? (c.combos == 1u ? mapq[0] : min(mapq[1], mapq[2] * gap)) : 0u;
    host = host || (rescue && !heavy && !proper && (c1 || c2));
    uint rank_mask = (1u << RANK_BITS) - 1u;
    primary1[p] = proper ? (int)(f1 + (uint)(c.key >> RANK_BITS & rank_mask)) : (c1 ? (int)f1 : -1);
    primary2[p] = proper ? (int)(f2 + (uint)(c.key & rank_mask)) : (c2 ? (int)f2 : -1);
    layout[p] = (proper ? STATUS_PROPER : 0u) | (c1 && c2 ? STATUS_BOTH_MAPPED : 0u) | (host ? STATUS_HOST : 0u)
                | (heavy ? STATUS_HEAVY : 0u);
    uint cap = xa ? 1u : max_hits;
    layout[n_pairs + p] = (c1 ? min(c1, cap) : 1u) + (c2 ? min(c2, cap) : 1u);
    layout[2u * n_pairs + p] = xa && c1 ? min(c1, max_hits) - 1u : 0u;
    layout[3u * n_pairs + p] = xa && c2 ? min(c2, max_hits) - 1u : 0u;
}

/* The primary pair of each pair: primary1 and primary2 (loci, -1 for none), its MAPQ (pair_mapq,
 * when proper), and in four rows of layout its status, the records pair_table writes of it
 * (both mates') and the XA loci of mate 1 and of mate 2: with xa one record a mapped mate and up
 * to max_hits - 1 XA loci, else up to max_hits records. */
__kernel void pair_loci(uint n_pairs, __global const uint *mate1, __global const uint *mate2,
                        __global const uint *first, __global const uint *row, __global const uint *end,
                        __global const uchar *dist, __global const uint *contig, __global const uint *contig_start,
                        __global const uint *start, __global const uint *mapq, uint orientation, int low, int high,
                        uint heavy, ulong most, uint rescue, uint max_hits, uint xa, __global int *primary1,
                        __global int *primary2, __global uint *pair_mapq, __global uint *layout)
{
    uint p = get_global_id(0);
    if (p >= n_pairs)
        return;
    uint f1 = first[mate1[p]], c1 = first[mate1[p] + 1u] - f1;
    uint f2 = first[mate2[p]], c2 = first[mate2[p] + 1u] - f2;
    ulong n_combos = (ulong)c1 * c2;
    bool many = low <= high && n_combos > heavy;
    bool host = many && (n_combos > most || max(c1, c2) >> RANK_BITS);
    Combos c = no_combos();
    if (low <= high && !many) {
        for (uint a = 0; a < c1; ++a) {
            Place x = place_of(f1 + a, row, end, contig, contig_start, start);
            for (uint b = 0; b < c2; ++b)
                if (proper_pair(x, place_of(f2 + b, row, end, contig, contig_start, start), orientation, low, high))
                    add_combo(&c, (uint)dist[f1 + a] + dist[f2 + b], a, b);
        }
    }
    settle(p, n_pairs, f1, c1, f2, c2, c, host, many && !host, rescue, max_hits, xa, mapq, primary1, primary2,
           pair_mapq, layout);
}

/* A locus's run among its read's loci: its distance, then its strand (cl/loci.cl's best_loci
 * writes a read's loci so, each run by end). */
inline uint run_of(uint h, __global const uint *row, __global const uchar *dist)
{
    return 2u * dist[h] + (row[h] & 1u);
}

/* The first of loci [lo, hi) (of one read) past run r. */
inline uint run_end(uint lo, uint hi, uint r, __global const uint *row, __global const uchar *dist)
{
    while (lo < hi) {
        uint mid = lo + (hi - lo) / 2u;
        if (run_of(mid, row, dist) <= r)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}

/* The first of loci [lo, hi) (of one run) whose end is at least least. */
inline uint first_end(uint lo, uint hi, long least, __global const uint *end)
{
    while (lo < hi) {
        uint mid = lo + (hi - lo) / 2u;
        if ((long)end[mid] < least)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}

/* The largest of the group's values of v (each item's in v[item]), in v[0]. */
inline void group_max(__local uint *v, uint item, uint group)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = group / 2u; step > 0u; step /= 2u) {
        if (item < step)
            v[item] = max(v[item], v[item + step]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* pair_loci's work for the pairs it left heavy (listed, n_listed of them), a work-group each, of
 * a power of two work-items (marose/pairing.py's heavy_group) and as many of each local array:
 * an item takes every group-th mate-1 locus, and the group merges what its items saw. A mate-1
 * locus meets only the mate-2 loci of each run whose ends lie where a proper partner's can: 5'
 * ends at most high apart, an alignment at most the longest of mate 2's long; the group first
 * checks that the loci are by run and each run by end, else each mate-1 locus meets every mate-2
 * locus. The loci are met in their order, as pair_loci meets them, so that the first combination
 * of least score is the same. */
__kernel void pair_heavy(uint n_listed, __global const uint *listed, uint n_pairs, __global const uint *mate1,
                         __global const uint *mate2, __global const uint *first, __global const uint *row,
                         __global const uint *end, __global const uchar *dist, __global const uint *contig,
                         __global const uint *contig_start, __global const uint *start, __global const uint *mapq,
                         uint orientation, int low, int high, uint rescue, uint max_hits, uint xa,
                         __global int *primary1, __global int *primary2, __global uint *pair_mapq,
                         __global uint *layout, __local uint *combos, __local uint *best, __local uint *second,
                         __local ulong *key)
{
    uint g = get_group_id(0), item = get_local_id(0), group = get_local_size(0);
    if (g >= n_listed)
        return;  /* the whole group */
    uint p = listed[g];
    uint f1 = first[mate1[p]], c1 = first[mate1[p] + 1u] - f1;
    uint f2 = first[mate2[p]], c2 = first[mate2[p] + 1u] - f2;
    uint unsorted = 0u, longest = 0u;
    for (uint h = f2 + item; h < f2 + c2; h += group) {
        longest = max(longest, end[h] - start[h] + 1u);
        uint r = run_of(h, row, dist), next = h + 1u < f2 + c2 ? run_of(h + 1u, row, dist) : UINT_MAX;
        if (r > next || (r == next && end[h] > end[h + 1u]))
            unsorted = 1u;
    }
    combos[item] = unsorted;
    best[item] = longest;
    group_max(combos, item, group);
    group_max(best, item, group);
    unsorted = combos[0];
    longest = best[0];
    barrier(CLK_LOCAL_MEM_FENCE);  /* every item has read them before they are written again */
    Combos c = no_combos();
    for (uint a = item; a < c1; a += group) {
        Place x = place_of(f1 + a, row, end, contig, contig_start, start);
        long five = x.five + (long)contig_start[x.contig];
        for (uint h = f2, last = f2 + c2; h < last;) {
            uint stop = unsorted ? last : run_end(h, last, run_of(h, row, dist), row, dist);
            for (h = unsorted ? h : first_end(h, stop, five - high - 1, end);
                 h < stop && (unsorted || (long)end[h] <= five + high + (long)longest); ++h)
                if (proper_pair(x, place_of(h, row, end, contig, contig_start, start), orientation, low, high))
                    add_combo(&c, (uint)dist[f1 + a] + dist[h], a, h - f2);
            h = stop;
        }
    }
    combos[item] = c.combos;
    best[item] = c.best;
    second[item] = c.second;
    key[item] = c.key;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = group / 2u; step > 0u; step /= 2u) {
        if (item < step) {
            Combos x = {combos[item], best[item], second[item], key[item]};
            Combos y = {combos[item + step], best[item + step], second[item + step], key[item + step]};
            Combos m = merged(x, y);
            combos[item] = m.combos;
            best[item] = m.best;
            second[item] = m.second;
            key[item] = m.key;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (item == 0u) {
        Combos total = {combos[0], best[0], second[0], key[0]};
        settle(p, n_pairs, f1, c1, f2, c2, total, false, false, rescue, max_hits, xa, mapq, primary1, primary2,
               pair_mapq, layout);
    }
}

/* Writes the records of a mate (read, its loci [own_first, own_first + count) of loci within k,
 * primary its primary locus and mate_primary its mate's) from records[at]: its primary locus's,
 * then its other loci's in order up to cap, or one unmapped record; and its XA loci from
 * xa_hit[xa_at]; as pairs.py's _mate_records. Returns the records written. */
inline uint write_mate(uint read, uint own_first, uint count, uint loci, int primary, int mate_primary, uint bit,
                       bool proper, uint pair_mapq, uint cap, uint max_hits, bool xa, uint at, uint xa_at,
                       __global const uint *row, __global const uint *end, __global const uchar *dist,
                       __global const uint *contig, __global const uint *contig_start, __global const uint *start,
                       __global const uint *mapq, __global PairRecord *records, __global uint *xa_hit)
{
    bool has = primary >= 0, mate_has = mate_primary >= 0;
    Place mine, theirs;
    if (has)
        mine = place_of((uint)primary, row, end, contig, contig_start, start);
    if (mate_has)
        theirs = place_of((uint)mate_primary, row, end, contig, contig_start, start);
    // an unmapped mate is placed at its mapped mate's primary locus (as samtools fixmate does)
    int at_contig = has ? (int)mine.contig : (mate_has ? (int)theirs.contig : -1);
    int at_pos = has ? (int)mine.pos : (mate_has ? (int)theirs.pos : -1);
    int mate_contig = mate_has ? (int)theirs.contig : at_contig;
    int mate_pos = mate_has ? (int)theirs.pos : at_pos;
    int flags = FLAG_PAIRED | bit | (proper ? FLAG_PROPER : 0) | (mate_has ? 0 : FLAG_MATE_UNMAPPED)
                | (mate_has && theirs.strand ? FLAG_MATE_REVERSE : 0);
    int tlen = has && mate_has && at_contig == mate_contig ? (int)(theirs.five - mine.five) : 0;
    PairRecord r;
    r.read = (int)read;
    r.mate_contig = mate_contig;
    r.mate_pos = mate_pos;
    r.mate_hit = mate_primary;
    r.rescued = 0;
    if (!has) {
        r.hit = -1;
        r.flag = flags | FLAG_UNMAPPED;
        r.contig = at_contig;
        r.pos = at_pos;
        r.mapq = 0;
        r.tlen = 0;
        r.xa_first = 0;
        r.xa_count = 0;
        records[at] = r;
        return 1u;
    }
    uint own_mapq = primary_mapq(mapq, dist, own_first, count, max(loci, count));
    bool best = (uint)primary == own_first;
    r.mapq = (int)(proper ? max(pair_mapq, best ? own_mapq : 0u) : own_mapq);
    r.xa_count = xa ? (int)min(count, max_hits) - 1 : 0;
    r.xa_first = r.xa_count ? (int)xa_at : 0;
    uint kept = min(count, cap), listed = xa ? min(count, max_hits) : 1u;
    // the primary, then the other loci in order
    for (uint rank = 0; rank < max(kept, listed); ++rank) {
        uint h = rank == 0u ? (uint)primary : own_first + rank - ((own_first + rank) <= (uint)primary ? 1u : 0u);
        if (rank > 0u && rank < listed)
            xa_hit[xa_at + rank - 1u] = h;
        if (rank >= kept)
            continue;
        Place locus = place_of(h, row, end, contig, contig_start, start);
        r.hit = (int)h;
        r.flag = (rank == 0u ? flags : (flags & ~FLAG_PROPER) | FLAG_SECONDARY) | (locus.strand ? FLAG_REVERSE : 0);
        r.contig = (int)locus.contig;
        r.pos = (int)locus.pos;
        if (rank > 0u)
            r.mapq = (int)mapq[3];
        r.tlen = rank == 0u ? tlen : 0;
        records[at + rank] = r;
    }
    return kept;
}

/* The records of the pairs pair_loci pairs (not those left to the host), pair p's from
 * record_at[p], mate 1's then mate 2's; mate 1's XA loci from xa1_at[p], mate 2's from xa2_at[p]. */
__kernel void pair_table(uint n_pairs, __global const uint *mate1, __global const uint *mate2,
                         __global const uint *first, __global const uint *row, __global const uint *end,
                         __global const uchar *dist, __global const uint *contig, __global const uint *contig_start,
                         __global const uint *start, __global const uint *read_loci, __global const uint *mapq,
                         uint max_hits, uint xa, __global const int *primary1, __global const int *primary2,
                         __global const uint *pair_mapq, __global const uint *status,
                         __global const uint *record_at, __global const uint *xa1_at, __global const uint *xa2_at,
                         __global PairRecord *records, __global uint *xa_hit)
{
    uint p = get_global_id(0);
    if (p >= n_pairs || (status[p] & STATUS_HOST))
        return;
    uint one = mate1[p], two = mate2[p];
    bool proper = (status[p] & STATUS_PROPER) != 0;
    uint cap = xa ? 1u : max_hits;
    uint at = record_at[p];
    at += write_mate(one, first[one], first[one + 1u] - first[one], read_loci[one], primary1[p], primary2[p],
                     FLAG_FIRST, proper, pair_mapq[p], cap, max_hits, xa != 0u, at, xa1_at[p], row, end, dist, contig,
                     contig_start, start, mapq, records, xa_hit);
    write_mate(two, first[two], first[two + 1u] - first[two], read_loci[two], primary2[p], primary1[p], FLAG_SECOND,
               proper, pair_mapq[p], cap, max_hits, xa != 0u, at, xa2_at[p], row, end, dist, contig, contig_start,
               start, mapq, records, xa_hit);
}

/* The records the host laid out (of the pairs left to it) moved to their places: records[at[i]]
 * = given[i]; and XA loci likewise. */
__kernel void place_records(uint n, __global const uint *at, __global const PairRecord *given,
                            __global PairRecord *records)
{
    uint i = get_global_id(0);
    if (i < n)
        records[at[i]] = given[i];
}

__kernel void place_uints(uint n, __global const uint *at, __global const uint *given, __global uint *out)
{
    uint i = get_global_id(0);
    if (i < n)
        out[at[i]] = given[i];
}

/* The loci records name (PairHit): the mapper's n_mapped, then the rescued ones the host gives. */
__kernel void pair_hits(uint n_mapped, uint n_rescued, __global const uint *row, __global const uchar *dist,
                        __global const uint *contig, __global const uint *contig_start, __global const uint *start,
                        __global const PairHit *rescued, __global PairHit *hits)
{
    uint i = get_global_id(0);
    if (i >= n_mapped + n_rescued)
        return;
    if (i >= n_mapped) {
        hits[i] = rescued[i - n_mapped];
        return;
    }
    PairHit h;
    h.contig = contig[i];
    h.start = start[i];
    h.pos = h.start - contig_start[h.contig];
    h.strand = row[i] & 1u;
    h.dist = dist[i];
    h.trace = i;
    hits[i] = h;
}
