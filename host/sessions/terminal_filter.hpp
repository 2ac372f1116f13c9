// What a program in a session prints reaches the user's own terminal: `handler attach`,
// `handler logs`, the web page's xterm.js. The terminal obeys the escape sequences in it,
// and a few of those act on the user's machine rather than on the screen: they write or
// read the clipboard (OSC 52), report the title, the colours, settings or the screen back
// as if the user had typed it (CSI 21 t, OSC 11 ?, DECRQSS, DECRQCRA), hand sequences
// through tmux or screen unfiltered, define keys, or ask the terminal to print or to
// fetch files. A report is the dangerous half: whatever is still in the terminal's input
// when `handler attach` ends is read by the user's shell.
//
// TerminalFilter drops those and passes every other byte as it came, so TUIs still draw
// (docs/security.md, "The terminal"). It reads the stream as a terminal's parser does
// (ECMA-48 and the DEC parser xterm, VTE and the others follow): ESC starts a sequence
// wherever it appears; CAN and SUB abort one; C0 controls inside a control sequence are
// obeyed without ending it; OSC strings end at BEL or ST; 8-bit C1 controls count, both
// encoded in UTF-8 (C2 9B) and as raw bytes outside a UTF-8 character (9B). Its lists are
// of what may pass, so a sequence it does not know is dropped, not let through:
//   - CSI: everything but window operations and reports (CSI t, except the title stack
//     22/23), media copy (CSI i) and the reports of the screen's contents or state
//     (DECRQCRA, DECRQPSR, DECRQTSR);
//   - OSC: setting the title (0, 1, 2), colours without a `?` query (4, 5, 10-19) and their
//     resets (104, 105, 110-119), the working folder (7), hyperlinks (8), progress and
//     notifications (9, 777 notify) and prompt marks (133);
//   - DCS: sixel images and the synchronized-update brackets only;
//   - SOS, PM, APC: never.
// A passed string sequence always leaves terminated by BEL or ESC \, so a terminal that
// does not honour an 8-bit ST never stays inside it.
//
// A streaming state machine: a sequence split across feeds is judged whole. Memory is
// bounded: a sequence is held only until it can be judged, at most kHeldLimitBytes; a
// longer one is dropped whole, and the bytes up to its end with it. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace handler::sessions {

class TerminalFilter {
public:
    // The longest sequence that can pass (a title, a hyperlink's address); longer ones
    // are dropped.
    static constexpr std::size_t kHeldLimitBytes = 4096;

    // Appends to `out` what of `bytes` may reach the terminal. What ends in the middle of a
    // sequence is held until the next feed.
    void feed(std::string_view bytes, std::string& out);
    std::string filter(std::string_view bytes) {
        std::string out;
        feed(bytes, out);
        return out;
    }

    // How many sequences were dropped, and what the latest one was ("OSC 52"), for a log line.
    std::uint64_t dropped() const { return dropped_; }
    std::string_view last_dropped() const { return last_dropped_; }
    // The bytes held for a sequence not yet judged (bounded by kHeldLimitBytes).
    std::size_t held_bytes() const { return held_.size() + body_.size() + utf8_size_; }

private:
    enum class State {
        ground,
        escape,        // after ESC (and its intermediates)
        csi,           // a control sequence, held until its final byte
        osc,           // an operating system command, held until its end
        dcs_header,    // a device control string up to its final byte
        dcs_pass,      // a sixel image's data, passed as it comes
        string_drop,   // a string being dropped, up to its end
        string_escape, // an ESC inside a string: ST if a backslash follows
    };
    enum class Unit { ascii, c1, other }; // other: a non-ASCII character or an invalid byte

    void byte(unsigned char value, std::string& out);
    void unit(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    void ground(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    void c1(unsigned char code, std::string_view raw, std::string& out);
    void escape(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    void csi(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    void osc(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    void dcs_header(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    void dcs_pass(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    void string_drop(Unit kind, unsigned char code, std::string_view raw, std::string& out);
    // The string (OSC, DCS, SOS/PM/APC) ends: `terminated` when by BEL or ST.
    void end_string(bool terminated, std::string_view terminator, std::string& out);
    bool aborted_by(unsigned char code, std::string_view raw, std::string& out);
    void collect(unsigned char code, std::string_view raw, const char* malformed);
    void finish(const char* refused, std::string_view final_byte, std::string& out);
    void start(State state, std::string_view introducer);
    void drop_into(State state, std::string_view what);
    // Adds `raw` to `where` (held_ or body_) within the limit; past it, the sequence is doomed.
    void hold(std::string& where, std::string_view raw);
    void note_drop(std::string_view what);
    void reset_to_ground();

    State state_ = State::ground;
    State string_ = State::ground; // in string_escape: the string the ESC is in
    std::string held_;             // the sequence so far, as it came (the introducer for an OSC)
    std::string body_;             // CSI/DCS: parameters and intermediates; OSC: its text
    const char* doomed_ = nullptr; // set: the sequence is dropped at its end, for this reason
    std::string overlong_reason_;  // what doomed_ points to for an over-long OSC
    // A UTF-8 character not complete yet: its bytes so far and how many it has.
    unsigned char utf8_[4] = {};
    std::size_t utf8_size_ = 0;
    std::size_t utf8_length_ = 0;
    std::uint64_t dropped_ = 0;
    std::string last_dropped_;
};

} // namespace handler::sessions
