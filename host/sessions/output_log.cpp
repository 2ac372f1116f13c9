#include "sessions/output_log.hpp"

#include "core/paths.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace handler::sessions {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLogName = "output.log";
constexpr const char* kOldLogName = "output.log.1";
constexpr const char* kBaseName = "output.base";

Error io_error(const std::string& what, const fs::path& path) {
    return Error{ErrorCode::internal, what + " " + path.string() + ": " + std::strerror(errno)};
}

std::uint64_t size_of(const fs::path& path) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    return error ? 0 : size;
}

} // namespace

Result<OutputLog> OutputLog::open(const fs::path& dir, std::uint64_t limit) {
    if (auto made = ensure_private_dir(dir); !made) return made.take_error();
    OutputLog log;
    log.dir_ = dir;
    log.limit_ = limit;
    if (auto text = read_file(dir / kBaseName); text) {
        const auto* first = text->data();
        const auto* last = first + text->size();
        while (last != first && (last[-1] == '\n' || last[-1] == ' ')) --last;
        auto [end, error] = std::from_chars(first, last, log.base_);
        if (error != std::errc() || end != last)
            return make_error(ErrorCode::invalid_argument,
                              (dir / kBaseName).string() + " does not hold a number");
    }
    const fs::path path = dir / kLogName;
    log.fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (log.fd_ < 0) return io_error("cannot open", path);
    struct stat status {};
    if (::fstat(log.fd_, &status) != 0) return io_error("cannot stat", path);
    log.size_ = static_cast<std::uint64_t>(status.st_size);
    const std::uint64_t old_size = size_of(dir / kOldLogName);
    log.oldest_ = log.base_ >= old_size ? log.base_ - old_size : 0;
    return log;
}

OutputLog::OutputLog(OutputLog&& other) noexcept { *this = std::move(other); }

OutputLog& OutputLog::operator=(OutputLog&& other) noexcept {
    if (this == &other) return *this;
    if (fd_ >= 0) ::close(fd_);
    dir_ = std::move(other.dir_);
    limit_ = other.limit_;
    fd_ = other.fd_;
    base_ = other.base_;
    size_ = other.size_;
    oldest_ = other.oldest_;
    other.fd_ = -1;
    return *this;
}

OutputLog::~OutputLog() {
    if (fd_ >= 0) ::close(fd_);
}

Result<void> OutputLog::rotate() {
    const fs::path path = dir_ / kLogName;
    const std::uint64_t new_base = base_ + size_;
    // The base is written first: a crash in between leaves a base that is too high for
    // the old file, which only makes the next handlerd ask the shim for too little.
    if (auto written = write_file_atomic(dir_ / kBaseName, std::to_string(new_base) + "\n", 0600);
        !written)
        return written;
    if (::rename(path.c_str(), (dir_ / kOldLogName).c_str()) != 0)
        return make_error(ErrorCode::internal, "cannot rotate " + path.string() + ": " +
                                                   std::strerror(errno));
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return make_error(ErrorCode::internal, "cannot open " + path.string() + ": " + std::strerror(errno));
    ::close(fd_);
    fd_ = fd;
    oldest_ = base_;
    base_ = new_base;
    size_ = 0;
    return {};
}

Result<void> OutputLog::append(std::string_view bytes) {
    if (fd_ < 0) return make_error(ErrorCode::internal, "output log is closed");
    if (size_ > 0 && size_ + bytes.size() > limit_)
        if (auto rotated = rotate(); !rotated) return rotated;
    while (!bytes.empty()) {
        const ssize_t written = ::write(fd_, bytes.data(), bytes.size());
        if (written < 0) {
            if (errno == EINTR) continue;
            return io_error("cannot write", dir_ / kLogName);
        }
        size_ += static_cast<std::uint64_t>(written);
        bytes.remove_prefix(static_cast<std::size_t>(written));
    }
    return {};
}

Result<void> OutputLog::skip(std::uint64_t bytes) {
    if (bytes == 0) return {};
    if (auto written = write_file_atomic(dir_ / kBaseName, std::to_string(base_ + bytes) + "\n", 0600);
        !written)
        return written;
    base_ += bytes;
    return {};
}

Result<std::string> OutputLog::read_all() const {
    std::string text;
    if (fs::exists(dir_ / kOldLogName)) {
        auto old = read_file(dir_ / kOldLogName);
        if (!old) return old.take_error();
        text = std::move(*old);
    }
    auto current = read_file(dir_ / kLogName);
    if (!current) return current.take_error();
    text += *current;
    return text;
}

Result<std::pair<std::uint64_t, std::string>> OutputLog::tail(std::size_t bytes) const {
    const fs::path path = dir_ / kLogName;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return io_error("cannot open", path);
    const std::uint64_t start = size_ > bytes ? size_ - bytes : 0;
    std::string text(static_cast<std::size_t>(size_ - start), '\0');
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t got = ::pread(fd, text.data() + done, text.size() - done,
                                    static_cast<off_t>(start + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        done += static_cast<std::size_t>(got);
    }
    ::close(fd);
    text.resize(done);
    return std::make_pair(base_ + start, std::move(text));
}

} // namespace handler::sessions
