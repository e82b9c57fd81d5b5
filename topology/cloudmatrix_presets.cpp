#include "topology/builder_registry.hpp"
namespace stepsim::topology {
void register_cloudmatrix_presets(BuilderRegistry&) {}
}  // namespace stepsim::topology
