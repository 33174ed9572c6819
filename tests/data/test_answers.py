"""The app's outputs file (tier=app app=answers): every malformed record named with file:line, nothing scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from nomad_eval.base.errors import InvalidInput, NomadError
from nomad_eval.base.paths import REPO
from nomad_eval.cli.entry import run_tier
from nomad_eval.data.answers import (
    MAX_LINE_BYTES,
    SHOWN_DEFECTS,
    AppOutput,
    Context,
    load_answers,
    write_answers,
)
from nomad_eval.data.golden import load_goldens
from tests.conftest import FIXTURES, MINI

SUITE = load_goldens(FIXTURES / "goldens" / "mini.jsonl")
IDS = [g.id for g in SUITE]


def _good(gid: str, **extra: object) -> str:
    return json.dumps({"id": gid, "answer": "It is 40 minutes.", **extra})


def _file(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "outputs.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _defects(path: Path) -> list[str]:
    with pytest.raises(InvalidInput) as exc:
        load_answers(path, SUITE, SUITE)
    assert exc.value.exit_code == 2
    return [str(d) for d in exc.value.defects]


def test_a_complete_file_reads_with_contexts_latency_and_tokens(tmp_path: Path) -> None:
    lines = [_good(g, contexts=[{"docId": "kettle-descaling", "text": "Stand 40 minutes."}, "bare"],
                   latencyMs=12.5, promptTokens=90, completionTokens=7) for g in IDS]
    got = load_answers(_file(tmp_path, ["// the app's outputs", "", *lines]), SUITE, SUITE)
    assert sorted(got) == [(g, 0) for g in sorted(IDS)]
    one = got[("mini-01", 0)]
    assert one.contexts == [Context(doc_id="kettle-descaling", text="Stand 40 minutes."), Context(text="bare")]
    assert one.latency_ms == 12.5 and one.prompt_tokens == 90


@pytest.mark.parametrize(("bad", "expected"), [
    ('{"answer": "x"}', ":3: missing key 'id'"),
    ('{"id": "mini-03"}', ":3 [mini-03]: missing key 'answer'"),
    ('{"id": "mini-99", "answer": "x"}', ":3 [mini-99]: unknown id 'mini-99'"),
    ('{"id": "mini-01", "answer": "again"}', ":3 [mini-01]: duplicate record for id 'mini-01' repeat 0 (first on "
                                             "line 1)"),
    ('{"id": "mini-03", "answer": 42}', ":3 [mini-03]: 'answer': Input should be a valid string (got 42)"),
    ('{"id": "mini-03", "answer": "x", "contexts": "kettle"}', ":3 [mini-03]: 'contexts': Input should be a valid "
                                                              "list"),
    ('{"id": "mini-03", "answer": "x", "contexts": [{}]}', ":3 [mini-03]: 'contexts.0': Value error, a context "
                                                          "needs docId, text or both"),
    ('{"id": "mini-03", "answer": "x", "latencyMs": "fast"}', ":3 [mini-03]: 'latencyMs': Input should be a valid "
                                                             "number"),
    ('{"id": "mini-03", "answer": "x", "score": 1}', ":3 [mini-03]: unknown key 'score'"),
    ('{"id": "mini-03", "answer": "x"', ":3: not valid JSON"),
    ('["mini-03", "x"]', ":3: expected a JSON object, got list"),
])
def test_each_malformed_record_is_named_with_file_and_line(tmp_path: Path, bad: str, expected: str) -> None:
    rest = [_good(g) for g in IDS if g not in ("mini-01", "mini-02", "mini-03")]
    path = _file(tmp_path, [_good("mini-01"), _good("mini-02"), bad, _good("mini-03"), *rest])
    found = _defects(path)
    assert any(d.startswith(str(path)) and expected in d for d in found), found


def test_a_ten_megabyte_line_is_named_and_not_read(tmp_path: Path) -> None:
    huge = json.dumps({"id": "mini-02", "answer": "x" * (MAX_LINE_BYTES + 1)})
    assert len(huge) > MAX_LINE_BYTES
    path = _file(tmp_path, [_good(g) for g in IDS if g != "mini-02"] + [huge])
    found = _defects(path)
    assert f"{path}:8: line longer than {MAX_LINE_BYTES} bytes: not read" in found
    # The golden it answered is then unanswered: named too, so nothing is scored without it.
    assert f"{path} [mini-02]: missing answer: no record for golden 'mini-02'" in found


def test_missing_answers_and_uneven_repeats_are_named(tmp_path: Path) -> None:
    lines = [_good(g) for g in IDS if g != "mini-05"] + [_good("mini-01", repeat=1)]
    found = _defects(_file(tmp_path, lines))
    assert any("[mini-05]: missing answer: no record for golden 'mini-05'" in d for d in found)
    assert any("[mini-01]: golden 'mini-01' has repeats [0, 1] where most goldens have [0]" in d for d in found)
    assert len(found) == 2, found


def test_written_records_read_back_unchanged(tmp_path: Path) -> None:
    records = [AppOutput(id=g, answer=f"answer {g}", repeat=0, contexts=[Context(doc_id="d", text="t")],
                         latency_ms=1.5, prompt_tokens=3) for g in IDS]
    path = tmp_path / "back.jsonl"
    write_answers(path, records)
    assert [v for _, v in sorted(load_answers(path, SUITE, SUITE).items())] == sorted(records, key=lambda r: r.id)


def test_a_run_on_a_malformed_file_exits_2_and_scores_nothing(tmp_path: Path) -> None:
    path = _file(tmp_path, [_good(g) for g in IDS[:-1]] + ['{"id": "mini-08", "answer": null}'])
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"paths.data_dir={tmp_path / 'data'}", f"paths.run_dir={tmp_path / 'run'}",
                                           "quiet=true", *MINI, "tier=app", "app=answers", f"app.file={path}"])
    with pytest.raises(SystemExit) as exc:
        run_tier(cfg)
    assert exc.value.code == 2
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["status"] == "failed" and f"{path}:8 [mini-08]: 'answer'" in report["error"]
    assert not report["metrics"] and not (tmp_path / "run" / "cases.jsonl").exists()


def test_a_missing_or_empty_file_is_refused(tmp_path: Path) -> None:
    assert _defects(tmp_path / "nowhere.jsonl") == [f"{tmp_path / 'nowhere.jsonl'}: cannot read the app's outputs: "
                                                    "No such file or directory"]
    empty = _file(tmp_path, [""])
    assert len(_defects(empty)) == len(IDS)  # each golden: missing answer


def test_a_fifo_or_a_device_is_refused_without_waiting(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "outputs.fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        box: list[BaseException] = []

        def read(p: Path = path, box: list[BaseException] = box) -> None:
            try:
                load_answers(p, SUITE, SUITE)
            except BaseException as exc:  # asserted below
                box.append(exc)

        worker = threading.Thread(target=read, daemon=True)
        worker.start()
        worker.join(5)
        assert box, f"{path}: still reading after 5 s"
        assert isinstance(box[0], InvalidInput) and box[0].exit_code == 2
        assert f"{path}: not a regular file" in str(box[0])


def test_thousands_of_defects_are_capped_and_kept_whole_in_a_file(tmp_path: Path) -> None:
    lines = [_good(g) for g in IDS] + ["not json"] * 20_000
    listing = tmp_path / "run" / "defects.txt"
    with pytest.raises(InvalidInput) as exc:
        load_answers(_file(tmp_path, lines), SUITE, SUITE, listing)
    message = str(exc.value)
    assert len(exc.value.defects) == SHOWN_DEFECTS + 1 and len(message) < 20_000
    assert f"... and {20_000 - SHOWN_DEFECTS} more defects (20000 in all): all of them are listed in {listing}" \
        in message
    assert len(listing.read_text().splitlines()) == 20_000


def test_what_an_http_run_writes_app_answers_reads_back(tmp_path: Path) -> None:
    """A record near the line limit is written and read back whole; one past it is refused when written, so
    no run keeps a file its own reader refuses."""
    near = AppOutput(id="mini-01", answer="x" * (MAX_LINE_BYTES - 200),
                     contexts=[Context(doc_id="kettle-descaling", text="t")])
    rest = [AppOutput(id=g, answer="a") for g in IDS if g != "mini-01"]
    path = tmp_path / "app_outputs.jsonl"
    write_answers(path, [near, *rest])
    assert load_answers(path, SUITE, SUITE)[("mini-01", 0)] == near
    over = AppOutput(id="mini-01", answer="x" * MAX_LINE_BYTES)
    with pytest.raises(NomadError, match=r"golden 'mini-01' repeat 0 \(\d+ bytes\) are past the"):
        write_answers(tmp_path / "other.jsonl", [over, *rest])
    assert not (tmp_path / "other.jsonl").exists()
