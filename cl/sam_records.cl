/* Whole SAM records of a batch, one work-item per record, as marose/sam.py's format_batch
 * writes them: with xa_hits 0 a record per hit; else one record per read, its hits of rank 1 to
 * xa_hits - 1 in an XA tag. Read r's records are [record_base[r], record_base[r + 1]): its
 * first hits in turn, hits [hit_base[r], hit_base[r + 1]) being all of its hits, best first, or
 * one unmapped record when it has none. A hit carries its row (2 * read + strand), edit
 * distance, contig, genome start and traceback operations (op_count of row h of ops,
 * cl/traceback.cl); its FLAG, MAPQ and position are worked out here as sam.rank_hits does, and
 * CIGAR, MD and NM are written as in sam_text.cl (with the reference's IUPAC letters iupac_at,
 * iupac_letter, n_iupac). read_loci: the loci of each read, counted ones included. A
 * reverse-strand record holds the reverse complement of the read (complement: a table of 256
 * bytes) and its qualities reversed. tail follows the HN tag (a read group tag or nothing).
 *
 * Two passes: with write 0 each record's length, newline included, goes to length[i]; with
 * write 1 the record goes to out from out_offset[i]. Needs search.cl and sam_text.cl. mapq holds
 * marose/sam.py's MAPQ_UNIQUE, MAPQ_MAX_AMBIGUOUS, MAPQ_PER_EDIT and MAPQ_SECONDARY. The put_
 * helpers here write a record's fields for pair_records.cl too. */

/* MAPQ of the first (best) of a read's n_hits hits at h, of its loci loci in all. */
inline uint primary_mapq(__global const uint *mapq, __global const uchar *dist, uint h, uint n_hits, uint loci)
{
    if (loci == 1u)
        return mapq[0];
    uint gap = n_hits >= 2u && dist[h + 1u] > dist[h] ? dist[h + 1u] - dist[h] : 0u;
    return min(mapq[1], mapq[2] * gap);
}

inline uint put_text(__global char *out, uint at, __global const char *text, uint n, bool write)
{
    if (write)
        for (uint j = 0; j < n; ++j)
            out[at + j] = text[j];
    return at + n;
}

inline uint put_literal(__global char *out, uint at, __constant char *text, bool write)
{
    for (; *text; ++text)
        at = put_char(out, at, *text, write);
    return at;
}

/* The read's bases (or qualities) [from, from + n) of text, reversed, complemented by table. */
inline uint put_reversed(__global char *out, uint at, __global const char *text, uint n,
                         __global const uchar *table, bool write)
{
    if (write)
        for (uint j = 0; j < n; ++j)
            out[at + j] = table ? (char)table[(uchar)text[n - 1u - j]] : text[n - 1u - j];
    return at + n;
}

/* A contig's name, or '*' for none (c < 0). */
inline uint put_contig(__global char *o, uint at, int c, __global const char *contig_names,
                       __global const uint *contig_name_offset, bool put)
{
    if (c < 0)
        return put_char(o, at, '*', put);
    uint from = contig_name_offset[c];
    return put_text(o, at, contig_names + from, contig_name_offset[c + 1] - from, put);
}

/* SEQ and QUAL of a record, tab between: the read's n_bases bases and qualities (or '*'
 * without them), reverse complemented and reversed on a reverse-strand record; an empty read's
 * are '*' both. */
inline uint put_bases(__global char *o, uint at, __global const char *seq, __global const char *qual,
                      uint n_bases, bool has_quals, bool reverse, __global const uchar *complement, bool put)
{
    if (n_bases == 0u)
        return put_char(o, put_char(o, put_char(o, at, '*', put), '\t', put), '*', put);
    at = reverse ? put_reversed(o, at, seq, n_bases, complement, put) : put_text(o, at, seq, n_bases, put);
    at = put_char(o, at, '\t', put);
    if (!has_quals)
        return put_char(o, at, '*', put);
    return reverse ? put_reversed(o, at, qual, n_bases, 0, put) : put_text(o, at, qual, n_bases, put);
}

/* The NM, MD and AS tags of an alignment (count operations op from genome position start, dist
 * edits), each with its leading tab. */
inline uint put_alignment_tags(__global char *o, uint at, __global const uchar *op, uint count, uint dist,
                               __global const uchar *genome, uint start, __global const uint *iupac_at,
                               __global const uchar *iupac_letter, uint n_iupac, bool put)
{
    at = put_number(o, put_literal(o, at, "\tNM:i:", put), edit_count(op, count), put);
    at = put_md(o, put_literal(o, at, "\tMD:Z:", put), op, count, genome, start, iupac_at, iupac_letter, n_iupac,
                put);
    at = put_literal(o, at, "\tAS:i:", put);
    if (dist)
        at = put_char(o, at, '-', put);
    return put_number(o, at, dist, put);
}

/* A hit's contig, signed 1-based position, CIGAR and NM, as an XA tag lists it ("chr,+pos,CIGAR,NM;"). */
inline uint put_xa_item(__global char *o, uint at, uint contig, bool reverse, uint pos, __global const uchar *op,
                        uint count, __global const char *contig_names, __global const uint *contig_name_offset,
                        bool put)
{
    at = put_contig(o, at, (int)contig, contig_names, contig_name_offset, put);
    at = put_char(o, put_char(o, at, ',', put), reverse ? '-' : '+', put);
    at = put_char(o, put_number(o, at, pos, put), ',', put);
    at = put_char(o, put_cigar(o, at, op, count, put), ',', put);
    return put_char(o, put_number(o, at, edit_count(op, count), put), ';', put);
}

__kernel void sam_records(uint n_records, uint n_reads, uint write, uint xa_hits,
                          __global const uint *record_base,
                          __global const uint *hit_base, __global const uint *read_loci,
                          __global const char *names, __global const uint *name_offset,
                          __global const char *seqs, __global const uint *seq_offset,
                          __global const char *quals, uint has_quals, __global const uint *hit_row,
                          __global const uchar *hit_dist, __global const uint *hit_contig,
                          __global const uint *contig_start, __global const uchar *ops,
                          __global const uint *op_count, uint ops_width, __global const uint *start,
                          __global const uchar *genome, __global const uint *iupac_at,
                          __global const uchar *iupac_letter, uint n_iupac, __global const char *contig_names,
                          __global const uint *contig_name_offset, __global const uchar *complement,
                          __global const char *tail, uint tail_length, __global const uint *mapq,
                          __global const uint *out_offset, __global char *out, __global uint *length)
{
    uint i = get_global_id(0);
    if (i >= n_records)
        return;
    bool put = write != 0u;
    uint r = last_at_most(record_base, n_reads, i);
    uint rank = i - record_base[r], n_hits = hit_base[r + 1] - hit_base[r];
    int h = n_hits ? (int)(hit_base[r] + rank) : -1;
    __global char *o = put ? out + out_offset[i] : out;
    uint at = put_text(o, 0u, names + name_offset[r], name_offset[r + 1] - name_offset[r], put);
    __global const char *seq = seqs + seq_offset[r], *qual = quals + seq_offset[r];
    uint n_bases = seq_offset[r + 1] - seq_offset[r];
    bool reverse = h >= 0 && (hit_row[h] & 1u);
    at = put_char(o, at, '\t', put);
    if (h < 0) {
        at = put_literal(o, at, "4\t*\t0\t0\t*\t*\t0\t0\t", put);
    } else {
        uint flag = (reverse ? 16u : 0u) | (rank ? 256u : 0u);
        at = put_char(o, put_number(o, at, flag, put), '\t', put);
        uint c = hit_contig[h];
        at = put_contig(o, at, (int)c, contig_names, contig_name_offset, put);
        uint pos = start[h] - contig_start[c] + 1u;
        at = put_char(o, put_number(o, put_char(o, at, '\t', put), pos, put), '\t', put);
        uint quality = rank ? mapq[3] : primary_mapq(mapq, hit_dist, (uint)h, n_hits, read_loci[r]);
        at = put_char(o, put_number(o, at, quality, put), '\t', put);
        at = put_cigar(o, at, ops + (size_t)h * ops_width, op_count[h], put);
        at = put_literal(o, at, "\t*\t0\t0\t", put);
    }
    at = put_bases(o, at, seq, qual, n_bases, has_quals != 0u, reverse, complement, put);
    if (h < 0) {
        at = put_literal(o, at, "\tHN:i:0", put);
    } else {
        at = put_alignment_tags(o, at, ops + (size_t)h * ops_width, op_count[h], hit_dist[h], genome, start[h],
                                iupac_at, iupac_letter, n_iupac, put);
        at = put_number(o, put_literal(o, at, "\tHN:i:", put), read_loci[r], put);
    }
    at = put_text(o, at, tail, tail_length, put);
    if (xa_hits > 1u && n_hits > 1u) {
        at = put_literal(o, at, "\tXA:Z:", put);
        for (uint x = hit_base[r] + 1u; x < hit_base[r] + min(n_hits, xa_hits); ++x) {
            uint c = hit_contig[x];
            at = put_xa_item(o, at, c, (hit_row[x] & 1u) != 0u, start[x] - contig_start[c] + 1u,
                             ops + (size_t)x * ops_width, op_count[x], contig_names, contig_name_offset, put);
        }
    }
    at = put_char(o, at, '\n', put);
    if (!put)
        length[i] = at;
}
