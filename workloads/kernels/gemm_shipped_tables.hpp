// The GEMM tables compiled into the library (workloads/kernels/CMakeLists.txt embeds the CSVs at
// build time), so that presets need no data path at run time. Each returns its file's text exactly.
#pragma once

#include <string>

namespace stepsim::workloads::kernels::shipped {

// validation/data/kernels/xla_matmul_sm_90.csv (H100; sidecar xla_matmul.yaml)
std::string xla_matmul_sm_90_csv();
// validation/data/kernels/xla_matmul_sm_100_B200.csv (B200; sidecar xla_matmul.yaml)
std::string xla_matmul_sm_100_b200_csv();

}  // namespace stepsim::workloads::kernels::shipped
