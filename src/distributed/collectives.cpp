// src/distributed/collectives.cpp
//
// all_reduce, broadcast and all_gather on the library's own duplicate of MPI_COMM_WORLD. Each one
// first exchanges the shapes (a few dozen bytes) so that arrays that differ between ranks are a
// ShapeError on every rank, naming every rank's shape, instead of a crash or a truncation inside
// MPI; then it runs the non-blocking MPI operation and waits for it with a timeout.
#include "tapegrad/distributed/collectives.hpp"

#include <algorithm>
#include <sstream>

#include "mpi.hpp"

namespace tapegrad::distributed {

namespace {
constexpr std::size_t kMaxDims = 8;

// Every rank's shape (up to kMaxDims dimensions; more are reported as such).
std::vector<std::int64_t> gather_shapes(const Shape& shape, MPI_Comm comm, const char* where) {
  std::vector<std::int64_t> mine(kMaxDims + 1, 0);
  mine[0] = shape.size() <= kMaxDims ? static_cast<std::int64_t>(shape.size()) : -1;
  for (std::size_t d = 0; d < std::min(shape.size(), kMaxDims); ++d)
    mine[d + 1] = static_cast<std::int64_t>(shape[d]);
  return detail::all_gather(mine.data(), mine.size(), comm, where);
}

std::string shape_text(const std::int64_t* s) {
  if (s[0] < 0) return "(more than 8 dimensions)";
  return str(Shape(s + 1, s + 1 + s[0]));
}

// ShapeError on every rank unless every rank's shape equals rank `reference`'s.
void check_same_shapes(const Shape& shape, MPI_Comm comm, const char* where, int reference) {
  const std::vector<std::int64_t> all = gather_shapes(shape, comm, where);
  const std::size_t stride = kMaxDims + 1;
  const std::int64_t* expected = all.data() + static_cast<std::size_t>(reference) * stride;
  bool same = true;
  for (int r = 0; r < world_size(); ++r)
    same = same && std::equal(expected, expected + stride,
                              all.data() + static_cast<std::size_t>(r) * stride);
  if (same) return;
  std::ostringstream os;
  for (int r = 0; r < world_size(); ++r)
    os << (r ? ", " : "") << "rank " << r << ' '
       << shape_text(all.data() + static_cast<std::size_t>(r) * stride);
  fail<ShapeError>(where, ": expected the same shape on every rank, got ", os.str());
}

// MPI counts elements in an int: a larger array goes in pieces (an empty one, on every rank alike
// since the shapes agree, needs no call at all).
template <class Start>
void in_pieces(std::size_t n, const char* where, Start start) {
  constexpr std::size_t kPiece = std::size_t(1) << 30;
  for (std::size_t offset = 0; offset < n; offset += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, n - offset));
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(detail::mpi_mutex());
      detail::check_mpi(start(offset, count, &request), where);
    }
    detail::wait(request, where);
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    default: return MPI_SUM;
  }
}

void check_root(int root, const char* where) {
  check<ValueError>(0 <= root && root < world_size(), where, ": expected a root rank in [0, ",
                    world_size(), "), got ", root);
}
}  // namespace

void all_reduce(xt::xarray<float>& a, ReduceOp op) {
  const char* where = "distributed::all_reduce";
  MPI_Comm comm = detail::collectives_comm(where);
  check_same_shapes(a.shape(), comm, where, 0);
  float* data = a.data();
  in_pieces(a.size(), where, [&](std::size_t offset, int count, MPI_Request* request) {
    return MPI_Iallreduce(MPI_IN_PLACE, data + offset, count, MPI_FLOAT, mpi_op(op), comm, request);
  });
  if (op == ReduceOp::average) {
    const float n = static_cast<float>(world_size());
    for (float& x : a) x /= n;
  }
}

double all_reduce(double value, ReduceOp op) {
  const char* where = "distributed::all_reduce";
  MPI_Comm comm = detail::collectives_comm(where);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(detail::mpi_mutex());
    detail::check_mpi(
        MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, mpi_op(op), comm, &request), where);
  }
  detail::wait(request, where);
  return op == ReduceOp::average ? value / world_size() : value;
}

void broadcast(xt::xarray<float>& a, int root) {
  const char* where = "distributed::broadcast";
  MPI_Comm comm = detail::collectives_comm(where);
  check_root(root, where);
  check_same_shapes(a.shape(), comm, where, root);
  float* data = a.data();
  in_pieces(a.size(), where, [&](std::size_t offset, int count, MPI_Request* request) {
    return MPI_Ibcast(data + offset, count, MPI_FLOAT, root, comm, request);
  });
}

void broadcast(xt::xarray<std::int64_t>& a, int root) {
  const char* where = "distributed::broadcast";
  MPI_Comm comm = detail::collectives_comm(where);
  check_root(root, where);
  check_same_shapes(a.shape(), comm, where, root);
  std::int64_t* data = a.data();
  in_pieces(a.size(), where, [&](std::size_t offset, int count, MPI_Request* request) {
    return MPI_Ibcast(data + offset, count, MPI_INT64_T, root, comm, request);
  });
}

std::vector<std::uint64_t> all_gather(std::uint64_t value) {
  const char* where = "distributed::all_gather";
  MPI_Comm comm = detail::collectives_comm(where);
  return detail::all_gather(&value, 1, comm, where);
}

}  // namespace tapegrad::distributed
