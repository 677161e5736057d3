/* Sorting rows too long for one work-group's local memory, by many work-groups at once. Row r
 * holds total[r] values at values + offset[r]; it leaves sorted and unique at the same place,
 * with the number of distinct values in out_count[r]. (sort_rows sorts the rows that fit, a
 * work-group each.)
 *
 *   sort_chunks    a work-group per chunk of CAP: sorted and made unique in local memory,
 *                  padded with NONE (which sorts last) to its size;
 *   merge_tiles    one round: each pair of sorted runs of `width` merged into one, a
 *                  work-group per TILE outputs (merge path), until a row is one run;
 *   count_unique   per tile, the distinct values other than NONE;
 *   scan_unique    a work-group per row: where each of its tiles writes, and the row's count;
 *   write_unique   per tile, its distinct values to their place in values.
 *
 * Rounds go from values to scratch (at the same offsets) and back; a row's chunks start in
 * the buffer that makes its last round end in scratch, from which the distinct values return.
 * The host lists the tiles (TILE outputs each, TILE dividing 2 CAP) of the rows with most
 * rounds first, so that the tiles of round j are the first ones.
 *
 * Values are of key_bits bits. Needs sort.cl. Defines: WG, CAP, TILE (a multiple of WG). */

#define ITEMS (TILE / WG)

/* Rounds of merging after the chunk sort: the least j with CAP << j >= total. */
inline uint rounds_for(uint total)
{
    uint j = 0;
    while (((ulong)CAP << j) < total)
        ++j;
    return j;
}

/* A work-group per row of rows, of at most CAP values: sorted and made unique in local memory. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sort_rows(uint key_bits, __global uint *values, __global const uint *rows, __global const uint *offset,
               __global const uint *total, __global uint *out_count)
{
    __local uint keys_a[LOCAL_KEYS(CAP)], keys_b[LOCAL_KEYS(CAP)], hist[RADIX * WG], buf[WG];
    uint r = rows[get_group_id(0)], lid = get_local_id(0), n = total[r];
    __global uint *row = values + offset[r];
    for (uint i = lid; i < n; i += WG)
        keys_a[LOCAL_AT(i)] = row[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint n_unique = store_sorted_unique(keys_a, keys_b, n, hist, buf, lid, key_bits, row);
    if (lid == 0)
        out_count[r] = n_unique;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sort_chunks(uint key_bits, __global uint *values, __global uint *scratch,
                 __global const uint *chunk_row, __global const uint *chunk_first, __global const uint *offset,
                 __global const uint *total)
{
    __local uint keys_a[LOCAL_KEYS(CAP)], keys_b[LOCAL_KEYS(CAP)], hist[RADIX * WG], buf[WG];
    uint g = get_group_id(0), lid = get_local_id(0), r = chunk_row[g], first = chunk_first[g];
    uint n = min((uint)CAP, total[r] - first);
    __global uint *src = values + offset[r] + first;
    for (uint i = lid; i < n; i += WG)
        keys_a[LOCAL_AT(i)] = src[i];
    /* with an odd number of rounds the chunk goes back where it was read from: every read first */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    __global uint *dst = (rounds_for(total[r]) % 2u == 1u ? values : scratch) + offset[r] + first;
    uint n_unique = store_sorted_unique(keys_a, keys_b, n, hist, buf, lid, key_bits, dst);
    for (uint i = n_unique + lid; i < n; i += WG)
        dst[i] = NONE;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void merge_tiles(__global uint *values, __global uint *scratch, __global const uint *tile_row,
                 __global const uint *tile_first, __global const uint *offset, __global const uint *total,
                 uint round)
{
    __local uint in[TILE], merged[TILE], split[2];
    uint g = get_group_id(0), lid = get_local_id(0), r = tile_row[g], n = total[r];
    bool from_values = (rounds_for(n) - round) % 2u == 1u;
    __global const uint *from = (from_values ? values : scratch) + offset[r];
    __global uint *to = (from_values ? scratch : values) + offset[r];
    uint width = (uint)CAP << round, pair = tile_first[g] / (2u * width) * (2u * width);
    uint na = min(width, n - pair), nb = min(width, n - pair - na);
    __global const uint *a = from + pair, *b = a + na;
    uint d = tile_first[g] - pair, d_end = min(d + TILE, na + nb);
    if (lid < 2u)
        split[lid] = merge_split(a, na, b, nb, lid == 0u ? d : d_end);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint i0 = split[0], la = split[1] - i0, j0 = d - i0, lb = d_end - split[1] - j0;
    for (uint i = lid; i < la; i += WG)
        in[i] = a[i0 + i];
    for (uint i = lid; i < lb; i += WG)
        in[la + i] = b[j0 + i];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint m = la + lb, s = min(m, lid * ITEMS), e = min(m, s + ITEMS);
    uint x = merge_split_local(in, la, in + la, lb, s), y = s - x;
    for (uint k = s; k < e; ++k)
        merged[k] = y >= lb || (x < la && in[x] <= in[la + y]) ? in[x++] : in[la + y++];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < m; i += WG)
        to[pair + d + i] = merged[i];
}

/* The distinct values this work-item holds in its tile (ITEMS consecutive entries), its
 * prefix among the tile's work-items, and the tile's total. */
inline uint tile_prefix(__global const uint *row, uint first, uint n, uint lid, __local uint *buf,
                        uint *lo, uint *hi, uint *tile_total)
{
    *lo = min(n, first + lid * ITEMS);
    *hi = min(n, *lo + ITEMS);
    uint mine = 0;
    for (uint i = *lo; i < *hi; ++i)
        mine += is_first(row, i);
    return scan_items(mine, buf, lid, tile_total);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void count_unique(__global const uint *scratch, __global const uint *tile_row, __global const uint *tile_first,
                  __global const uint *offset, __global const uint *total, __global uint *tile_count)
{
    __local uint buf[WG];
    uint g = get_group_id(0), lid = get_local_id(0), r = tile_row[g], lo, hi, n_tile;
    tile_prefix(scratch + offset[r], tile_first[g], total[r], lid, buf, &lo, &hi, &n_tile);
    if (lid == 0u)
        tile_count[g] = n_tile;
}

/* Row rows[q]'s tiles are tiles [row_tiles[q], row_tiles[q + 1]). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scan_unique(__global const uint *rows, __global const uint *row_tiles, __global uint *tile_count,
                 __global uint *out_count)
{
    __local uint buf[WG];
    uint q = get_group_id(0), lid = get_local_id(0), carry = 0;
    for (uint base = row_tiles[q]; base < row_tiles[q + 1u]; base += WG) {
        uint t = base + lid, count = t < row_tiles[q + 1u] ? tile_count[t] : 0u, sum;
        uint prefix = scan_items(count, buf, lid, &sum);
        if (t < row_tiles[q + 1u])
            tile_count[t] = carry + prefix;
        carry += sum;
    }
    if (lid == 0u)
        out_count[rows[q]] = carry;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void write_unique(__global uint *values, __global const uint *scratch, __global const uint *tile_row,
                  __global const uint *tile_first, __global const uint *offset, __global const uint *total,
                  __global const uint *tile_at)
{
    __local uint buf[WG];
    uint g = get_group_id(0), lid = get_local_id(0), r = tile_row[g], lo, hi, n_tile;
    __global const uint *row = scratch + offset[r];
    uint at = tile_at[g] + tile_prefix(row, tile_first[g], total[r], lid, buf, &lo, &hi, &n_tile);
    __global uint *out = values + offset[r];
    for (uint i = lo; i < hi; ++i)
        if (is_first(row, i))
            out[at++] = row[i];
}
