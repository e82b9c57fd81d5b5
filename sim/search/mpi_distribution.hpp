// The MPI distribution of a search (distribution.hpp), compiled only when CMake finds MPI and
// STEPSIM_MPI is on; make_distribution() is the way in.
#pragma once

#include <memory>

#include "sim/search/distribution.hpp"

namespace stepsim::search {

// Initializes MPI (MPI_THREAD_SERIALIZED: the threads of a process take turns at MPI calls) unless
// it is initialized already, and finalizes it on destruction when it did.
std::unique_ptr<Distribution> make_mpi_distribution();

}  // namespace stepsim::search
