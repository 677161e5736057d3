/* Paired-end SAM records, one work-item per record, as marose/sam.py's format_records writes
 * them from the records pairing.cl (or marose/pairs.py) lays out (each field given, none worked
 * out here), with the text helpers of sam_text.cl and sam_records.cl; and the check that a
 * pair's mates share a name. Needs search.cl, sam_text.cl and sam_records.cl.
 *
 * A record's QNAME is its read's name less a trailing /1 or /2 (marose/mates.py's pair_name).
 * Its loci are hits[...]: a hit's traceback is row trace of the mapped loci's (ops, op_count)
 * when trace < n_mapped, else row trace - n_mapped of the rescued loci's. After QUAL come NM,
 * MD and AS (mapped records), HN:i (the read's loci read_loci[read]), MC:Z (the mate's primary
 * CIGAR, or '*' beside an unmapped mate on a mapped record), XR:i:1 (rescued), XA:Z (the hits
 * xa_hit[xa_first .. xa_first + xa_count)), then tail (a read group tag or nothing). Two passes, as sam_records: with write 0 each record's length,
 * newline included, goes to length[i]; with write 1 the record goes to out from out_offset[i]. */

/* One record: marose/sam_records.py's PAIR_RECORD, field for field. */
typedef struct {
    int read, hit, flag, contig, pos, mapq, mate_contig, mate_pos, tlen, mate_hit, rescued, xa_first, xa_count;
} PairRecord;

/* One locus: marose/sam_records.py's PAIR_HIT (pos within its contig, start in the genome). */
typedef struct {
    uint contig, pos, start, strand, dist, trace;
} PairHit;

/* The length of a mate's name without a trailing /1 or /2. */
inline uint pair_name_length(__global const char *name, uint length)
{
    bool suffix = length >= 2u && name[length - 2u] == '/' && (name[length - 1u] == '1' || name[length - 1u] == '2');
    return suffix ? length - 2u : length;
}

/* first_differing (UINT_MAX before) becomes the first of n_pairs pairs whose mates (reads
 * mate1[p] and mate2[p]) have different names, a trailing /1 or /2 aside. */
__kernel void mate_names(uint n_pairs, __global const uint *mate1, __global const uint *mate2,
                         __global const char *names, __global const uint *name_offset,
                         __global uint *first_differing)
{
    uint p = get_global_id(0);
    if (p >= n_pairs)
        return;
    uint a = mate1[p], b = mate2[p];
    __global const char *one = names + name_offset[a], *two = names + name_offset[b];
    uint length = pair_name_length(one, name_offset[a + 1] - name_offset[a]);
    bool same = length == pair_name_length(two, name_offset[b + 1] - name_offset[b]);
    for (uint j = 0; same && j < length; ++j)
        same = one[j] == two[j];
    if (!same)
        atomic_min(first_differing, p);
}

inline uint put_signed(__global char *o, uint at, int value, bool put)
{
    if (value < 0)
        at = put_char(o, at, '-', put);
    return put_number(o, at, value < 0 ? (uint)(-value) : (uint)value, put);
}

/* A hit's traceback operations and their count. */
inline __global const uchar *hit_ops(PairHit hit, uint n_mapped, __global const uchar *ops, uint ops_width,
                                     __global const uchar *rescued_ops, uint rescued_width)
{
    return hit.trace < n_mapped ? ops + (size_t)hit.trace * ops_width
                                : rescued_ops + (size_t)(hit.trace - n_mapped) * rescued_width;
}

inline uint hit_op_count(PairHit hit, uint n_mapped, __global const uint *op_count,
                         __global const uint *rescued_count)
{
    return hit.trace < n_mapped ? op_count[hit.trace] : rescued_count[hit.trace - n_mapped];
}

__kernel void pair_records(uint n_records, uint write, __global const PairRecord *records,
                           __global const uint *xa_hit, __global const PairHit *hits, uint n_mapped,
                           __global const uchar *ops, __global const uint *op_count, uint ops_width,
                           __global const uchar *rescued_ops, __global const uint *rescued_count,
                           uint rescued_width, __global const uint *read_loci,
                           __global const char *names, __global const uint *name_offset,
                           __global const char *seqs, __global const uint *seq_offset,
                           __global const char *quals, uint has_quals, __global const uchar *genome,
                           __global const uint *iupac_at, __global const uchar *iupac_letter, uint n_iupac,
                           __global const char *contig_names, __global const uint *contig_name_offset,
                           __global const uchar *complement, __global const char *tail, uint tail_length,
                           __global const uint *out_offset, __global char *out, __global uint *length)
{
    uint i = get_global_id(0);
    if (i >= n_records)
        return;
    bool put = write != 0u;
    PairRecord record = records[i];
    __global char *o = put ? out + out_offset[i] : out;
    uint r = (uint)record.read;
    __global const char *name = names + name_offset[r];
    uint at = put_text(o, 0u, name, pair_name_length(name, name_offset[r + 1] - name_offset[r]), put);
    at = put_char(o, put_number(o, put_char(o, at, '\t', put), (uint)record.flag, put), '\t', put);
    at = put_contig(o, at, record.contig, contig_names, contig_name_offset, put);
    at = put_char(o, put_number(o, put_char(o, at, '\t', put), (uint)(max(record.pos, -1) + 1), put), '\t', put);
    at = put_char(o, put_number(o, at, (uint)record.mapq, put), '\t', put);
    PairHit hit;
    __global const uchar *op = 0;
    uint count = 0;
    if (record.hit >= 0) {
        hit = hits[record.hit];
        op = hit_ops(hit, n_mapped, ops, ops_width, rescued_ops, rescued_width);
        count = hit_op_count(hit, n_mapped, op_count, rescued_count);
        at = put_cigar(o, at, op, count, put);
    } else {
        at = put_char(o, at, '*', put);
    }
    at = put_char(o, at, '\t', put);
    if (record.mate_contig >= 0 && record.mate_contig == record.contig)
        at = put_char(o, at, '=', put);
    else
        at = put_contig(o, at, record.mate_contig, contig_names, contig_name_offset, put);
    at = put_char(o, at, '\t', put);
    at = put_char(o, put_number(o, at, (uint)(max(record.mate_pos, -1) + 1), put), '\t', put);
    at = put_char(o, put_signed(o, at, record.tlen, put), '\t', put);
    at = put_bases(o, at, seqs + seq_offset[r], quals + seq_offset[r], seq_offset[r + 1] - seq_offset[r],
                   has_quals != 0u, (record.flag & 16) != 0, complement, put);
    if (record.hit >= 0)
        at = put_alignment_tags(o, at, op, count, hit.dist, genome, hit.start, iupac_at, iupac_letter, n_iupac,
                                put);
    at = put_number(o, put_literal(o, at, "\tHN:i:", put), read_loci[r], put);
    if (record.mate_hit >= 0) {
        PairHit mate = hits[record.mate_hit];
        at = put_literal(o, at, "\tMC:Z:", put);
        at = put_cigar(o, at, hit_ops(mate, n_mapped, ops, ops_width, rescued_ops, rescued_width),
                       hit_op_count(mate, n_mapped, op_count, rescued_count), put);
    } else if (record.hit >= 0) {
        at = put_literal(o, at, "\tMC:Z:*", put);
    }
    if (record.rescued)
        at = put_literal(o, at, "\tXR:i:1", put);
    if (record.xa_count > 0) {
        at = put_literal(o, at, "\tXA:Z:", put);
        for (int x = record.xa_first; x < record.xa_first + record.xa_count; ++x) {
            PairHit other = hits[xa_hit[x]];
            at = put_xa_item(o, at, other.contig, other.strand != 0u, other.pos + 1u,
                             hit_ops(other, n_mapped, ops, ops_width, rescued_ops, rescued_width),
                             hit_op_count(other, n_mapped, op_count, rescued_count), contig_names,
                             contig_name_offset, put);
        }
    }
    at = put_text(o, at, tail, tail_length, put);
    at = put_char(o, at, '\n', put);
    if (!put)
        length[i] = at;
}
