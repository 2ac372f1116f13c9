// The framing and payload codecs shared by handlerd and handler-shim: round trips, frames
// split anywhere, and refusal of anything oversized, unknown or misshapen.
#include <handler/shim_protocol.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace handler::shim {
namespace {

std::vector<Frame> decode_all(FrameDecoder& decoder) {
    std::vector<Frame> frames;
    while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
    return frames;
}

std::string header(std::uint8_t type, std::uint32_t length) {
    std::string bytes;
    detail::put_u8(bytes, type);
    detail::put_u32(bytes, length);
    return bytes;
}

TEST(ShimProtocol, FrameLayoutIsTypeThenBigEndianLength) {
    const auto frame = encode_resize(0x0102, 0x0304);
    EXPECT_EQ(frame, std::string("\x0d\x00\x00\x00\x04\x01\x02\x03\x04", 9));
}

TEST(ShimProtocol, HelloRoundTrips) {
    Hello hello;
    hello.produced = 0x0102030405060708ull;
    hello.oldest = 42;
    hello.exited = true;
    hello.exit_code = -3;
    hello.tty = true;
    FrameDecoder decoder;
    decoder.feed(encode_hello(hello));
    auto frame = decoder.next();
    ASSERT_TRUE(frame);
    EXPECT_EQ(frame->type, FrameType::hello);
    auto decoded = decode_hello(frame->payload);
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->version, kProtocolVersion);
    EXPECT_EQ(decoded->produced, hello.produced);
    EXPECT_EQ(decoded->oldest, 42u);
    EXPECT_TRUE(decoded->exited);
    EXPECT_EQ(decoded->exit_code, -3);
    EXPECT_TRUE(decoded->tty);
    EXPECT_FALSE(decoder.next());
    EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(ShimProtocol, OutputSplitsAtMaxPayloadWithRunningOffsets) {
    const std::string data(kMaxPayload * 2 + 10, 'x');
    std::string wire;
    append_output(wire, 1000, Stream::stderr_, data);
    FrameDecoder decoder;
    decoder.feed(wire);
    const auto frames = decode_all(decoder);
    ASSERT_EQ(frames.size(), 3u);
    std::uint64_t expected_offset = 1000;
    std::string joined;
    for (const auto& frame : frames) {
        EXPECT_EQ(frame.type, FrameType::output);
        EXPECT_LE(frame.payload.size(), kMaxPayload);
        auto output = decode_output(frame.payload);
        ASSERT_TRUE(output);
        EXPECT_EQ(output->offset, expected_offset);
        EXPECT_EQ(output->stream, Stream::stderr_);
        expected_offset += output->data.size();
        joined.append(output->data);
    }
    EXPECT_EQ(joined, data);
    EXPECT_FALSE(decoder.failed());
}

TEST(ShimProtocol, SmallFramesRoundTrip) {
    std::string wire = encode_resume(7) + encode_i32(FrameType::signal, 15) +
                       encode_i32(FrameType::exit, -1) + encode_empty(FrameType::exit_ack);
    append_frame(wire, FrameType::input, "abc\n");
    FrameDecoder decoder;
    decoder.feed(wire);
    const auto frames = decode_all(decoder);
    ASSERT_EQ(frames.size(), 5u);
    EXPECT_EQ(frames[0].type, FrameType::resume);
    EXPECT_EQ(decode_u64(frames[0].payload), 7u);
    EXPECT_EQ(frames[1].type, FrameType::signal);
    EXPECT_EQ(decode_i32(frames[1].payload), 15);
    EXPECT_EQ(frames[2].type, FrameType::exit);
    EXPECT_EQ(decode_i32(frames[2].payload), -1);
    EXPECT_EQ(frames[3].type, FrameType::exit_ack);
    EXPECT_TRUE(frames[3].payload.empty());
    EXPECT_EQ(frames[4].type, FrameType::input);
    EXPECT_EQ(frames[4].payload, "abc\n");
}

TEST(ShimProtocol, FramesFedOneByteAtATimeComeOutWhole) {
    Hello hello;
    hello.produced = 5;
    std::string wire = encode_hello(hello) + encode_resize(40, 120);
    append_output(wire, 5, Stream::terminal, "hello");
    FrameDecoder decoder;
    std::vector<Frame> frames;
    for (char byte : wire) {
        decoder.feed(std::string_view(&byte, 1));
        while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
    }
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(decode_hello(frames[0].payload)->produced, 5u);
    auto size = decode_resize(frames[1].payload);
    ASSERT_TRUE(size);
    EXPECT_EQ(size->rows, 40);
    EXPECT_EQ(size->cols, 120);
    auto output = decode_output(frames[2].payload);
    ASSERT_TRUE(output);
    EXPECT_EQ(output->data, "hello");
    EXPECT_EQ(decoder.buffered(), 0u);
    EXPECT_FALSE(decoder.failed());
}

TEST(ShimProtocol, PartialFrameWaitsForTheRest) {
    const auto wire = encode_resume(99);
    FrameDecoder decoder;
    decoder.feed(std::string_view(wire).substr(0, wire.size() - 1));
    EXPECT_FALSE(decoder.next());
    EXPECT_FALSE(decoder.failed());
    EXPECT_EQ(decoder.buffered(), wire.size() - 1);
    decoder.feed(std::string_view(wire).substr(wire.size() - 1));
    auto frame = decoder.next();
    ASSERT_TRUE(frame);
    EXPECT_EQ(decode_u64(frame->payload), 99u);
}

TEST(ShimProtocol, MaxPayloadIsAcceptedOneMoreIsNot) {
    FrameDecoder fits;
    fits.feed(header(static_cast<std::uint8_t>(FrameType::input), kMaxPayload));
    fits.feed(std::string(kMaxPayload, 'a'));
    auto frame = fits.next();
    ASSERT_TRUE(frame);
    EXPECT_EQ(frame->payload.size(), kMaxPayload);

    FrameDecoder oversize;
    // Only the header has arrived: the decoder must refuse on the length alone rather
    // than wait for (and buffer) a huge payload.
    oversize.feed(header(static_cast<std::uint8_t>(FrameType::input), kMaxPayload + 1));
    EXPECT_FALSE(oversize.next());
    EXPECT_TRUE(oversize.failed());
    EXPECT_EQ(oversize.buffered(), 0u);

    FrameDecoder huge;
    huge.feed(header(static_cast<std::uint8_t>(FrameType::output), 0xffffffffu));
    EXPECT_FALSE(huge.next());
    EXPECT_TRUE(huge.failed());
}

TEST(ShimProtocol, UnknownTypesFailTheDecoderForGood) {
    for (std::uint8_t type : {0, 5, 9, 18, 255}) {
        FrameDecoder decoder;
        decoder.feed(header(type, 0));
        EXPECT_FALSE(decoder.next()) << int(type);
        EXPECT_TRUE(decoder.failed()) << int(type);
        // A valid frame afterwards does not revive it.
        decoder.feed(encode_empty(FrameType::redraw));
        EXPECT_FALSE(decoder.next()) << int(type);
        EXPECT_TRUE(decoder.failed()) << int(type);
    }
    for (std::uint8_t type : {1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16, 17})
        EXPECT_TRUE(FrameDecoder::known_type(type)) << int(type);
}

TEST(ShimProtocol, WhoAndOwnerRoundTrip) {
    const auto who = decode_who(encode_who({7, 40000}).substr(kHeaderSize));
    ASSERT_TRUE(who);
    EXPECT_EQ(who->query, 7u);
    EXPECT_EQ(who->port, 40000);
    EXPECT_FALSE(decode_who(std::string("\0\0\0\1\0\0", 6))); // port 0
    EXPECT_FALSE(decode_who(std::string("\0\0\0\1\0", 5)));

    OwnerAnswer answer;
    answer.query = 9;
    answer.status = OwnerStatus::found;
    answer.processes = {{21, std::string("curl\0-s", 7), false}, {20, "bash", true}};
    const auto decoded = decode_owner(encode_owner(answer).substr(kHeaderSize));
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->query, 9u);
    ASSERT_EQ(decoded->processes.size(), 2u);
    EXPECT_EQ(decoded->processes[0].command, std::string("curl\0-s", 7));
    EXPECT_TRUE(decoded->processes[1].truncated);

    // A command over the bound is cut (and marked) by the encoder.
    answer.processes = {{21, std::string(kMaxCommandBytes + 10, 'x'), false}};
    const auto cut = decode_owner(encode_owner(answer).substr(kHeaderSize));
    ASSERT_TRUE(cut);
    EXPECT_EQ(cut->processes[0].command.size(), kMaxCommandBytes);
    EXPECT_TRUE(cut->processes[0].truncated);

    const auto payload = [](std::uint8_t status, std::uint8_t count, std::string rest) {
        std::string bytes("\0\0\0\1", 4);
        bytes.push_back(static_cast<char>(status));
        bytes.push_back(static_cast<char>(count));
        return bytes + rest;
    };
    EXPECT_TRUE(decode_owner(payload(2, 0, "")));
    EXPECT_FALSE(decode_owner(payload(1, 0, "")));             // found, but nobody
    EXPECT_FALSE(decode_owner(payload(2, 1, std::string("\0\0\0\5\0\0\0", 7)))); // processes without found
    EXPECT_FALSE(decode_owner(payload(5, 0, "")));             // unknown status
    EXPECT_FALSE(decode_owner(payload(1, 18, "")));            // over kMaxChain
    EXPECT_FALSE(decode_owner(payload(1, 1, std::string("\0\0\0\0\0\0\0", 7)))); // pid 0
    EXPECT_FALSE(decode_owner(payload(1, 1, std::string("\0\0\0\5\0\x08\x01", 7)))); // length past kMaxCommandBytes
    EXPECT_FALSE(decode_owner(payload(1, 1, std::string("\0\0\0\5\0\0\x09" "abc", 10)))); // length past the end
    EXPECT_FALSE(decode_owner(payload(1, 1, std::string("\0\0\0\5\0\0\x01" "ab", 9))));  // bytes left over
    EXPECT_FALSE(decode_owner(payload(1, 1, std::string("\0\0\0\5\2\0\0", 7))));   // truncated flag 2
}

TEST(ShimProtocol, FramesBeforeABadOneAreStillDelivered) {
    FrameDecoder decoder;
    decoder.feed(encode_resume(1) + header(99, 0));
    auto first = decoder.next();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->type, FrameType::resume);
    EXPECT_FALSE(decoder.next());
    EXPECT_TRUE(decoder.failed());
}

TEST(ShimProtocol, MalformedPayloadsDecodeToNothing) {
    Hello hello;
    hello.produced = 10;
    hello.oldest = 5;
    auto good = encode_hello(hello).substr(kHeaderSize);
    ASSERT_TRUE(decode_hello(good));
    EXPECT_FALSE(decode_hello(good.substr(0, good.size() - 1)));   // short
    EXPECT_FALSE(decode_hello(good + "x"));                         // trailing byte
    EXPECT_FALSE(decode_hello(""));
    auto bad_flag = good;
    bad_flag[20] = 2; // exited must be 0 or 1
    EXPECT_FALSE(decode_hello(bad_flag));
    auto bad_tty = good;
    bad_tty[25] = 7;
    EXPECT_FALSE(decode_hello(bad_tty));
    hello.oldest = 11; // past produced: impossible
    EXPECT_FALSE(decode_hello(encode_hello(hello).substr(kHeaderSize)));

    EXPECT_FALSE(decode_output(""));
    EXPECT_FALSE(decode_output(std::string(8, '\0')));            // no stream byte
    EXPECT_FALSE(decode_output(std::string(8, '\0') + '\x00'));   // stream 0
    EXPECT_FALSE(decode_output(std::string(8, '\0') + '\x04'));   // stream 4
    auto empty_output = decode_output(std::string(8, '\0') + '\x01');
    ASSERT_TRUE(empty_output);
    EXPECT_TRUE(empty_output->data.empty());

    EXPECT_FALSE(decode_i32("abc"));
    EXPECT_FALSE(decode_i32("abcde"));
    EXPECT_FALSE(decode_u64("1234567"));
    EXPECT_FALSE(decode_u64("123456789"));
    EXPECT_FALSE(decode_resize("abc"));
    EXPECT_FALSE(decode_resize(encode_resize(0, 80).substr(kHeaderSize)));
    EXPECT_FALSE(decode_resize(encode_resize(24, 0).substr(kHeaderSize)));
    EXPECT_FALSE(decode_resize(encode_resize(24, 80).substr(kHeaderSize) + "x"));
}

} // namespace
} // namespace handler::shim
