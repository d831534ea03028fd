// Kernels of the zero-copy lesson. Whether a pointer reaches mapped host memory (every load
// or store crosses the link) or HBM is the caller's choice: the same kernel runs on both.
// Indices are 64-bit: a table of several GiB overflows 32-bit offsets.
// The mailbox layout (MB_*) is passed in as -D options by zero_copy/kernel.py.

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// out[i] = sum over j < reads of in[(i + j * shift) mod n_vec], float4 by float4, summed in
// order j = 0, 1, ... so the host can reproduce it bit for bit. Each vector is loaded `reads`
// times. With shift = n_vec / reads a vector's loads come a whole buffer apart in time, so no
// cache can serve them ("far"); with shift = 32 they hit lines a neighbouring warp just loaded
// ("near").
extern "C" __global__ void reread(const float4* __restrict__ in, float4* __restrict__ out,
                                  long long n_vec, int reads, long long shift) {
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n_vec) return;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    long long k = i;
#pragma unroll 4
    for (int j = 0; j < reads; ++j) {
        float4 v = in[k];
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        k += shift;
        if (k >= n_vec) k -= n_vec;
    }
    out[i] = acc;
}

// out[i] = in[(i * stride) mod n], n a power of two. stride 1: a warp's 32 lanes load 128
// contiguous bytes. A large odd stride is a permutation that sends them to 32 different lines.
extern "C" __global__ void load_words(const unsigned int* __restrict__ in, unsigned int* __restrict__ out,
                                      long long n, unsigned long long stride) {
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long j = (static_cast<unsigned long long>(i) * stride) & static_cast<unsigned long long>(n - 1);
    out[i] = in[j];
}

// One warp per requested row. Each lane moves 16-byte words; a warp's load instruction covers
// 512 contiguous bytes, and up to four are issued before the first store, so a 1 KiB row is
// in flight at once.
extern "C" __global__ void gather_rows(const uint4* __restrict__ table, const long long* __restrict__ ids,
                                       int n_ids, int row_vecs, uint4* __restrict__ out) {
    long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= n_ids) return;
    const uint4* src = table + ids[warp] * static_cast<long long>(row_vecs);
    uint4* dst = out + warp * static_cast<long long>(row_vecs);
    for (int base = lane; base < row_vecs; base += 128) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            int j = base + 32 * u;
            if (j < row_vecs) v[u] = src[j];
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            int j = base + 32 * u;
            if (j < row_vecs) dst[j] = v[u];
        }
    }
}

// A 64-bit finaliser (splitmix64's), truncated to 32 bits; zero_copy/gather.py has the NumPy twin.
__device__ __forceinline__ unsigned int mix32(unsigned long long x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return static_cast<unsigned int>(x);
}

// Fill n words with mix32(i + seed): the GPU writes the whole table over the link.
extern "C" __global__ void fill_words(unsigned int* __restrict__ out, long long n, unsigned long long seed) {
    long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = mix32(static_cast<unsigned long long>(i) + seed);
    }
}

// Spin until the host writes `round` into the release word (or timeout_ns has passed since
// t_publish, which keeps a lost release from hanging the GPU), then stamp the release time and
// acknowledge. The lesson kernel below and the mailbox exercise (zero_copy/mailbox.py) share it.
__device__ void wait_for_release(volatile int* box, int round, unsigned long long t_publish, long long timeout_ns) {
    while (box[MB_RELEASE] != round) {
        if (global_ns() - t_publish > static_cast<unsigned long long>(timeout_ns)) {
            box[MB_TIMED_OUT] = round;
            break;
        }
        __nanosleep(500);
    }
    *reinterpret_cast<volatile unsigned long long*>(box + MB_T_RELEASED) = global_ns();
    __threadfence_system();
    box[MB_ACK] = round;
}

// Fence and flag. One thread publishes a payload, fences so that the host sees the payload
// before the flag, raises the flag, then waits for the host's release: the kernel cannot
// finish before the host has read the payload. The publish step between the REFERENCE marks is
// the mailbox exercise's answer (the grading sandbox's copy of this file leaves it out).
extern "C" __global__ void publish_and_wait(volatile int* box, int round, long long timeout_ns) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned long long t_publish = global_ns();
    *reinterpret_cast<volatile unsigned long long*>(box + MB_T_PUBLISH) = t_publish;
    // BEGIN REFERENCE
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();  // the payload is visible to the host before the flag is
    box[MB_FLAG] = round;
    // END REFERENCE
    wait_for_release(box, round, t_publish, timeout_ns);
}

// out = a*x + y with separate roundings (no FMA), so NumPy's float32 a*x+y matches bit for bit.
extern "C" __global__ void saxpy(const float4* __restrict__ x, const float4* __restrict__ y,
                                 float4* __restrict__ out, float a, long long n_vec) {
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n_vec) return;
    float4 xv = x[i], yv = y[i];
    out[i] = make_float4(__fadd_rn(__fmul_rn(a, xv.x), yv.x), __fadd_rn(__fmul_rn(a, xv.y), yv.y),
                         __fadd_rn(__fmul_rn(a, xv.z), yv.z), __fadd_rn(__fmul_rn(a, xv.w), yv.w));
}

// Day 54's kernel with a grid of the caller's choosing: each float goes through `fmas` chained
// x <- fmaf(x, a, b), the steps of labcore/pipeline/kernels/fma_chain.cu, so the result is the
// same in every bit whatever the grid. Float4 by float4, the blocks striding over the array: with
// `in` and `out` in mapped host memory every float4 crosses the link twice, loaded and stored by
// the SMs themselves, and the grid sets how many loads are in flight.
extern "C" __global__ void fma_chain_vec(const float4* __restrict__ in, float4* __restrict__ out,
                                         long long n_vec, int fmas, float a, float b) {
    long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_vec; i += stride) {
        float4 v = in[i];
#pragma unroll 16
        for (int j = 0; j < fmas; ++j) {
            v.x = fmaf(v.x, a, b);
            v.y = fmaf(v.y, a, b);
            v.z = fmaf(v.z, a, b);
            v.w = fmaf(v.w, a, b);
        }
        out[i] = v;
    }
}
