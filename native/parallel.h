// OpenMP over the minibatches of a bulk: the thread count a call resolves to (0: OpenMP's
// default; 1 without OpenMP) and for_each_minibatch, which runs body(j, scratch) for every
// minibatch j with one scratch per thread (dynamic schedule, one minibatch at a time) and
// rethrows the first exception once every thread has stopped. Results never depend on the
// thread count: each minibatch is one thread's work from its own keyed streams.
#ifndef SPSAMPLE_PARALLEL_H
#define SPSAMPLE_PARALLEL_H

#include <atomic>
#include <cstdint>
#include <exception>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace spsample {

int resolve_threads(int num_threads) {
#ifdef _OPENMP
    return num_threads > 0 ? num_threads : omp_get_max_threads();
#else
    (void)num_threads;
    return 1;
#endif
}

// Run body(j, scratch) for every minibatch j, one scratch per thread; rethrow the first error.
template <class Scratch, class Init, class Body>
void for_each_minibatch(int64_t k, int threads, Init init, Body body) {
    std::exception_ptr error = nullptr;
    std::atomic<bool> failed(false);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        Scratch sc;
        bool ready = false;
        try {
            init(sc);
            ready = true;
        } catch (...) {
#ifdef _OPENMP
#pragma omp critical(spsample_error)
#endif
            if (!error) error = std::current_exception();
            failed = true;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t j = 0; j < k; ++j) {
            if (!ready || failed) continue;
            try {
                body(j, sc);
            } catch (...) {
#ifdef _OPENMP
#pragma omp critical(spsample_error)
#endif
                if (!error) error = std::current_exception();
                failed = true;
            }
        }
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace spsample

#endif  // SPSAMPLE_PARALLEL_H
