#include "sessions/terminal_filter.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace handler::sessions {
namespace {

std::string whole(std::string_view input) { return TerminalFilter().filter(input); }

// Every way of cutting `input` in two, and byte by byte: a terminal gets its output in
// reads of any size, and a sequence across two of them must be judged the same.
void expect_every_split(const std::string& input, const std::string& expected) {
    EXPECT_EQ(whole(input), expected) << "whole: " << ::testing::PrintToString(input);
    for (std::size_t cut = 1; cut < input.size(); ++cut) {
        TerminalFilter filter;
        std::string out;
        filter.feed(std::string_view(input).substr(0, cut), out);
        filter.feed(std::string_view(input).substr(cut), out);
        EXPECT_EQ(out, expected) << "cut at " << cut << ": " << ::testing::PrintToString(input);
    }
    TerminalFilter filter;
    std::string out;
    for (char byte : input) filter.feed(std::string_view(&byte, 1), out);
    EXPECT_EQ(out, expected) << "byte by byte: " << ::testing::PrintToString(input);
}

struct Case {
    const char* what;
    std::string sequence;
};

// What reads from or writes to the user's machine, in each form a terminal obeys: 7-bit
// with BEL or ESC \, 8-bit C1 as raw bytes, and C1 encoded in UTF-8.
const std::vector<Case> kDropped = {
    {"OSC 52 set, BEL", "\x1b]52;c;cm0gLXJmIH4K\x07"},
    {"OSC 52 set, ESC \\", "\x1b]52;c;cm0gLXJmIH4K\x1b\\"},
    {"OSC 52 set, primary selection", "\x1b]52;p;cm0gLXJmIH4K\x07"},
    {"OSC 52 query", "\x1b]52;c;?\x07"},
    {"OSC 52 raw 8-bit, 8-bit ST", "\x9d" "52;c;cm0=\x9c"},
    {"OSC 52 raw 8-bit, BEL", "\x9d" "52;c;cm0=\x07"},
    {"OSC 52 UTF-8 C1", "\xc2\x9d" "52;c;cm0=\xc2\x9c"},
    {"OSC 52 7-bit, 8-bit ST", "\x1b]52;c;cm0=\x9c"},
    {"OSC 52 with leading zeros", "\x1b]0052;c;cm0=\x07"},
    {"OSC 52 with a C0 inside its number", "\x1b]5\n2;c;cm0=\x07"},
    {"OSC 52 with a DEL inside", "\x1b]52;c;\x7f" "cm0=\x07"},
    {"title report CSI 21 t", "\x1b[21t"},
    {"icon label report CSI 20 t", "\x1b[20t"},
    {"title report raw 8-bit", "\x9b" "21t"},
    {"title report UTF-8 C1", "\xc2\x9b" "21t"},
    {"window size in pixels CSI 14 t", "\x1b[14t"},
    {"window resize CSI 8 t", "\x1b[8;200;200t"},
    {"window move CSI 3 t", "\x1b[3;0;0t"},
    {"lines per page CSI 24 t", "\x1b[66t"},
    {"title modes CSI > t", "\x1b[>3t"},
    {"CSI t without a parameter", "\x1b[t"},
    {"OSC 11 background query", "\x1b]11;?\x07"},
    {"OSC 10 foreground query, ESC \\", "\x1b]10;?\x1b\\"},
    {"OSC 12 cursor colour query", "\x1b]12;?\x07"},
    {"OSC 17 highlight query", "\x1b]17;?\x07"},
    {"OSC 4 palette query", "\x1b]4;1;?\x07"},
    {"OSC 4 set then query", "\x1b]4;1;rgb:ff/00/00;2;?\x07"},
    {"OSC 5 special colour query", "\x1b]5;0;?\x07"},
    {"OSC 11 query raw 8-bit", "\x9d" "11;?\x9c"},
    {"DECRQSS", "\x1bP$qm\x1b\\"},
    {"DECRQSS of DECSCL", "\x1bP$q\"p\x1b\\"},
    {"DECRQSS raw 8-bit", "\x90$qm\x9c"},
    {"DECRQSS UTF-8 C1", "\xc2\x90$qm\xc2\x9c"},
    {"DECRQSS 7-bit, 8-bit ST", "\x1bP$qm\x9c"},
    {"XTGETTCAP", "\x1bP+q544e\x1b\\"},
    {"tmux passthrough of OSC 52", "\x1bPtmux;\x1b\x1b]52;c;cm0=\x07\x1b\\"},
    {"tmux passthrough of DECRQSS", "\x1bPtmux;\x1b\x1bP$qm\x1b\x1b\\\x1b\\"},
    {"DECUDK key definitions", "\x1bP0;1|17/726d202d7266\x1b\\"},
    {"a DCS with nothing known", "\x1bPzabc\x1b\\"},
    {"kitty graphics from a host file", "\x1b_Ga=T,t=f;L2V0Yy9wYXNzd2Q=\x1b\\"},
    {"APC raw 8-bit", "\x9fGa=T,t=f;eA==\x9c"},
    {"PM", "\x1b^private\x1b\\"},
    {"SOS", "\x1bXstring\x1b\\"},
    {"iTerm2 file download", "\x1b]1337;File=name=eA==;inline=0:eA==\x07"},
    {"iTerm2 clipboard copy", "\x1b]1337;Copy=:cm0=\x07"},
    {"kitty clipboard", "\x1b]5522;type=write;cm0=\x1b\\"},
    {"xterm font query", "\x1b]50;?\x07"},
    {"xterm X property", "\x1b]3;WM_NAME=x\x07"},
    {"xterm log file", "\x1b]46;/tmp/log\x07"},
    {"ConEmu GUI macro", "\x1b]9;6;Shell(\"open\",\"cmd\")\x07"},
    {"urxvt extension", "\x1b]777;perl;x\x07"},
    {"an OSC without a number", "\x1b]L label\x1b\\"},
    {"media copy CSI 5 i", "\x1b[5i"},
    {"media copy CSI ? 5 i", "\x1b[?5i"},
    {"DECRQCRA", "\x1b[1;1;1;1;24;80*y"},
    {"DECRQPSR", "\x1b[1$w"},
    {"DECRQTSR", "\x1b[1$u"},
};

// What TUIs draw with: left exactly as it came.
const std::vector<Case> kPassed = {
    {"SGR colours", "\x1b[31mred\x1b[0m"},
    {"SGR true colour", "\x1b[38;2;255;0;0mx\x1b[48:2::0:0:255my"},
    {"alternate screen and cursor", "\x1b[?1049h\x1b[2J\x1b[H\x1b[?25l\x1b[10;20H\x1b[?1049l"},
    {"bracketed paste and mouse", "\x1b[?2004h\x1b[?1000h\x1b[?1006h"},
    {"scroll region and erase", "\x1b[1;20r\x1b[K\x1b[2K\x1b[3S"},
    {"cursor position report", "\x1b[6n"},
    {"device attributes", "\x1b[c\x1b[>c\x1b[=c"},
    {"mode report", "\x1b[?2026$p"},
    {"XTVERSION", "\x1b[>q"},
    {"kitty keyboard query", "\x1b[?u\x1b[>1u\x1b[<u"},
    {"synchronized update", "\x1b[?2026h\x1b[?2026l"},
    {"title stack", "\x1b[22;0t\x1b[23;0t"},
    {"cursor style", "\x1b[2 q"},
    {"set title, BEL", "\x1b]0;my title\x07"},
    {"set title, ESC \\", "\x1b]2;t\xc3\xaftle \xe2\x80\x9cquoted\xe2\x80\x9d?\x1b\\"},
    {"set icon name", "\x1b]1;icon\x07"},
    {"hyperlink", "\x1b]8;id=1;https://example.com/?q=1\x1b\\link\x1b]8;;\x1b\\"},
    {"working folder", "\x1b]7;file://host/home/agent\x07"},
    {"palette set", "\x1b]4;1;rgb:ff/00/00;2;#00ff00\x07"},
    {"background set", "\x1b]11;#000000\x07"},
    {"colour resets", "\x1b]104\x07\x1b]110\x07\x1b]111;\x07\x1b]112\x07"},
    {"prompt marks", "\x1b]133;A\x07\x1b]133;D;0\x07"},
    {"progress", "\x1b]9;4;1;50\x07"},
    {"iTerm2 notification", "\x1b]9;Build finished\x07"},
    {"notification", "\x1b]777;notify;title;body\x07"},
    {"line drawing charset", "\x1b(0lqqk\x1b(B"},
    {"save, restore, index, keypad", "\x1b" "7\x1b" "8\x1bM\x1b" "D\x1b=\x1b>"},
    {"full reset", "\x1b" "c"},
    {"sixel image", "\x1bP0;1;0q\"1;1;4;4#0;2;100;0;0#0!4~-!4~\x1b\\"},
    {"synchronized update brackets", "\x1bP=1s\x1b\\x\x1bP=2s\x1b\\"},
    {"UTF-8 text with 9B/9C/9D bytes inside characters",
     "na\xc3\xafve \xe2\x80\x9cq\xe2\x80\x9d \xe2\x80\x9b \xe2\x80\xba \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89 \xc2\xa0"},
    {"C0 controls", "line\r\n\ttab\x08\x07\x0e\x0f"},
    {"harmless CSI raw 8-bit", "\x9b" "31mred"},
    {"harmless CSI UTF-8 C1", "\xc2\x9b" "1mbold"},
    {"other C1 controls", "\x84\x85\x8d\xc2\x85"},
    {"a lone ST", "\x1b\\"},
    {"invalid bytes", "\xff\xfe\xc0\xc1\xf5"},
};

TEST(TerminalFilterTest, DropsEachSequenceThatReadsOrWritesTheHostSplitAnywhere) {
    for (const auto& [what, sequence] : kDropped) {
        SCOPED_TRACE(what);
        expect_every_split("before" + sequence + "after", "beforeafter");
        TerminalFilter filter;
        EXPECT_EQ(filter.filter(sequence + "x"), "x");
        EXPECT_EQ(filter.dropped(), 1u) << filter.last_dropped();
    }
}

TEST(TerminalFilterTest, PassesWhatTuisDrawWithUnchangedSplitAnywhere) {
    for (const auto& [what, sequence] : kPassed) {
        SCOPED_TRACE(what);
        expect_every_split("a" + sequence + "b", "a" + sequence + "b");
        TerminalFilter filter;
        filter.filter(sequence);
        EXPECT_EQ(filter.dropped(), 0u) << filter.last_dropped();
    }
}

TEST(TerminalFilterTest, SaysWhatItDropped) {
    TerminalFilter filter;
    filter.filter("\x1b]52;c;eA==\x07");
    EXPECT_EQ(filter.last_dropped(), "OSC 52 (the clipboard)");
    filter.filter("\x1bP$qm\x1b\\");
    EXPECT_EQ(filter.last_dropped(), "DECRQSS (a report of a setting)");
    filter.filter("\x1b]11;?\x07");
    EXPECT_EQ(filter.last_dropped(), "OSC 11 ? (a colour report)");
    EXPECT_EQ(filter.dropped(), 3u);
}

// A C0 control inside a CSI is obeyed where it stands and the sequence goes on
// (ESC [ 2 LF 1 t is CSI 21 t to xterm), so it cannot split a sequence in two.
TEST(TerminalFilterTest, AControlInsideACsiDoesNotEndIt) {
    expect_every_split("a\x1b[2\n1tb", "a\nb");
    expect_every_split("a\x1b[3\r1mb", "a\r\x1b[31mb");
}

// GNU screen passes what a DCS holds to the terminal outside; the DCS is aborted by the ESC
// inside, and what follows is read for what it is.
TEST(TerminalFilterTest, ScreensPassthroughIsReadAsWhatItHolds) {
    expect_every_split("a\x1bP\x1b]52;c;eA==\x07\x1b\\b", "a\x1b\\b");
}

TEST(TerminalFilterTest, WhatAbortsASequenceIsPassedAndTheSequenceIsNot) {
    // An OSC ended by anything but BEL or ST is dropped (some terminals would obey it).
    expect_every_split("\x1b]52;c;eA==\x1b[31mX", "\x1b[31mX");
    expect_every_split("\x1b]2;title\x1b[31mX", "\x1b[31mX");
    expect_every_split("\x1b]52;c;eA==\x18X", "\x18X");
    expect_every_split("\x1b]52;c;eA==\x1aX", "\x1aX");
    expect_every_split("\x1b]52;c;eA==\x9b" "31mX", "\x9b" "31mX");
    expect_every_split("\x1b[2\x1b[31mX", "\x1b[31mX");
    expect_every_split("\x1b[2\x18X", "\x18X");
    expect_every_split("\x1b\x1b]52;c;eA==\x07X", "X");
    expect_every_split("\x1b(\xc3\xa9", "\xc3\xa9");
}

// A passed string leaves with BEL or ESC \: a terminal that ignores an 8-bit ST would read
// on inside it, and ";2;?" after it would make OSC 4 a colour query.
TEST(TerminalFilterTest, APassedStringAlwaysEndsInATerminatorEveryTerminalKnows) {
    expect_every_split("\x1b]2;t\x9c", "\x1b]2;t\x1b\\");
    expect_every_split("\x1b]2;t\xc2\x9c", "\x1b]2;t\x1b\\");
    expect_every_split("\x1b]4;1;red\x9c;2;?\x07", "\x1b]4;1;red\x1b\\;2;?\x07");
    expect_every_split("\x1bPq#0\x9c", "\x1bPq#0\x1b\\");
    expect_every_split("\x1bPq#0\x18x", "\x1bPq#0\x1b\\\x18x");
    expect_every_split("\x1bPq#0\x1b[31mx", "\x1bPq#0\x1b\\\x1b[31mx");
    expect_every_split("\x1bPq#0\x9b" "21tx", "\x1bPq#0\x1b\\x");
    // Only sixel's own bytes pass inside the image.
    expect_every_split("\x1bPq#0\x07\xc3\xa9~\x1b\\", "\x1bPq#0~\x1b\\");
}

// A byte of 0x80-0x9F is a C1 control unless it is part of a UTF-8 character; a broken or
// overlong character counts byte by byte.
TEST(TerminalFilterTest, BrokenAndOverlongUtf8CannotHideAControl) {
    expect_every_split("\xe2\x9d" "52;c;eA==\x07" "x", "\xe2x");
    expect_every_split("\xe0\x82\x9b" "21tx", "\xe0\x82x");
    expect_every_split("\xc2\x1b]52;c;eA==\x07x", "\xc2x");
    // F0 9F 9B 32 is no character: F0 is invalid, 9F an APC and 9B a CSI (which ends it).
    expect_every_split("\xf0\x9f\x9b" "21tx", "\xf0" "x");
}

// Memory stays bounded: a never-ending OSC 52 is dropped as it comes, never held whole.
TEST(TerminalFilterTest, ANeverTerminatedSequenceHoldsBoundedMemory) {
    TerminalFilter filter;
    std::string out;
    filter.feed("\x1b]52;c;", out);
    const std::string chunk(4096, 'A');
    for (int i = 0; i < 256; ++i) {
        filter.feed(chunk, out);
        ASSERT_LE(filter.held_bytes(), TerminalFilter::kHeldLimitBytes);
    }
    EXPECT_EQ(out, "");
    filter.feed("\x07" "after", out);
    EXPECT_EQ(out, "after");
    EXPECT_EQ(filter.dropped(), 1u);
    EXPECT_EQ(filter.last_dropped(), "OSC 52 (the clipboard)");

    // The same for the other kinds that are held.
    const std::vector<std::pair<std::string, char>> kinds = {
        {"\x1b_G", '1'}, {"\x1bP$q", '1'}, {"\x1bP1", '1'}, {"\x1b[1", '1'}, {"\x1b(", '('}, {"\x1b]0;", '1'}};
    for (const auto& [start, filler] : kinds) {
        TerminalFilter other;
        std::string dropped;
        other.feed(start, dropped);
        for (int i = 0; i < 64; ++i) {
            other.feed(std::string(4096, filler), dropped);
            ASSERT_LE(other.held_bytes(), TerminalFilter::kHeldLimitBytes) << ::testing::PrintToString(start);
        }
        EXPECT_EQ(dropped, "") << ::testing::PrintToString(start);
    }
}

// A sequence longer than the limit is dropped whole, the text after it is not.
TEST(TerminalFilterTest, AnOverLongSequenceIsDroppedWhole) {
    const std::string title(TerminalFilter::kHeldLimitBytes, 't');
    TerminalFilter filter;
    EXPECT_EQ(filter.filter("a\x1b]2;" + title + "\x07" "b"), "ab");
    EXPECT_EQ(filter.last_dropped(), "an OSC over 4096 bytes");
    EXPECT_EQ(filter.filter("a\x1b[" + std::string(5000, '1') + "mb"), "ab");
    EXPECT_EQ(filter.last_dropped(), "a control sequence over 4096 bytes");
    const std::string fits = "\x1b]2;" + std::string(TerminalFilter::kHeldLimitBytes - 10, 't') + "\x07";
    EXPECT_EQ(TerminalFilter().filter(fits), fits);
}

// An image is passed as it comes, not held.
TEST(TerminalFilterTest, ALargeSixelImageStreamsThrough) {
    TerminalFilter filter;
    std::string out;
    filter.feed("\x1bPq#0", out);
    const std::string data(4096, '~');
    for (int i = 0; i < 64; ++i) {
        filter.feed(data, out);
        ASSERT_LE(filter.held_bytes(), 16u);
    }
    filter.feed("\x1b\\", out);
    EXPECT_EQ(out, "\x1bPq#0" + std::string(64 * 4096, '~') + "\x1b\\");
}

// Random streams of both lists' sequences, their pieces and stray bytes: what comes out
// holds nothing the filter would drop (filtering it again changes nothing), however the
// stream is cut.
TEST(TerminalFilterTest, ItsOutputHoldsNothingItWouldDrop) {
    std::vector<std::string> pieces = {"\x1b", "\x1b]", "\x1b[", "\x1bP", "\x07", "\x1b\\", "\x9c", "\x9d", "\x9b",
                                       "\x90", "\xc2", "\xe2\x80", ";", "52", "?", "21t", "\x18", "\n", "text"};
    for (const auto& [what, sequence] : kDropped) pieces.push_back(sequence);
    for (const auto& [what, sequence] : kPassed) pieces.push_back(sequence);
    std::mt19937 random(18);
    for (int round = 0; round < 2000; ++round) {
        std::string input;
        const int count = 1 + static_cast<int>(random() % 12);
        for (int i = 0; i < count; ++i) {
            if (random() % 4 == 0) input.push_back(static_cast<char>(random() % 256));
            else input += pieces[random() % pieces.size()];
        }
        const std::string once = whole(input);
        // The newline ends a UTF-8 lead the output may end in (held until a next byte).
        ASSERT_EQ(whole(once + "\n"), once + "\n") << ::testing::PrintToString(input);
        TerminalFilter filter;
        std::string cut;
        for (std::size_t at = 0; at < input.size();) {
            const std::size_t length = 1 + random() % 7;
            filter.feed(std::string_view(input).substr(at, length), cut);
            at += length;
        }
        ASSERT_EQ(cut, once) << ::testing::PrintToString(input);
    }
}

} // namespace
} // namespace handler::sessions
