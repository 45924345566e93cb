"""The evaluations' progress line: rate and time left; whole lines when stderr is a log."""

from __future__ import annotations

import io

from modrag_studio.commands.progress import ProgressLine, format_seconds


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_whole_lines_at_most_every_ten_seconds_and_the_last_one():
    clock, log = Clock(), io.StringIO()
    line = ProgressLine("queries", stream=log, clock=clock)
    for done in range(1, 301):
        clock.now += 0.1  # 10 queries a second
        line.update(done, 300)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[0].startswith("1/300 queries")
    assert lines[-1] == "300/300 queries, 10.0 queries/s, done in 30 s"
    assert 3 <= len(lines) <= 5  # the first, about one each 10 s, the last
    assert "left" in lines[1] and "queries/s" in lines[1]


def test_a_terminal_gets_one_rewritten_line_ended_at_the_end():
    clock, tty = Clock(), Terminal()
    line = ProgressLine("questions", stream=tty, clock=clock)
    clock.now += 20
    line.update(1, 4, "q1: answered")
    assert tty.getvalue() == "\r\033[K1/4 questions, 20.0 s each, 1 min 00 s left, q1: answered"
    clock.now += 20
    line.update(2, 4)
    line.close()
    assert tty.getvalue().endswith("2/4 questions, 20.0 s each, 40 s left\n")


def test_seconds_are_told_for_people():
    assert [format_seconds(s) for s in (4.2, 185, 3720)] == ["4 s", "3 min 05 s", "1 h 02 min"]
