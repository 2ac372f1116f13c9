// Mistral Vibe's streaming output, through its parser library (harness_parser_fuzz.hpp).
#include <vibe/streaming.hpp>

#include "fuzz/harness_parser_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return handler::fuzz::fuzz_harness_parser<handler::vibe::StreamingParser>(data, size);
}
