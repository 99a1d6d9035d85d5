"""The FFmpeg error capture that the decoded-video path and video packets share."""

from __future__ import annotations

import threading

import av.logging
import pytest

from dataset_devkit.nuscenes.ingest.video_scan import error_logging, judge_packet, logged_errors


def test_an_error_repeated_by_consecutive_packets_is_captured_for_each() -> None:
    """PyAV folds repeated lines into a later "repeated N times" line by default: the second
    packet with the same error would be judged clean and the line land on a later one."""
    judged = []
    with error_logging():
        for _ in range(3):
            with av.logging.Capture(local=True) as logs:
                av.logging.log(av.logging.ERROR, "h264", "error while decoding MB 3 2")
            judged.append(judge_packet(logs, None))
    assert judged == ["decoder concealed damaged data (error while decoding MB 3 2)"] * 3


def test_blocks_on_threads_overlap_and_the_last_one_out_restores_logging() -> None:
    before = (av.logging.get_level(), av.logging.get_skip_repeated())
    inside, release, second_inside = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with error_logging():
            inside.set()
            release.wait(timeout=60)

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(timeout=60)

    def second() -> None:
        with error_logging():
            second_inside.set()

    other = threading.Thread(target=second)
    other.start()
    try:
        # A second block opens while the first is still open (they used to take turns).
        assert second_inside.wait(timeout=60)
        other.join(timeout=60)
        assert av.logging.get_level() == av.logging.ERROR  # the first block is still open
    finally:
        release.set()
        thread.join(timeout=60)
    assert (av.logging.get_level(), av.logging.get_skip_repeated()) == before


@pytest.mark.parametrize(
    ("logs", "failure", "judged"),
    [
        ([], None, ""),
        ([(av.logging.WARNING, "h264", "a warning")], None, ""),
        (
            [(av.logging.ERROR, "hevc", "Could not find ref with POC 2\n")],
            None,
            "decoder concealed damaged data (Could not find ref with POC 2)",
        ),
        (
            [(av.logging.ERROR, "hevc", "x")],
            av.InvalidDataError(1094995529, "Invalid data found when processing input"),
            "packet does not decode (Invalid data found when processing input)",
        ),
    ],
)
def test_a_packet_is_judged_by_its_failure_first_then_by_its_error_lines(
    logs: list[tuple[int, str, str]], failure: BaseException | None, judged: str
) -> None:
    assert judge_packet(logs, failure) == judged
    assert logged_errors(logs) == "; ".join(
        m.strip() for level, _, m in logs if level <= av.logging.ERROR
    )
