/* Build the BDZ perfect hash of every seed, one work-item per seed (see indexer/bdz.py for
 * the definition). Each work-item peels its seed's 3-hypergraph with a queue of degree-one
 * vertices, retrying with the next hash seed J until it peels, then assigns g in reverse
 * peeling order. A degree-one vertex knows its edge as the xor of its incident edge ids.
 * Each key's slot (the vertex phf gives it) is written too. Needs murmur3.cl and phf.cl.
 * Scratch arrays are indexed like the vertices or the keys. */

#ifndef MAX_ATTEMPTS
#define MAX_ATTEMPTS 256
#endif

__kernel void bdz_build(uint n_seeds, __global const uint *key_start, __global const uint *keys,
                        __global const uint *vertex_offset, __global uint *hash_seed,
                        __global uchar *g, __global uint *deg, __global uint *edge_xor,
                        __global uint *queue, __global uint *order_edge,
                        __global uint *order_vertex, __global uint *slot, __global uint *failed)
{
    uint s = get_global_id(0);
    if (s >= n_seeds)
        return;
    uint k0 = key_start[s], nk = key_start[s + 1] - k0;
    uint base = vertex_offset[s], nv = vertex_offset[s + 1] - base, part = nv / 3u;
    __global const uint *key = keys + k0;
    __global uint *d = deg + base, *x = edge_xor + base, *q = queue + base;
    __global uint *oe = order_edge + k0, *ov = order_vertex + k0;
    __global uchar *gs = g + base;

    for (uint J = 0; J < MAX_ATTEMPTS; ++J) {
        for (uint v = 0; v < nv; ++v) {
            d[v] = 0;
            x[v] = 0;
        }
        for (uint e = 0; e < nk; ++e) {
            uint3 ed = phf_edge(key[e], J, 0u, part);
            d[ed.x]++; d[ed.y]++; d[ed.z]++;
            x[ed.x] ^= e; x[ed.y] ^= e; x[ed.z] ^= e;
        }
        uint tail = 0;
        for (uint v = 0; v < nv; ++v)
            if (d[v] == 1u)
                q[tail++] = v;
        uint n = 0;
        for (uint head = 0; head < tail; ++head) {
            uint v = q[head];
            if (d[v] != 1u)
                continue;
            uint e = x[v];
            oe[n] = e;
            ov[n] = v;
            ++n;
            uint3 ed = phf_edge(key[e], J, 0u, part);
            uint u[3] = {ed.x, ed.y, ed.z};
            for (int i = 0; i < 3; ++i) {
                d[u[i]]--;
                x[u[i]] ^= e;
                if (d[u[i]] == 1u)
                    q[tail++] = u[i];
            }
        }
        if (n < nk)
            continue;
        for (uint v = 0; v < nv; ++v)
            gs[v] = 0;
        for (uint i = n; i-- > 0;) {
            uint3 ed = phf_edge(key[oe[i]], J, 0u, part);
            uint v = ov[i];
            uint j = v == ed.x ? 0u : (v == ed.y ? 1u : 2u);
            uint sum = gs[ed.x] + gs[ed.y] + gs[ed.z];
            gs[v] = (uchar)((j + 6u - sum) % 3u);
            slot[k0 + oe[i]] = base + v;
        }
        hash_seed[s] = J;
        return;
    }
    failed[0] = 1u;
}
