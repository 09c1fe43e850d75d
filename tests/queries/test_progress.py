"""``queries.progress``: a long step is announced once it has run a while, then timed;
a short one, or one run quietly, says nothing."""

import time

from queries.progress import duration, slow_step


def test_a_step_still_running_is_announced_then_timed():
    said = []
    with slow_step(said.append, "preparing", after=0.05):
        time.sleep(0.4)
    assert len(said) == 2
    assert said[0].startswith("preparing (a first run compiles") and said[0].endswith("...")
    assert said[1].startswith("preparing: done in ") and said[1].endswith(" ms")


def test_a_short_or_quiet_step_says_nothing():
    said = []
    with slow_step(said.append, "counting", after=0.2):
        pass
    with slow_step(None, "counting", after=0.0):
        time.sleep(0.1)
    time.sleep(0.4)  # a timer that was not cancelled would have spoken by now
    assert said == []


def test_done_false_leaves_the_time_to_the_caller():
    said = []
    with slow_step(said.append, "counting", after=0.05, done=False):
        time.sleep(0.4)
    assert len(said) == 1 and said[0].startswith("counting (")


def test_duration_picks_the_unit():
    assert [duration(s) for s in (0.0, 2.5e-6, 0.0125, 0.999, 61.0)] == [
        "0.0 µs", "2.5 µs", "12.50 ms", "999.00 ms", "61.00 s"]
