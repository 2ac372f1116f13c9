#include "api/token.hpp"

#include "core/file_descriptor.hpp"
#include "core/private_file.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace handler::api {
namespace fs = std::filesystem;

namespace {

// A token is pasted into headers, cookies and shells: keep it to characters that need no
// quoting anywhere. 32 is the shortest we accept from a hand-made file (128 bits as hex).
constexpr std::size_t kMinimumTokenLength = 32;
constexpr std::size_t kMaximumTokenFileBytes = 4096;

bool is_token_character(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

Result<std::string> read_token(const fs::path& file, int fd) {
    if (auto mine = check_private(fd, file, PrivateKind::file,
                                  {"the API token file", "remove it and start handlerd again to make a new token"});
        !mine)
        return mine.take_error();

    std::string contents(kMaximumTokenFileBytes + 1, '\0');
    std::size_t length = 0;
    while (length < contents.size()) {
        const ssize_t n = ::read(fd, contents.data() + length, contents.size() - length);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return make_error(ErrorCode::internal,
                              "cannot read " + file.string() + ": " + std::strerror(errno));
        if (n == 0) break;
        length += static_cast<std::size_t>(n);
    }
    contents.resize(length);
    // Editors add a final newline; that is not part of the token.
    while (!contents.empty() &&
           (contents.back() == '\n' || contents.back() == '\r' || contents.back() == ' '))
        contents.pop_back();

    bool valid = contents.size() >= kMinimumTokenLength && length <= kMaximumTokenFileBytes;
    for (const char c : contents) valid = valid && is_token_character(c);
    if (!valid)
        return make_error(ErrorCode::invalid_argument,
                          file.string() + " does not hold a valid API token (at least " +
                              std::to_string(kMinimumTokenLength) +
                              " characters of A-Z a-z 0-9 - _); delete it and start handlerd "
                              "again to make a new one");
    return contents;
}

Result<std::string> new_token() {
    std::array<unsigned char, kTokenBytes> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
        return make_error(ErrorCode::internal,
                          "OpenSSL could not produce random bytes for the API token "
                          "(RAND_bytes failed); check that /dev/urandom is readable");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string token;
    token.reserve(bytes.size() * 2);
    for (const unsigned char byte : bytes) {
        token.push_back(kHex[byte >> 4]);
        token.push_back(kHex[byte & 0x0f]);
    }
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return token;
}

// Writes the token to a private temporary file and link()s it into place: link never
// replaces an existing file, so two daemons starting at once agree on one token, and a
// reader never sees a half-written file.
Result<void> create_token_file(const fs::path& file, const std::string& token) {
    const fs::path temporary = file.string() + ".tmp-" + std::to_string(::getpid());
    ::unlink(temporary.c_str()); // A leftover from a crash of this same pid; ours to remove.
    const FileDescriptor fd(::open(temporary.c_str(),
                                   O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.get() < 0)
        return make_error(ErrorCode::internal, "cannot create the API token file " +
                                                   temporary.string() + ": " +
                                                   std::strerror(errno));
    const std::string contents = token + "\n";
    std::size_t written = 0;
    bool failed = ::fchmod(fd.get(), 0600) != 0;
    while (!failed && written < contents.size()) {
        const ssize_t n = ::write(fd.get(), contents.data() + written, contents.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) failed = true;
        else written += static_cast<std::size_t>(n);
    }
    failed = failed || ::fsync(fd.get()) != 0;
    if (failed || ::link(temporary.c_str(), file.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        if (error == EEXIST) return {}; // Another process made it first: use theirs.
        return make_error(ErrorCode::internal, "cannot write the API token file " +
                                                   file.string() + ": " + std::strerror(error));
    }
    ::unlink(temporary.c_str());
    return {};
}

} // namespace

Result<std::string> load_or_create_token(const fs::path& file) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        const FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (fd.get() >= 0) return read_token(file, fd.get());
        if (errno == ELOOP)
            return make_error(ErrorCode::forbidden,
                              file.string() + " is a symbolic link; the API token must be a "
                                              "plain file. Remove the link and start again");
        if (errno != ENOENT)
            return make_error(ErrorCode::internal,
                              "cannot open " + file.string() + ": " + std::strerror(errno));
        auto token = new_token();
        if (!token) return token.take_error();
        if (auto created = create_token_file(file, *token); !created)
            return created.take_error();
        // Read back what is on disk: if another process won the race, theirs counts.
    }
    return make_error(ErrorCode::internal,
                      "the API token file " + file.string() + " vanished while it was being "
                                                              "made; start handlerd again");
}

bool token_equals(std::string_view presented, std::string_view expected) {
    if (presented.size() != expected.size() || expected.empty()) return false;
    return CRYPTO_memcmp(presented.data(), expected.data(), expected.size()) == 0;
}

} // namespace handler::api
