// The day-54 schedules in plain CUDA C++, the reference that day54/benchmarks/cupy_vs_cpp.py
// holds the CuPy version against (day54/benchmarks/README.md).
//
// It runs the same kernel as labcore/pipeline/kernel.py (the source is included below), with the
// same launch shape and constants, over the same schedules as day54/schedules.py:
//   naive      one blocking worker stream, one device buffer pair, chunk after chunk;
//   pipelined  chunk k on buffer pair k % B and worker stream k % B.
// and times them the way labcore/timing.py does: per (window, schedule, buffers) one
// warm-up, then R repeats, each bracketed by events on the legacy default stream.
//
// Usage: double_buffer [--total BYTES] [--fmas N] [--windows BYTES,...] [--buffers B,...]
//                      [--repeats R]
// Output: one JSON object per line on stdout; device facts and progress on stderr.
// Exit status: 0 ok, 1 a CUDA error or a wrong result, 2 bad arguments.

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../../labcore/pipeline/kernels/fma_chain.cu"

namespace {

// Launch shape and constants of labcore/pipeline/kernel.py. a = 1 - 2^-10 and b = 2^-10 are
// exact in float32, so both sides feed the kernel the same bits.
constexpr int kThreadsPerBlock = 256;
constexpr float kFmaA = 1.0f - 1.0f / 1024.0f;
constexpr float kFmaB = 1.0f / 1024.0f;
constexpr unsigned long long kMiB = 1ull << 20;

void checkCuda(cudaError_t err, const char* call, int line) {
    if (err == cudaSuccess) return;
    std::fprintf(stderr, "double_buffer: line %d: %s failed: %s (%s)\n", line, call,
                 cudaGetErrorName(err), cudaGetErrorString(err));
    std::exit(1);
}

#define CUDA_CHECK(call) checkCuda((call), #call, __LINE__)

[[noreturn]] void usageError(const std::string& message) {
    std::fprintf(stderr, "double_buffer: %s (try --help)\n", message.c_str());
    std::exit(2);
}

[[noreturn]] void wrongResult(const std::string& message) {
    std::fprintf(stderr, "double_buffer: wrong result: %s\n", message.c_str());
    std::exit(1);
}

void printHelp() {
    std::printf(
        "usage: double_buffer [--total BYTES] [--fmas N] [--windows BYTES,...]\n"
        "                     [--buffers B,...] [--repeats R]\n"
        "  --total BYTES       size of the host input (and output) array (default 1073741824)\n"
        "  --fmas N            chained FMAs per element (default 512)\n"
        "  --windows LIST      chunk sizes in bytes, each dividing --total\n"
        "                      (default 4194304,67108864,268435456)\n"
        "  --buffers LIST      buffer pairs (and streams) of the pipelined schedule (default 2,3)\n"
        "  --repeats R         timed repeats after one warm-up (default 5)\n"
        "Prints one JSON object per (window, schedule, buffers) line on stdout.\n");
}

unsigned long long parseCount(const std::string& text, const char* option) {
    if (text.empty() || text[0] == '-' || text[0] == '+') {
        usageError(std::string(option) + " wants a non-negative whole number, not '" + text + "'");
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0') {
        usageError(std::string(option) + " wants a non-negative whole number, not '" + text + "'");
    }
    return value;
}

std::vector<unsigned long long> parseList(const std::string& text, const char* option) {
    std::vector<unsigned long long> values;
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t comma = text.find(',', begin);
        if (comma == std::string::npos) comma = text.size();
        values.push_back(parseCount(text.substr(begin, comma - begin), option));
        begin = comma + 1;
    }
    return values;
}

struct Options {
    unsigned long long total = 1ull << 30;
    int fmas = 512;
    std::vector<unsigned long long> windows{4 * kMiB, 64 * kMiB, 256 * kMiB};
    std::vector<int> buffers{2, 3};
    int repeats = 5;
};

void validate(const Options& o) {
    if (o.total == 0 || o.total % sizeof(float) != 0) usageError("--total must be a positive multiple of 4 bytes");
    for (unsigned long long w : o.windows) {
        if (w == 0 || w % sizeof(float) != 0 || o.total % w != 0) {
            usageError("window " + std::to_string(w) + " must be a positive multiple of 4 that divides --total " +
                       std::to_string(o.total));
        }
    }
}

Options parseOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "-h" || flag == "--help") {
            printHelp();
            std::exit(0);
        }
        if (i + 1 >= argc) usageError("unknown option or missing value: " + flag);
        const std::string value = argv[++i];
        if (flag == "--total") {
            o.total = parseCount(value, "--total");
        } else if (flag == "--fmas") {
            const unsigned long long n = parseCount(value, "--fmas");
            if (n > 1000000) usageError("--fmas is at most 1000000");
            o.fmas = static_cast<int>(n);
        } else if (flag == "--windows") {
            o.windows = parseList(value, "--windows");
        } else if (flag == "--buffers") {
            o.buffers.clear();
            for (unsigned long long b : parseList(value, "--buffers")) {
                if (b < 1 || b > 64) usageError("--buffers wants counts from 1 to 64");
                o.buffers.push_back(static_cast<int>(b));
            }
        } else if (flag == "--repeats") {
            const unsigned long long r = parseCount(value, "--repeats");
            if (r < 1 || r > 10000) usageError("--repeats wants 1 to 10000");
            o.repeats = static_cast<int>(r);
        } else {
            usageError("unknown option " + flag);
        }
    }
    validate(o);
    return o;
}

// Seeded uniform [0, 1) floats (splitmix64, top 24 bits), so runs are repeatable.
void fillInput(float* h, size_t n, uint64_t seed) {
    uint64_t state = seed;
    for (size_t i = 0; i < n; ++i) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        h[i] = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    }
}

// Host arrays and worker streams live for the whole run; device pairs for one window.
struct Ctx {
    const float* h_in = nullptr;
    float* h_out = nullptr;
    size_t chunkElems = 0;
    size_t chunkBytes = 0;
    int chunks = 0;
    int fmas = 0;
    std::vector<float*> d_in, d_out;
    std::vector<cudaStream_t> streams;
};

// Copy chunk k in to pair `pair`, run the kernel there, copy it out: all on that pair's stream.
void enqueueChunk(const Ctx& c, int k, int pair) {
    const size_t off = static_cast<size_t>(k) * c.chunkElems;
    cudaStream_t s = c.streams[pair];
    CUDA_CHECK(cudaMemcpyAsync(c.d_in[pair], c.h_in + off, c.chunkBytes, cudaMemcpyHostToDevice, s));
    const unsigned blocks = static_cast<unsigned>((c.chunkElems + kThreadsPerBlock - 1) / kThreadsPerBlock);
    fma_chain<<<blocks, kThreadsPerBlock, 0, s>>>(c.d_in[pair], c.d_out[pair],
                                                  static_cast<long long>(c.chunkElems), c.fmas, kFmaA, kFmaB);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpyAsync(c.h_out + off, c.d_out[pair], c.chunkBytes, cudaMemcpyDeviceToHost, s));
}

void passNaive(const Ctx& c) {
    for (int k = 0; k < c.chunks; ++k) enqueueChunk(c, k, 0);
}

void passPipelined(const Ctx& c, int buffers) {
    for (int k = 0; k < c.chunks; ++k) enqueueChunk(c, k, k % buffers);
}

// labcore/timing.py's time_pass: one warm-up, then `repeats` runs, each between two events
// recorded on the legacy default stream, which the blocking worker streams synchronize with.
template <class Pass>
std::vector<float> timePass(Pass pass, int repeats, const std::string& key, cudaEvent_t start, cudaEvent_t stop) {
    nvtxRangePushA(("warmup " + key).c_str());
    pass();
    CUDA_CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    std::vector<float> times;
    for (int r = 0; r < repeats; ++r) {
        CUDA_CHECK(cudaDeviceSynchronize());
        nvtxRangePushA(key.c_str());
        CUDA_CHECK(cudaEventRecord(start, cudaStreamLegacy));
        pass();
        CUDA_CHECK(cudaEventRecord(stop, cudaStreamLegacy));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaDeviceSynchronize());
        nvtxRangePop();
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
    }
    return times;
}

void printRecord(const char* schedule, unsigned long long window, int buffers, const std::vector<float>& times) {
    std::printf("{\"schedule\": \"%s\", \"window_bytes\": %llu, \"buffers\": %d, \"times_ms\": [", schedule, window,
                buffers);
    for (size_t i = 0; i < times.size(); ++i) std::printf("%s%.6f", i ? ", " : "", static_cast<double>(times[i]));
    std::printf("]}\n");
    std::fflush(stdout);
}

// The float64 closed form of labcore/pipeline/kernel.py: a^n x + b (1 - a^n) / (1 - a).
double closedForm(float x, int fmas) {
    const double a = kFmaA, b = kFmaB;
    const double an = std::pow(a, fmas);
    return an * static_cast<double>(x) + b * (1.0 - an) / (1.0 - a);
}

// Spot-check each chunk's first and last element of the naive output against the closed form.
// A chunk nobody wrote still holds the NaN poison and fails here too.
void checkNaive(const Ctx& c) {
    const double tol = (c.fmas + 1) * std::ldexp(1.0, -24) + std::ldexp(1.0, -24);
    for (int k = 0; k < c.chunks; ++k) {
        const size_t first = static_cast<size_t>(k) * c.chunkElems;
        for (size_t i : {first, first + c.chunkElems - 1}) {
            const double want = closedForm(c.h_in[i], c.fmas);
            if (!(std::fabs(static_cast<double>(c.h_out[i]) - want) <= tol)) {
                wrongResult("naive chunk " + std::to_string(k) + ", element " + std::to_string(i) + ": got " +
                            std::to_string(c.h_out[i]) + ", closed form " + std::to_string(want));
            }
        }
    }
}

// Once per window, before timing: run naive, check it, keep it, then require every pipelined
// depth to reproduce it bit for bit (outputs are NaN-poisoned before each pass).
void verifyWindow(const Ctx& c, const std::vector<int>& buffers, float* reference) {
    const size_t total = static_cast<size_t>(c.chunks) * c.chunkBytes;
    std::memset(c.h_out, 0xFF, total);
    passNaive(c);
    CUDA_CHECK(cudaDeviceSynchronize());
    checkNaive(c);
    std::memcpy(reference, c.h_out, total);
    for (int b : buffers) {
        std::memset(c.h_out, 0xFF, total);
        passPipelined(c, b);
        CUDA_CHECK(cudaDeviceSynchronize());
        for (int k = 0; k < c.chunks; ++k) {
            const size_t off = static_cast<size_t>(k) * c.chunkElems;
            if (std::memcmp(c.h_out + off, reference + off, c.chunkBytes) != 0) {
                wrongResult("pipelined, " + std::to_string(b) + " buffers, window " + std::to_string(c.chunkBytes) +
                            " bytes: chunk " + std::to_string(k) + " differs from the naive output");
            }
        }
    }
}

void printDevice() {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp props{};
    CUDA_CHECK(cudaGetDeviceProperties(&props, device));
    int engines = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&engines, cudaDevAttrAsyncEngineCount, device));
    int runtime = 0;
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    std::fprintf(stderr, "double_buffer: %s (sm_%d%d, asyncEngineCount=%d, CUDA runtime %d.%d)\n", props.name,
                 props.major, props.minor, engines, runtime / 1000, runtime % 1000 / 10);
}

// "64MiB" for whole MiB, else the byte count with a B, like labcore.sizes.format_size.
std::string sizeLabel(unsigned long long bytes) {
    return bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + "MiB" : std::to_string(bytes) + "B";
}

void runWindow(Ctx& c, const Options& o, unsigned long long window, int maxBuffers, float* reference,
               cudaEvent_t start, cudaEvent_t stop) {
    c.chunkBytes = window;
    c.chunkElems = window / sizeof(float);
    c.chunks = static_cast<int>(o.total / window);
    c.d_in.assign(maxBuffers, nullptr);
    c.d_out.assign(maxBuffers, nullptr);
    for (int p = 0; p < maxBuffers; ++p) {
        CUDA_CHECK(cudaMalloc(&c.d_in[p], window));
        CUDA_CHECK(cudaMalloc(&c.d_out[p], window));
    }
    std::fprintf(stderr, "double_buffer: window %llu bytes, %d chunks: verifying\n", window, c.chunks);
    verifyWindow(c, o.buffers, reference);
    const std::string w = sizeLabel(window);
    std::fprintf(stderr, "double_buffer: window %llu bytes: timing\n", window);
    printRecord("naive", window, 1,
                timePass([&] { passNaive(c); }, o.repeats, "cpp naive w=" + w + " b=1", start, stop));
    for (int b : o.buffers) {
        const std::string key = "cpp pipelined w=" + w + " b=" + std::to_string(b);
        printRecord("pipelined", window, b, timePass([&] { passPipelined(c, b); }, o.repeats, key, start, stop));
    }
    for (int p = 0; p < maxBuffers; ++p) {
        CUDA_CHECK(cudaFree(c.d_in[p]));
        CUDA_CHECK(cudaFree(c.d_out[p]));
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parseOptions(argc, argv);
    printDevice();
    const int maxBuffers = *std::max_element(o.buffers.begin(), o.buffers.end());
    const size_t n = o.total / sizeof(float);

    float* h_in = nullptr;
    float* h_out = nullptr;
    CUDA_CHECK(cudaMallocHost(&h_in, o.total));  // pinned: async copies stay async
    CUDA_CHECK(cudaMallocHost(&h_out, o.total));
    std::unique_ptr<float[]> reference(new float[n]);  // naive output, for the bit-for-bit check
    fillInput(h_in, n, 54);

    Ctx c;
    c.h_in = h_in;
    c.h_out = h_out;
    c.fmas = o.fmas;
    c.streams.assign(maxBuffers, nullptr);
    for (cudaStream_t& s : c.streams) CUDA_CHECK(cudaStreamCreate(&s));  // blocking worker streams
    cudaEvent_t start = nullptr, stop = nullptr;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));

    for (unsigned long long window : o.windows) runWindow(c, o, window, maxBuffers, reference.get(), start, stop);

    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    for (cudaStream_t s : c.streams) CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFreeHost(h_in));
    CUDA_CHECK(cudaFreeHost(h_out));
    return 0;
}
