// LineBuffer: cuts a harness's stdout, which arrives in pieces of any size, into lines.
//
// A piece may end in the middle of a line or of a UTF-8 sequence; since a line is only
// handed out once its LF has arrived, both are whole by then. One line is capped (16 MiB
// by default) so that an agent printing without newlines cannot grow the plugin's memory
// without bound: the bytes of an over-long line are dropped and its length reported.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace handler::plugin_common {

class LineBuffer {
public:
    static constexpr std::size_t kDefaultMaxLine = std::size_t{16} << 20;

    explicit LineBuffer(std::size_t max_line = kDefaultMaxLine) : max_line_(max_line) {}

    // Calls on_line(std::string_view) for every line completed by `bytes`, without its LF
    // (nor a CR just before it: CRLF output reads the same), and on_overflow(std::size_t
    // length) instead for a completed line longer than max_line. The view is valid only
    // during the call.
    template <class OnLine, class OnOverflow>
    void feed(std::string_view bytes, OnLine&& on_line, OnOverflow&& on_overflow) {
        while (!bytes.empty()) {
            const std::size_t lf = bytes.find('\n');
            if (lf == std::string_view::npos) {
                append(bytes);
                return;
            }
            // The common case, a whole line inside one piece, is handed out uncopied.
            if (pending_.empty() && !dropping_ && lf <= max_line_) {
                on_line(strip_cr(bytes.substr(0, lf)));
            } else {
                append(bytes.substr(0, lf));
                end_line(on_line, on_overflow);
            }
            bytes.remove_prefix(lf + 1);
        }
    }

    // At the end of the stream: hands out a last line that has no LF, if there is one.
    template <class OnLine, class OnOverflow>
    void finish(OnLine&& on_line, OnOverflow&& on_overflow) {
        if (!pending_.empty() || dropping_) end_line(on_line, on_overflow);
    }

    // Bytes held for a line whose LF has not arrived (0 while dropping an over-long one).
    std::size_t pending_size() const noexcept { return pending_.size(); }
    std::size_t max_line() const noexcept { return max_line_; }

private:
    static std::string_view strip_cr(std::string_view line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        return line;
    }

    void append(std::string_view piece) {
        if (dropping_) {
            dropped_ += piece.size();
            return;
        }
        if (piece.size() > max_line_ - pending_.size()) {
            dropping_ = true;
            dropped_ = pending_.size() + piece.size();
            std::string().swap(pending_); // give the memory back, not just the length
            return;
        }
        pending_.append(piece);
    }

    template <class OnLine, class OnOverflow>
    void end_line(OnLine& on_line, OnOverflow& on_overflow) {
        if (dropping_) {
            const std::size_t length = dropped_;
            dropping_ = false;
            dropped_ = 0;
            on_overflow(length);
            return;
        }
        // Moved out first, so a callback that feeds this buffer again sees it empty.
        const std::string line = std::move(pending_);
        pending_.clear();
        on_line(strip_cr(line));
    }

    std::size_t max_line_;
    std::string pending_;
    bool dropping_ = false;
    std::size_t dropped_ = 0;
};

} // namespace handler::plugin_common
