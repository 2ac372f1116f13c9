// Claude Code's stream-json output (claude -p --output-format stream-json --verbose) and its control channel, through its parser library (harness_parser_fuzz.hpp).
#include <claude-code/stream_json.hpp>

#include "fuzz/harness_parser_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return handler::fuzz::fuzz_harness_parser<handler::claude_code::StreamJsonParser>(data, size);
}
