from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURES, run_cli

BASE = {"turns": [], "mustNotInclude": [], "expectRefusal": False}


def test_lint_flags_weak_goldens_with_file_and_line(tmp_path: Path) -> None:
    rows = [
        {**BASE, "id": "w-time", "query": "How long does the vinegar stand?", "relevantDocIds": ["kettle-descaling"],
         "mustInclude": ["time"], "tags": ["weak"]},
        {**BASE, "id": "w-self", "query": "How many AA cells does the Osprey L9 take?",
         "relevantDocIds": ["lantern-batteries"], "mustInclude": ["AA cells"], "tags": ["weak"]},
        {**BASE, "id": "w-empty", "query": "What temperature does compost reach?", "relevantDocIds": ["garden-compost"],
         "mustInclude": ["(55)?"], "tags": ["weak"]},
        {**BASE, "id": "w-refusal", "query": "When do I retire a rope?", "relevantDocIds": ["rope-storage"],
         "mustInclude": ["information|10 years"], "tags": ["weak"]},
        {**BASE, "id": "w-acr", "query": "What is the ORS recipe?", "relevantDocIds": ["bread-starter"],
         "mustInclude": ["flour"], "tags": ["acronym", "weak"]},
        {**BASE, "id": "good", "query": "How long does it stand?", "relevantDocIds": ["kettle-descaling"],
         "mustInclude": [r"40 minutes"], "tags": ["weak"]},
    ]
    (tmp_path / "weak.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = run_cli("tier=corpus", "action=lint", f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={tmp_path}",
                "suite=weak", f"hydra.run.dir={tmp_path / 'h'}")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "weak.jsonl:1 [w-time]: mustInclude 'time' is one common word" in out
    assert "weak.jsonl:2 [w-self]: mustInclude 'AA cells' matches the question itself" in out
    assert "weak.jsonl:3 [w-empty]" in out and "matches an empty answer" in out
    assert "weak.jsonl:4 [w-refusal]" in out and "matches a refusal" in out
    assert "weak.jsonl:5 [w-acr]: acronym question without its spelled-out twin" in out
    assert "tag 'acronym' is used once" in out
    assert "[good]" not in out
