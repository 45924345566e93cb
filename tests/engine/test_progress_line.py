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


def test_the_setup_narrator_names_a_slow_first_run_node_and_stays_quiet_on_quick_ones():
    import threading
    from types import SimpleNamespace

    from modrag_studio.commands.progress import SetupNarrator

    stream = io.StringIO()
    told = threading.Event()
    narrator = SetupNarrator(stream=stream, after_s=0.05, every_s=0.0)
    write = stream.write
    stream.write = lambda text: (write(text), told.set())[0]
    narrator.on_node_start(run_id="r", node_id="quick", type_id="split.recursive", iteration=0)
    narrator.on_node_end(run_id="r", visit=SimpleNamespace(node_id="quick", status="done"),
                         inputs={}, outputs={})
    narrator.on_node_start(run_id="r", node_id="embed", type_id="embed.chunks", iteration=0)
    assert told.wait(5), "a node running longer than after_s was never named"
    narrator.on_node_progress(run_id="r", node_id="embed", fraction=0.5,
                              message="512 of 1024 chunks")
    narrator.on_node_end(run_id="r", visit=SimpleNamespace(node_id="embed", status="done"),
                         inputs={}, outputs={})
    lines = stream.getvalue().splitlines()
    assert lines[0] == "preparing: node 'embed' (embed.chunks) is running"
    assert lines[1] == "preparing: node 'embed': 50% 512 of 1024 chunks"
    assert lines[2].startswith("preparing: node 'embed' done in ")
    assert not any("quick" in line for line in lines)


def test_the_rate_leaves_out_the_first_query_when_it_built_the_indexes():
    clock, log = Clock(), io.StringIO()
    line = ProgressLine("queries", stream=log, clock=clock, every_s=0, setup_first=True)
    clock.now += 90  # the first query embedded the corpus
    line.update(1, 301)
    for done in range(2, 302):
        clock.now += 0.1
        line.update(done, 301)
    lines = log.getvalue().splitlines()
    assert lines[0] == "1/301 queries, the first in 1 min 30 s (with the setup)"
    assert lines[100] == "101/301 queries, 10.0 queries/s, 20 s left"
    assert lines[-1] == "301/301 queries, 10.0 queries/s, done in 2 min 00 s"
