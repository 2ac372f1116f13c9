#include "sessions/changes.hpp"

#include "core/utf8.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>

namespace handler::sessions::changes {
namespace json = boost::json;

namespace {

// Runs in the container as `sh -c SCRIPT sh PROJECT SINCE_SECONDS PART_CAP MAX_FILES`.
// It prints parts as "NAME LENGTH\n" and LENGTH bytes, each part capped with head -c.
// git reads a git folder made here in /tmp: the project's objects (as alternates) and
// refs (a symlink), read-only, copies of HEAD, the index and info/exclude, and a config of two lines, so
// neither the project's config (fsmonitor, filters, textconv, diff drivers, hooks,
// includes) nor its info/attributes reach git. The -c flags, the environment and
// --no-ext-diff/--no-textconv say it again in case any of that ever changes.
constexpr std::string_view kScript = R"SH(set -u
P=$1 SINCE=$2 CAP=$3 MAXF=$4
T=/tmp/handler-changes
rm -rf "$T"; mkdir -p "$T/home" || exit 3
export HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
  GIT_ATTR_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 GIT_PAGER=cat PAGER=cat \
  GIT_LITERAL_PATHSPECS=1 GIT_NO_REPLACE_OBJECTS=1 GIT_NO_LAZY_FETCH=1 GIT_PROTOCOL_FROM_USER=0 LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_EXTERNAL_DIFF GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT \
  GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS SSH_ASKPASS GIT_EDITOR GIT_EXEC_PATH GIT_OBJECT_DIRECTORY \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_TRACE GIT_TRACE2 GIT_TRACE2_EVENT GIT_DIFF_OPTS
part() { n=$(wc -c < "$2"); printf '%s %s\n' "$1" "$n"; cat "$2"; }
cd "$P" || exit 3
for f in mode head status numstat patch sizes files err; do : > "$T/$f"; done
if [ -d .git ] && [ ! -L .git ] && [ -f .git/HEAD ]; then
  G="$T/git"; mkdir -p "$G/info"
  head -c 4096 .git/HEAD > "$G/HEAD"
  [ -f .git/index ] && cp .git/index "$G/index"
  [ -f .git/packed-refs ] && cp .git/packed-refs "$G/packed-refs"
  [ -f .git/info/exclude ] && head -c 1048576 .git/info/exclude > "$G/info/exclude"
  for f in .git/sharedindex.*; do [ -f "$f" ] && ln -s "$P/$f" "$G/"; done
  ln -s "$P/.git/refs" "$G/refs"
  # Objects git writes (the empty blob of an intent-to-add) go here; the project's are
  # read through alternates.
  mkdir -p "$G/objects/info" && printf '%s\n' "$P/.git/objects" > "$G/objects/info/alternates"
  if grep -qiE '^[[:space:]]*objectformat[[:space:]]*=[[:space:]]*sha256' .git/config 2>/dev/null; then
    printf '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n' > "$G/config"
  else
    printf '[core]\n\trepositoryformatversion = 0\n' > "$G/config"
  fi
  g() { timeout 20 git --git-dir="$G" --work-tree="$P" --literal-pathspecs --no-optional-locks \
    -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.untrackedCache=false \
    -c core.attributesFile=/dev/null -c core.quotePath=true -c core.pager=cat -c color.ui=false \
    -c diff.noprefix=false -c diff.relative=false -c safe.directory='*' \
    -c protocol.allow=never -c core.splitIndex=false "$@"; }
  printf git > "$T/mode"
  g rev-parse -q --verify 'HEAD^{commit}' > "$T/head" 2>/dev/null || : > "$T/head"
  base=$(head -c 100 "$T/head")
  [ -n "$base" ] || base=$(g hash-object -t tree /dev/null)
  g status --porcelain=v2 -z --untracked-files=all --no-renames --ignore-submodules=all 2>>"$T/err" | head -c "$CAP" > "$T/status"
  grep -z '^? ' "$T/status" | sed -z 's/^? //' > "$T/untracked"
  if [ -s "$T/untracked" ]; then
    g add --intent-to-add --pathspec-from-file="$T/untracked" --pathspec-file-nul 2>>"$T/err"
  fi
  set -- --no-renames --no-ext-diff --no-textconv --no-color --ignore-submodules=all
  g diff "$base" --numstat -z "$@" 2>>"$T/err" | head -c "$CAP" > "$T/numstat"
  g diff "$base" -p "$@" 2>>"$T/err" | head -c "$CAP" > "$T/patch"
  sed -z 's/^[^\t]*\t[^\t]*\t//' "$T/numstat" | head -z -n "$MAXF" | \
    xargs -0 -r stat --printf '%s\t%n\0' -- 2>/dev/null | head -c "$CAP" > "$T/sizes"
else
  printf plain > "$T/mode"
  find . -xdev -path ./.git -prune -o -type f -newermt "@$SINCE" -printf '%s\t%P\0' 2>/dev/null | \
    head -z -n $((MAXF + 1)) | head -c "$CAP" > "$T/files"
fi
head -c 4096 "$T/err" > "$T/err.short"
for f in mode head status numstat patch sizes files; do part "$f" "$T/$f"; done
part err "$T/err.short"
)SH";

// The part names the script prints, in its order.
constexpr std::string_view kParts[] = {"mode", "head", "status", "numstat", "patch", "sizes", "files", "err"};

std::string record_error(std::string_view what, std::size_t number, std::string_view why) {
    return "the Changes container's " + std::string(what) + " record " + std::to_string(number) + " " +
           std::string(why);
}

// NUL-separated records of `text`; the last one (with no NUL after it) is cut.
std::vector<std::string_view> nul_records(std::string_view text, bool& cut) {
    std::vector<std::string_view> records;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\0', start);
        if (end == std::string_view::npos) {
            cut = true;
            break;
        }
        records.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return records;
}

// The n-th space-separated field's end: the path after n fields may hold spaces.
std::optional<std::string_view> after_fields(std::string_view record, std::size_t fields) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < fields; ++i) {
        const auto space = record.find(' ', at);
        if (space == std::string_view::npos || space == at) return std::nullopt;
        at = space + 1;
    }
    return record.substr(at);
}

std::string status_word(char code) {
    switch (code) {
    case 'M': return "modified";
    case 'A': return "added";
    case 'D': return "deleted";
    case 'R': return "renamed";
    case 'C': return "copied";
    case 'T': return "typechange";
    case 'U': return "unmerged";
    default: return "";
    }
}

std::optional<std::int64_t> whole_number(std::string_view text) {
    if (text.empty() || text.size() > 18) return std::nullopt;
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

std::string kib(std::size_t bytes) { return std::to_string((bytes + 1023) / 1024) + " KiB"; }

} // namespace

std::string_view script() { return kScript; }

runtime::ContainerSpec container_spec(const std::string& image, const std::filesystem::path& project,
                                      const std::string& task_id, std::int64_t since_ms, const Limits& limits) {
    runtime::ContainerSpec spec;
    spec.session_id = task_id;
    spec.image = image;
    spec.project_path = project;
    spec.project_read_only = true;
    spec.network = runtime::NetworkMode::none;
    spec.workdir = project;
    spec.argv = {"sh",
                 "-c",
                 std::string(kScript),
                 "sh",
                 project.string(),
                 std::to_string(std::max<std::int64_t>(since_ms, 0) / 1000),
                 std::to_string(limits.max_part_bytes),
                 std::to_string(limits.max_files)};
    return spec;
}

Result<void> check_path(std::string_view path) {
    if (path.empty()) return make_error(ErrorCode::invalid_argument, "an empty path");
    if (path.size() > 4096) return make_error(ErrorCode::invalid_argument, "a path over 4096 bytes");
    if (path.front() == '/') return make_error(ErrorCode::invalid_argument, "an absolute path");
    std::size_t start = 0;
    while (true) {
        const auto slash = path.find('/', start);
        const auto component = path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
        if (component.empty() || component == "." || component == "..")
            return make_error(ErrorCode::invalid_argument, "a path with an empty, '.' or '..' component");
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return {};
}

Result<std::vector<StatusEntry>> parse_porcelain_v2(std::string_view text, bool& cut) {
    const auto records = nul_records(text, cut);
    std::vector<StatusEntry> entries;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const std::string_view record = records[i];
        if (record.size() < 2 || record[1] != ' ')
            return make_error(ErrorCode::internal, record_error("status", i + 1, "is not a porcelain v2 line"));
        const char kind = record[0];
        std::optional<std::string_view> path;
        std::string status;
        if (kind == '#' || kind == '!') continue; // headers, ignored files
        if (kind == '?') {
            path = record.substr(2);
            status = "untracked";
        } else if (kind == '1' || kind == '2' || kind == 'u') {
            // 1 XY sub mH mI mW hH hI path; 2 ... X<score> path\0orig; u XY sub m1 m2 m3 mW h1 h2 h3 path
            const std::size_t fields = kind == '1' ? 8 : kind == '2' ? 9 : 10;
            path = after_fields(record, fields);
            const std::string_view xy = record.size() >= 4 ? record.substr(2, 2) : std::string_view();
            if (xy.size() != 2 || record.size() < 5 || record[4] != ' ')
                return make_error(ErrorCode::internal, record_error("status", i + 1, "has no XY field"));
            if (kind == 'u') {
                status = "unmerged";
            } else {
                status = status_word(xy[1] != '.' ? xy[1] : xy[0]);
                if (status.empty())
                    return make_error(ErrorCode::internal,
                                      record_error("status", i + 1, "has an unknown status code"));
            }
            if (kind == '2') {
                if (i + 1 >= records.size()) {
                    cut = true; // its original path was cut off
                    break;
                }
                ++i; // the original path; the entry is listed under its new one
            }
        } else {
            return make_error(ErrorCode::internal, record_error("status", i + 1, "has an unknown kind"));
        }
        if (!path) return make_error(ErrorCode::internal, record_error("status", i + 1, "has too few fields"));
        if (auto checked = check_path(*path); !checked)
            return make_error(ErrorCode::internal, record_error("status", i + 1, "names " + checked.error().message));
        entries.push_back({std::string(*path), std::move(status)});
    }
    return entries;
}

Result<std::vector<NumstatEntry>> parse_numstat(std::string_view text, bool& cut) {
    const auto records = nul_records(text, cut);
    std::vector<NumstatEntry> entries;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const std::string_view record = records[i];
        const auto first = record.find('\t');
        const auto second = first == std::string_view::npos ? first : record.find('\t', first + 1);
        if (second == std::string_view::npos)
            return make_error(ErrorCode::internal, record_error("numstat", i + 1, "has no two counts"));
        NumstatEntry entry;
        const auto added = record.substr(0, first);
        const auto removed = record.substr(first + 1, second - first - 1);
        if (added == "-" && removed == "-") {
            entry.binary = true;
        } else {
            auto a = whole_number(added);
            auto r = whole_number(removed);
            if (!a || !r)
                return make_error(ErrorCode::internal, record_error("numstat", i + 1, "has counts that are not numbers"));
            entry.added = *a;
            entry.removed = *r;
        }
        std::string_view path = record.substr(second + 1);
        if (path.empty()) {
            // A rename: "\0<from>\0<to>"; listed under its new name.
            if (i + 2 >= records.size()) {
                cut = true;
                break;
            }
            path = records[i + 2];
            i += 2;
        }
        if (auto checked = check_path(path); !checked)
            return make_error(ErrorCode::internal, record_error("numstat", i + 1, "names " + checked.error().message));
        entry.path = std::string(path);
        entries.push_back(std::move(entry));
    }
    return entries;
}

std::vector<std::string_view> split_patch(std::string_view patch) {
    std::vector<std::string_view> sections;
    constexpr std::string_view kHeader = "diff --git ";
    std::size_t start = patch.starts_with(kHeader) ? 0 : patch.find("\n" + std::string(kHeader));
    if (start == std::string_view::npos) return sections;
    if (start != 0) ++start;
    while (start < patch.size()) {
        // In a patch every content line starts with ' ', '+', '-' or '\\': a line that
        // starts with the header is always the next file's.
        auto next = patch.find("\ndiff --git ", start);
        const std::size_t end = next == std::string_view::npos ? patch.size() : next + 1;
        sections.push_back(patch.substr(start, end - start));
        start = end;
    }
    return sections;
}

Result<Changes> parse_output(std::string_view output, const Limits& limits) {
    std::map<std::string, std::string_view> parts;
    std::size_t at = 0;
    while (at < output.size()) {
        const auto newline = output.find('\n', at);
        if (newline == std::string_view::npos || newline - at > 64)
            return make_error(ErrorCode::internal, "the Changes container's output has a malformed part header");
        const std::string_view header = output.substr(at, newline - at);
        const auto space = header.find(' ');
        // -1: no length (GCC's -O2 sees an optional's value here as maybe unset).
        const std::int64_t length =
            space == std::string_view::npos ? -1 : whole_number(header.substr(space + 1)).value_or(-1);
        const std::string name(header.substr(0, space == std::string_view::npos ? 0 : space));
        if (length < 0 || std::find(std::begin(kParts), std::end(kParts), name) == std::end(kParts) || parts.count(name))
            return make_error(ErrorCode::internal, "the Changes container's output has an unexpected part header '" +
                                                       with_valid_utf8(header) + "'");
        at = newline + 1;
        const auto size = static_cast<std::size_t>(length);
        if (size > output.size() - at)
            return make_error(ErrorCode::internal, "the Changes container's output was cut short in its part '" + name + "'");
        parts[name] = output.substr(at, size);
        at += size;
    }
    for (const auto name : kParts)
        if (!parts.count(std::string(name)))
            return make_error(ErrorCode::internal,
                              "the Changes container's output lacks its part '" + std::string(name) + "'");

    Changes changes;
    changes.limits = limits;
    const auto part_cut = [&](std::string_view name) { return parts[std::string(name)].size() >= limits.max_part_bytes; };
    const std::string_view mode = parts["mode"];
    if (mode != "git" && mode != "plain")
        return make_error(ErrorCode::internal, "the Changes container's mode is neither git nor plain");
    changes.git = mode == "git";
    if (!parts["err"].empty()) changes.notes.push_back("git said: " + std::string(parts["err"]));

    if (!changes.git) {
        bool cut = part_cut("files");
        const auto records = nul_records(parts["files"], cut);
        for (std::size_t i = 0; i < records.size(); ++i) {
            const auto tab = records[i].find('\t');
            const auto size = tab == std::string_view::npos ? std::nullopt : whole_number(records[i].substr(0, tab));
            if (!size) return make_error(ErrorCode::internal, record_error("files", i + 1, "has no size"));
            const auto path = records[i].substr(tab + 1);
            if (auto checked = check_path(path); !checked)
                return make_error(ErrorCode::internal, record_error("files", i + 1, "names " + checked.error().message));
            if (changes.files.size() >= limits.max_files) {
                cut = true;
                break;
            }
            FileChange file;
            file.path = std::string(path);
            file.status = "changed";
            file.size = *size;
            file.summary = "not a git repository: no diff";
            changes.files.push_back(std::move(file));
        }
        std::sort(changes.files.begin(), changes.files.end(),
                  [](const FileChange& a, const FileChange& b) { return a.path < b.path; });
        if (cut) {
            changes.truncated = true;
            changes.notes.push_back("more than " + std::to_string(limits.max_files) + " files changed; the first " +
                                    std::to_string(changes.files.size()) + " are listed");
        }
        return changes;
    }

    const std::string_view head = parts["head"];
    std::string head_text(head.substr(0, head.find('\n')));
    if (!head_text.empty() && (head_text.size() > 64 || head_text.find_first_not_of("0123456789abcdef") != std::string::npos))
        return make_error(ErrorCode::internal, "the Changes container's HEAD is not a commit id");
    changes.head = std::move(head_text);

    bool status_cut = part_cut("status");
    auto statuses = parse_porcelain_v2(parts["status"], status_cut);
    if (!statuses) return statuses.take_error();
    bool numstat_cut = part_cut("numstat");
    auto numstat = parse_numstat(parts["numstat"], numstat_cut);
    if (!numstat) return numstat.take_error();

    std::map<std::string, std::string> status_of;
    for (auto& entry : *statuses) status_of.emplace(entry.path, entry.status);
    std::map<std::string, std::int64_t> size_of;
    {
        bool ignored = false;
        for (const auto record : nul_records(parts["sizes"], ignored)) {
            const auto tab = record.find('\t');
            const auto size = tab == std::string_view::npos ? std::nullopt : whole_number(record.substr(0, tab));
            if (size) size_of.emplace(std::string(record.substr(tab + 1)), *size);
        }
    }

    const bool patch_cut = part_cut("patch");
    auto sections = split_patch(parts["patch"]);
    const bool paired = sections.size() == numstat->size() || (patch_cut && sections.size() <= numstat->size());
    if (!paired)
        changes.notes.push_back("the diff could not be matched to its files (" + std::to_string(sections.size()) +
                                " sections for " + std::to_string(numstat->size()) + " files); diffs left out");

    std::size_t diff_bytes = 0;
    bool over_total = false;
    for (std::size_t i = 0; i < numstat->size(); ++i) {
        auto& entry = (*numstat)[i];
        if (changes.files.size() >= limits.max_files) {
            numstat_cut = true;
            break;
        }
        FileChange file;
        file.path = entry.path;
        auto status = status_of.find(entry.path);
        file.status = status != status_of.end() ? status->second : "modified";
        if (status != status_of.end()) status_of.erase(status);
        file.binary = entry.binary;
        if (!entry.binary) {
            file.added = entry.added;
            file.removed = entry.removed;
        }
        if (auto size = size_of.find(entry.path); size != size_of.end()) file.size = size->second;
        const bool last_cut = patch_cut && i + 1 >= sections.size();
        if (entry.binary) {
            file.summary = "binary";
        } else if (!paired || i >= sections.size() || last_cut) {
            file.summary = std::to_string(entry.added + entry.removed) + " lines changed (diff not sent: the " +
                           "container's output cap of " + kib(limits.max_part_bytes) + " was reached)";
            changes.truncated = true;
        } else if (sections[i].size() > limits.max_file_diff_bytes) {
            file.summary = std::to_string(entry.added + entry.removed) + " lines changed (a diff of " +
                           kib(sections[i].size()) + ", over the " + kib(limits.max_file_diff_bytes) + " per file)";
        } else if (diff_bytes + sections[i].size() > limits.max_diff_bytes) {
            file.summary = std::to_string(entry.added + entry.removed) + " lines changed (diff not sent: the " +
                           kib(limits.max_diff_bytes) + " for all diffs was reached)";
            over_total = true;
        } else {
            diff_bytes += sections[i].size();
            file.diff = std::string(sections[i]);
        }
        changes.files.push_back(std::move(file));
    }
    // What status lists and the diff does not (an untracked file git could not add).
    for (auto& [path, status] : status_of) {
        if (changes.files.size() >= limits.max_files) {
            numstat_cut = true;
            break;
        }
        FileChange file;
        file.path = path;
        file.status = status;
        file.summary = "no diff";
        changes.files.push_back(std::move(file));
    }
    std::sort(changes.files.begin(), changes.files.end(),
              [](const FileChange& a, const FileChange& b) { return a.path < b.path; });
    if (over_total) {
        changes.truncated = true;
        changes.notes.push_back("diffs over " + kib(limits.max_diff_bytes) + " in all are summarised");
    }
    if (numstat_cut || status_cut) {
        changes.truncated = true;
        changes.notes.push_back("more files changed than listed (at most " + std::to_string(limits.max_files) +
                                " files and " + kib(limits.max_part_bytes) + " of git's output)");
    }
    return changes;
}

json::object to_json(const Changes& changes) {
    json::array files;
    for (const auto& file : changes.files) {
        json::object item{{"path", with_valid_utf8(file.path)},
                          {"status", file.status},
                          {"added", file.added ? json::value(*file.added) : nullptr},
                          {"removed", file.removed ? json::value(*file.removed) : nullptr},
                          {"binary", file.binary},
                          {"size", file.size ? json::value(*file.size) : nullptr}};
        if (file.diff) item["diff"] = with_valid_utf8(*file.diff);
        if (!file.summary.empty()) item["summary"] = file.summary;
        files.push_back(std::move(item));
    }
    json::array notes;
    for (const auto& note : changes.notes) notes.push_back(json::string(with_valid_utf8(note)));
    return json::object{{"git", changes.git},
                        {"head", changes.head.empty() ? json::value(nullptr) : json::value(changes.head)},
                        {"files", std::move(files)},
                        {"truncated", changes.truncated},
                        {"notes", std::move(notes)},
                        {"limits", json::object{{"max_files", changes.limits.max_files},
                                                {"max_diff_bytes", changes.limits.max_diff_bytes},
                                                {"max_file_diff_bytes", changes.limits.max_file_diff_bytes}}}};
}

} // namespace handler::sessions::changes
