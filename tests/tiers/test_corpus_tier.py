"""The corpus tier end to end, through the real entrypoint and the real embedded store and MiniLM."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli, run_in_process

GOOD = {"id": "u1", "query": "How long does the vinegar stand?", "turns": [], "relevantDocIds": ["kettle-descaling"],
        "mustInclude": ["40 minutes"], "mustNotInclude": [], "expectRefusal": False, "tags": []}


def suite_dir(tmp_path: Path, *rows: object) -> Path:
    d = tmp_path / "goldens"
    d.mkdir(exist_ok=True)
    (d / "unseen.jsonl").write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return d


def check(tmp_path: Path, goldens: Path) -> tuple[int, str]:
    r = run_cli("tier=corpus", "action=check", f"data.corpus_dir={FIXTURES / 'corpus'}",
                f"data.goldens_dir={goldens}", "suite=unseen", f"hydra.run.dir={tmp_path / 'out'}")
    return r.returncode, r.stdout + r.stderr


def test_check_accepts_a_valid_suite_quickly(tmp_path: Path) -> None:
    t = time.perf_counter()
    code, out = check(tmp_path, suite_dir(tmp_path, GOOD))
    assert code == 0, out
    assert "suite unseen: 1 goldens" in out and "5 documents" in out
    assert time.perf_counter() - t < 10  # includes interpreter start; the check itself needs no model
    assert "Traceback" not in out
    # Upstream's check summary: fingerprint, tag counts, refusals, and the documents no golden asks about.
    assert re.search(r"^fingerprint: [0-9a-f]{16}$", out, re.M) and "tags: none" in out
    assert "refusal questions: 0 of 1" in out
    warnings = [x for x in out.lower().splitlines() if "warn" in x]
    assert warnings == ["warning: 4 document(s) no golden refers to: bread-starter, garden-compost, "
                        "lantern-batteries, rope-storage"]


def test_check_counts_tags_over_every_suite(tmp_path: Path) -> None:
    goldens = suite_dir(tmp_path, GOOD)
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", goldens)
    code, out = check(tmp_path, goldens)
    assert code == 0, out
    # Nine questions in two suites; most frequent tag first, ties by name.
    assert "tags: numeric=5 food=1 kettle=1 multi-hop=1 multi-turn=1 refusal=1 safety=1" in out
    assert "refusal questions: 1 of 9" in out and "no golden refers to" not in out


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ({**GOOD, "relevantDocIds": ["no-such-doc"]}, "no-such-doc"),
        ({**GOOD, "mustInclude": ["[unclosed"]}, "[unclosed"),
        ({**GOOD, "turns": [{"role": "robot", "content": "x"}]}, "robot"),
        ({k: v for k, v in GOOD.items() if k != "relevantDocIds"}, "relevantDocIds"),  # the one required list
        ({**GOOD, "expectRefusal": True}, "expectRefusal is true"),
        ({**GOOD, "relevantDocIds": []}, "no relevantDocIds"),
    ],
)
@pytest.mark.slow
def test_check_fails_naming_the_value(tmp_path: Path, row: dict[str, object], needle: str) -> None:
    code, out = check(tmp_path, suite_dir(tmp_path, GOOD | {"id": "u0"}, row))
    assert code == 2  # the input is wrong: never read as "worse"
    assert needle in out and "unseen.jsonl:2" in out
    assert "Traceback" not in out


def test_check_names_duplicate_id_and_broken_line(tmp_path: Path) -> None:
    code, out = check(tmp_path, suite_dir(tmp_path, GOOD, GOOD, "{oops"))
    assert code == 2
    assert "duplicate id 'u1'" in out and "unseen.jsonl:3" in out and "not valid JSON" in out


@pytest.mark.slow
def test_ingest_status_idempotent_and_fingerprint_follows_edits(tmp_path: Path, data_dir: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", corpus)
    args = [f"data.corpus_dir={corpus}", f"data.goldens_dir={FIXTURES / 'goldens'}", "suite=mini",
            f"paths.data_dir={data_dir}", f"hydra.run.dir={tmp_path / 'out'}"]

    def status() -> tuple[str, int, str]:
        r = run_cli("tier=corpus", "action=status", *args)
        assert r.returncode == 0, r.stderr
        fp = re.search(r"fingerprint\s+│\s+([0-9a-f]{16})", r.stdout)
        chunks = re.search(r"chunks\s+│\s+(\d+)", r.stdout)
        held = re.search(r"store holds this fingerprint\s+│\s+(\w+)", r.stdout)
        assert fp and chunks and held, r.stdout
        return fp.group(1), int(chunks.group(1)), held.group(1)

    fp0, n0, held = status()
    assert held == "no"
    # The ingests run in-process (their effect is what status shows); status is the command under test.
    assert run_in_process("tier=corpus", "action=ingest", *args, "quiet=true") == 0
    assert status() == (fp0, n0, "yes")
    assert run_in_process("tier=corpus", "action=ingest", *args, "quiet=true") == 0
    r = run_cli("tier=corpus", "action=status", *args)
    assert f"{n0} tagged points, {n0} with this fingerprint" in r.stdout
    doc = corpus / "rope-storage.md"
    doc.write_text(doc.read_text().replace("10 years", "12 years"))
    fp1, n1, held1 = status()
    assert fp1 != fp0 and n1 == n0 and held1 == "no"


def test_check_refuses_an_empty_suite(tmp_path: Path) -> None:
    goldens = suite_dir(tmp_path, GOOD)
    (goldens / "blank.jsonl").write_text("\n\n")
    code, out = check(tmp_path, goldens)
    assert code == 2 and f"{goldens / 'blank.jsonl'}: an empty suite: no goldens" in out
