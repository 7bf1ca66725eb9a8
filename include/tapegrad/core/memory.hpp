// include/tapegrad/core/memory.hpp
//
// How tapegrad can ask the C library to treat large freed buffers. A training step frees and
// reallocates the same large arrays every step (activations, their gradients, dropout masks).
// glibc's malloc serves a block above its mmap threshold (128 KiB, adapting up to 32 MiB) with a
// fresh mmap() and hands it back to the kernel on free(), so each step page-faults its buffers in
// again, and writing to freshly mapped pages (a page fault and a zeroed page each) runs at a
// fraction of the speed of writing to pages already mapped. That was most of a W1-L step.
//
// tapegrad changes nothing on its own: a library that retunes the process's allocator behind the
// caller's back surprises every other part of the program. A training program that wants the
// speed calls keep_freed_memory(true) once, at the start of main (the examples and benchmarks
// do); glibc then serves every block from the heap and never shrinks it (mallopt M_MMAP_MAX = 0,
// M_TRIM_THRESHOLD = max): freed buffers stay mapped and the next step reuses them. The cost is
// that the process keeps its peak heap until it exits, which is what a training process wants.
// Other C libraries: nothing changes.
//
// It also says how much memory the machine gives this process, so that a program can refuse a
// size before it allocates it (a window of a million positions, a gigabyte of text to train a
// tokenizer on) instead of being killed by the kernel halfway through.
#pragma once

#include <cstdint>
#include <string>

namespace tapegrad {

/// keep = true: freed memory stays in the process for reuse (call it at the start of a training
/// program). keep = false: glibc's own defaults again (large blocks mmap'ed and unmapped), and the
/// free heap top is returned to the system now. Without a call, glibc's defaults are in force.
void keep_freed_memory(bool keep);

/// Whether the keep policy is in force (false until keep_freed_memory(true); always false on C
/// libraries other than glibc).
bool keeps_freed_memory();

/// The memory this process may use, in bytes: the machine's physical memory, or a lower limit: its
/// control group's (a container's memory.max, cgroup v2 or v1), or its own address-space or data
/// limit (`ulimit -v`, `ulimit -d`). Read from the system on every call (sysconf, /sys/fs/cgroup,
/// getrlimit), not a fixed figure.
std::uint64_t machine_memory_bytes();

/// The memory this process holds now, counted as machine_memory_bytes() limits it: its address
/// space when its own limit (`ulimit -v`) is the one that binds, its data segment under
/// `ulimit -d`, else its resident memory (/proc/self/statm; 0 where there is none). What a
/// program subtracts from what it may use before it plans a large allocation.
std::uint64_t process_memory_bytes();

/// "about 6.8 GiB": a byte count for a message.
std::string memory_text(double bytes);

}  // namespace tapegrad
