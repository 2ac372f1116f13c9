#include "runtime/image_builder.hpp"

#include "core/text.hpp"
#include "core/utf8.hpp"

#include <boost/json.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

namespace handler::runtime {

namespace json = boost::json;

namespace fs = std::filesystem;

namespace {

// Part of the hashed text: bump it when the build itself changes (hooks, layout), so
// images built the old way are rebuilt.
constexpr int kRecipeFormat = 1;
constexpr std::size_t kTagHexDigits = 12;
constexpr std::size_t kStderrTailLines = 20;
constexpr std::size_t kStderrTailBytes = 2000;

const std::set<std::string, std::less<>> kVariants = {
    "extract", "custom", "essential", "apt", "required", "minbase",
    "buildd", "important", "debootstrap", "standard"};

// Debian package and suite names: lower case, digits, + - . (policy 5.6.1).
bool valid_debian_name(std::string_view name) {
    if (name.empty() || name.size() > 100) return false;
    if (!(std::islower(static_cast<unsigned char>(name[0])) ||
          std::isdigit(static_cast<unsigned char>(name[0]))))
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) ||
               std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
    });
}

// mmdebstrap splits special hooks such as `upload SRC DST` on whitespace, and a mirror
// is one argument: neither may hold whitespace or quotes.
bool plain_token(std::string_view text) {
    return !text.empty() && std::none_of(text.begin(), text.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'' ||
               c == '\\' || static_cast<unsigned char>(c) < 0x20;
    });
}

bool valid_mirror(std::string_view mirror) {
    return plain_token(mirror) &&
           (mirror.rfind("http://", 0) == 0 || mirror.rfind("https://", 0) == 0 ||
            mirror.rfind("file:///", 0) == 0);
}

std::vector<std::string> sorted_packages(const std::vector<std::string>& packages) {
    std::vector<std::string> sorted(packages.begin(), packages.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    return sorted;
}

Result<void> validate(const BaseImageRecipe& recipe) {
    if (!valid_debian_name(recipe.suite))
        return make_error(ErrorCode::invalid_argument,
                          "base image suite '" + recipe.suite + "' is not a Debian suite name "
                          "(for example trixie)");
    if (!kVariants.count(recipe.variant))
        return make_error(ErrorCode::invalid_argument,
                          "base image variant '" + recipe.variant +
                              "' is not an mmdebstrap variant (for example apt)");
    for (const auto& package : recipe.packages)
        if (!valid_debian_name(package))
            return make_error(ErrorCode::invalid_argument,
                              "base image package '" + package + "' is not a Debian package name");
    if (!valid_mirror(recipe.mirror))
        return make_error(ErrorCode::invalid_argument,
                          "base image mirror '" + recipe.mirror +
                              "' is not an http(s):// or file:/// URL without spaces");
    return {};
}

// The canonical text with the CA content already read (so the content hashed is the
// content copied into the image: no window for the file to change in between).
Result<std::string> canonical_text(const BaseImageRecipe& recipe, const std::string* ca_content) {
    if (auto valid = validate(recipe); !valid) return valid.take_error();
    std::ostringstream text;
    text << "handler-base-recipe " << kRecipeFormat << "\n"
         << "suite " << recipe.suite << "\n"
         << "variant " << recipe.variant << "\n"
         << "mirror " << recipe.mirror << "\n";
    for (const auto& package : sorted_packages(recipe.packages)) text << "package " << package << "\n";
    // The path is not hashed, only the content: moving the same bundle changes nothing.
    text << "ca-sha256 " << (ca_content ? sha256_hex(*ca_content) : std::string("none")) << "\n";
    return text.str();
}

Result<std::string> read_ca(const BaseImageRecipe& recipe) {
    auto content = read_file(recipe.ca_bundle);
    if (!content)
        return make_error(ErrorCode::not_found,
                          "cannot read the CA bundle " + recipe.ca_bundle.string() +
                              " for the base image: " + content.error().message);
    return content;
}

std::string tag_of(const std::string& hash) { return hash.substr(0, kTagHexDigits); }

std::string stderr_tail(const std::string& text) {
    std::string tail = text;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    std::size_t start = tail.size();
    for (std::size_t lines = 0; lines < kStderrTailLines && start > 0; ++lines) {
        const auto newline = tail.rfind('\n', start - 1);
        start = newline == std::string::npos ? 0 : newline;
        if (start == 0) break;
    }
    if (start > 0) tail = "..." + tail.substr(start);
    if (tail.size() > kStderrTailBytes) tail = "..." + tail.substr(tail.size() - kStderrTailBytes);
    return tail;
}

// Removes the build's files when the build ends, however it ends: a 500 MB tarball
// left behind in the user's cache would be a leak nobody notices.
class RemoveOnExit {
public:
    explicit RemoveOnExit(std::vector<fs::path> paths) : paths_(std::move(paths)) {}
    ~RemoveOnExit() {
        std::error_code ignored;
        for (const auto& path : paths_) fs::remove_all(path, ignored);
    }
    RemoveOnExit(const RemoveOnExit&) = delete;
    RemoveOnExit& operator=(const RemoveOnExit&) = delete;

private:
    std::vector<fs::path> paths_;
};

const char* process_getenv(const char* name) { return std::getenv(name); }

} // namespace

std::vector<std::string> default_base_packages() {
    return {"ca-certificates", "curl", "git", "nodejs", "npm", "python3", "ripgrep"};
}

std::string mirror_from_apt_sources(std::string_view text) {
    auto usable = [](const std::string& uri) {
        return valid_mirror(uri) && uri.find("security") == std::string::npos &&
               uri.find("snapshot.") == std::string::npos;
    };
    auto trimmed = [](std::string uri) {
        while (uri.size() > 1 && uri.back() == '/') uri.pop_back();
        return uri;
    };
    std::istringstream lines{std::string(text)};
    std::string line;
    while (std::getline(lines, line)) {
        if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::string first;
        if (!(words >> first)) continue;
        std::vector<std::string> uris;
        if (first == "URIs:") {
            for (std::string uri; words >> uri;) uris.push_back(uri);
        } else if (first == "deb") {
            std::string word;
            while (words >> word) {
                // `deb [arch=amd64 signed-by=...] URI SUITE`: skip the options.
                if (word.front() == '[') {
                    while (word.back() != ']' && (words >> word)) {}
                    continue;
                }
                uris.push_back(word);
                break;
            }
        }
        for (const auto& uri : uris)
            if (usable(uri)) return trimmed(uri);
    }
    return {};
}

BaseImageRecipe default_base_recipe() {
    BaseImageRecipe recipe;
    recipe.packages = default_base_packages();
    std::vector<fs::path> sources = {"/etc/apt/sources.list"};
    std::error_code error;
    std::vector<fs::path> listed;
    for (fs::directory_iterator it("/etc/apt/sources.list.d", error), end; !error && it != end;
         it.increment(error)) {
        const auto extension = it->path().extension();
        if (extension == ".list" || extension == ".sources") listed.push_back(it->path());
    }
    std::sort(listed.begin(), listed.end());
    sources.insert(sources.end(), listed.begin(), listed.end());
    for (const auto& source : sources) {
        auto text = read_file(source);
        if (!text) continue;
        if (auto mirror = mirror_from_apt_sources(*text); !mirror.empty()) {
            recipe.mirror = mirror;
            break;
        }
    }
    // Debian and Ubuntu, Fedora and RHEL, Alpine and Arch: the usual bundle places.
    for (const char* candidate : {"/etc/ssl/certs/ca-certificates.crt",
                                  "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"})
        if (fs::is_regular_file(candidate, error)) {
            recipe.ca_bundle = candidate;
            break;
        }
    return recipe;
}

std::string sha256_hex(std::string_view data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    // EVP_Digest is one-shot and cannot fail for SHA-256 short of memory exhaustion.
    if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1)
        std::abort();
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(length * 2);
    for (unsigned int i = 0; i < length; ++i) {
        hex.push_back(kHex[digest[i] >> 4]);
        hex.push_back(kHex[digest[i] & 0xf]);
    }
    return hex;
}

Result<std::string> recipe_text(const BaseImageRecipe& recipe) {
    if (recipe.ca_bundle.empty()) return canonical_text(recipe, nullptr);
    auto ca = read_ca(recipe);
    if (!ca) return ca.take_error();
    return canonical_text(recipe, &*ca);
}

Result<std::string> recipe_hash(const BaseImageRecipe& recipe) {
    auto text = recipe_text(recipe);
    if (!text) return text.take_error();
    return sha256_hex(*text);
}

Result<std::string> base_image_ref(const BaseImageRecipe& recipe) {
    auto hash = recipe_hash(recipe);
    if (!hash) return hash.take_error();
    return std::string(kBaseImageRepository) + ":" + tag_of(*hash);
}

fs::path default_build_dir(const GetEnv& getenv) {
    if (const char* cache = getenv("XDG_CACHE_HOME"); cache && cache[0] == '/')
        return fs::path(cache) / "handler" / "build";
    const char* home = getenv("HOME");
    return fs::path(home && home[0] == '/' ? home : "/") / ".cache" / "handler" / "build";
}

ImageBuilder::ImageBuilder(CommandRunner& runner, ContainerRuntime& runtime,
                           ImageBuilderOptions options)
    : runner_(runner), runtime_(runtime), options_(std::move(options)) {
    if (options_.build_dir.empty()) options_.build_dir = default_build_dir(process_getenv);
}

Result<std::vector<std::string>> ImageBuilder::mmdebstrap_command(const BaseImageRecipe& recipe,
                                                                  const fs::path& tarball,
                                                                  const fs::path& ca_copy) const {
    if (auto valid = validate(recipe); !valid) return valid.take_error();
    if (!tarball.is_absolute())
        return make_error(ErrorCode::invalid_argument,
                          "the base image tarball path '" + tarball.string() + "' is not absolute");
    std::vector<std::string> argv = {options_.mmdebstrap, "--mode=unshare",
                                     "--variant=" + recipe.variant};
    const auto packages = sorted_packages(recipe.packages);
    if (!packages.empty()) {
        std::string include = "--include=";
        for (std::size_t i = 0; i < packages.size(); ++i)
            include += (i ? "," : "") + packages[i];
        argv.push_back(std::move(include));
    }
    if (!recipe.ca_bundle.empty()) {
        if (!ca_copy.is_absolute() || !plain_token(ca_copy.string()))
            return make_error(ErrorCode::invalid_argument,
                              "the build folder path '" + ca_copy.parent_path().string() +
                                  "' holds spaces or quotes, which mmdebstrap's upload hook "
                                  "cannot take; set XDG_CACHE_HOME to a plain path");
        // Hooks run after the packages are installed, so ca-certificates is there to
        // merge the host's bundle into /etc/ssl/certs/ca-certificates.crt, which OpenSSL,
        // curl, git, Python and Debian's Node.js (built to use the system store) read.
        // `upload` is a special hook mmdebstrap performs itself (no shell); the second
        // runs under sh with $1 = the root filesystem, inside mmdebstrap's user namespace.
        argv.push_back("--customize-hook=upload " + ca_copy.string() + " " + kImageCaPath);
        argv.push_back("--customize-hook=chroot \"$1\" update-ca-certificates");
    }
    argv.push_back(recipe.suite);
    argv.push_back(tarball.string());
    argv.push_back(recipe.mirror);
    return argv;
}

Result<std::string> ImageBuilder::ensure_base_image(const BaseImageRecipe& recipe,
                                                    const ProgressCallback& progress) {
    auto say = [&progress](const std::string& line) {
        if (progress) progress(line);
    };
    std::optional<std::string> ca_content;
    if (!recipe.ca_bundle.empty()) {
        auto ca = read_ca(recipe);
        if (!ca) return ca.take_error();
        ca_content = std::move(*ca);
    }
    auto text = canonical_text(recipe, ca_content ? &*ca_content : nullptr);
    if (!text) return text.take_error();
    const std::string tag = tag_of(sha256_hex(*text));
    const std::string reference = std::string(kBaseImageRepository) + ":" + tag;

    auto exists = runtime_.image_exists(reference);
    if (!exists) return exists.take_error();
    if (*exists) {
        say("base image " + reference + " is up to date");
        return reference;
    }

    if (auto made = ensure_private_dir(options_.build_dir); !made)
        return make_error(made.error().code, "cannot prepare the image build folder: " +
                                                 made.error().message);
    const fs::path tarball = options_.build_dir / ("handler-base-" + tag + ".tar");
    const fs::path ca_copy = options_.build_dir / ("handler-base-" + tag + "-ca.crt");
    RemoveOnExit cleanup({tarball, ca_copy});
    std::error_code ignored;
    fs::remove(tarball, ignored); // left over from a build that was killed
    if (ca_content)
        if (auto written = write_file_atomic(ca_copy, *ca_content, 0644); !written)
            return written.take_error();

    auto argv = mmdebstrap_command(recipe, tarball, ca_copy);
    if (!argv) return argv.take_error();
    const auto started = std::chrono::steady_clock::now();
    say("building base image " + reference + " (" + recipe.suite + ", " +
        std::to_string(sorted_packages(recipe.packages).size()) +
        " packages) with mmdebstrap from " + recipe.mirror + ": this takes about a minute");
    CommandRequest request;
    request.argv = *argv;
    request.timeout_ms = options_.timeout_ms;
    auto ran = runner_.run(request);
    if (!ran) {
        std::string message = "could not run `" + describe_command(*argv) + "`: " + ran.error().message;
        if (ran.error().code == ErrorCode::not_found)
            message += ". Install it (Debian, Ubuntu: sudo apt-get install mmdebstrap), then run "
                       "`handler setup` again";
        return make_error(ran.error().code, std::move(message));
    }
    if (ran->exit_code != 0)
        return make_error(ErrorCode::unavailable,
                          "`" + describe_command(*argv) + "` failed (exit " +
                              std::to_string(ran->exit_code) + "): " +
                              (ran->stderr_text.empty() ? std::string("no error output")
                                                        : stderr_tail(ran->stderr_text)));
    if (!fs::is_regular_file(tarball, ignored))
        return make_error(ErrorCode::internal, "`" + describe_command(*argv) +
                                                   "` exited 0 but wrote no " + tarball.string());

    const auto megabytes = fs::file_size(tarball, ignored) / (1024 * 1024);
    say("root filesystem ready (" + std::to_string(megabytes) + " MB); importing it into podman as " +
        reference);
    if (auto imported = runtime_.import_image(tarball, reference); !imported)
        return make_error(imported.error().code,
                          "importing the base image failed: " + imported.error().message);
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::steady_clock::now() - started)
                             .count();
    say("base image " + reference + " is ready (built in " + std::to_string(seconds) + " s)");
    return reference;
}

namespace {

bool valid_layer_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    }) && name.front() != '-' && name.front() != '.';
}

using text::valid_env_name;

} // namespace

Result<std::string> containerfile_text(const std::string& base, const LayerRecipe& recipe) {
    if (!valid_layer_name(recipe.name))
        return make_error(ErrorCode::invalid_argument,
                          "image recipe name '" + recipe.name +
                              "' is not lowercase letters, digits, '-', '_' or '.'");
    if (base.empty() || base.find_first_of(" \t\r\n") != std::string::npos)
        return make_error(ErrorCode::invalid_argument, "base image reference '" + base + "' is malformed");
    if (recipe.version.empty() || !std::all_of(recipe.version.begin(), recipe.version.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '+';
        }))
        return make_error(ErrorCode::invalid_argument,
                          "the " + recipe.name + " image recipe's version '" + recipe.version +
                              "' is not a version (letters, digits, '.', '-', '+')");
    std::string text = "FROM " + base + "\n";
    text += "LABEL io.handler.recipe=\"" + recipe.name + " " + recipe.version + "\"\n";
    for (const auto& [name, value] : recipe.env) {
        if (!valid_env_name(name))
            return make_error(ErrorCode::invalid_argument,
                              "the " + recipe.name + " image recipe sets variable '" + name +
                                  "', which is not a variable name");
        // A double-quoted Containerfile word, taken literally: the builder would expand
        // "$X" and read "\\x" as an escape, and a line ends the instruction.
        std::string quoted = "\"";
        for (const char c : value) {
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                return make_error(ErrorCode::invalid_argument,
                                  "the " + recipe.name + " image recipe's value for " + name +
                                      " has a control character (a line break?)");
            if (c == '"' || c == '\\' || c == '$') quoted += '\\';
            quoted += c;
        }
        text += "ENV " + name + "=" + quoted + "\"\n";
    }
    for (const auto& step : recipe.run_steps) {
        if (step.empty())
            return make_error(ErrorCode::invalid_argument, "the " + recipe.name + " image recipe has an empty step");
        json::array argv{"/bin/sh", "-c", json::string(step)};
        text += "RUN " + json::serialize(argv) + "\n";
    }
    return text;
}

Result<std::string> layer_image_ref(const std::string& base, const LayerRecipe& recipe) {
    auto text = containerfile_text(base, recipe);
    if (!text) return text.take_error();
    return "localhost/handler-" + recipe.name + ":" + tag_of(sha256_hex(*text));
}

namespace {

// Cuts a build's output into lines for `progress`. What a RUN step prints comes from the
// packages it installs, so each line is bounded and made printable before anyone sees it.
class ProgressLines {
public:
    explicit ProgressLines(const ProgressCallback& progress) : progress_(progress) {}
    void feed(std::string_view chunk) {
        for (const char c : chunk) {
            if (c == '\n' || c == '\r') {
                flush();
                continue;
            }
            if (line_.size() >= kMaxProgressLineBytes) {
                cut_ = true;
                continue;
            }
            const auto byte = static_cast<unsigned char>(c);
            line_.push_back(byte < 0x20 || byte == 0x7f ? ' ' : c);
        }
    }
    void flush() {
        if (!line_.empty()) progress_(with_valid_utf8(cut_ ? line_ + " [...]" : line_));
        line_.clear();
        cut_ = false;
    }

private:
    const ProgressCallback& progress_;
    std::string line_;
    bool cut_ = false;
};

} // namespace

Result<std::string> ensure_layer_image(ContainerRuntime& runtime, const fs::path& build_dir,
                                       const std::string& base, const LayerRecipe& recipe,
                                       const ProgressCallback& progress) {
    auto text = containerfile_text(base, recipe);
    if (!text) return text.take_error();
    const std::string reference = "localhost/handler-" + recipe.name + ":" + tag_of(sha256_hex(*text));
    auto exists = runtime.image_exists(reference);
    if (!exists) return exists.take_error();
    if (*exists) return reference;
    auto base_exists = runtime.image_exists(base);
    if (!base_exists) return base_exists.take_error();
    if (!*base_exists)
        return make_error(ErrorCode::not_found,
                          "image " + base + " is not built on this machine; run `handler setup`");

    if (auto made = ensure_private_dir(build_dir); !made)
        return make_error(made.error().code, "cannot prepare the image build folder: " + made.error().message);
    const fs::path context = build_dir / ("handler-" + recipe.name + "-" + reference.substr(reference.rfind(':') + 1));
    std::error_code ignored;
    fs::remove_all(context, ignored); // left over from a build that was killed
    if (auto made = ensure_private_dir(context); !made) return made.take_error();
    RemoveOnExit cleanup({context});
    if (auto written = write_file_atomic(context / "Containerfile", *text, 0600); !written)
        return written.take_error();
    if (progress)
        progress("building image " + reference + " for " + recipe.name + " " + recipe.version + " (" +
                 std::to_string(recipe.run_steps.size()) + " steps on " + base + ")");
    const auto started = std::chrono::steady_clock::now();
    ProgressLines lines(progress);
    auto built = progress ? runtime.build_image_streaming(context, reference,
                                                          [&lines](std::string_view chunk) { lines.feed(chunk); })
                          : runtime.build_image(context, reference);
    if (progress) lines.flush();
    if (!built)
        return make_error(built.error().code, "building the " + recipe.name + " image failed: " +
                                                  built.error().message);
    if (progress)
        progress("image " + reference + " is ready (built in " +
                 std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::steady_clock::now() - started)
                                    .count()) +
                 " s)");
    // The plugin's older images (an earlier version of it, or of the base) go, except one
    // a container still uses (a running session's), which podman keeps: that session
    // goes on undisturbed, and the next build of this plugin tries again.
    const std::string repository = reference.substr(0, reference.rfind(':'));
    if (auto tags = runtime.image_tags(repository))
        for (const std::string& tag : *tags) {
            if (tag == reference) continue;
            auto removed = runtime.remove_image(tag);
            if (progress)
                progress(removed ? "removed the older image " + tag
                                 : "kept the older image " + tag + " (" + removed.error().message + ")");
        }
    return reference;
}

} // namespace handler::runtime
