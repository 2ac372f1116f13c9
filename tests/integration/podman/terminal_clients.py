#!/usr/bin/env python3
"""Drives `handler attach` the way people do: each client in its own pseudo-terminal.

  terminal_clients.py share ID     two clients attached at once both see what either
                                   types; the second one resizes; both detach with the
                                   detach keys and the session keeps running
  terminal_clients.py reattach ID  a client attaching after a handlerd restart sees the
                                   earlier screen, types, and gets the exit status
  terminal_clients.py sequences ID the session prints OSC 52 (the clipboard), DECRQSS and
                                   a title report among colours: the client's terminal
                                   gets the colours and none of those, live and replayed

Fails (exit 1, with what it saw) on any deviation. Uses only the standard library.
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

CTRL_P_CTRL_Q = b"\x10\x11"


class Client:
    def __init__(self, session, rows=24, cols=80):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvp("handler", ["handler", "attach", session])
        self.seen = b""
        self.resize(rows, cols)

    def resize(self, rows, cols):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.kill(self.pid, 28)  # SIGWINCH, as a terminal emulator sends it

    def type(self, text):
        os.write(self.fd, text if isinstance(text, bytes) else text.encode())

    def expect(self, needle, timeout=15):
        needle = needle.encode()
        deadline = time.time() + timeout
        while needle not in self.seen:
            left = deadline - time.time()
            if left <= 0:
                fail("client %d waited %ds for %r; its screen ends with %r"
                     % (self.pid, timeout, needle, self.seen[-400:]))
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    fail("client %d ended before %r appeared; it saw %r"
                         % (self.pid, needle, self.seen[-400:]))
                self.seen += data

    def wait(self, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            # Keep draining so the client is never blocked on a full terminal.
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536)
                except OSError:
                    pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        fail("client %d did not end within %ds; it saw %r" % (self.pid, timeout, self.seen[-400:]))


def fail(message):
    print("FAIL (terminal_clients): " + message, file=sys.stderr)
    sys.exit(1)


def share(session):
    a = Client(session)
    b = Client(session, rows=33, cols=101)
    # Both attached and the shell answers: a prompt-independent marker through each.
    a.type("echo from-a-$((6*7))\r")
    a.expect("from-a-42")
    b.expect("from-a-42")
    b.type("echo from-b-$((7*7))\r")
    a.expect("from-b-49")
    b.expect("from-b-49")
    # b resized last, so the session's terminal has b's size.
    b.resize(33, 101)
    time.sleep(0.5)
    a.type("stty size; echo size-done\r")
    a.expect("33 101")
    b.expect("33 101")
    for client in (a, b):
        client.type(CTRL_P_CTRL_Q)
        client.expect("detached from session")
        code = client.wait()
        if code != 0:
            fail("detaching exited %d, not 0" % code)
    print("share: two clients saw each other's input, resize applied, both detached")


def reattach(session):
    c = Client(session)
    c.expect("from-b-49")  # the screen from before the restart, replayed
    c.type("echo after-restart-$((8*8))\r")
    c.expect("after-restart-64")
    c.type("exit 5\r")
    code = c.wait()
    if code != 5:
        fail("attach exited %d; the shell exited 5" % code)
    print("reattach: replayed the earlier screen, typed, exit status 5 came through")


# What the shell prints, as printf writes it: colours around OSC 52, DECRQSS and CSI 21 t.
SEQUENCES_COMMAND = (r"printf 'seq-start \033[31mred\033[0m \033]52;c;cm0gLXJmIH4K\007"
                     r"\033P$qm\033\\\033[21t \033[1mbold\033[0m seq-%s\n' end" + "\r")
SEQUENCES_SEEN = b"seq-start \x1b[31mred\x1b[0m  \x1b[1mbold\x1b[0m seq-end"


def sequences(session):
    for attempt in ("live", "replayed"):
        c = Client(session)
        if attempt == "live":
            c.type(SEQUENCES_COMMAND)
        c.expect("seq-end")
        # The typed command is echoed as text (backslashes, not ESC), so only the printed
        # line can hold an ESC.
        for needle in (b"\x1b]52", b"\x1bP", b"\x1b[21t"):
            if needle in c.seen:
                fail("%s: the client's terminal got %r: %r" % (attempt, needle, c.seen[-400:]))
        if SEQUENCES_SEEN not in c.seen:
            fail("%s: the colours did not arrive as printed; the terminal got %r" % (attempt, c.seen[-400:]))
        c.type(CTRL_P_CTRL_Q)
        c.expect("detached from session")
        if c.wait() != 0:
            fail("detaching exited non-zero")
    print("sequences: OSC 52, DECRQSS and CSI 21 t kept from the terminal, colours passed, live and replayed")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("share", "reattach", "sequences"):
        fail("usage: terminal_clients.py share|reattach|sequences SESSION")
    {"share": share, "reattach": reattach, "sequences": sequences}[sys.argv[1]](sys.argv[2])
