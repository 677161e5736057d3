/* Device ceilings for the roofline of scripts/roofline.py: independent random 4-byte reads from
 * a large table, and streaming reads of a large buffer. */

__kernel void random_reads(__global const uint *table, uint mask, uint reads_per_item,
                           __global uint *sink)
{
    uint id = get_global_id(0);
    uint x = id * 2654435761u + 1u, sum = 0;
    for (uint i = 0; i < reads_per_item; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        sum += table[x & mask];
    }
    sink[id] = sum;
}

__kernel void stream_reads(__global const uint4 *data, uint n, __global uint *sink)
{
    uint id = get_global_id(0), stride = get_global_size(0);
    uint4 sum = (uint4)(0u);
    for (uint i = id; i < n; i += stride)
        sum += data[i];
    sink[id] = sum.x + sum.y + sum.z + sum.w;
}
