// What the Changes container prints (sessions/changes.hpp): untrusted, since the agent made
// the project's names, contents and git folder. Input: the container's whole output.
//
// Properties: every file listed has a path check_path accepts; no more files than
// max_files; each diff at most max_file_diff_bytes and all of them at most max_diff_bytes;
// a file with a diff is not binary; the answer serialises to valid UTF-8 JSON that parses.
#include "core/utf8.hpp"
#include "sessions/changes.hpp"

#include "fuzz/fuzz_support.hpp"

#include <boost/json.hpp>

using handler::fuzz::check;
using namespace handler::sessions::changes;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto text = handler::fuzz::as_text(data, size);
    Limits limits;
    limits.max_files = 20;
    limits.max_diff_bytes = 4096;
    limits.max_file_diff_bytes = 1024;
    limits.max_part_bytes = 1 << 16;
    auto parsed = parse_output(text, limits);
    if (!parsed) {
        check(!parsed.error().message.empty(), "a refusal says why");
        return 0;
    }
    check(parsed->files.size() <= limits.max_files, "at most max_files files");
    std::size_t total = 0;
    for (const auto& file : parsed->files) {
        check(check_path(file.path).ok(), "every path listed is a checked one", file.path);
        if (!file.diff) continue;
        check(!file.binary, "a binary file has no diff", file.path);
        check(file.diff->size() <= limits.max_file_diff_bytes, "a diff within the per-file cap", file.path);
        total += file.diff->size();
    }
    check(total <= limits.max_diff_bytes, "all diffs within the total cap");
    const std::string body = boost::json::serialize(to_json(*parsed));
    check(handler::is_valid_utf8(body), "the answer is valid UTF-8", body);
    boost::system::error_code error;
    (void)boost::json::parse(body, error);
    check(!error, "the answer parses as JSON", body);
    return 0;
}
