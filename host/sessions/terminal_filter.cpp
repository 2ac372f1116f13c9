#include "sessions/terminal_filter.hpp"

#include <algorithm>

namespace handler::sessions {
namespace {

constexpr unsigned char kBel = 0x07;
constexpr unsigned char kCan = 0x18;
constexpr unsigned char kSub = 0x1A;
constexpr unsigned char kEsc = 0x1B;
constexpr unsigned char kDel = 0x7F;
constexpr unsigned char kDcs = 0x90;
constexpr unsigned char kSos = 0x98;
constexpr unsigned char kCsi = 0x9B;
constexpr unsigned char kSt = 0x9C;
constexpr unsigned char kOsc = 0x9D;
constexpr unsigned char kPm = 0x9E;
constexpr unsigned char kApc = 0x9F;
constexpr std::string_view kSevenBitSt = "\x1b\\";

bool is_digit(char value) { return value >= '0' && value <= '9'; }
bool is_intermediate(unsigned char value) { return value >= 0x20 && value <= 0x2F; }
bool is_private_marker(unsigned char value) { return value >= 0x3C && value <= 0x3F; }

// Whether `value` may be byte `position` (1, 2 or 3) of a UTF-8 character led by `lead`:
// the well-formed sequences of the Unicode standard (table 3-7), so that an overlong form
// (E0 82 9B, which a lenient decoder reads as U+009B, CSI) is no character.
bool continues(unsigned char lead, std::size_t position, unsigned char value) {
    if (position == 1) {
        switch (lead) {
        case 0xE0: return value >= 0xA0 && value <= 0xBF;
        case 0xED: return value >= 0x80 && value <= 0x9F;
        case 0xF0: return value >= 0x90 && value <= 0xBF;
        case 0xF4: return value >= 0x80 && value <= 0x8F;
        default: break;
        }
    }
    return value >= 0x80 && value <= 0xBF;
}

// A CSI's or DCS's collected bytes: parameters (0x30-0x3F), then intermediates (0x20-0x2F).
struct Header {
    char marker = 0;        // a private marker: < = > ?
    long first = -1;        // the first parameter, -1 when absent
    std::string_view parameters;
    std::string_view intermediates;
};

Header parse_header(std::string_view collected) {
    Header header;
    const auto split = std::find_if(collected.begin(), collected.end(),
                                    [](char value) { return is_intermediate(static_cast<unsigned char>(value)); });
    header.parameters = collected.substr(0, static_cast<std::size_t>(split - collected.begin()));
    header.intermediates = collected.substr(header.parameters.size());
    std::string_view numbers = header.parameters;
    if (!numbers.empty() && is_private_marker(static_cast<unsigned char>(numbers.front()))) {
        header.marker = numbers.front();
        numbers.remove_prefix(1);
    }
    std::size_t digits = 0;
    long first = 0;
    while (digits < numbers.size() && is_digit(numbers[digits]) && digits < 9) first = first * 10 + (numbers[digits++] - '0');
    if (digits > 0) header.first = digits < numbers.size() && is_digit(numbers[digits]) ? 1'000'000'000 : first;
    return header;
}

// Why a complete CSI may not pass; nullptr when it may.
const char* csi_refusal(std::string_view collected, unsigned char final_byte) {
    const Header header = parse_header(collected);
    if (final_byte == 't' && header.intermediates.empty()) {
        // The title stack (22 push, 23 pop) only draws; the rest move, resize or
        // (de)iconify the user's window, or report its title, state and sizes.
        if (header.marker == 0 && (header.first == 22 || header.first == 23)) return nullptr;
        return "CSI t (a window operation or report: 21 t reports the title)";
    }
    if (final_byte == 'i' && header.intermediates.empty()) return "CSI i (media copy: to the printer)";
    if (final_byte == 'y' && header.intermediates == "*") return "DECRQCRA (a checksum of the screen's contents)";
    if ((final_byte == 'w' || final_byte == 'u') && header.intermediates == "$")
        return "DECRQPSR/DECRQTSR (a report of the terminal's state)";
    return nullptr;
}

// Why a DCS whose header is complete may not pass; nullptr when it may.
const char* dcs_refusal(std::string_view collected, unsigned char final_byte) {
    const Header header = parse_header(collected);
    if (header.intermediates.empty()) {
        if (final_byte == 'q' && header.marker == 0) return nullptr; // sixel
        if (final_byte == 's' && (header.parameters == "=1" || header.parameters == "=2"))
            return nullptr; // the synchronized-update brackets
        if (final_byte == 't') return "DCS t (tmux passthrough)";
        if (final_byte == '|') return "DECUDK (a definition of the user's keys)";
    }
    if (header.intermediates == "$" && final_byte == 'q') return "DECRQSS (a report of a setting)";
    if (header.intermediates == "+" && final_byte == 'q') return "XTGETTCAP (a report of the terminal's capabilities)";
    return "a DCS other than sixel";
}

// Why a complete OSC may not pass; empty when it may. `text` is what came between its
// introducer and its end, without the C0 controls terminals ignore there.
std::string osc_refusal(std::string_view text) {
    std::size_t digits = 0;
    long number = 0;
    while (digits < text.size() && is_digit(text[digits])) {
        if (digits == 6) return "an OSC with an over-long number";
        number = number * 10 + (text[digits++] - '0');
    }
    if (digits == 0) return "an OSC without a number";
    if (digits < text.size() && text[digits] != ';') return "a malformed OSC";
    const std::string_view rest = digits < text.size() ? text.substr(digits + 1) : std::string_view();
    const bool query = rest.find('?') != std::string_view::npos;
    const std::string named = "OSC " + std::to_string(number);
    switch (number) {
    case 0: case 1: case 2: // the title and icon name: set only, never reported (CSI 21 t is dropped)
    case 7:                 // the working folder
    case 8:                 // a hyperlink
    case 133:               // prompt marks
    case 104: case 105:     // colour resets
    case 110: case 111: case 112: case 113: case 114: case 115: case 116: case 117: case 118: case 119:
        return {};
    case 4: case 5:
    case 10: case 11: case 12: case 13: case 14: case 15: case 16: case 17: case 18: case 19:
        if (query) return named + " ? (a colour report)";
        return {};
    case 9:
        // Progress (9;4) and iTerm2's notification; ConEmu's numbered commands (9;6 runs a
        // GUI macro) act on the user's machine.
        if (rest.starts_with("4;") || (!rest.empty() && !is_digit(rest.front()))) return {};
        return named + " (a ConEmu command)";
    case 777:
        if (rest.starts_with("notify;")) return {};
        return named + " (an urxvt extension other than notify)";
    case 52: return named + " (the clipboard)";
    default: return named + " (not one of those that only draw)";
    }
}

} // namespace

void TerminalFilter::feed(std::string_view bytes, std::string& out) {
    out.reserve(out.size() + bytes.size());
    for (std::size_t at = 0; at < bytes.size();) {
        if (state_ == State::ground && utf8_size_ == 0) {
            // The common case, text: passed in one piece.
            std::size_t end = at;
            while (end < bytes.size()) {
                const auto value = static_cast<unsigned char>(bytes[end]);
                if (value == kEsc || value >= 0x80) break;
                ++end;
            }
            out.append(bytes.substr(at, end - at));
            at = end;
            if (at == bytes.size()) break;
        }
        byte(static_cast<unsigned char>(bytes[at++]), out);
    }
}

// Bytes to units: ASCII, C1 controls (raw 0x80-0x9F outside a character, or U+0080-U+009F
// in UTF-8), and other characters or invalid bytes.
void TerminalFilter::byte(unsigned char value, std::string& out) {
    const char as_char = static_cast<char>(value);
    if (utf8_size_ == 0) {
        if (value < 0x80) return unit(Unit::ascii, value, {&as_char, 1}, out);
        if (value <= 0x9F) return unit(Unit::c1, value, {&as_char, 1}, out);
        utf8_length_ = value >= 0xC2 && value <= 0xDF ? 2 : value >= 0xE0 && value <= 0xEF ? 3
                                                       : value >= 0xF0 && value <= 0xF4 ? 4 : 0;
        if (utf8_length_ == 0) return unit(Unit::other, value, {&as_char, 1}, out);
        utf8_[utf8_size_++] = value;
        return;
    }
    if (continues(utf8_[0], utf8_size_, value)) {
        utf8_[utf8_size_++] = value;
        if (utf8_size_ < utf8_length_) return;
        char character[4];
        std::copy(utf8_, utf8_ + utf8_size_, character);
        const std::string_view raw(character, utf8_size_);
        utf8_size_ = 0;
        if (utf8_length_ == 2 && utf8_[0] == 0xC2 && value <= 0x9F) return unit(Unit::c1, value, raw, out);
        return unit(Unit::other, 0, raw, out);
    }
    // A broken character: its lead is an invalid byte, and the bytes after it count on
    // their own (a 9B among them is a C1 CSI to an 8-bit terminal).
    unsigned char pending[4];
    const std::size_t size = utf8_size_;
    std::copy(utf8_, utf8_ + size, pending);
    utf8_size_ = 0;
    const char lead = static_cast<char>(pending[0]);
    unit(Unit::other, pending[0], {&lead, 1}, out);
    for (std::size_t index = 1; index < size; ++index) byte(pending[index], out);
    byte(value, out);
}

void TerminalFilter::unit(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    switch (state_) {
    case State::ground: return ground(kind, code, raw, out);
    case State::escape: return escape(kind, code, raw, out);
    case State::csi: return csi(kind, code, raw, out);
    case State::osc: return osc(kind, code, raw, out);
    case State::dcs_header: return dcs_header(kind, code, raw, out);
    case State::dcs_pass: return dcs_pass(kind, code, raw, out);
    case State::string_drop: return string_drop(kind, code, raw, out);
    case State::string_escape:
        if (kind == Unit::ascii && code == '\\') return end_string(true, kSevenBitSt, out);
        // tmux doubles each ESC it passes through (DCS tmux; ... ESC ESC ] 52 ...): in a
        // string being dropped, ESC ESC stays inside, so the whole passthrough goes at once.
        // Dropping on costs no safety: the terminal never saw the string begin.
        if (string_ == State::string_drop && kind == Unit::ascii && code == kEsc) {
            state_ = State::string_drop;
            return;
        }
        // Any other ESC ends the string, and starts a sequence of its own.
        end_string(false, {}, out);
        start(State::escape, "\x1b");
        return escape(kind, code, raw, out);
    }
}

void TerminalFilter::ground(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    if (kind == Unit::c1) return c1(code, raw, out);
    if (kind == Unit::ascii && code == kEsc) return start(State::escape, raw);
    out += raw;
}

void TerminalFilter::c1(unsigned char code, std::string_view raw, std::string& out) {
    switch (code) {
    case kCsi: return start(State::csi, raw);
    case kOsc: return start(State::osc, raw);
    case kDcs: return start(State::dcs_header, raw);
    case kSos:
    case kPm:
    case kApc: return drop_into(State::string_drop, "an SOS, PM or APC string (kitty's graphics read files)");
    default: out += raw; // IND, NEL, RI, a lone ST and the others act on the screen only
    }
}

// After ESC: a sequence of its own (ESC 7, ESC ( 0: all only draw), or the start of a CSI,
// an OSC, a DCS or another string.
void TerminalFilter::escape(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    if (kind != Unit::ascii) {
        // The ESC (and its intermediates) was aborted; the terminal reads this on its own.
        reset_to_ground();
        return ground(kind, code, raw, out);
    }
    if (aborted_by(code, raw, out) || code == kDel) return;
    // A C0 control inside a sequence is obeyed there, which is the same as before it.
    if (code < 0x20) {
        out += raw;
        return;
    }
    if (is_intermediate(code)) return hold(held_, raw);
    if (held_.size() == 1) {
        switch (code) {
        case '[': return start(State::csi, "\x1b[");
        case ']': return start(State::osc, "\x1b]");
        case 'P': return start(State::dcs_header, "\x1bP");
        case 'X':
        case '^':
        case '_': return drop_into(State::string_drop, "an SOS, PM or APC string (kitty's graphics read files)");
        default: break;
        }
    }
    finish(doomed_, raw, out);
}

void TerminalFilter::csi(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    if (kind == Unit::c1) {
        reset_to_ground(); // aborted: the terminal starts over at the C1 control
        return c1(code, raw, out);
    }
    if (kind == Unit::other) {
        // Terminals ignore such a sequence up to its final byte.
        if (doomed_ == nullptr) doomed_ = "a malformed CSI";
        return;
    }
    if (aborted_by(code, raw, out) || code == kDel) return;
    if (code < 0x20) {
        out += raw;
        return;
    }
    if (code < 0x40) return collect(code, raw, "a malformed CSI");
    finish(doomed_ != nullptr ? doomed_ : csi_refusal(body_, code), raw, out);
}

void TerminalFilter::osc(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    if (kind == Unit::c1) {
        if (code == kSt) return end_string(true, raw, out);
        end_string(false, {}, out);
        return c1(code, raw, out);
    }
    if (kind == Unit::ascii) {
        if (code == kBel) return end_string(true, raw, out);
        if (code == kEsc) {
            string_ = State::osc;
            state_ = State::string_escape;
            return;
        }
        if (code == kCan || code == kSub) {
            end_string(false, {}, out);
            out += raw;
            return;
        }
        if (code < 0x20) return; // ignored by terminals inside a string
    }
    if (doomed_ == nullptr && held_.size() + body_.size() + raw.size() > kHeldLimitBytes) {
        // Judged by what it is when it is known (OSC 52 of a large clipboard), else as too long.
        overlong_reason_ = osc_refusal(body_);
        if (overlong_reason_.empty() || overlong_reason_ == "an OSC without a number")
            overlong_reason_ = "an OSC over " + std::to_string(kHeldLimitBytes) + " bytes";
        doomed_ = overlong_reason_.c_str();
        body_.clear();
        body_.shrink_to_fit();
        return;
    }
    if (doomed_ == nullptr) body_ += raw;
}

void TerminalFilter::dcs_header(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    if (kind == Unit::c1) {
        reset_to_ground(); // aborted before its data began
        return c1(code, raw, out);
    }
    if (kind == Unit::other) return drop_into(State::string_drop, "a malformed DCS");
    // An ESC aborts it: GNU screen's passthrough (ESC P ESC ] 52 ...) is read as what it holds.
    if (aborted_by(code, raw, out)) return;
    if (code < 0x20 || code == kDel) return; // ignored in a DCS header
    if (code < 0x40) return collect(code, raw, "a malformed DCS");
    const char* refused = doomed_ != nullptr ? doomed_ : dcs_refusal(body_, code);
    if (refused != nullptr) return drop_into(State::string_drop, refused);
    out += held_;
    out += raw;
    held_.clear();
    body_.clear();
    state_ = State::dcs_pass;
}

// A sixel image's data: printable ASCII and line ends only, passed as it comes (an image
// is too large to hold); whatever ends it, it leaves with an ST.
void TerminalFilter::dcs_pass(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    if (kind == Unit::c1) {
        out += kSevenBitSt;
        state_ = State::ground;
        if (code != kSt) c1(code, raw, out);
        return;
    }
    if (kind == Unit::other) return;
    if (code == kEsc) {
        string_ = State::dcs_pass;
        state_ = State::string_escape;
        return;
    }
    if (code == kCan || code == kSub) {
        out += kSevenBitSt;
        out += raw;
        state_ = State::ground;
        return;
    }
    if (code == kDel || (code < 0x20 && code != '\r' && code != '\n')) return;
    out += raw;
}

void TerminalFilter::string_drop(Unit kind, unsigned char code, std::string_view raw, std::string& out) {
    if (kind == Unit::c1) {
        state_ = State::ground;
        if (code != kSt) c1(code, raw, out);
        return;
    }
    if (kind != Unit::ascii) return;
    if (code == kEsc) {
        string_ = State::string_drop;
        state_ = State::string_escape;
        return;
    }
    if (code == kCan || code == kSub) {
        state_ = State::ground;
        out += raw;
    }
}

void TerminalFilter::end_string(bool terminated, std::string_view terminator, std::string& out) {
    const State string = state_ == State::string_escape ? string_ : state_;
    if (string == State::osc) {
        std::string refused = doomed_ != nullptr ? std::string(doomed_)
                              : terminated       ? osc_refusal(body_)
                                                 : "an OSC not ended by BEL or ST";
        if (refused.empty()) {
            out += held_;
            out += body_;
            // An 8-bit ST becomes ESC \, which every terminal knows: one that ignores 9C
            // would otherwise read on inside the string.
            out += terminator == "\x07" ? terminator : kSevenBitSt;
        } else {
            note_drop(refused);
        }
    } else if (string == State::dcs_pass) {
        out += kSevenBitSt;
    }
    reset_to_ground();
}

// ESC starts a sequence anew, CAN and SUB abort it (and pass on): true when `code` did.
bool TerminalFilter::aborted_by(unsigned char code, std::string_view raw, std::string& out) {
    if (code == kEsc) {
        start(State::escape, raw);
        return true;
    }
    if (code != kCan && code != kSub) return false;
    reset_to_ground();
    out += raw;
    return true;
}

// A parameter or intermediate byte of a CSI or DCS header. A parameter after an
// intermediate, or a private marker after the first byte, makes one terminals ignore.
void TerminalFilter::collect(unsigned char code, std::string_view raw, const char* malformed) {
    const bool after_intermediate = std::any_of(
        body_.begin(), body_.end(), [](char value) { return is_intermediate(static_cast<unsigned char>(value)); });
    if (doomed_ == nullptr && ((code >= 0x30 && after_intermediate) || (is_private_marker(code) && !body_.empty())))
        doomed_ = malformed;
    hold(held_, raw);
    hold(body_, raw);
}

// A sequence is complete with `final_byte`: passed whole, or dropped for `refused`.
void TerminalFilter::finish(const char* refused, std::string_view final_byte, std::string& out) {
    if (refused != nullptr) {
        note_drop(refused);
    } else {
        out += held_;
        out += final_byte;
    }
    reset_to_ground();
}

void TerminalFilter::start(State state, std::string_view introducer) {
    state_ = state;
    held_.assign(introducer);
    body_.clear();
    doomed_ = nullptr;
}

void TerminalFilter::drop_into(State state, std::string_view what) {
    note_drop(what);
    state_ = state;
    held_.clear();
    body_.clear();
    doomed_ = nullptr;
}

void TerminalFilter::hold(std::string& where, std::string_view raw) {
    if (held_.size() + body_.size() + raw.size() > kHeldLimitBytes) {
        static_assert(kHeldLimitBytes == 4096, "the message below names the limit");
        if (doomed_ == nullptr) doomed_ = "a control sequence over 4096 bytes";
        return;
    }
    where += raw;
}

void TerminalFilter::note_drop(std::string_view what) {
    ++dropped_;
    last_dropped_.assign(what);
}

void TerminalFilter::reset_to_ground() {
    state_ = State::ground;
    held_.clear();
    body_.clear();
    doomed_ = nullptr;
}

} // namespace handler::sessions
