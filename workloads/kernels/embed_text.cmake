# Writes a C++ source defining `std::string <FUNCTION>()` that returns the text of INPUT exactly,
# as raw string literals of at most 16000 characters each (ISO C++ compilers need only accept
# 65536). Run as a build step: cmake -DINPUT=... -DOUTPUT=... -DFUNCTION=... -P embed_text.cmake
file(READ "${INPUT}" text)
string(FIND "${text}" ")stepsim_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )stepsim_embed\"")
endif()
string(LENGTH "${text}" length)
set(pieces "")
set(offset 0)
while(offset LESS length)
  string(SUBSTRING "${text}" ${offset} 16000 piece)
  string(APPEND pieces "      R\"stepsim_embed(${piece})stepsim_embed\",\n")
  math(EXPR offset "${offset} + 16000")
endwhile()
file(WRITE "${OUTPUT}.tmp"
"// Generated from ${INPUT} by workloads/kernels/embed_text.cmake; do not edit.
#include <string>
#include <string_view>

#include \"workloads/kernels/gemm_shipped_tables.hpp\"

namespace stepsim::workloads::kernels::shipped {

std::string ${FUNCTION}() {
  static constexpr std::string_view kPieces[] = {
${pieces}  };
  std::string text;
  for (std::string_view p : kPieces) text.append(p);
  return text;
}

}  // namespace stepsim::workloads::kernels::shipped
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
