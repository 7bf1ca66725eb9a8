// include/tapegrad/core/threads.hpp
//
// How many threads tapegrad's kernels use: one pool, tapegrad's own, sized by set_num_threads()
// (like torch.set_num_threads) or else by OMP_NUM_THREADS, or else the number of cores. The
// bandwidth-bound loops (optimizer steps, embedding gather and scatter, dropout, the loss) split
// their rows over it, and so do the matrix products, in at most 2 blocks of rows or columns cut
// by the product's shape (so a product uses at most 2 threads), each thread calling OpenBLAS on
// its blocks. OpenBLAS's own threads are not used by default: the first matrix product sets
// OpenBLAS to 1 thread, unless the program called set_blas_num_threads() before, because two pools
// on the same cores make each wait for the other: a spinning worker of one starves a worker of
// the other and steps stall erratically. The pool's workers spin only briefly before sleeping, so
// they leave a shared machine's cores to others.
//
// Results do not depend on the thread count: every output element is computed by one thread in
// the same order as with one thread (reductions are never split), and every OpenBLAS call is the
// same whatever the thread count (OpenBLAS may round a row differently in a differently cut call).
#pragma once

namespace tapegrad {

/// Sets the number of threads for the program's subsequent kernels (>= 1; ValueError otherwise).
void set_num_threads(int n);
/// The number of threads kernels use.
int get_num_threads();

/// Sets OpenBLAS's own thread count inside each matrix product (>= 1; ValueError otherwise), for
/// the whole process, now. Without this call the first matrix product sets it to 1 (above).
void set_blas_num_threads(int n);
/// OpenBLAS's thread count (OPENBLAS_NUM_THREADS or its cores until the first product, 1 after).
int get_blas_num_threads();

}  // namespace tapegrad
