/* Exclusive prefix sum of one value per work-item of a work-group of SIZE items (a compile-time
 * constant), in log2(SIZE) steps in local memory: DEFINE_SCAN_ITEMS(name, SIZE) defines
 * uint name(value, buf, lid, *total), which returns the sum of the values of the items before lid
 * and puts the sum of all in *total; buf holds SIZE values and may be used again on return. */
#define DEFINE_SCAN_ITEMS(name, SIZE)                                                              \
    inline uint name(uint value, __local uint *buf, uint lid, uint *total)                        \
    {                                                                                              \
        buf[lid] = value;                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (uint d = 1; d < (SIZE); d <<= 1) {                                                    \
            uint add = lid >= d ? buf[lid - d] : 0u;                                               \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            buf[lid] += add;                                                                       \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        uint inclusive = buf[lid];                                                                 \
        *total = buf[(SIZE) - 1];                                                                  \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        return inclusive - value;                                                                  \
    }
