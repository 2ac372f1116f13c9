// A session's Changes (docs/web-ui.md, "Changes"; docs/security.md, "Changes"): the
// files it touched in its project, and the diff against the project's git HEAD when the
// project is a git repository.
//
// Never computed by running git on the host: a project's .git/config (core.fsmonitor,
// filters, textconv, diff drivers, hooks) is the agent's to write, and git on the host
// would run what it names. It runs in a container like a session's (same confinement),
// with the project mounted read-only, no network, a time limit and output caps, and
// git there is given a git folder of its own in the container's /tmp: the project's
// objects, refs and index, and none of its config, hooks or attributes file, so that
// there is nothing the repository names for git to run. The flags that say the same
// again (core.fsmonitor=false, core.hooksPath=/dev/null, --no-ext-diff, --no-textconv,
// GIT_CONFIG_NOSYSTEM, an empty HOME) stay as a second wall.
//
// What the container prints is untrusted (the agent may have made the names, the
// contents and even the git folder it reads): every part is bounded and checked here.
// Pure functions; changes_service.* runs them on a worker.
#pragma once

#include "core/result.hpp"
#include "runtime/container_runtime.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::sessions::changes {

struct Limits {
    std::size_t max_files = 500;                            // listed; more: truncated
    std::size_t max_diff_bytes = std::size_t{1} << 20;      // all diffs sent together
    std::size_t max_file_diff_bytes = std::size_t{128} << 10; // one file's; more: summarised
    std::size_t max_part_bytes = std::size_t{4} << 20;      // each part the container prints
    std::int64_t timeout_ms = 30'000;                       // the container's whole run
};

// The container's run: image, argv (sh and the fixed script), the project read-only.
// `task_id` names the container ([A-Za-z0-9_.-]); `since_ms` is the session's created_at.
runtime::ContainerSpec container_spec(const std::string& image, const std::filesystem::path& project,
                                      const std::string& task_id, std::int64_t since_ms, const Limits& limits);

// The shell script the container runs (exposed for the tests that read what git is told).
std::string_view script();

// One line of `git status --porcelain=v2 -z`.
struct StatusEntry {
    std::string path;
    std::string status; // added, modified, deleted, renamed, copied, typechange, unmerged, untracked
};
// One line of `git diff --numstat -z`. Binary: git printed "-" for both counts.
struct NumstatEntry {
    std::string path;
    std::int64_t added = 0;
    std::int64_t removed = 0;
    bool binary = false;
};

// A path as git prints it relative to the work tree: refused if empty, absolute, longer
// than 4096 bytes, with a "." or ".." component or an empty one. Bad UTF-8 is allowed
// (a name is bytes); to_json replaces it.
Result<void> check_path(std::string_view path);

// Both parsers refuse (with the record's number) what is malformed; a last record cut
// short by a cap is dropped and `cut` set.
Result<std::vector<StatusEntry>> parse_porcelain_v2(std::string_view text, bool& cut);
Result<std::vector<NumstatEntry>> parse_numstat(std::string_view text, bool& cut);
// `git diff`'s patch cut into its files' sections (each from its "diff --git " line).
std::vector<std::string_view> split_patch(std::string_view patch);

struct FileChange {
    std::string path;
    std::string status;
    std::optional<std::int64_t> added;   // lines; unset: not known (binary, not git)
    std::optional<std::int64_t> removed;
    bool binary = false;
    std::optional<std::int64_t> size;    // bytes in the work tree; unset: deleted
    std::optional<std::string> diff;     // unset: summarised (binary, large, over the cap)
    std::string summary;                 // why there is no diff, in words; empty if there is one
};

struct Changes {
    bool git = false;
    std::string head; // the HEAD commit's id; empty: no commit yet, or not git
    std::vector<FileChange> files;
    bool truncated = false;   // more files than listed, or a part was cut
    std::vector<std::string> notes; // what was left out and why, in words
    Limits limits;
};

// The container's whole output (its "name length\n" + bytes parts) to Changes.
Result<Changes> parse_output(std::string_view output, const Limits& limits);

// {"git","head","files":[{"path","status","added","removed","binary","size","diff"?,
// "summary"?}],"truncated","notes","limits":{...}}; every string valid UTF-8.
boost::json::object to_json(const Changes& changes);

} // namespace handler::sessions::changes
